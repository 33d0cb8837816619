//! `GET /v1/loads` beyond its indexed filters.
//!
//! `status`, `origin_state` and `destination_state` are index ranges in both
//! stores (`LoadFilter`): a list with only those reads what it returns, and
//! its total is a counter. `reference` is a lookup of its own (unique per
//! account). The rest are looked at load by load over the indexed range:
//!
//! - `carrier_id`, `equipment_type`, `pickup_from` / `pickup_to` and `q` (a
//!   prefix of the reference or of either city, any case) read each load of
//!   the range;
//! - `late_risk` and `at_stop` are not attributes of a load at all (late risk
//!   is worked out from the latest fixes, a stop from the stored progress), so
//!   they also narrow the range to the tracked statuses (`assigned`,
//!   `in_transit`: the only ones whose trucks are watched) and look at each
//!   load's state.
//!
//! Such a list costs in proportion to the loads of the indexed range, not to
//! the page. An account with hundreds of thousands of loads would want more
//! of these kept as indexes; none is today.

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use super::Services;
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::{AccountId, CarrierId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;
use crate::domain::stops::StopKind;
use crate::services::loads::LoadError;
use crate::storage::{LoadFilter, Page, PageRequest};
use crate::views::tracking::TrackingSummary;

/// Loads looked at (their state read) at once.
const CONCURRENT_READS: usize = 32;
/// The account's loads are read from storage this many at a time.
const READ_PAGE: u32 = 500;

/// What the truck is doing now, as filters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopFilter {
    /// `late_risk=true|false`.
    pub late_risk: Option<bool>,
    /// `at_stop=pickup|delivery`: arrived there and not departed.
    pub at_stop: Option<StopKind>,
}

impl StopFilter {
    pub fn is_empty(&self) -> bool {
        self.late_risk.is_none() && self.at_stop.is_none()
    }
}

/// Filters on a load's own fields that no index holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldFilter {
    pub carrier_id: Option<CarrierId>,
    pub equipment_type: Option<EquipmentType>,
    /// Loads whose `pickup_date` is at or after this (loads without one never match).
    pub pickup_from: Option<DateTime<Utc>>,
    /// Loads whose `pickup_date` is at or before this.
    pub pickup_to: Option<DateTime<Utc>>,
    /// A prefix of the reference, the origin city or the destination city,
    /// compared without regard to case.
    pub q: Option<String>,
    /// Loads with a stop in this state (any stop, not only the ends).
    pub stop_state: Option<UsState>,
    /// Loads with a stop at this ZIP (the 5-digit part compared).
    pub stop_zip: Option<String>,
}

impl FieldFilter {
    pub fn is_empty(&self) -> bool {
        *self == FieldFilter::default()
    }

    fn matches(&self, load: &Load) -> bool {
        if self
            .carrier_id
            .as_ref()
            .is_some_and(|id| load.carrier.as_ref().is_none_or(|c| &c.id != id))
        {
            return false;
        }
        if self
            .equipment_type
            .is_some_and(|e| load.equipment_type != e)
        {
            return false;
        }
        if self.pickup_from.is_some() || self.pickup_to.is_some() {
            let Some(pickup) = load.pickup_date else {
                return false;
            };
            if self.pickup_from.is_some_and(|from| pickup < from)
                || self.pickup_to.is_some_and(|to| pickup > to)
            {
                return false;
            }
        }
        if self.stop_state.is_some() || self.stop_zip.is_some() {
            let five = |zip: &str| zip.get(..5).map(str::to_owned);
            let wanted_zip = self.stop_zip.as_deref().and_then(five);
            let any = load.stops().iter().any(|stop| {
                self.stop_state.is_none_or(|s| stop.location.state == s)
                    && wanted_zip
                        .as_ref()
                        .is_none_or(|z| five(&stop.location.zip).as_ref() == Some(z))
            });
            if !any {
                return false;
            }
        }
        if let Some(q) = &self.q {
            let q = q.to_lowercase();
            let starts = |text: &str| text.to_lowercase().starts_with(&q);
            let found = load.reference.as_deref().is_some_and(starts)
                || starts(&load.origin.city)
                || starts(&load.destination.city);
            if !found {
                return false;
            }
        }
        true
    }
}

