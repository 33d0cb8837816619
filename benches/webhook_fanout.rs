//! Webhook fan-out against a bare loop of reqwest POSTs to the same receiver,
//! measured in the same run.
//!
//! Run: `cargo bench --bench webhook_fanout`. A local receiver answers 200 at
//! once. Three figures, all deliveries (or POSTs) per second:
//! - the bare loop: `BENCH_EVENTS` POSTs of a load.created-sized body, with
//!   `BENCH_CONCURRENCY` requests at a time, one client;
//! - backlog drain: the same number of events committed to the outbox while the
//!   service was down; the clock runs from its start until the receiver has every
//!   signed delivery (read outbox, fan out, sign, send, durable delivery log). This
//!   is the dispatcher's rate, compared with the bare loop's;
//! - live: loads created through the service while it runs, until every event is
//!   delivered (includes committing the loads).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use chrono::Utc;
use freight::config::Settings;
use freight::domain::account::{Account, PlanKind};
use freight::domain::event::{Event, EventType};
use freight::domain::ids::{AccountId, LoadId, WebhookId};
use freight::domain::load::Load;
use freight::domain::load::NewLoadInput;
use freight::domain::location::LocationInput;
use freight::domain::webhook::Subscription;
use freight::domain::webhook::UrlPolicy;
use freight::server::startup::Application;
use freight::storage::Storage;
use freight::storage::embedded::EmbeddedStore;
use freight::webhooks::dispatcher::DispatchSettings;
use freight::webhooks::payloads;
use futures_util::StreamExt;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn new_load() -> freight::domain::load::NewLoad {
    let place = |state: &str, zip: &str| LocationInput {
        city: Some("City".into()),
        state: Some(state.into()),
        zip: Some(zip.into()),
        address: None,
    };
    NewLoadInput {
        origin: Some(place("TX", "75201")),
        destination: Some(place("GA", "30301")),
        weight: Some(20_000.0),
        equipment_type: Some("dry_van".into()),
        ..Default::default()
    }
    .validate()
    .expect("valid")
}

