//! A change of a load's fields as its actor runs it (`PATCH /v1/loads/{id}`):
//! read, plan, claim a new reference, write with `load.updated`, let go of the
//! old reference. The actor is the load's only writer, so nothing interleaves.

use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId, StopId};
use crate::domain::load::LoadEdit;
use crate::storage::references;
use crate::webhooks::payloads;

use super::LoadError;
use super::writer::{Changed, LoadWriter};

/// Applies `edit` to the load; `load.updated` (numbered `next_sequence`,
/// naming the changed fields) is written with it. An edit that changes
/// nothing writes nothing and sends nothing. `frozen`: the stops the truck
/// has arrived at.
pub async fn apply_edit(
    writer: &LoadWriter<'_>,
    id: &LoadId,
    account: &AccountId,
    edit: &LoadEdit,
    frozen: &[StopId],
    next_sequence: u64,
) -> Result<Changed, LoadError> {
    let (storage, clock) = (writer.storage, writer.clock);
    let current = storage
        .get_load(id)
        .await?
        .filter(|load| &load.account_id == account)
        .ok_or(LoadError::NotFound)?;
    let now = clock.now();
    let (updated, changed) = current.plan_edit(edit, frozen, now)?;
    if changed.is_empty() {
        return Ok(Changed {
            load: current,
            events: Vec::new(),
        });
    }
    let new_reference = updated
        .reference
        .as_deref()
        .filter(|r| current.reference.as_deref() != Some(*r));
    if let Some(reference) = new_reference {
        references::claim(storage, account, reference, id, now)
            .await?
            .map_err(LoadError::ReferenceTaken)?;
    }
    let event = Event::new(
        account.clone(),
        id.clone(),
        EventType::LoadUpdated,
        next_sequence,
        now,
        payloads::updated(&updated, &changed),
    );
    let mut events = vec![event];
    // A stop skipped by the client: subscribers hear it as they hear one the
    // truck went past.
    let skipped = edit
        .skip_stop
        .as_ref()
        .filter(|_| changed.contains(&"stops"));
    if let Some((index, stop)) =
        skipped.and_then(|id| updated.stops.iter().enumerate().find(|(_, s)| &s.id == id))
    {
        events.push(Event::new(
            account.clone(),
            id.clone(),
            EventType::LoadStopSkipped,
            next_sequence + 1,
            now,
            payloads::skipped_by_client(id.as_str(), stop, index, now),
        ));
    }
    let written = storage.update_load(&current, &updated, &events).await;
    // The claim the load no longer stands on: the new one if the write
    // failed, the old one if it moved to another reference or none.
    let given_up = match &written {
        Err(_) => new_reference,
        Ok(()) => current
            .reference
            .as_deref()
            .filter(|old| updated.reference.as_deref() != Some(*old)),
    };
    if let Some(reference) = given_up {
        references::release(storage, account, reference, id).await;
    }
    written?;
    Ok(Changed {
        load: updated,
        events,
    })
}
