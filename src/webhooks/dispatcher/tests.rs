use chrono::{DateTime, Utc};

use super::sending::expired;
use super::*;
use crate::domain::event::EventType;
use crate::domain::fixtures::{delivered_at, sample_load};
use crate::domain::ids::AccountId;
use crate::domain::webhook::{DeliveryStatus, Subscription};
use crate::storage::embedded::EmbeddedStore;

#[test]
fn a_delivery_outliving_its_event_fails_and_says_why() {
    let now = Utc::now();
    let parked = Delivery {
        next_attempt_at: None,
        ..Delivery::new(
            WebhookId::generate(),
            EventId::generate(),
            EventType::LoadCreated,
            now,
        )
    };
    let outcome = expired(parked.clone(), true);
    assert_eq!(outcome.previous, parked);
    assert_eq!(outcome.next.status, DeliveryStatus::Failed);
    assert_eq!(outcome.next.next_attempt_at, None);
    assert!(outcome.next.last_error.unwrap().contains("30-day history"));
    assert!(outcome.disable.is_none());
    assert!(!outcome.first_record);
}

/// A subscription to `load.created` at port 1 on loopback, which refuses at
/// once: every attempt fails fast, and is recorded.
fn refused_subscription(account: &AccountId, created_at: DateTime<Utc>) -> Subscription {
    Subscription {
        id: WebhookId::generate(),
        account_id: account.clone(),
        url: "http://127.0.0.1:1/hook".into(),
        events: vec![EventType::LoadCreated],
        secret: "0123456789abcdef0123".into(),
        enabled: true,
        disabled_reason: None,
        created_at,
        updated_at: created_at,
    }
}

/// A load of `account` and its `load.created` event, committed to the outbox.
async fn committed_event(storage: &dyn Storage, account: &AccountId, at: DateTime<Utc>) -> Event {
    let load = sample_load(account, "TX", "GA");
    let event = Event::new(
        account.clone(),
        load.id.clone(),
        EventType::LoadCreated,
        1,
        at,
        serde_json::json!({}),
    );
    storage
        .insert_load(&load, std::slice::from_ref(&event))
        .await
        .unwrap();
    event
}

/// A dispatcher over `storage` that may call loopback over http.
fn start_dispatcher(
    storage: &Arc<dyn Storage>,
    subscriptions: Vec<Subscription>,
    clock: Clock,
    settings: DispatchSettings,
) -> Addr<Dispatcher> {
    let policy = UrlPolicy {
        allow_http: true,
        allow_private: true,
    };
    Dispatcher::new(
        storage.clone(),
        Arc::new(Directory::new(subscriptions)),
        super::super::client::build(policy, None),
        clock,
        DispatchSettings {
            url_policy: policy,
            ..settings
        },
        Arc::new(AtomicBool::new(true)),
        None,
    )
    .start()
}

/// A restart finds an event still in the outbox after some of its deliveries
/// were recorded: only the others are sent, a subscription made after the
/// event gets nothing, and the event is marked fanned out once all are.
#[actix_rt::test]
async fn a_restart_sends_only_the_deliveries_never_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
    let account = AccountId::generate();
    let now = Utc::now();
    let (done, waiting) = (
        refused_subscription(&account, now),
        refused_subscription(&account, now),
    );
    let later = refused_subscription(&account, now + chrono::Duration::seconds(1));
    for s in [&done, &waiting, &later] {
        storage.put_webhook(s).await.unwrap();
    }
    let event = committed_event(&*storage, &account, now).await;
    // Before the "crash": one delivery attempted and recorded, the marker still there.
    let delivered = delivered_at(
        &Delivery::new(done.id.clone(), event.id.clone(), event.kind, now),
        now,
    );
    storage
        .put_deliveries(vec![(None, delivered.clone())], Vec::new())
        .await
        .unwrap();

    let subscriptions = vec![done.clone(), waiting.clone(), later.clone()];
    let _dispatcher = start_dispatcher(
        &storage,
        subscriptions,
        Clock::system(),
        DispatchSettings::default(),
    );
    tokio::time::pause();
    let mut steps = 0;
    while storage
        .unfanned_events(None, 10)
        .await
        .unwrap()
        .contains(&event)
    {
        // No timers are involved: the start-up scan, one attempt and its write.
        tokio::time::sleep(Duration::from_millis(1)).await;
        steps += 1;
        assert!(steps < 10_000, "the event was never marked fanned out");
    }
    let stored = storage.get_delivery(&done.id, &event.id).await.unwrap();
    assert_eq!(stored, Some(delivered), "not sent again");
    let attempted = storage.get_delivery(&waiting.id, &event.id).await.unwrap();
    let attempted = attempted.expect("recorded");
    assert_eq!(attempted.attempts, 1);
    assert!(attempted.last_error.unwrap().contains("onnect"));
    let never = storage.get_delivery(&later.id, &event.id).await.unwrap();
    assert_eq!(never, None, "made after the event");
}

