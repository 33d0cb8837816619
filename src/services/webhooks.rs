//! Webhook subscriptions: create, read, change, delete, test, and their delivery log.

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::ids::{AccountId, EventId, WebhookId};
use crate::domain::webhook::{
    Delivery, HISTORY_RETENTION_DAYS, NewSubscription, Subscription, SubscriptionPatch, UrlPolicy,
};
use crate::storage::{Page, PageRequest, Storage, StorageError};
use crate::unavailable::Unavailable;
use crate::webhooks::attempt::{Attempt, Endpoint, attempt};
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::{DispatchError, Notifier};

/// Subscriptions per account: each costs a little on every change of the account.
pub const MAX_SUBSCRIPTIONS: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook not found")]
    NotFound,
    #[error("delivery not found")]
    DeliveryNotFound,
    #[error("an account may have at most {MAX_SUBSCRIPTIONS} webhooks")]
    TooMany,
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

impl From<DispatchError> for WebhookError {
    fn from(error: DispatchError) -> Self {
        match error {
            DispatchError::Storage(e) => e.into(),
            DispatchError::Unavailable(e) => e.into(),
        }
    }
}

pub struct WebhookService {
    storage: Arc<dyn Storage>,
    directory: Arc<Directory>,
    notifier: Arc<Notifier>,
    client: reqwest::Client,
    clock: Clock,
    policy: UrlPolicy,
}

impl WebhookService {
    pub fn new(
        storage: Arc<dyn Storage>,
        directory: Arc<Directory>,
        notifier: Arc<Notifier>,
        client: reqwest::Client,
        clock: Clock,
        policy: UrlPolicy,
    ) -> Self {
        Self {
            storage,
            directory,
            notifier,
            client,
            clock,
            policy,
        }
    }

    pub fn url_policy(&self) -> UrlPolicy {
        self.policy
    }

    pub async fn create(
        &self,
        account: &AccountId,
        new: NewSubscription,
    ) -> Result<Subscription, WebhookError> {
        if self.directory.of_account(account).len() >= MAX_SUBSCRIPTIONS {
            return Err(WebhookError::TooMany);
        }
        let now = self.clock.now();
        let subscription = Subscription {
            id: WebhookId::generate(),
            account_id: account.clone(),
            url: new.url,
            events: new.events,
            secret: new.secret,
            enabled: true,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
        };
        self.storage.put_webhook(&subscription).await?;
        self.directory.upsert(subscription.clone());
        Ok(subscription)
    }

    /// Another account's webhook is not found, like a missing one.
    pub fn get(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<Arc<Subscription>, WebhookError> {
        self.directory
            .get(id)
            .filter(|s| &s.account_id == account)
            .ok_or(WebhookError::NotFound)
    }

    /// An account's webhooks, newest first.
    pub fn list(&self, account: &AccountId, page: PageRequest) -> Page<Arc<Subscription>> {
        let all = self.directory.of_account(account);
        let total = all.len() as u64;
        let items = all
            .into_iter()
            .skip(page.offset as usize)
            .take(page.limit as usize)
            .collect();
        Page { items, total }
    }

    pub async fn update(
        &self,
        account: &AccountId,
        id: &WebhookId,
        patch: SubscriptionPatch,
    ) -> Result<Subscription, WebhookError> {
        let current = self.get(account, id)?;
        let enabled = patch.enabled.unwrap_or(current.enabled);
        let re_enabled = enabled && !current.enabled;
        let updated = Subscription {
            url: patch.url.unwrap_or_else(|| current.url.clone()),
            events: patch.events.unwrap_or_else(|| current.events.clone()),
            secret: patch.secret.unwrap_or_else(|| current.secret.clone()),
            enabled,
            // The service's reason stays until the client enables it again.
            disabled_reason: if enabled {
                None
            } else {
                current.disabled_reason.clone()
            },
            updated_at: self.clock.now(),
            ..(*current).clone()
        };
        self.storage.put_webhook(&updated).await?;
        self.directory.upsert(updated.clone());
        if re_enabled {
            self.requeue_parked(&updated.id).await?;
        }
        Ok(updated)
    }

    /// Forgets webhook history past the retention period, in bounded steps so the
    /// store is never held for long. Returns how many records went.
    pub async fn prune_history(&self) -> Result<u64, StorageError> {
        const STEP: usize = 10_000;
        let before = self.clock.now() - chrono::Duration::days(HISTORY_RETENTION_DAYS);
        let mut total = 0;
        loop {
            let gone = self.storage.prune_webhook_history(before, STEP).await?;
            total += gone;
            if (gone as usize) < STEP {
                return Ok(total);
            }
        }
    }

    /// At shutdown: lets the attempts in flight finish and be recorded (at most
    /// `limit`); whatever is still pending is in storage for the next start.
    pub async fn drain(&self, limit: std::time::Duration) -> bool {
        self.notifier.drain(limit).await
    }

    /// Deliveries that waited while the webhook was disabled become due now.
    async fn requeue_parked(&self, id: &WebhookId) -> Result<(), WebhookError> {
        Ok(self.notifier.requeue(id).await?)
    }

    pub async fn delete(&self, account: &AccountId, id: &WebhookId) -> Result<(), WebhookError> {
        let current = self.get(account, id)?;
        self.storage.delete_webhook(&current).await?;
        self.directory.remove(&current);
        self.notifier.webhook_deleted(id);
        Ok(())
    }

    /// Sends a signed `webhook.test` event now (not through the outbox) and says how
    /// the receiver answered.
    pub async fn test(
        &self,
        account: &AccountId,
        id: &WebhookId,
    ) -> Result<(EventId, Attempt), WebhookError> {
        let subscription = self.get(account, id)?;
        let event_id = EventId::generate();
        let body = serde_json::json!({
            "id": event_id,
            "type": "webhook.test",
            "timestamp": crate::domain::timestamp::format(&self.clock.now()),
            "data": {"webhook_id": subscription.id},
        });
        let body = serde_json::to_vec(&body).expect("json serialises").into();
        let endpoint = Endpoint::new(&subscription, self.policy);
        let outcome = attempt(&self.client, &self.clock, &endpoint, &event_id, body).await;
        Ok((event_id, outcome))
    }

    pub async fn deliveries(
        &self,
        account: &AccountId,
        id: &WebhookId,
        page: PageRequest,
    ) -> Result<Page<Delivery>, WebhookError> {
        let subscription = self.get(account, id)?;
        Ok(self.storage.list_deliveries(&subscription.id, page).await?)
    }

    /// Schedules another attempt of a delivery now, under the same event id.
    pub async fn redeliver(
        &self,
        account: &AccountId,
        id: &WebhookId,
        event: &EventId,
    ) -> Result<Delivery, WebhookError> {
        let subscription = self.get(account, id)?;
        let again = self
            .notifier
            .redeliver(&subscription.id, event)
            .await?
            .ok_or(WebhookError::DeliveryNotFound)?;
        Ok(again)
    }
}
