//! A status change as the load's actor runs it: read, plan, write with its
//! events, atomically with respect to the load (the actor is its only writer).

use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::{CarrierSummary, Load, LoadStatus, StatusChange, Transition};
use crate::domain::speed_history;
use crate::domain::tracking::GpsFix;
use crate::storage::PointRange;
use crate::webhooks::payloads;

use super::LoadError;
use super::writer::{Changed, LoadWriter};

/// The body of a status change, run by the load's actor (the only writer of the
/// load, so the read-plan-write below cannot interleave with another change).
/// Its events (`load.assigned`, `load.status_changed`, `delivery.completed`) are
/// numbered from `next_sequence` and written in the same commit as the change.
pub async fn apply_status_change(
    deps: &LoadWriter<'_>,
    id: &LoadId,
    account: &AccountId,
    change: &StatusChange,
    next_sequence: u64,
    final_position: Option<GpsFix>,
) -> Result<Changed, LoadError> {
    let storage = deps.storage;
    let current = storage
        .get_load(id)
        .await?
        .filter(|load| &load.account_id == account)
        .ok_or(LoadError::NotFound)?;
    let carrier_id = match current.plan_transition(change)? {
        Transition::Unchanged => {
            return Ok(Changed {
                load: current,
                events: Vec::new(),
            });
        }
        Transition::Move(to) => {
            return write_change(
                deps,
                current,
                to,
                None,
                change,
                next_sequence,
                final_position,
            )
            .await;
        }
        Transition::Assign(carrier_id) => carrier_id,
    };
    // An assignment keeps its carrier from being deleted until the load is
    // written (a deletion checks for assigned loads first): on this instance
    // by its lock (`carrier_locks`), on the others by a hold in the store.
    let _kept_here = deps.carriers.assigning(&carrier_id).await;
    if !storage.hold_carrier(account, &carrier_id, id).await? {
        return Err(LoadError::UnknownCarrier(carrier_id));
    }
    let assigned = async {
        let carrier = storage
            .get_carrier(account, &carrier_id)
            .await?
            .ok_or(LoadError::UnknownCarrier(carrier_id.clone()))?;
        let summary = CarrierSummary {
            id: carrier.id,
            name: carrier.name,
            mc_number: carrier.mc_number,
        };
        let to = LoadStatus::Assigned;
        write_change(
            deps,
            current,
            to,
            Some(summary),
            change,
            next_sequence,
            final_position,
        )
        .await
    }
    .await;
    if let Err(error) = storage.release_carrier(account, &carrier_id, id).await {
        tracing::warn!(load = %id, carrier = %carrier_id, %error, "could not release the carrier's hold; it expires within a minute, deletions of it waiting until then");
    }
    assigned
}

/// Fixes of a delivered load its average moving speed is taken over (a long
/// trip's newest ones).
const SPEED_FIXES: usize = 10_000;

/// The load's average moving speed over its fixes, kept on the delivered
/// load for the account's ETAs (`domain::speed_history`); a read that fails
/// leaves it unknown rather than failing the delivery.
async fn moving_speed(storage: &dyn crate::storage::Storage, id: &LoadId) -> Option<f64> {
    match storage
        .load_points(id, PointRange::latest(SPEED_FIXES))
        .await
    {
        Ok(fixes) => speed_history::moving_mph(&fixes),
        Err(error) => {
            tracing::warn!(load = %id, %error, "a delivered load's fixes could not be read for its moving speed");
            None
        }
    }
}

/// Writes `current` moved to `to` with its events (see [`apply_status_change`]).
async fn write_change(
    deps: &LoadWriter<'_>,
    current: Load,
    to: LoadStatus,
    carrier: Option<CarrierSummary>,
    change: &StatusChange,
    next_sequence: u64,
    final_position: Option<GpsFix>,
) -> Result<Changed, LoadError> {
    let (storage, clock) = (deps.storage, deps.clock);
    let (account, id) = (&current.account_id, &current.id);
    let now = clock.now();
    let mut updated = current.apply(to, carrier, change, now);
    if to == LoadStatus::Delivered {
        updated.moving_mph = moving_speed(storage, id).await;
    }
    let mut events = Vec::new();
    let mut event = |kind, data| {
        let sequence = next_sequence + events.len() as u64;
        events.push(Event::new(
            account.clone(),
            id.clone(),
            kind,
            sequence,
            now,
            data,
        ));
    };
    if to == LoadStatus::Assigned {
        event(EventType::LoadAssigned, payloads::load(&updated));
    }
    event(
        EventType::LoadStatusChanged,
        payloads::status_changed(&current, &updated),
    );
    if to == LoadStatus::Delivered {
        event(
            EventType::DeliveryCompleted,
            payloads::delivered(&updated, final_position.as_ref()),
        );
    }
    storage.update_load(&current, &updated, &events).await?;
    Ok(Changed {
        load: updated,
        events,
    })
}
