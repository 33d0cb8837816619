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

#[path = "support/knobs.rs"]
mod knobs;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use chrono::Utc;
use freight::api::input::load::NewLoadInput;
use freight::api::input::location::LocationInput;
use freight::domain::account::{Account, PlanKind};
use freight::domain::event::{Event, EventType};
use freight::domain::ids::{AccountId, EventId, LoadId, WebhookId};
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
            "  => {:.0}% of the bare loop (target >= 70%): the median of each round's drain over its bare loop ({:.0}% from the medians above)",
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

/// `POSTs` of `sample` to `url`, `concurrency` at a time on one client: the rate
/// and the process's CPU seconds per request.
async fn bare_loop(
    client: &reqwest::Client,
    url: &str,
    sample: &[u8],
    events: usize,
    concurrency: usize,
) -> (f64, f64) {
    let (client, url, sample) = (
        client.clone(),
        Arc::<str>::from(url),
        web::Bytes::copy_from_slice(sample),
    );
    let request = move || {
        let (client, url, sample) = (client.clone(), url.clone(), sample.clone());
        async move {
            assert!(post(&client, &url, sample).await.is_success());
        }
    };
    timed(events, send_concurrently(events, concurrency, request)).await
}

/// One `POST` of the bare loops: the answer's status.
async fn post(client: &reqwest::Client, url: &str, body: web::Bytes) -> reqwest::StatusCode {
    client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("receiver answers")
        .status()
}

/// The rate of `work`, which makes `events` requests, and the process's CPU
/// seconds per request while it ran.
async fn timed(events: usize, work: impl std::future::Future<Output = ()>) -> (f64, f64) {
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    work.await;
    let elapsed = started.elapsed();
    (
        events as f64 / elapsed.as_secs_f64(),
        (cpu_seconds() - cpu_before) / events as f64,
    )
}

