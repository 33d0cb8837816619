//! `GET /v1/loads?late_risk=&at_stop=`: loads found by what their trucks are
//! doing now. Neither is a stored attribute of a load (late risk is worked out
//! from the latest fixes, a stop from the stored progress), so the search runs
//! over the account's tracked loads (`assigned` and `in_transit`, the only ones
//! whose trucks are watched) and looks at each: its cost follows the account's
//! tracked loads, not the page asked for. An account with tens of thousands of
//! loads on the road at once would want an index kept with the milestones;
//! none is kept today.

use futures_util::stream::{self, StreamExt};

use super::Services;
use crate::domain::ids::AccountId;
use crate::domain::load::{Load, LoadStatus};
use crate::domain::stops::StopKind;
use crate::services::loads::LoadError;
use crate::storage::{LoadFilter, Page, PageRequest};
use crate::views::tracking::TrackingSummary;

/// Loads read (and looked at) at once.
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

/// A page of the account's tracked loads that `filter` and `stops` both
/// match, newest first, with their count.
pub async fn list(
    services: &Services,
    account: &AccountId,
    filter: &LoadFilter,
    stops: StopFilter,
    page: PageRequest,
) -> Result<Page<Load>, LoadError> {
    let mut tracked = Vec::new();
    for status in [LoadStatus::Assigned, LoadStatus::InTransit] {
        if filter.status.is_some_and(|wanted| wanted != status) {
            continue;
        }
        let filter = LoadFilter {
            status: Some(status),
            ..filter.clone()
        };
        let mut offset = 0;
        loop {
            let request = PageRequest {
                offset,
                limit: READ_PAGE,
            };
            let found = services.loads.list(account, &filter, request).await?;
            let read = found.items.len() as u64;
            tracked.extend(found.items);
            offset += read;
            if read < u64::from(READ_PAGE) || offset >= found.total {
                break;
            }
        }
    }
    let looked: Vec<Result<Option<Load>, LoadError>> = stream::iter(tracked)
        .map(|load| async move { matches(services, load, stops).await })
        .buffered(CONCURRENT_READS)
        .collect()
        .await;
    let mut matching = Vec::new();
    for load in looked {
        matching.extend(load?);
    }
    // Newest first, as every list: load ids are ULIDs, ordered by creation.
    matching.sort_by(|a, b| b.id.as_str().cmp(a.id.as_str()));
    let total = matching.len() as u64;
    let items = matching
        .into_iter()
        .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
        .take(page.limit as usize)
        .collect();
    Ok(Page { items, total })
}

/// `load` if its truck is doing what `stops` asks. A load whose state cannot
/// be read fails the search (a 503 the client retries) rather than being left
/// out of an answer that would then look complete.
async fn matches(
    services: &Services,
    load: Load,
    stops: StopFilter,
) -> Result<Option<Load>, LoadError> {
    if let Some(kind) = stops.at_stop {
        let progress = services
            .storage
            .load_stops(&load.id)
            .await?
            .unwrap_or_default();
        if !progress.of(kind).at_stop() {
            return Ok(None);
        }
    }
    if let Some(wanted) = stops.late_risk {
        let state = services
            .tracking
            .current(&load.account_id, &load.id)
            .await?;
        if TrackingSummary::new(&state).late_risk != wanted {
            return Ok(None);
        }
    }
    Ok(Some(load))
}