fn main() {
    let events = env_or("BENCH_EVENTS", 20_000);
    let concurrency = env_or("BENCH_CONCURRENCY", 32);
    actix_rt::System::new().block_on(async move {
        freight::telemetry::install_crypto_provider();
        // The receiver: counts and answers 200 at once.
        let count = Arc::new(AtomicUsize::new(0));
        // When the first request of a phase arrived (set by the receiver when empty).
        let first = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let (counter, first_seen) = (count.clone(), first.clone());
        let receiver = HttpServer::new(move || {
            let (counter, first_seen) = (counter.clone(), first_seen.clone());
            App::new().default_service(web::to(move |_body: web::Bytes| {
                counter.fetch_add(1, Ordering::Relaxed);
                first_seen.lock().unwrap().get_or_insert_with(Instant::now);
                async { HttpResponse::Ok().finish() }
            }))
        })
        .workers(1)
        .disable_signals()
        .bind("127.0.0.1:0")
        .expect("receiver binds");
        let url = format!("http://{}/hook", receiver.addrs()[0]);
        let receiver = receiver.run();
        let receiver_handle = receiver.handle();
        actix_rt::spawn(receiver);

        let dir = tempfile::tempdir().expect("temp dir");
        let accounts = env_or("BENCH_ACCOUNTS", 32);
        let accounts = write_backlog(&dir.path().join("store"), &url, accounts, events).await;

        // A body like a load.created payload, for the bare loop.
        let sample = serde_json::to_vec(&serde_json::json!({
            "id": "evt_01m7zsaxzk3pb3vfdnxzkmn1s1", "type": "load.created",
            "timestamp": "2026-11-21T19:29:10.141Z",
            "data": {"load": {"id": "load_01m7zsaxzk3pb3vfdnxzkmn1s0", "status": "posted",
              "origin": {"city": "Dallas", "state": "TX", "zip": "75201"},
              "destination": {"city": "Atlanta", "state": "GA", "zip": "30301"},
              "weight": 42000.0, "equipment_type": "dry_van", "pickup_date": null,
              "delivery_date": null, "rate": null, "currency": "USD", "notes": null, "carrier": null,
              "status_history": [{"status": "posted", "at": "2026-11-21T19:29:10.141Z"}],
              "created_at": "2026-11-21T19:29:10.141Z", "updated_at": "2026-11-21T19:29:10.141Z"},
              "load_id": "load_01m7zsaxzk3pb3vfdnxzkmn1s0", "sequence": 1}
        }))
        .expect("json");

        // The bare loop: the same number of POSTs, same concurrency, one client.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(concurrency)
            .build()
            .expect("client");
        let started = Instant::now();
        let sent = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (client, url, sample, sent) = (client.clone(), url.clone(), sample.clone(), sent.clone());
            tasks.push(actix_rt::spawn(async move {
                while sent.fetch_add(1, Ordering::Relaxed) < events {
                    let response = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(sample.clone())
                        .send()
                        .await
                        .expect("receiver answers");
                    assert!(response.status().is_success());
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
        let bare = started.elapsed();
        let bare_rate = events as f64 / bare.as_secs_f64();

        // Backlog drain: start the service over the outbox written above.
        let mut settings = Settings::ephemeral(dir.path().to_owned());
        settings.bootstrap_key = false;
        settings.webhooks = DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            max_in_flight: concurrency,
            max_per_webhook: concurrency,
            ..DispatchSettings::default()
        };
        let before = count.load(Ordering::Relaxed);
        *first.lock().unwrap() = None;
        let started = Instant::now();
        let app = Application::build(settings).await.expect("freight starts");
        let startup = started.elapsed();
        let services = app.services().clone();
        let handles = app.handles();
        actix_rt::spawn(app.run_until_stopped());
        wait_for(&count, before + events).await;
        let drained = started.elapsed();
        let first_delivery = first.lock().unwrap().expect("deliveries arrived");
        let draining = first_delivery.elapsed();
        let drain_rate = events as f64 / draining.as_secs_f64();

        // Live: create loads through the service and wait for their deliveries.
        let before = count.load(Ordering::Relaxed);
        let started = Instant::now();
        let mut pending = Vec::new();
        for n in 0..events {
            let (services, account) = (services.clone(), accounts[n % accounts.len()].clone());
            pending.push(actix_rt::spawn(async move {
                services.loads.create(&account, new_load()).await.expect("created")
            }));
            if pending.len() == 256 {
                for p in pending.drain(..) {
                    p.await.expect("task");
                }
            }
        }
        for p in pending {
            p.await.expect("task");
        }
        let committed = started.elapsed();
        wait_for(&count, before + events).await;
        let live = started.elapsed();
        let live_rate = events as f64 / live.as_secs_f64();

        println!("webhook fan-out, {events} events, {concurrency} concurrent requests, one receiver answering 200:");
        println!("  bare reqwest loop        {bare_rate:>9.0} POSTs/s       ({bare:.2?})");
        println!(
            "  freight, backlog drain   {drain_rate:>9.0} deliveries/s  ({draining:.2?} from the first delivery: read outbox, fan out, sign, send, durable log; {drained:.2?} from start, start-up {startup:.2?})"
        );
        println!(
            "  => {:.0}% of the bare loop (target >= 60%)",
            100.0 * drain_rate / bare_rate
        );
        println!(
            "  freight, live            {live_rate:>9.0} deliveries/s  ({live:.2?}; loads committed in {committed:.2?})"
        );
        for handle in handles {
            handle.stop(false).await;
        }
        receiver_handle.stop(false).await;
    });
}

/// Polls the receiver's count until it reaches `target`.
async fn wait_for(count: &AtomicUsize, target: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Relaxed) < target {
        if Instant::now() >= deadline {
            panic!(
                "deliveries stalled at {} of {target}",
                count.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Writes, with the service down, `accounts` accounts each subscribed to
/// load.created at `url`, and `events` loads spread over them, each with its
/// load.created event in the outbox. Returns the accounts.
async fn write_backlog(
    store: &std::path::Path,
    url: &str,
    accounts: usize,
    events: usize,
) -> Vec<AccountId> {
    let storage: Arc<dyn Storage> =
        Arc::new(EmbeddedStore::open(store).await.expect("store opens"));
    let now = Utc::now();
    let mut ids = Vec::new();
    for n in 0..accounts {
        let account = Account {
            id: AccountId::generate(),
            name: format!("bench {n}"),
            plan: PlanKind::Pro,
            custom_requests_per_hour: None,
            created_at: now,
        };
        storage.put_account(&account).await.expect("account");
        storage
            .put_webhook(&Subscription {
                id: WebhookId::generate(),
                account_id: account.id.clone(),
                url: url.to_owned(),
                events: vec![EventType::LoadCreated],
                secret: "bench-secret-0123456789".into(),
                enabled: true,
                disabled_reason: None,
                created_at: now,
                updated_at: now,
            })
            .await
            .expect("subscribed");
        ids.push(account.id);
    }
    let writes = futures_util::stream::iter(0..events).map(|n| {
        let (storage, account) = (storage.clone(), ids[n % ids.len()].clone());
        async move {
            let load = Load::create(LoadId::generate(), account.clone(), new_load(), now);
            let event = Event::new(
                account,
                load.id.clone(),
                EventType::LoadCreated,
                1,
                now,
                payloads::load(&load),
            );
            storage
                .insert_load(&load, &[event])
                .await
                .expect("load stored");
        }
    });
    writes.buffer_unordered(64).collect::<Vec<()>>().await;
    ids
}
