//! The webhook dispatch actor: fans committed events out to the subscriptions
//! that want them (durable delivery records), sends due deliveries, signed, and
//! records each attempt. Storage, not memory, holds the backlog: the actor keeps
//! only the deliveries in flight, so a dead receiver costs memory for at most
//! `max_per_webhook` requests and never slows GPS ingest or other receivers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::client::literal_forbidden;
use super::directory::Directory;
use super::retry::RetryPolicy;
use super::signing::signature;
use crate::clock::Clock;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription, UrlPolicy, parse_url};
use crate::storage::{Storage, StorageError};

pub const BACKLOG_METRIC: &str = "freight_webhook_backlog";
pub const DELIVERIES_METRIC: &str = "freight_webhook_deliveries_total";

/// Events fanned out per storage round trip.
const FAN_OUT_BATCH: usize = 512;
#[derive(Debug, Clone)]
pub struct DispatchSettings {
    pub url_policy: UrlPolicy,
    pub retry: RetryPolicy,
    /// How often the outbox and the retry schedule are looked at without a nudge.
    pub tick: Duration,
    pub max_in_flight: usize,
    /// Concurrent requests to one subscription: a slow receiver holds only these.
    pub max_per_webhook: usize,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            url_policy: UrlPolicy::default(),
            retry: RetryPolicy::default(),
            tick: Duration::from_secs(1),
            max_in_flight: 256,
            max_per_webhook: 16,
        }
    }
}

/// New events are in the outbox.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EventsCommitted;

/// The schedule changed (a redelivery, a re-enabled subscription): look now.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ScheduleChanged;

pub struct Dispatcher {
    storage: Arc<dyn Storage>,
    directory: Arc<Directory>,
    client: reqwest::Client,
    clock: Clock,
    settings: DispatchSettings,
    in_flight: HashSet<(WebhookId, EventId)>,
    per_webhook: HashMap<WebhookId, usize>,
    fanning_out: bool,
    fan_out_again: bool,
    scanning: bool,
    scan_again: bool,
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

impl Dispatcher {
    pub fn new(
        storage: Arc<dyn Storage>,
        directory: Arc<Directory>,
        client: reqwest::Client,
        clock: Clock,
        settings: DispatchSettings,
    ) -> Self {
        Dispatcher {
            storage,
            directory,
            client,
            clock,
            settings,
            in_flight: HashSet::new(),
            per_webhook: HashMap::new(),
            fanning_out: false,
            fan_out_again: false,
            scanning: false,
            scan_again: false,
        }
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        self.fan_out(ctx);
        self.dispatch_due(ctx);
    }

