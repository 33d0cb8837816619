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

    /// Makes the directory what storage holds (`subscriptions`, all of them):
    /// with a store shared by several instances, subscriptions created, changed
    /// or deleted on another instance reach this one so. Each subscription is
    /// replaced whole; one absent from `subscriptions` is removed.
    pub fn replace_all(&self, subscriptions: Vec<Subscription>) {
        let keep: std::collections::HashSet<WebhookId> =
            subscriptions.iter().map(|s| s.id.clone()).collect();
        let gone: Vec<Arc<Subscription>> = self
            .by_id
            .iter()
            .filter(|entry| !keep.contains(entry.key()))
            .map(|entry| entry.value().clone())
            .collect();
        for subscription in gone {
            self.remove(&subscription);
        }
        for subscription in subscriptions {
            let unchanged = self
                .by_id
                .get(&subscription.id)
                .is_some_and(|known| **known == subscription);
            if !unchanged {
                self.upsert(subscription);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

    fn subscription(account: &AccountId, events: Vec<EventType>) -> Subscription {
        let now = chrono::Utc::now();
        Subscription {
            id: WebhookId::generate(),
            account_id: account.clone(),
            url: "https://example.com/hook".into(),
            events,
            secret: "whsec_test".into(),
            enabled: true,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn replacing_all_adds_changes_and_removes() {
        let account = AccountId::generate();
        let kept = subscription(&account, vec![EventType::LoadCreated]);
        let dropped = subscription(&account, vec![EventType::LoadAssigned]);
        let directory = Directory::new(vec![kept.clone(), dropped.clone()]);
        assert!(directory.wants(&account, EventType::LoadAssigned));

        let mut changed = kept.clone();
        changed.events = vec![EventType::DeliveryCompleted];
        let added = subscription(&account, vec![EventType::LoadStatusChanged]);
        directory.replace_all(vec![changed.clone(), added.clone()]);

        assert!(directory.get(&dropped.id).is_none());
        assert!(!directory.wants(&account, EventType::LoadAssigned));
        assert!(!directory.wants(&account, EventType::LoadCreated));
        assert!(directory.wants(&account, EventType::DeliveryCompleted));
        assert!(directory.wants(&account, EventType::LoadStatusChanged));
        assert_eq!(directory.of_account(&account).len(), 2);
    }
}
