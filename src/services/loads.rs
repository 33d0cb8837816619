//! Load creation, lookup, listing and the status lifecycle.

use std::sync::Arc;

pub use crate::actors::LoadError;
use crate::actors::load_actor::{ChangeStatus, EditLoad};
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::account::Account;
use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, LoadId, StopId};
use crate::domain::load::{Load, LoadEdit, NewLoad, StatusChange};
use crate::storage::{LoadFilter, Page, PageRequest, Storage, references};
use crate::webhooks::notifier::Notifier;
use crate::webhooks::payloads;

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

    /// Posts a load; without its own free time at stops it takes the
    /// account's (kept on the load: a later change of the account's
    /// default does not move the clocks of loads already posted).
    pub async fn create(&self, account: &Account, mut new: NewLoad) -> Result<Load, LoadError> {
        let now = self.clock.now();
        new.detention_free_minutes
            .get_or_insert(account.stop_settings.detention_free_minutes);
        let account = &account.id;
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
        if let Some(reference) = &load.reference {
            references::claim(&*self.storage, account, reference, &load.id, now)
                .await?
                .map_err(LoadError::ReferenceTaken)?;
        }
        if let Err(error) = self
            .storage
            .insert_load(&load, std::slice::from_ref(&created))
            .await
        {
            if let Some(reference) = &load.reference {
                references::release(&*self.storage, account, reference, &load.id).await;
            }
            return Err(error.into());
        }
        self.notifier.events_committed(vec![created]);
        Ok(load)
    }

    /// Another account's load is simply not found.
    pub async fn get(&self, account: &AccountId, id: &LoadId) -> Result<Load, LoadError> {
        self.storage
            .get_load(id)
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
    /// Changes the load's fields through its actor (the only writer of the
    /// load); the load as it stands afterwards.
    pub async fn edit(
        &self,
        account: &AccountId,
        id: &LoadId,
        edit: LoadEdit,
    ) -> Result<Load, LoadError> {
        let message = EditLoad {
            account: account.clone(),
            edit,
        };
        self.registry.send(id, message).await?
    }

    /// Marks a stop of the load skipped, through its actor; the load as it
    /// stands afterwards (a stop skipped already stays as it was).
    pub async fn skip_stop(
        &self,
        account: &AccountId,
        id: &LoadId,
        stop: StopId,
    ) -> Result<Load, LoadError> {
        let edit = LoadEdit {
            skip_stop: Some(stop),
            ..LoadEdit::default()
        };
        self.edit(account, id, edit).await
    }

    /// The account's load with this `reference`, if any.
    pub async fn by_reference(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> Result<Option<Load>, LoadError> {
        Ok(references::find(&*self.storage, account, reference).await?)
    }

    pub async fn change_status(
        &self,
        account: &AccountId,
        id: &LoadId,
        change: StatusChange,
    ) -> Result<Load, LoadError> {
        let message = ChangeStatus {
            account: account.clone(),
            change,
        };
        self.registry.send(id, message).await?
    }
}