/// Makes `events` requests, `concurrency` at a time: as many tasks, each
/// making the next request (`request()`) until all are made.
async fn send_concurrently<F, Fut>(events: usize, concurrency: usize, request: F)
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (request, sent) = (request.clone(), sent.clone());
        tasks.push(actix_rt::spawn(async move {
            while sent.fetch_add(1, Ordering::Relaxed) < events {
                request().await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
}

async fn stop(handles: impl IntoIterator<Item = actix_web::dev::ServerHandle>) {
    for handle in handles {
        handle.stop(false).await;
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
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

/// What the scheduler says of one thread (`/proc/.../schedstat`): seconds run
/// on a CPU, and seconds spent ready to run but waiting for one.
#[derive(Clone, Copy, Default)]
struct Sched {
    cpu: f64,
    waiting: f64,
}

impl Sched {
    fn per(self, n: usize) -> Self {
        Sched {
            cpu: self.cpu / n as f64,
            waiting: self.waiting / n as f64,
        }
    }

    /// The medians of each field.
    fn median(all: Vec<Sched>) -> Sched {
        let mut cpu: Vec<f64> = all.iter().map(|s| s.cpu).collect();
        let mut waiting: Vec<f64> = all.iter().map(|s| s.waiting).collect();
        Sched {
            cpu: median(&mut cpu),
            waiting: median(&mut waiting),
        }
    }
}

/// The scheduler's figures so far for each thread of this process.
type ThreadCpu = HashMap<String, Sched>;

fn thread_cpu() -> ThreadCpu {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let mut fields = stat.split_whitespace().map(|f| f.parse::<f64>().ok());
            let (Some(Some(run)), Some(Some(wait))) = (fields.next(), fields.next()) else {
                return None;
            };
            Some((
                task.file_name().to_string_lossy().into_owned(),
                Sched {
                    cpu: run / 1e9,
                    waiting: wait / 1e9,
                },
            ))
        })
        .collect()
}

/// The bare loop, recording each answer's outcome (event, status, time) the
/// way the dispatcher's delivery log is written: a writer thread appends what
/// has come since its last write to a file and syncs it, one write beginning at
/// most every `spacing` while outcomes keep coming and carrying at most
/// `MAX_WRITE_OUTCOMES` (the dispatcher's `recording` module). The rate counts
/// to the last answer, as the drain's does (in both, a request's slot frees at
/// its answer); the loop then waits for every outcome to be durable. Also
/// gives the writer thread's CPU seconds.
async fn durable_bare_loop(
    (client, url, sample): (&reqwest::Client, &str, &[u8]),
    events: usize,
    concurrency: usize,
    spacing: Duration,
    dir: &std::path::Path,
) -> (f64, f64) {
    /// The dispatcher's `recording::MAX_WRITE_OUTCOMES`.
    const MAX_WRITE_OUTCOMES: usize = 512;
    use std::io::Write;
    let pending = Arc::new((
        std::sync::Mutex::new(Vec::<u8>::new()),
        std::sync::Condvar::new(),
    ));
    let durable = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (pending, durable) = (pending.clone(), durable.clone());
        let mut file = std::fs::File::create(dir.join("outcomes.log")).expect("log file");
        std::thread::spawn(move || {
            let (lock, ready) = &*pending;
            let mut written = 0;
            while written < events {
                let batch = {
                    let mut waiting = lock.lock().unwrap();
                    while waiting.is_empty() {
                        waiting = ready.wait(waiting).unwrap();
                    }
                    // At most MAX_WRITE_OUTCOMES lines; the rest waits for the next write.
                    let cut = waiting
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .nth(MAX_WRITE_OUTCOMES - 1)
                        .map_or(waiting.len(), |(at, _)| at + 1);
                    let rest = waiting.split_off(cut);
                    std::mem::replace(&mut *waiting, rest)
                };
                let began = Instant::now();
                file.write_all(&batch).expect("log written");
                file.sync_data().expect("log synced");
                written += batch.iter().filter(|b| **b == b'\n').count();
                durable.store(written, Ordering::Relaxed);
                // The next write begins `spacing` after this one did, if
                // outcomes are waiting by then (the writer waits on an empty
                // buffer anyway).
                std::thread::sleep(spacing.saturating_sub(began.elapsed()));
            }
            own_cpu_seconds()
        })
    };
    let (client, url, sample) = (
        client.clone(),
        Arc::<str>::from(url),
        web::Bytes::copy_from_slice(sample),
    );
    let request = move || {
        let (client, url, sample, pending) =
            (client.clone(), url.clone(), sample.clone(), pending.clone());
        async move {
            let event = EventId::generate();
            let status = post(&client, &url, sample).await;
            let line = format!(
                "{event} {} {}\n",
                status.as_u16(),
                Utc::now().timestamp_millis()
            );
            let (lock, ready) = &*pending;
            let mut waiting = lock.lock().unwrap();
            // The writer waits only on an empty buffer.
            let wake = waiting.is_empty();
            waiting.extend_from_slice(line.as_bytes());
            drop(waiting);
            if wake {
                ready.notify_one();
            }
        }
    };
    let (rate, _) = timed(events, send_concurrently(events, concurrency, request)).await;
    wait_for(&durable, events).await;
    (rate, writer.join().expect("log writer"))
}

/// CPU seconds the calling thread has used (its schedstat).
fn own_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|stat| stat.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// The bare loop's shape, each request made by the dispatcher's own `attempt`
/// with a client built as the dispatcher's is (`client`, kept warm across
/// rounds like the bare loop's): the rate and CPU seconds per request.
async fn attempt_loop(
    client: &reqwest::Client,
    policy: UrlPolicy,
    url: &str,
    sample: &[u8],
    events: usize,
    concurrency: usize,
) -> (f64, f64) {
    use freight::webhooks::attempt::{Endpoint, attempt};
    let client = client.clone();
    let now = Utc::now();
    let subscription = Subscription {
        id: WebhookId::generate(),
        account_id: AccountId::generate(),
        url: url.to_owned(),
        events: vec![EventType::LoadCreated],
        secret: "whsec_bench".into(),
        enabled: true,
        disabled_reason: None,
        created_at: now,
        updated_at: now,
    };
    let endpoint = Arc::new(Endpoint::new(&subscription, policy));
    let clock = freight::clock::Clock::system();
    let body = web::Bytes::copy_from_slice(sample);
    timed(
        events,
        send_concurrently(events, concurrency, move || {
            let (client, endpoint, clock, body) = (
                client.clone(),
                endpoint.clone(),
                clock.clone(),
                body.clone(),
            );
            async move {
                let event = EventId::generate();
                let outcome = attempt(&client, &clock, &endpoint, &event, body).await;
                assert_eq!(outcome.status_code, Some(200), "{outcome:?}");
            }
        }),
    )
    .await
}

/// The median, over rounds, of each round's `numerators` over its `denominators`.
fn paired_median(numerators: &[f64], denominators: &[f64]) -> f64 {
    let mut ratios: Vec<f64> = numerators
        .iter()
        .zip(denominators)
        .map(|(n, d)| n / d)
        .collect();
    median(&mut ratios)
}

/// With `BENCH_THREADS=1`: a phase's CPU per request since the readings given,
/// by thread (name and id) and machine-wide (kernel threads included), to see
/// where one phase's extra cost is.
fn print_cpu(phase: &str, threads_before: &ThreadCpu, machine_before: f64, n: usize) {
    print_by_thread(threads_before, &thread_cpu(), n);
    println!(
        "    {phase}: machine-wide busy CPU per request {:.1} µs",
        (machine_busy() - machine_before) * 1e6 / n as f64
    );
}

/// CPU per request between two readings, by thread (name and id).
fn print_by_thread(before: &ThreadCpu, after: &ThreadCpu, n: usize) {
    let mut by_name: HashMap<String, f64> = HashMap::new();
    for (tid, now) in after {
        let then = before.get(tid).copied().unwrap_or_default();
        let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|n| n.trim().to_owned())
            .unwrap_or_else(|_| "(gone)".into());
        *by_name.entry(format!("{name}#{tid}")).or_default() += now.cpu - then.cpu;
    }
    let mut rows: Vec<_> = by_name
        .into_iter()
        .filter(|(_, cpu)| *cpu * 1e6 > 0.1 * n as f64)
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<String> = rows
        .iter()
        .map(|(name, cpu)| format!("{name} {:.1}", cpu * 1e6 / n as f64))
        .collect();
    println!("    µs per request by thread: {}", rows.join(", "));
}

/// The figures, between two readings, of the thread that ran the most.
fn busiest(before: &ThreadCpu, after: &ThreadCpu) -> Sched {
    after
        .iter()
        .map(|(tid, now)| {
            let then = before.get(tid).copied().unwrap_or_default();
            Sched {
                cpu: now.cpu - then.cpu,
                waiting: now.waiting - then.waiting,
            }
        })
        .max_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .unwrap_or_default()
}

/// CPU seconds the whole machine has spent busy, kernel threads (writeback,
/// the file system's journal) and anything else on the machine included.
fn machine_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user, nice, system, irq and softirq: not idle or I/O wait, and not steal
    // (another guest's) or guest time (already in user and nice).
    let busy: f64 = [0, 1, 2, 5, 6].iter().filter_map(|&i| fields.get(i)).sum();
    busy / 100.0
}

/// CPU time this process has used (user + system), in seconds.
fn cpu_seconds() -> f64 {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// utime + stime of a `/proc/.../stat` line, in seconds.
fn stat_cpu_seconds(stat: &str) -> f64 {
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
