//! A status change as the load's actor runs it: read, plan, write with its
//! events, atomically with respect to the load (the actor is its only writer).

use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::domain::load::{CarrierSummary, Load, LoadStatus, StatusChange, Transition};
use crate::domain::tracking::GpsFix;
use crate::webhooks::payloads;

use super::LoadError;
use super::load_actor::ActorDeps;

/// What a status change produced: the load as it stands, and how many event
/// sequence numbers (from the one given) its events took.
pub struct Changed {
    pub load: Load,
    /// Committed with the change, numbered from the sequence given.
    pub events: Vec<Event>,
}

/// The body of a status change, run by the load's actor (the only writer of the
/// load, so the read-plan-write below cannot interleave with another change).
/// Its events (`load.assigned`, `load.status_changed`, `delivery.completed`) are
/// numbered from `next_sequence` and written in the same commit as the change.
pub async fn apply_status_change(
    deps: &ActorDeps,
    id: &LoadId,
    account: &AccountId,
    change: &StatusChange,
    next_sequence: u64,
    final_position: Option<GpsFix>,
) -> Result<Changed, LoadError> {
    let (storage, clock) = (&*deps.storage, &deps.clock);
    // An assignment keeps its carrier from being deleted until the load is
    // written (a deletion checks for assigned loads first: `carrier_locks`).
    let mut _carrier_kept = None;
    let current = storage
        .get_load(id)
        .await?
        .filter(|load| &load.account_id == account)
        .ok_or(LoadError::NotFound)?;
    let (to, carrier) = match current.plan_transition(change)? {
        Transition::Unchanged => {
            return Ok(Changed {
                load: current,
                events: Vec::new(),
            });
        }
        Transition::Move(to) => (to, None),
        Transition::Assign(carrier_id) => {
            _carrier_kept = Some(deps.carriers.assigning(&carrier_id).await);
            let carrier = storage
                .get_carrier(account, &carrier_id)
                .await?
                .ok_or(LoadError::UnknownCarrier(carrier_id))?;
            let summary = CarrierSummary {
                id: carrier.id,
                name: carrier.name,
                mc_number: carrier.mc_number,
            };
            (LoadStatus::Assigned, Some(summary))
        }
    };
    let now = clock.now();
    let updated = current.apply(to, carrier, change, now);
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
