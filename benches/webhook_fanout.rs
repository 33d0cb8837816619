//! Webhook fan-out against a bare loop of reqwest POSTs to the same receiver,
//! measured in the same run.
//!
//! Run: `cargo bench --bench webhook_fanout`. A local receiver answers 200 at
//! once. freight creates `BENCH_EVENTS` loads (each a `load.created` event for one
//! subscription) and the clock runs until the receiver has every signed delivery;
//! the bare loop sends as many POSTs of a same-sized body with the same
//! concurrency. Both figures are deliveries per second; compare their ratio.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use freight::config::Settings;
use freight::domain::load::NewLoadInput;
use freight::domain::location::LocationInput;
use freight::domain::webhook::{NewSubscriptionInput, UrlPolicy};
use freight::server::startup::Application;
use freight::webhooks::dispatcher::DispatchSettings;

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
        let counter = count.clone();
        let receiver = HttpServer::new(move || {
            let counter = counter.clone();
            App::new().default_service(web::to(move |_body: web::Bytes| {
                counter.fetch_add(1, Ordering::Relaxed);
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
        let mut settings = Settings::ephemeral(dir.path().to_owned());
        settings.webhooks = DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            max_per_webhook: concurrency,
            tick: Duration::from_millis(50),
            ..DispatchSettings::default()
        };
        let app = Application::build(settings).await.expect("freight starts");
        let services = app.services().clone();
        let handles = app.handles();
        actix_rt::spawn(app.run_until_stopped());
        // Events of several accounts (one subscription each, all to the receiver):
        // a load's creation holds its account's counter lock across the fsync, so
        // one account alone would measure load creation, not fan-out.
        let mut accounts = Vec::new();
        for n in 0..env_or("BENCH_ACCOUNTS", 32) {
            let account = services
                .accounts
                .create_account(freight::services::accounts::NewAccount {
                    name: format!("bench {n}"),
                    plan: freight::domain::account::PlanKind::Pro,
                    requests_per_hour: None,
                })
                .await
                .expect("account");
            services
                .webhooks
                .create(
                    &account.id,
                    NewSubscriptionInput {
                        url: Some(url.clone()),
                        events: Some(vec!["load.created".into()]),
                        secret: Some("bench-secret-0123456789".into()),
                    },
                )
                .await
                .expect("subscribed");
            accounts.push(account.id);
        }

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

        // freight: commit the events, then wait for every delivery.
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
        let deadline = Instant::now() + Duration::from_secs(30);
        while count.load(Ordering::Relaxed) - before < events {
            if Instant::now() >= deadline {
                panic!("deliveries stalled at {}", count.load(Ordering::Relaxed) - before);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let fanned = started.elapsed();
        let rate = events as f64 / fanned.as_secs_f64();
        println!("webhook fan-out, {events} events, {concurrency} concurrent requests, one receiver answering 200:");
        println!("  bare reqwest loop                      {bare_rate:>9.0} POSTs/s  ({bare:.2?})");
        println!(
            "  freight (commit + fan-out + sign + send + durable log) {rate:>9.0} deliveries/s  ({fanned:.2?}; events committed in {committed:.2?})"
        );
        println!("  => {:.0}% of the bare loop (target >= 60%)", 100.0 * rate / bare_rate);
        for handle in handles {
            handle.stop(false).await;
        }
        receiver_handle.stop(false).await;
    });
}