/// The dispatcher follows the retry schedule: under paused tokio time (the
/// ticks) and a manual clock (the due times), moved forward together.
#[actix_rt::test]
async fn retries_come_due_on_schedule() {
    use crate::clock::ManualClock;

    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
    let manual = ManualClock::starting_at(Utc::now());
    let clock = Clock::manual(manual.clone());
    let account = AccountId::generate();
    let now = clock.now();
    let subscription = refused_subscription(&account, now);
    storage.put_webhook(&subscription).await.unwrap();
    let event = committed_event(&*storage, &account, now).await;

    let settings = DispatchSettings {
        retry: RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        },
        tick: Duration::from_secs(1),
        ..DispatchSettings::default()
    };
    let _dispatcher = start_dispatcher(&storage, vec![subscription.clone()], clock, settings);
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

/// A loopback receiver that answers 204 and keeps each request's `webhook-id`.
async fn counting_receiver() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let server = HttpServer::new(move || {
        let kept = kept.clone();
        App::new().default_service(web::to(move |request: HttpRequest| {
            let id = request.headers().get("webhook-id").cloned();
            let id = id.and_then(|v| v.to_str().ok().map(str::to_owned));
            kept.lock().unwrap().push(id.unwrap_or_default());
            async { HttpResponse::NoContent().finish() }
        }))
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .unwrap();
    let port = server.addrs()[0].port();
    actix_rt::spawn(server.run());
    (format!("http://127.0.0.1:{port}/hook"), seen)
}

/// Waits (polling, at most 20 s of real time) until `done` holds.
async fn until<F: Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    for _ in 0..2_000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 20 s");
}

/// A store that instances share (the embedded one acting as such), with one
/// subscription to a counting receiver: what the shared-store tests start from.
struct SharedStore {
    _dir: tempfile::TempDir,
    storage: Arc<dyn Storage>,
    account: AccountId,
    subscription: Subscription,
    /// The webhook ids the receiver saw, in arrival order.
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl SharedStore {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path())
            .await
            .unwrap()
            .as_if_shared();
        let storage: Arc<dyn Storage> = Arc::new(store);
        let (url, seen) = counting_receiver().await;
        let account = AccountId::generate();
        let subscription = Subscription {
            url,
            ..refused_subscription(&account, Utc::now())
        };
        storage.put_webhook(&subscription).await.unwrap();
        SharedStore {
            _dir: dir,
            storage,
            account,
            subscription,
            seen,
        }
    }

    /// Starts a dispatcher of the instance named `owner`, ticking every `tick`.
    fn dispatcher(&self, owner: &str, tick: Duration) -> Addr<Dispatcher> {
        let policy = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        Dispatcher::new(
            self.storage.clone(),
            Arc::new(Directory::new(vec![self.subscription.clone()])),
            super::super::client::build(policy, None),
            Clock::system(),
            DispatchSettings {
                url_policy: policy,
                tick,
                ..DispatchSettings::default()
            },
            Arc::new(AtomicBool::new(true)),
            None,
        )
        .owned_by(Arc::from(owner))
        .start()
    }

    /// The ids seen so far, sorted.
    fn seen_sorted(&self) -> Vec<String> {
        let mut ids = self.seen.lock().unwrap().clone();
        ids.sort();
        ids
    }
}

