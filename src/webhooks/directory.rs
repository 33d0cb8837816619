//! The subscriptions in memory: which account wants which events, consulted on
//! every change (is an event needed?) and by the dispatcher (who gets it?).

use std::sync::Arc;

use dashmap::DashMap;

use crate::domain::event::EventType;
use crate::domain::ids::{AccountId, WebhookId};
use crate::domain::webhook::Subscription;

#[derive(Default)]
pub struct Directory {
    by_id: DashMap<WebhookId, Arc<Subscription>>,
    by_account: DashMap<AccountId, Vec<Arc<Subscription>>>,
}

impl Directory {
    pub fn new(subscriptions: Vec<Subscription>) -> Self {
        let directory = Directory::default();
        for subscription in subscriptions {
            directory.upsert(subscription);
        }
        directory
    }

    /// Adds or replaces a subscription (after it was written to storage).
    pub fn upsert(&self, subscription: Subscription) {
        let subscription = Arc::new(subscription);
        self.by_id
            .insert(subscription.id.clone(), subscription.clone());
        let mut list = self
            .by_account
            .entry(subscription.account_id.clone())
            .or_default();
        list.retain(|s| s.id != subscription.id);
        list.push(subscription);
    }

    pub fn remove(&self, subscription: &Subscription) {
        self.by_id.remove(&subscription.id);
        if let Some(mut list) = self.by_account.get_mut(&subscription.account_id) {
            list.retain(|s| s.id != subscription.id);
        }
    }

    pub fn get(&self, id: &WebhookId) -> Option<Arc<Subscription>> {
        self.by_id.get(id).map(|s| s.clone())
    }

    /// Whether any enabled subscription of the account wants `kind`.
    pub fn wants(&self, account: &AccountId, kind: EventType) -> bool {
        self.by_account
            .get(account)
            .is_some_and(|list| list.iter().any(|s| s.wants(kind)))
    }

    /// The enabled subscriptions of the account that want `kind`.
    pub fn matching(&self, account: &AccountId, kind: EventType) -> Vec<Arc<Subscription>> {
        self.by_account
            .get(account)
            .map(|list| list.iter().filter(|s| s.wants(kind)).cloned().collect())
            .unwrap_or_default()
    }

    /// An account's subscriptions, newest first.
    pub fn of_account(&self, account: &AccountId) -> Vec<Arc<Subscription>> {
        let mut list = self
            .by_account
            .get(account)
            .map(|l| l.clone())
            .unwrap_or_default();
        list.sort_by(|a, b| b.id.cmp(&a.id));
        list
    }
}
