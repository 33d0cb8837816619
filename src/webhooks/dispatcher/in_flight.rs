//! What the dispatcher has taken on and not yet finished.

use super::Key;
use crate::domain::ids::WebhookId;
use crate::webhooks::{FastMap, FastSet};

/// Deliveries taken from the schedule, and the requests open for some of them.
/// They are counted together because they end together: a request's slot comes
/// free when its answer arrives, but its delivery stays held until the outcome is
/// durable, so that a reload (which still reads it as pending) or a redelivery
/// never takes it a second time. The counts are the limits a slow receiver is
/// held to.
#[derive(Default)]
pub(super) struct InFlight {
    /// Taken from the schedule and not yet durably recorded: being sent, parked,
    /// recorded, or redelivered.
    held: FastSet<Key>,
    /// Requests open per subscription; a subscription with none has no entry.
    per_webhook: FastMap<WebhookId, usize>,
    /// Requests open in all.
    requests: usize,
}

impl InFlight {
    /// Holds a delivery until its outcome (or its failure to be written) is known.
    pub(super) fn hold(&mut self, key: Key) {
        self.held.insert(key);
    }

    pub(super) fn release(&mut self, key: &Key) {
        self.held.remove(key);
    }

    pub(super) fn holds(&self, key: &Key) -> bool {
        self.held.contains(key)
    }

    /// How many deliveries are held (storage still has them as pending).
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }

    /// The held deliveries as they are now, for work that runs off the actor.
    pub(super) fn snapshot(&self) -> FastSet<Key> {
        self.held.clone()
    }

    /// Holds a delivery and opens a request for it.
    pub(super) fn open_request(&mut self, key: Key) {
        *self.per_webhook.entry(key.0.clone()).or_default() += 1;
        self.requests += 1;
        self.held.insert(key);
    }

    /// A request was answered (or never made); its delivery stays held.
    pub(super) fn close_request(&mut self, webhook: &WebhookId) {
        self.requests -= 1;
        if let Some(open) = self.per_webhook.get_mut(webhook) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                self.per_webhook.remove(webhook);
            }
        }
    }

    /// Requests that may still be opened, out of `limit` in all.
    pub(super) fn free(&self, limit: usize) -> usize {
        limit.saturating_sub(self.requests)
    }

    /// Requests that may still be opened to `webhook`, out of `limit` for each.
    pub(super) fn free_for(&self, webhook: &WebhookId, limit: usize) -> usize {
        limit.saturating_sub(self.per_webhook.get(webhook).copied().unwrap_or(0))
    }

    pub(super) fn no_requests(&self) -> bool {
        self.requests == 0
    }
}