    fn fan_out(&mut self, ctx: &mut Context<Self>) {
        if self.fanning_out {
            self.fan_out_again = true;
            return;
        }
        self.fanning_out = true;
        let (storage, directory, clock) = (
            self.storage.clone(),
            self.directory.clone(),
            self.clock.clone(),
        );
        let work = async move {
            let mut made = 0usize;
            loop {
                let events = storage.unfanned_events(FAN_OUT_BATCH).await?;
                if events.is_empty() {
                    return Ok::<_, StorageError>(made);
                }
                let now = clock.now();
                let deliveries: Vec<Delivery> = events
                    .iter()
                    .flat_map(|event| {
                        directory
                            .matching(&event.account_id, event.kind)
                            .into_iter()
                            .map(move |subscription| Delivery {
                                webhook_id: subscription.id.clone(),
                                event_id: event.id.clone(),
                                event_type: event.kind,
                                status: DeliveryStatus::Pending,
                                attempts: 0,
                                last_status_code: None,
                                last_error: None,
                                next_attempt_at: Some(now),
                                delivered_at: None,
                                created_at: now,
                            })
                    })
                    .collect();
                let ids: Vec<EventId> = events.into_iter().map(|e| e.id).collect();
                storage.fan_out(&deliveries, &ids).await?;
                made += deliveries.len();
                metrics::gauge!(BACKLOG_METRIC).increment(deliveries.len() as f64);
            }
        };
        ctx.spawn(work.into_actor(self).map(|result, actor, ctx| {
            actor.fanning_out = false;
            match result {
                Ok(made) if made > 0 => actor.dispatch_due(ctx),
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, "webhook fan-out failed; retrying on the next tick")
                }
            }
            if std::mem::take(&mut actor.fan_out_again) {
                actor.fan_out(ctx);
            }
        }));
    }

    fn dispatch_due(&mut self, ctx: &mut Context<Self>) {
        if self.scanning {
            self.scan_again = true;
            return;
        }
        let free = self
            .settings
            .max_in_flight
            .saturating_sub(self.in_flight.len());
        if free == 0 {
            return;
        }
        self.scanning = true;
        let storage = self.storage.clone();
        let now = self.clock.now();
        // In-flight deliveries are still due in storage: ask for enough to skip them.
        let wanted = free + self.in_flight.len();
        let work = async move { storage.due_deliveries(now, wanted).await };
        ctx.spawn(work.into_actor(self).map(|due, actor, ctx| {
            actor.scanning = false;
            match due {
                Ok(due) => actor.start_due(ctx, due),
                Err(error) => tracing::error!(%error, "reading due webhook deliveries failed"),
            }
            if std::mem::take(&mut actor.scan_again) {
                actor.dispatch_due(ctx);
            }
        }));
    }

    fn start_due(&mut self, ctx: &mut Context<Self>, due: Vec<Delivery>) {
        for delivery in due {
            if self.in_flight.len() >= self.settings.max_in_flight {
                break;
            }
            let key = (delivery.webhook_id.clone(), delivery.event_id.clone());
            if self.in_flight.contains(&key) {
                continue;
            }
            match self.directory.get(&delivery.webhook_id) {
                // Deleted meanwhile; its deliveries went with it.
                None => {}
                Some(subscription) if !subscription.enabled => self.park(ctx, delivery),
                Some(subscription) => {
                    let busy = self.per_webhook.get(&subscription.id).copied().unwrap_or(0);
                    if busy < self.settings.max_per_webhook {
                        self.send(ctx, subscription, delivery);
                    }
                }
            }
        }
    }

    /// A disabled subscription's delivery leaves the schedule until it is enabled again.
    fn park(&mut self, ctx: &mut Context<Self>, delivery: Delivery) {
        let storage = self.storage.clone();
        let parked = Delivery {
            next_attempt_at: None,
            ..delivery.clone()
        };
        ctx.spawn(
            async move {
                if let Err(error) = storage.put_delivery(&delivery, &parked).await {
                    tracing::error!(%error, "parking a webhook delivery failed");
                }
            }
            .into_actor(self),
        );
    }

    fn send(
        &mut self,
        ctx: &mut Context<Self>,
        subscription: Arc<Subscription>,
        delivery: Delivery,
    ) {
        let key = (delivery.webhook_id.clone(), delivery.event_id.clone());
        self.in_flight.insert(key.clone());
        *self.per_webhook.entry(subscription.id.clone()).or_default() += 1;
        let (storage, directory, client, clock) = (
            self.storage.clone(),
            self.directory.clone(),
            self.client.clone(),
            self.clock.clone(),
        );
        let (retry, url_policy) = (self.settings.retry.clone(), self.settings.url_policy);
        let work = async move {
            // A scan that began before an earlier attempt finished may hand the same
            // delivery over again: send only what storage still says is due.
            let current = storage
                .get_delivery(&delivery.webhook_id, &delivery.event_id)
                .await?;
            if current.as_ref() != Some(&delivery) {
                tracing::debug!(event = %delivery.event_id, "skipping a stale due delivery");
                return Ok(());
            }
            let Some(event) = storage.get_event(&delivery.event_id).await? else {
                return Err(StorageError::Corrupt(format!(
                    "delivery of missing event {}",
                    delivery.event_id
                )));
            };
            let body = serde_json::to_vec(&event.payload()).expect("events serialise");
            let attempt =
                attempt(&client, &clock, &subscription, &event.id, body, url_policy).await;
            let now = clock.now();
            let (next, disable) = after_attempt(&delivery, &attempt, &retry, now);
            storage.put_delivery(&delivery, &next).await?;
            metrics::counter!(DELIVERIES_METRIC, "outcome" => outcome_label(&next)).increment(1);
            if next.status != DeliveryStatus::Pending {
                metrics::gauge!(BACKLOG_METRIC).decrement(1.0);
            }
            if let Some(reason) = disable {
                disable_subscription(&*storage, &directory, &subscription.id, reason, now).await?;
            }
            Ok(())
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            actor.in_flight.remove(&key);
            if let Some(busy) = actor.per_webhook.get_mut(&key.0) {
                *busy = busy.saturating_sub(1);
            }
            match result {
                Ok(()) => tracing::debug!(event = %key.1, "webhook attempt recorded"),
                Err(error) => {
                    tracing::error!(%error, "recording a webhook attempt failed; it will be retried")
                }
            }
            actor.dispatch_due(ctx);
        }));
    }
}

fn outcome_label(delivery: &Delivery) -> &'static str {
    match delivery.status {
        DeliveryStatus::Delivered => "delivered",
        DeliveryStatus::Pending => "retrying",
        DeliveryStatus::Failed => "failed",
    }
}

