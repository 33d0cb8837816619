//! Load creation, lookup, listing and the status lifecycle.

use std::sync::Arc;

use crate::actors::load_actor::ChangeStatus;
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::domain::load::{
    CarrierSummary, Load, LoadStatus, NewLoad, StatusChange, Transition, TransitionError,
};
use crate::domain::tracking::GpsFix;
use crate::storage::{LoadFilter, Page, PageRequest, Storage, StorageError};
use crate::webhooks::notifier::Notifier;
use crate::webhooks::payloads;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error("load not found")]
    NotFound,
    #[error("carrier {0} does not exist in this account")]
    UnknownCarrier(CarrierId),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("a load in status {0} does not take GPS fixes")]
    NotTrackable(LoadStatus),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub struct LoadService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    registry: Arc<LoadRegistry>,
    notifier: Arc<Notifier>,
}

impl LoadService {
    pub fn new(
        storage: Arc<dyn Storage>,
        clock: Clock,
        registry: Arc<LoadRegistry>,
        notifier: Arc<Notifier>,
    ) -> Self {
        Self {
            storage,
            clock,
            registry,
            notifier,
        }
    }

    pub async fn create(&self, account: &AccountId, new: NewLoad) -> Result<Load, LoadError> {
        let now = self.clock.now();
        let load = Load::create(LoadId::generate(), account.clone(), new, now);
        // The first event of every load, hence sequence 1.
        let created = Event::new(
            account.clone(),
            load.id.clone(),
            EventType::LoadCreated,
            1,
            now,
            payloads::load(&load),
        );
        self.storage
            .insert_load(&load, std::slice::from_ref(&created))
            .await?;
        self.notifier.events_committed(vec![created]);
        Ok(load)
    }

    /// A malformed id, or another account's load, is simply not found.
    pub async fn get(&self, account: &AccountId, id: &str) -> Result<Load, LoadError> {
        let id = LoadId::parse(id).ok_or(LoadError::NotFound)?;
        self.storage
            .get_load(&id)
            .await?
            .filter(|load| &load.account_id == account)
            .ok_or(LoadError::NotFound)
    }

    pub async fn list(
        &self,
        account: &AccountId,
        filter: &LoadFilter,
        page: PageRequest,
    ) -> Result<Page<Load>, LoadError> {
        Ok(self.storage.list_loads(account, filter, page).await?)
    }

    /// Applies a status change through the load's actor; returns the load as it
    /// stands afterwards (unchanged when the request repeats the current status).
    pub async fn change_status(
        &self,
        account: &AccountId,
        id: &str,
        change: StatusChange,
    ) -> Result<Load, LoadError> {
        let id = LoadId::parse(id).ok_or(LoadError::NotFound)?;
        let message = ChangeStatus {
            account: account.clone(),
            change,
        };
        self.registry.send(&id, message).await?
    }
}

/// What a status change produced: the load as it stands, and how many event
/// sequence numbers (from the one given) its events took.
pub(crate) struct Changed {
    pub load: Load,
    /// Committed with the change, numbered from the sequence given.
    pub events: Vec<Event>,
}

/// The body of a status change, run by the load's actor (the only writer of the
/// load, so the read-plan-write below cannot interleave with another change).
/// Its events (`load.assigned`, `load.status_changed`, `delivery.completed`) are
/// numbered from `next_sequence` and written in the same commit as the change.
pub(crate) async fn apply_status_change(
    storage: &dyn Storage,
    clock: &Clock,
    id: &LoadId,
    account: &AccountId,
    change: &StatusChange,
    next_sequence: u64,
    final_position: Option<GpsFix>,
) -> Result<Changed, LoadError> {
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
