//! Webhook fan-out against a bare loop of reqwest POSTs to the same receiver,
//! measured in the same run.
//!
//! Run: `cargo bench --bench webhook_fanout`. A local receiver answers 200 at
//! once. Each of `BENCH_ROUNDS` rounds (5) measures four phases in turn; the
//! figure is the median, over rounds, of the drain's rate over the bare loop's
//! in that round:
//! - the bare loop: `BENCH_EVENTS` POSTs of a load.created-sized body, with
//!   `BENCH_CONCURRENCY` requests at a time, one client;
//! - backlog drain (`BENCH_WRITE_SPACING_US` sets the dispatcher's
//!   `write_spacing`): the same number of events committed to the outbox while the
//!   service was down, then the service started over it; the clock runs from the
//!   first delivery to the last (read outbox, fan out, sign, send, durable
//!   delivery log) with the same number of requests at a time.
//!
//! Two more loops run in each round, to split the difference:
//! - the durable bare loop: the bare loop, each answer's outcome appended to a
//!   log that a writer thread syncs in batches spaced and sized as the
//!   dispatcher's delivery-log writes are (`write_spacing`, 512 outcomes), timed
//!   to the last answer as the drain is. The drain is also given over it.
//! - freight's attempts in a bare loop: the bare loop's shape, each request made
//!   by the dispatcher's own `attempt` (its client, signed headers, the answer
//!   read): what freight's request costs without the dispatcher and the store.
//!
//! It also prints the process's CPU time per delivery for both (the receiver's
//! share included), with `BENCH_THREADS=1` each phase's CPU by thread and
//! machine-wide, and, once, a live figure: loads created through the running
//! service until every event is delivered (committing the loads included).

