//! The way into the dispatcher from the rest of the service: committed events
//! (so it fans them out at once instead of reading the outbox), and changes to
//! the schedule that must go through it (a redelivery, a re-enabled webhook).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use actix::Addr;

use super::dispatcher::{Dispatcher, Drain, EventsCommitted, Forget, Redeliver, Requeue};
use crate::domain::event::Event;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::Delivery;
use crate::storage::StorageError;
use crate::unavailable::Unavailable;

/// Why a change that goes through the dispatcher did not happen.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// Shown each committed event besides the dispatcher (see [`Notifier::also_show`]).
type Watcher = Box<dyn Fn(&[Event]) + Send + Sync>;

#[derive(Default)]
pub struct Notifier {
    dispatcher: OnceLock<Addr<Dispatcher>>,
    /// Set when a notice could not be handed over: the dispatcher then reads the
    /// outbox, where every committed event is.
    missed: Arc<AtomicBool>,
    watcher: OnceLock<Watcher>,
}

impl Notifier {
    pub fn attach(&self, dispatcher: Addr<Dispatcher>) {
        let _ = self.dispatcher.set(dispatcher);
    }

    /// The flag the dispatcher shares with this notifier.
    pub fn missed_flag(&self) -> Arc<AtomicBool> {
        self.missed.clone()
    }

    /// Shows `watcher` every event committed from now on, as it is handed to
    /// the dispatcher, on the instance that committed it (the live streams
    /// hear of status changes this way). It must be cheap and never block.
    pub fn also_show(&self, watcher: impl Fn(&[Event]) + Send + Sync + 'static) {
        let _ = self.watcher.set(Box::new(watcher));
    }

    /// Cheap and never blocks: a full mailbox just means the dispatcher is busy
    /// and will find the events in the outbox.
    pub fn events_committed(&self, events: Vec<Event>) {
        if let Some(watcher) = self.watcher.get() {
            watcher(&events);
        }
        let delivered = self
            .dispatcher
            .get()
            .is_some_and(|dispatcher| dispatcher.try_send(EventsCommitted(events)).is_ok());
        if !delivered {
            self.missed.store(true, Ordering::Relaxed);
        }
    }

    /// Makes a delivery due now; `None` if it does not exist.
    pub async fn redeliver(
        &self,
        webhook: &WebhookId,
        event: &EventId,
    ) -> Result<Option<Delivery>, DispatchError> {
        let message = Redeliver {
            webhook: webhook.clone(),
            event: event.clone(),
        };
        let answer = self
            .dispatcher()?
            .send(message)
            .await
            .map_err(Unavailable::dispatcher)?;
        Ok(answer?)
    }

    /// A webhook was deleted: its queued deliveries leave the dispatcher now.
    /// Without a dispatcher (or with a full mailbox) they leave as each comes
    /// due, as before.
    pub fn webhook_deleted(&self, webhook: &WebhookId) {
        if let Ok(dispatcher) = self.dispatcher() {
            dispatcher.do_send(Forget(webhook.clone()));
        }
    }

    /// Makes the deliveries parked while a webhook was disabled due now.
    pub async fn requeue(&self, webhook: &WebhookId) -> Result<(), DispatchError> {
        let answer = self
            .dispatcher()?
            .send(Requeue(webhook.clone()))
            .await
            .map_err(Unavailable::dispatcher)?;
        Ok(answer?)
    }

    /// Waits (at most `limit`) until the attempts in flight have been sent and
    /// recorded; the dispatcher starts no new ones after this is called.
    pub async fn drain(&self, limit: std::time::Duration) -> bool {
        let Ok(dispatcher) = self.dispatcher() else {
            return true;
        };
        tokio::time::timeout(limit, dispatcher.send(Drain))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn dispatcher(&self) -> Result<&Addr<Dispatcher>, Unavailable> {
        self.dispatcher
            .get()
            .ok_or(Unavailable::WebhookDispatcher(None))
    }
}