/// Everything `GET /v1/loads` filters by.
#[derive(Debug, Clone, Default)]
pub struct LoadQuery {
    pub indexed: LoadFilter,
    pub reference: Option<String>,
    pub fields: FieldFilter,
    pub stops: StopFilter,
}

/// A page of the account's loads that `query` matches, newest first, with
/// their count.
pub async fn list(
    services: &Services,
    account: &AccountId,
    query: &LoadQuery,
    page: PageRequest,
) -> Result<Page<Load>, LoadError> {
    if let Some(reference) = &query.reference {
        let found = services.loads.by_reference(account, reference).await?;
        let mut matching = Vec::new();
        if let Some(load) = found.filter(|l| indexed_match(&query.indexed, l)) {
            matching.extend(matches(services, load, query).await?);
        }
        return Ok(paged(matching, page));
    }
    if query.fields.is_empty() && query.stops.is_empty() {
        return services.loads.list(account, &query.indexed, page).await;
    }
    // Late risk and stops belong to tracked loads only.
    let statuses: Vec<Option<LoadStatus>> = match query.stops.is_empty() {
        true => vec![query.indexed.status],
        false => [LoadStatus::Assigned, LoadStatus::InTransit]
            .into_iter()
            .filter(|s| query.indexed.status.is_none_or(|wanted| wanted == *s))
            .map(Some)
            .collect(),
    };
    let mut candidates = Vec::new();
    for status in statuses {
        let range = LoadFilter {
            status,
            ..query.indexed.clone()
        };
        read_range(services, account, &range, &mut candidates).await?;
    }
    let candidates = candidates
        .into_iter()
        .filter(|load| query.fields.matches(load));
    let looked: Vec<Result<Option<Load>, LoadError>> = stream::iter(candidates)
        .map(|load| async move { matches(services, load, query).await })
        .buffered(CONCURRENT_READS)
        .collect()
        .await;
    let mut matching = Vec::new();
    for load in looked {
        matching.extend(load?);
    }
    Ok(paged(matching, page))
}

/// Every load of `range`, newest first.
async fn read_range(
    services: &Services,
    account: &AccountId,
    range: &LoadFilter,
    into: &mut Vec<Load>,
) -> Result<(), LoadError> {
    let mut offset = 0;
    loop {
        let request = PageRequest {
            offset,
            limit: READ_PAGE,
        };
        let found = services.loads.list(account, range, request).await?;
        let read = found.items.len() as u64;
        into.extend(found.items);
        offset += read;
        if read < u64::from(READ_PAGE) || offset >= found.total {
            return Ok(());
        }
    }
}

fn indexed_match(filter: &LoadFilter, load: &Load) -> bool {
    filter.status.is_none_or(|s| load.status == s)
        && filter.origin_state.is_none_or(|s| load.origin.state == s)
        && filter
            .destination_state
            .is_none_or(|s| load.destination.state == s)
}

/// The page of `matching` asked for, newest first.
fn paged(mut matching: Vec<Load>, page: PageRequest) -> Page<Load> {
    // Load ids are ULIDs, ordered by creation.
    matching.sort_by(|a, b| b.id.as_str().cmp(a.id.as_str()));
    let total = matching.len() as u64;
    let items = matching
        .into_iter()
        .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
        .take(page.limit as usize)
        .collect();
    Page { items, total }
}