#[path = "webhook_fanout/figures.rs"]
mod figures;
#[path = "support/knobs.rs"]
mod knobs;
#[path = "webhook_fanout/loops.rs"]
mod loops;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use chrono::Utc;
use figures::{
    Sched, ThreadCpu, busiest, cpu_seconds, machine_busy, median, paired_median, print_cpu,
    thread_cpu,
};
use freight::api::input::load::NewLoadInput;
use freight::api::input::location::LocationInput;
use freight::domain::account::{Account, PlanKind};
use freight::domain::event::{Event, EventType};
use freight::domain::ids::{AccountId, LoadId, WebhookId};
use freight::domain::load::Load;
use freight::domain::webhook::Subscription;
use freight::domain::webhook::UrlPolicy;
use freight::server::settings::Settings;
use freight::server::startup::Application;
use freight::storage::Storage;
use freight::storage::embedded::EmbeddedStore;
use freight::webhooks::dispatcher::DispatchSettings;
use freight::webhooks::payloads;
use futures_util::StreamExt;
use knobs::env_or;
use loops::{attempt_loop, bare_loop, durable_bare_loop, wait_for};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn new_load() -> freight::domain::load::NewLoad {
    let place = |state: &str, zip: &str| LocationInput {
        city: Some("City".into()),
        state: Some(state.into()),
        zip: Some(zip.into()),
        ..LocationInput::default()
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
    let events = env_or("BENCH_EVENTS", 30_000);
    let concurrency = env_or("BENCH_CONCURRENCY", 32);
    actix_rt::System::new().block_on(async move {
        freight::telemetry::install_crypto_provider();
        // The receiver: counts and answers 200 at once.
        let count = Arc::new(AtomicUsize::new(0));
        // When a drain's first delivery arrived: set by the receiver once armed.
        let first = Arc::new(std::sync::Mutex::new(None::<(Instant, f64, ThreadCpu, f64)>));
        let armed = Arc::new(AtomicBool::new(false));
        let (counter, first_seen, armed_seen) = (count.clone(), first.clone(), armed.clone());
        let receiver = HttpServer::new(move || {
            let (counter, first_seen, armed) =
                (counter.clone(), first_seen.clone(), armed_seen.clone());
            App::new().default_service(web::to(move |_body: web::Bytes| {
                counter.fetch_add(1, Ordering::Relaxed);
                if armed.swap(false, Ordering::Relaxed) {
                    // A drain is profiled from its first delivery, as it is timed:
                    // not the start-up's replay of the backlog.
                    profile_window("drain", "enable");
                    // The readings first: the clock starts after their cost.
                    let (cpu, threads, machine) = (cpu_seconds(), thread_cpu(), machine_busy());
                    *first_seen.lock().unwrap() = Some((Instant::now(), cpu, threads, machine));
                }
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

        let n_accounts = env_or("BENCH_ACCOUNTS", 32);
        let rounds = env_or("BENCH_ROUNDS", 5).max(1);

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

        // Each round measures every phase in turn, so all see the same machine;
        // the figures are the medians.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(concurrency)
            .build()
            .expect("client");
        let policy = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let freight_client = freight::webhooks::client::build(policy, None);
        let show_threads = env_or("BENCH_THREADS", 0) == 1;
        let write_spacing = Duration::from_micros(env_or(
            "BENCH_WRITE_SPACING_US",
            DispatchSettings::default().write_spacing.as_micros() as usize,
        ) as u64);
        let (mut bare_rates, mut bare_cpus, mut drain_rates, mut drain_cpus) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut bare_busiest, mut drain_busiest) = (Vec::new(), Vec::new());
        let (mut attempt_rates, mut durable_rates) = (Vec::new(), Vec::new());
        let mut last = None;
        for round in 0..rounds {
            // The previous round's freight is stopped first: no phase runs
            // beside it.
            if let Some((_, handles, _, _)) = last.take() {
                stop(handles).await;
            }
            profile_window("bare", "enable");
            let (machine_before, threads_before) = (machine_busy(), thread_cpu());
            let (rate, cpu) = bare_loop(&client, &url, &sample, events, concurrency).await;
            profile_window("bare", "disable");
            bare_rates.push(rate);
            bare_cpus.push(cpu);
            let threads_after = thread_cpu();
            if show_threads {
                print_cpu("bare", &threads_before, machine_before, events);
            }
            bare_busiest.push(busiest(&threads_before, &threads_after).per(events));
            // The same loop sending as the dispatcher does (its client, signed
            // headers, the answer read): what the request alone costs, without
            // the dispatcher's bookkeeping or the store.
            let (rate, _) =
                attempt_loop(&freight_client, policy, &url, &sample, events, concurrency).await;
            attempt_rates.push(rate);
            // The bare loop recording each answer's outcome durably, in writes
            // spaced and sized as the dispatcher's are.
            let log_dir = tempfile::tempdir().expect("temp dir");
            let (machine_before, threads_before) = (machine_busy(), thread_cpu());
            let (rate, writer_cpu) = durable_bare_loop(
                (&client, &url, &sample),
                events,
                concurrency,
                write_spacing,
                log_dir.path(),
            )
            .await;
            durable_rates.push(rate);
            if show_threads {
                print_cpu("durable bare", &threads_before, machine_before, events);
                println!(
                    "    durable bare: its log writer {:.1} µs per request",
                    writer_cpu * 1e6 / events as f64
                );
            }
            let dir = tempfile::tempdir().expect("temp dir");
            let accounts = write_backlog(&dir.path().join("store"), &url, n_accounts, events).await;
            let mut settings = Settings::ephemeral(dir.path().to_owned());
            settings.bootstrap_key = false;
            settings.webhooks = DispatchSettings {
                url_policy: UrlPolicy {
                    allow_http: true,
                    allow_private: true,
                },
                max_in_flight: concurrency,
                max_per_webhook: concurrency,
                send_threads: env_or("BENCH_SEND_THREADS", DispatchSettings::default().send_threads),
                write_spacing,
                ..DispatchSettings::default()
            };
            let before = count.load(Ordering::Relaxed);
            *first.lock().unwrap() = None;
            armed.store(true, Ordering::Relaxed);
            let started = Instant::now();
            let app = Application::build(settings).await.expect("freight starts");
            let startup = started.elapsed();
            let services = app.services().clone();
            let handles = app.handles();
            actix_rt::spawn(app.run_until_stopped());
            wait_for(&count, before + events).await;
            profile_window("drain", "disable");
            let (first_delivery, first_cpu, first_threads, first_machine) =
                first.lock().unwrap().take().expect("deliveries arrived");
            let draining = first_delivery.elapsed();
            drain_cpus.push((cpu_seconds() - first_cpu) / events as f64);
            let threads_after = thread_cpu();
            if show_threads {
                print_cpu("freight drain", &first_threads, first_machine, events);
            }
            drain_busiest.push(busiest(&first_threads, &threads_after).per(events));
            drain_rates.push(events as f64 / draining.as_secs_f64());
            println!(
                "  round {}: bare {:>7.0} POSTs/s, durable bare {:>7.0}/s, freight's attempts in a bare loop {:>7.0}/s, freight drain {:>7.0} deliveries/s ({draining:.2?} from the first delivery; start-up {startup:.2?})",
                round + 1,
                bare_rates[round],
                durable_rates[round],
                attempt_rates[round],
                drain_rates[round]
            );
            last = Some((services, handles, accounts, dir));
        }
        let (services, handles, accounts, _dir) = last.expect("at least one round");
        // Each drain against the loops of its own round: on a shared machine,
        // neighbouring measurements see the most similar conditions.
        let paired_ratio = paired_median(&drain_rates, &bare_rates);
        let attempts_ratio = paired_median(&attempt_rates, &bare_rates);
        let durable_ratio = paired_median(&drain_rates, &durable_rates);
        let durable_cost = paired_median(&durable_rates, &bare_rates);
        let (bare_rate, drain_rate) = (median(&mut bare_rates), median(&mut drain_rates));
        let (bare_cpu, drain_cpu) = (median(&mut bare_cpus), median(&mut drain_cpus));
        let (bare_busiest, drain_busiest) = (Sched::median(bare_busiest), Sched::median(drain_busiest));

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

        println!("webhook fan-out, {events} events, {concurrency} concurrent requests, one receiver answering 200 (medians of {rounds} rounds):");
        println!("  bare reqwest loop        {bare_rate:>9.0} POSTs/s");
        println!(
            "  freight, backlog drain   {drain_rate:>9.0} deliveries/s  (from the first delivery: read outbox, fan out, sign, send, durable log)"
        );
        println!(
            "  => {:.0}% of the bare loop (target >= 75%): the median of each round's drain over its bare loop ({:.0}% from the medians above)",
            100.0 * paired_ratio,
            100.0 * drain_rate / bare_rate
        );
        println!(
            "  => {:.0}% of the durable bare loop (each outcome logged in synced writes spaced and sized as the dispatcher's; that loop runs at {:.0}% of the bare one)",
            100.0 * durable_ratio,
            100.0 * durable_cost
        );
        println!(
            "  freight's attempts in a bare loop: {:.0}% of the bare loop (its client, signed headers, the answer read; no dispatcher, no store)",
            100.0 * attempts_ratio
        );
        println!(
            "  CPU per delivery (whole process, receiver included): bare {:.1} µs, freight {:.1} µs = {:.2}x",
            bare_cpu * 1e6,
            drain_cpu * 1e6,
            drain_cpu / bare_cpu
        );
        println!(
            "  CPU per delivery of the busiest thread (the sender's, for both): bare {:.1} µs, freight {:.1} µs = {:.2}x",
            bare_busiest.cpu * 1e6,
            drain_busiest.cpu * 1e6,
            drain_busiest.cpu / bare_busiest.cpu
        );
        println!(
            "  time that thread was ready but waited for a CPU, per delivery: bare {:.1} µs, freight {:.1} µs",
            bare_busiest.waiting * 1e6,
            drain_busiest.waiting * 1e6,
        );
        println!(
            "  freight, live            {live_rate:>9.0} deliveries/s  ({live:.2?}; loads committed in {committed:.2?})"
        );
        stop(handles).await;
        receiver_handle.stop(false).await;
    });
}

/// Brackets a phase for a profiler: with `PERF_CTL_FIFO` set to the control FIFO
/// of `perf record --control fifo:<ctl> -D -1`, only the phase named by
/// `PERF_PHASE` (`drain`, the default, or `bare`) is sampled.
fn profile_window(phase: &str, command: &str) {
    let wanted = std::env::var("PERF_PHASE").unwrap_or_else(|_| "drain".into());
    if wanted != phase {
        return;
    }
    if let Ok(path) = std::env::var("PERF_CTL_FIFO") {
        use std::io::Write;
        if let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(path) {
            let _ = writeln!(fifo, "{command}");
        }
    }
}

async fn stop(handles: impl IntoIterator<Item = actix_web::dev::ServerHandle>) {
    for handle in handles {
        handle.stop(false).await;
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
) -> Vec<Account> {
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
            custom_max_streams: None,
            disabled: false,
            created_at: now,
            stop_settings: Default::default(),
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
        ids.push(account);
    }
    let writes = futures_util::stream::iter(0..events).map(|n| {
        let (storage, account) = (storage.clone(), ids[n % ids.len()].id.clone());
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
