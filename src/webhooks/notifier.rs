//! Tells the dispatcher that events were committed, so it fans them out at once
//! instead of on its next periodic look at the outbox.

use std::sync::OnceLock;

use actix::Addr;

use super::dispatcher::{Dispatcher, EventsCommitted, ScheduleChanged};

#[derive(Default)]
pub struct Notifier {
    dispatcher: OnceLock<Addr<Dispatcher>>,
}

impl Notifier {
    pub fn attach(&self, dispatcher: Addr<Dispatcher>) {
        let _ = self.dispatcher.set(dispatcher);
    }

    /// Cheap and never blocks: a full mailbox just means the dispatcher is busy
    /// and will find the events on its own.
    pub fn events_committed(&self) {
        if let Some(dispatcher) = self.dispatcher.get() {
            let _ = dispatcher.try_send(EventsCommitted);
        }
    }

    /// Deliveries became due outside the dispatcher (a redelivery, a re-enable).
    pub fn schedule_changed(&self) {
        if let Some(dispatcher) = self.dispatcher.get() {
            let _ = dispatcher.try_send(ScheduleChanged);
        }
    }
}