/// Sends one signed attempt. Never fails: every problem is the attempt's outcome.
pub async fn attempt(
    client: &reqwest::Client,
    clock: &Clock,
    subscription: &Subscription,
    event_id: &EventId,
    body: Vec<u8>,
    url_policy: UrlPolicy,
) -> Attempt {
    let refused = |error: String| Attempt {
        status_code: None,
        error: Some(error),
    };
    match parse_url(&subscription.url, url_policy) {
        Ok(url) if literal_forbidden(&url.host, url_policy) => {
            return refused("the URL points at an address webhooks may not reach".into());
        }
        Ok(_) => {}
        Err(message) => return refused(format!("the URL {message}")),
    }
    let timestamp = clock.now().timestamp();
    let signature = signature(&subscription.secret, event_id.as_str(), timestamp, &body);
    let sent = client
        .post(&subscription.url)
        .header("content-type", "application/json")
        .header("webhook-id", event_id.as_str())
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) => {
            let status = response.status();
            // Read (a little of) the body so the connection can be reused.
            let _ = response.bytes().await;
            Attempt {
                status_code: Some(status.as_u16()),
                error: (!status.is_success()).then(|| format!("the receiver answered {status}")),
            }
        }
        Err(error) => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            refused(message)
        }
    }
}

/// The delivery after an attempt, and the reason to disable its subscription, if any.
pub fn after_attempt(
    delivery: &Delivery,
    attempt: &Attempt,
    retry: &RetryPolicy,
    now: DateTime<Utc>,
) -> (Delivery, Option<String>) {
    let attempts = delivery.attempts + 1;
    let mut next = Delivery {
        attempts,
        last_status_code: attempt.status_code,
        last_error: attempt.error.clone(),
        ..delivery.clone()
    };
    if attempt.status_code.is_some_and(|s| (200..300).contains(&s)) {
        next.status = DeliveryStatus::Delivered;
        next.delivered_at = Some(now);
        next.next_attempt_at = None;
        return (next, None);
    }
    if attempt.status_code == Some(410) {
        next.status = DeliveryStatus::Failed;
        next.next_attempt_at = None;
        return (
            next,
            Some(format!(
                "the receiver answered 410 Gone to {} at {}",
                delivery.event_id,
                crate::domain::timestamp::format(&now)
            )),
        );
    }
    match retry.delay_before(attempts + 1) {
        Some(delay) => {
            next.next_attempt_at =
                Some(now + chrono::Duration::from_std(delay).unwrap_or_default());
            (next, None)
        }
        None => {
            next.status = DeliveryStatus::Failed;
            next.next_attempt_at = None;
            let since = crate::domain::timestamp::format(&delivery.created_at);
            let reason = format!(
                "every one of {attempts} attempts to deliver {} since {since} failed; the last: {}",
                delivery.event_id,
                attempt.error.as_deref().unwrap_or("unknown error")
            );
            (next, Some(reason))
        }
    }
}

async fn disable_subscription(
    storage: &dyn Storage,
    directory: &Directory,
    id: &WebhookId,
    reason: String,
    now: DateTime<Utc>,
) -> Result<(), StorageError> {
    let Some(current) = storage.get_webhook(id).await? else {
        return Ok(());
    };
    if !current.enabled {
        return Ok(());
    }
    tracing::warn!(webhook = %id, %reason, "disabling webhook subscription");
    let disabled = Subscription {
        enabled: false,
        disabled_reason: Some(reason),
        updated_at: now,
        ..current
    };
    storage.put_webhook(&disabled).await?;
    directory.upsert(disabled);
    Ok(())
}

impl Actor for Dispatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        ctx.run_interval(self.settings.tick, |actor, ctx| actor.pump(ctx));
        self.pump(ctx);
    }
}

impl Handler<EventsCommitted> for Dispatcher {
    type Result = ();

    fn handle(&mut self, _: EventsCommitted, ctx: &mut Self::Context) {
        self.fan_out(ctx);
    }
}

impl Handler<ScheduleChanged> for Dispatcher {
    type Result = ();