/// Two dispatchers over one store that several instances share (the embedded
/// store acting as one): only the one holding the role sends, whichever
/// instance committed the event; when it shuts down, the other takes over and
/// sends what comes next. Every event reaches the receiver exactly once.
#[actix_rt::test]
async fn with_a_shared_store_one_instance_dispatches_and_another_takes_over() {
    let shared = SharedStore::new().await;
    let (storage, account, seen) = (&shared.storage, &shared.account, &shared.seen);
    let start = |owner: &str| shared.dispatcher(owner, Duration::from_millis(20));
    let first = start("first");
    // The first takes the role at its start; the second finds it held.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = start("second");
    let delivered = |count: usize| {
        let seen = seen.clone();
        async move { seen.lock().unwrap().len() >= count }
    };

    // Noticed by both (were both to act, both would send), then committed by
    // the standby alone (the active one finds those in the outbox).
    let mut events = Vec::new();
    for n in 0..8 {
        let event = committed_event(&**storage, account, Utc::now()).await;
        if n < 5 {
            first.do_send(EventsCommitted(vec![event.clone()]));
        }
        second.do_send(EventsCommitted(vec![event.clone()]));
        events.push(event);
    }
    until("the active instance delivers every event", || delivered(8)).await;
    first.send(Drain).await.unwrap();

    // The standby asks again within `ROLE_RENEWAL` of the release.
    tokio::time::pause();
    tokio::time::advance(role::ROLE_RENEWAL + Duration::from_millis(1)).await;
    tokio::time::resume();
    for _ in 0..3 {
        let event = committed_event(&**storage, account, Utc::now()).await;
        first.do_send(EventsCommitted(vec![event.clone()]));
        second.do_send(EventsCommitted(vec![event.clone()]));
        events.push(event);
    }
    until("the other instance takes over", || delivered(11)).await;
    until("every event is marked fanned out", || {
        let storage = storage.clone();
        async move { storage.unfanned_events(None, 10).await.unwrap().is_empty() }
    })
    .await;
    second.send(Drain).await.unwrap();

    let mut expected: Vec<String> = events.iter().map(|e| e.id.to_string()).collect();
    expected.sort();
    assert_eq!(
        shared.seen_sorted(),
        expected,
        "each event delivered once, by one instance"
    );
}

/// An event committed while another instance held the role is sent by the
/// take-over's scan; its notice, handled only after that delivery is recorded
/// (it was queued while the scan ran), is let go. Before 7c3ddda the take-over
/// moved the floor of the events scans remember past that event, and the late
/// notice sent it again.
#[actix_rt::test]
async fn a_late_notice_of_an_event_the_take_over_sent_is_let_go() {
    let shared = SharedStore::new().await;
    let (storage, account, seen) = (&shared.storage, &shared.account, &shared.seen);
    // Another instance holds the role: this one stands by.
    assert!(
        storage
            .lease_role(role::ROLE, "other", role::ROLE_TTL)
            .await
            .unwrap()
    );
    // No tick within the test: the take-over's scan is the only one, so the
    // second event below is heard of by its notice alone.
    let dispatcher = shared.dispatcher("this", Duration::from_secs(3_600));
    let event = committed_event(&**storage, account, Utc::now()).await;

    // The other instance lets the role go; this one asks within
    // `ROLE_RENEWAL`, takes over, scans the outbox and sends the event.
    storage.release_role(role::ROLE, "other").await.unwrap();
    tokio::time::pause();
    tokio::time::advance(role::ROLE_RENEWAL + Duration::from_millis(1)).await;
    tokio::time::resume();
    until("the take-over's scan sends the event", || {
        let seen = seen.clone();
        async move { !seen.lock().unwrap().is_empty() }
    })
    .await;
    until("its delivery is recorded", || {
        let storage = storage.clone();
        async move { storage.unfanned_events(None, 10).await.unwrap().is_empty() }
    })
    .await;

    // Its notice comes late, with a new event's: both are prepared and
    // scheduled together, so once the new one is sent, a second sending of
    // the first would be under way too, and the drain waits for it.
    let later = committed_event(&**storage, account, Utc::now()).await;
    dispatcher.do_send(EventsCommitted(vec![event.clone(), later.clone()]));
    until("the new event is sent", || {
        let seen = seen.clone();
        async move { seen.lock().unwrap().len() >= 2 }
    })
    .await;
    dispatcher.send(Drain).await.unwrap();

    let mut expected = vec![event.id.to_string(), later.id.to_string()];
    expected.sort();
    assert_eq!(shared.seen_sorted(), expected, "each event sent once");
}