/// `load` if it matches the query's field and stop filters. A load whose
/// state cannot be read fails the search (a 503 the client retries) rather
/// than being left out of an answer that would then look complete.
async fn matches(
    services: &Services,
    load: Load,
    query: &LoadQuery,
) -> Result<Option<Load>, LoadError> {
    if !query.fields.matches(&load) {
        return Ok(None);
    }
    let stops = query.stops;
    if !stops.is_empty() && !matches!(load.status, LoadStatus::Assigned | LoadStatus::InTransit) {
        return Ok(None);
    }
    if let Some(kind) = stops.at_stop {
        let progress = services
            .storage
            .load_stops(&load.id)
            .await?
            .unwrap_or_default();
        let planned = load.stops();
        let at_one = planned
            .iter()
            .zip(progress.of_stops(&planned))
            .any(|(stop, p)| stop.kind == kind && p.at_stop());
        if !at_one {
            return Ok(None);
        }
    }
    if let Some(wanted) = stops.late_risk {
        let state = services
            .tracking
            .current(&load.account_id, &load.id)
            .await?;
        if TrackingSummary::of(&state).late_risk != wanted {
            return Ok(None);
        }
    }
    Ok(Some(load))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::load::{CarrierSummary, sample};

    #[test]
    fn field_filters_match_what_they_name() {
        let mut load = sample(LoadStatus::Assigned);
        load.reference = Some("PO-44172".into());
        load.pickup_date = DateTime::from_timestamp(1_790_000_000, 0);
        let carrier = CarrierId::generate();
        load.carrier = Some(CarrierSummary {
            id: carrier.clone(),
            name: "C".into(),
            mc_number: "1".into(),
        });
        let yes = |f: FieldFilter| assert!(f.matches(&load), "{f:?}");
        let no = |f: FieldFilter| assert!(!f.matches(&load), "{f:?}");
        yes(FieldFilter::default());
        yes(FieldFilter {
            q: Some("po-44".into()),
            ..Default::default()
        });
        yes(FieldFilter {
            q: Some("atl".into()),
            ..Default::default()
        });
        yes(FieldFilter {
            q: Some("Dallas".into()),
            ..Default::default()
        });
        no(FieldFilter {
            q: Some("44172".into()),
            ..Default::default()
        });
        yes(FieldFilter {
            carrier_id: Some(carrier),
            equipment_type: Some(EquipmentType::DryVan),
            ..Default::default()
        });
        no(FieldFilter {
            carrier_id: Some(CarrierId::generate()),
            ..Default::default()
        });
        no(FieldFilter {
            equipment_type: Some(EquipmentType::Flatbed),
            ..Default::default()
        });
        let at = |s: i64| DateTime::from_timestamp(1_790_000_000 + s, 0);
        yes(FieldFilter {
            pickup_from: at(0),
            pickup_to: at(0),
            ..Default::default()
        });
        no(FieldFilter {
            pickup_from: at(1),
            ..Default::default()
        });
        no(FieldFilter {
            pickup_to: at(-1),
            ..Default::default()
        });
        let mut undated = load.clone();
        undated.pickup_date = None;
        assert!(
            !FieldFilter {
                pickup_to: at(0),
                ..Default::default()
            }
            .matches(&undated)
        );
        // Any stop, not only the ends: a third stop in OK at 73102.
        let mut multi = load.clone();
        let mut stops = load.stops().into_owned();
        let mut third = stops[1].clone();
        third.id = crate::domain::ids::StopId::generate();
        third.location.state = UsState::parse("OK").unwrap();
        third.location.zip = "73102".into();
        stops.insert(1, third);
        multi.stops = stops;
        let in_ok = FieldFilter {
            stop_state: Some(UsState::parse("OK").unwrap()),
            stop_zip: Some("73102-1234".into()),
            ..FieldFilter::default()
        };
        assert!(in_ok.matches(&multi) && !in_ok.matches(&load));
        let in_ks = FieldFilter {
            stop_state: Some(UsState::parse("KS").unwrap()),
            ..FieldFilter::default()
        };
        assert!(!in_ks.matches(&multi));
    }
}