    fn handle(&mut self, _: ScheduleChanged, ctx: &mut Self::Context) {
        self.dispatch_due(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

    fn delivery(now: DateTime<Utc>) -> Delivery {
        Delivery {
            webhook_id: WebhookId::generate(),
            event_id: EventId::generate(),
            event_type: EventType::LoadCreated,
            status: DeliveryStatus::Pending,
            attempts: 0,
            last_status_code: None,
            last_error: None,
            next_attempt_at: Some(now),
            delivered_at: None,
            created_at: now,
        }
    }

    fn failed(code: Option<u16>) -> Attempt {
        Attempt {
            status_code: code,
            error: Some("down".into()),
        }
    }

    #[test]
    fn failures_follow_the_schedule_then_fail_and_disable() {
        let retry = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        let start = Utc::now();
        let mut current = delivery(start);
        let mut now = start;
        let mut waits = Vec::new();
        loop {
            let (next, disable) = after_attempt(&current, &failed(Some(500)), &retry, now);
            if next.status == DeliveryStatus::Failed {
                assert_eq!(next.attempts, 10);
                assert!(disable.unwrap().contains("every one of 10 attempts"));
                break;
            }
            assert!(disable.is_none());
            let at = next.next_attempt_at.unwrap();
            waits.push((at - now).num_seconds());
            now = at;
            current = next;
        }
        assert_eq!(
            waits,
            [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        );
    }

    #[test]
    fn success_and_gone() {
        let now = Utc::now();
        let ok = Attempt {
            status_code: Some(204),
            error: None,
        };
        let (delivered, disable) = after_attempt(&delivery(now), &ok, &RetryPolicy::default(), now);
        assert_eq!(delivered.status, DeliveryStatus::Delivered);
        assert_eq!(delivered.delivered_at, Some(now));
        assert!(disable.is_none());
        let (gone, disable) = after_attempt(
            &delivery(now),
            &failed(Some(410)),
            &RetryPolicy::default(),
            now,
        );
        assert_eq!(gone.status, DeliveryStatus::Failed);
        assert!(disable.unwrap().contains("410"));
        let (retrying, _) =
            after_attempt(&delivery(now), &failed(None), &RetryPolicy::default(), now);
        assert_eq!(retrying.status, DeliveryStatus::Pending);
        assert_eq!(retrying.attempts, 1);
    }

    /// The dispatcher follows the retry schedule: under paused tokio time (the
    /// ticks) and a manual clock (the due times), moved forward together.
    #[actix_rt::test]
    async fn retries_come_due_on_schedule() {
        use crate::clock::{Clock, ManualClock};
        use crate::domain::event::Event;
        use crate::domain::ids::AccountId;
        use crate::storage::conformance::sample_load;
        use crate::storage::embedded::EmbeddedStore;

        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
        let manual = ManualClock::starting_at(Utc::now());
        let clock = Clock::manual(manual.clone());
        let account = AccountId::generate();
        let now = clock.now();
        let subscription = Subscription {
            id: WebhookId::generate(),
            account_id: account.clone(),
            // Port 1 on loopback refuses at once: every attempt fails fast.
            url: "http://127.0.0.1:1/hook".into(),
            events: vec![EventType::LoadCreated],
            secret: "0123456789abcdef0123".into(),
            enabled: true,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
        };
        storage.put_webhook(&subscription).await.unwrap();
        let load = sample_load(&account, "TX", "GA");
        let event = Event::new(
            account,
            load.id.clone(),
            EventType::LoadCreated,
            1,
            now,
            serde_json::json!({}),
        );
        storage
            .insert_load(&load, std::slice::from_ref(&event))
            .await
            .unwrap();

        let policy = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let settings = DispatchSettings {
            url_policy: policy,
            retry: RetryPolicy {
                jitter: 0.0,
                ..RetryPolicy::default()
            },
            tick: Duration::from_secs(1),
            ..DispatchSettings::default()
        };
        let directory = Arc::new(Directory::new(vec![subscription.clone()]));
        let _dispatcher = Dispatcher::new(
            storage.clone(),
            directory,
            super::super::client::build(policy),
            clock,
            settings,
        )
        .start();
        tokio::time::pause();

        // Moves both clocks by `seconds`, one tick at a time, letting the work run.
        let step = |seconds: i64| {
            let manual = manual.clone();
            async move {
                for _ in 0..seconds {
                    manual.advance(chrono::Duration::seconds(1));
                    tokio::time::advance(Duration::from_secs(1)).await;
                    for _ in 0..50 {
                        tokio::task::yield_now().await;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };
        let attempts = || {
            let storage = storage.clone();
            let (webhook, event) = (subscription.id.clone(), event.id.clone());
            async move {
                storage
                    .get_delivery(&webhook, &event)
                    .await
                    .unwrap()
                    .map(|d| d.attempts)
            }
        };
        let mut waited = 0;
        while attempts().await != Some(1) {
            step(1).await;
            waited += 1;
            assert!(waited < 30, "the first attempt never happened");
        }
        step(3).await;
        assert_eq!(attempts().await, Some(1), "the second attempt waits 5 s");
        step(3).await;
        assert_eq!(attempts().await, Some(2), "and then happens");
        step(60).await;
        assert_eq!(attempts().await, Some(2), "the third waits 5 minutes");
        let delivery = storage
            .get_delivery(&subscription.id, &event.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(delivery.status, DeliveryStatus::Pending);
        assert!(delivery.last_error.unwrap().contains("onnect"));
    }
}
