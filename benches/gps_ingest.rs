//! GPS ingest and tracking reads through the real HTTPS server, against a bare
//! actix-web HTTPS handler measured in the same run; bulk ingest; and the memory
//! of resident load actors.
//!
//! Run: `cargo bench --bench gps_ingest` (about two minutes). Every figure is
//! measured on this machine in this run; compare the ratios, not the absolutes.
//! Knobs (environment): `BENCH_SECONDS` per round (default 3; each comparison
//! alternates three rounds of each side), `BENCH_CONNECTIONS`
//! (default 64), `BENCH_LOADS` (default 2000), `BENCH_ACTORS` (default 100000).

/// The bare reference handler, shared with `bare_handler` (wrk's comparison).
#[path = "support/bare.rs"]
mod bare;

/// `sample_load`, shared with the storage conformance suite.
#[path = "../tests/storage/fixtures.rs"]
mod fixtures;

#[path = "support/knobs.rs"]
mod knobs;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpServer};
use chrono::{SecondsFormat, Utc};
use freight::domain::ids::AccountId;
use freight::domain::load::{Load, LoadStatus};
use freight::server::settings::Settings;
use freight::server::startup::Application;
use freight::services::Services;

use fixtures::sample_load;
use knobs::env_or;

/// The allocator `freight`'s binary uses, so the in-process servers match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

struct Running {
    base: String,
    bare_base: String,
    key: String,
    account: AccountId,
    services: Services,
    cert_pem: Vec<u8>,
}

/// Starts freight and the bare handler (same TLS certificate, HTTP/1.1, two
/// workers each) in an actix System on their own thread.
fn start_servers(dir: std::path::PathBuf) -> Running {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            freight::telemetry::install_crypto_provider();
            let mut settings = Settings::ephemeral(dir.clone());
            settings.body_limit = 2 * 1024 * 1024;
            let app = Application::build(settings).await.expect("freight starts");
            let first = app.bootstrap_key().expect("first start").clone();
            // A quota no run can spend: the check itself is what is measured.
            app.services()
                .accounts
                .change_plan(
                    &first.account.id,
                    freight::domain::account::PlanKind::Enterprise,
                    freight::services::accounts::CustomLimits {
                        requests_per_hour: Some(u32::MAX),
                        max_streams: None,
                    },
                )
                .await
                .expect("plan changed");
            let tls = freight::server::tls::server_config(
                &freight::server::tls::TlsSource::SelfSigned,
                &dir,
            )
            .expect("tls");
            let bare = HttpServer::new(|| App::new().configure(bare::configure))
                .workers(2)
                .bind_rustls_0_23("127.0.0.1:0", (*tls).clone())
                .expect("bare binds");
            let bare_addr = bare.addrs()[0];
            let bare = bare.run();
            tx.send(Running {
                base: format!("https://localhost:{}/v1", app.api_addr().port()),
                bare_base: format!("https://localhost:{}/v1", bare_addr.port()),
                key: first.token.clone(),
                account: first.account.id.clone(),
                services: app.services().clone(),
                cert_pem: std::fs::read(dir.join("tls/cert.pem")).expect("cert"),
            })
            .ok();
            let _ = tokio::join!(app.run_until_stopped(), bare);
        });
    });
    rx.recv().expect("servers start")
}

fn new_load(account: &AccountId) -> Load {
    let mut load = sample_load(account, "TX", "GA");
    load.status = LoadStatus::InTransit;
    load
}

/// Inserts in-transit loads straight into storage (their creation is not measured).
async fn seed_loads(services: &Services, account: &AccountId, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    let mut pending = Vec::new();
    for _ in 0..count {
        let load = new_load(account);
        ids.push(load.id.to_string());
        let storage = services.storage.clone();
        pending.push(tokio::spawn(async move {
            storage.insert_load(&load, &[]).await
        }));
        if pending.len() == 256 {
            for p in pending.drain(..) {
                p.await.expect("task").expect("insert");
            }
        }
    }
    for p in pending {
        p.await.expect("task").expect("insert");
    }
    ids
}

struct Figures {
    requests: u64,
    items: u64,
    elapsed: Duration,
    latencies_us: Vec<u32>,
    errors: u64,
}

impl Figures {
    fn per_second(&self) -> f64 {
        self.items as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies_us.len() - 1) as f64 * p).round() as usize;
        f64::from(self.latencies_us[i]) / 1000.0
    }
}

/// Runs `connections` closed-loop clients for `seconds`; `request(worker, n)` builds
/// the n-th request of a worker and says how many items (points) it carries.
async fn drive<F>(connections: usize, seconds: u64, cert: &[u8], request: F) -> Figures
where
    F: Fn(&reqwest::Client, usize, u64) -> (reqwest::RequestBuilder, u64) + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..connections {
        let cert = reqwest::Certificate::from_pem(cert).expect("cert");
        let client = reqwest::Client::builder()
            .tls_certs_only([cert])
            .pool_max_idle_per_host(1)
            .http1_only()
            .build()
            .expect("client");
        let (request, stop) = (request.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let (mut requests, mut items, mut errors) = (0u64, 0u64, 0u64);
            let mut latencies = Vec::with_capacity(65_536);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (builder, carried) = request(&client, worker, n);
                n += 1;
                let t = Instant::now();
                match builder.send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        latencies.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                        requests += 1;
                        items += carried;
                    }
                    _ => errors += 1,
                }
            }
            (requests, items, errors, latencies)
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut figures = Figures {
        requests: 0,
        items: 0,
        elapsed: Duration::ZERO,
        latencies_us: Vec::new(),
        errors: 0,
    };
    for task in tasks {
        let (requests, items, errors, latencies) = task.await.expect("client task");
        figures.requests += requests;
        figures.items += items;
        figures.errors += errors;
        figures.latencies_us.extend(latencies);
    }
    figures.elapsed = started.elapsed();
    figures.latencies_us.sort_unstable();
    figures
}

impl Figures {
    fn merge(mut self, other: Figures) -> Figures {
        self.requests += other.requests;
        self.items += other.items;
        self.errors += other.errors;
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
        self.latencies_us.sort_unstable();
        self
    }
}

/// The machine is shared and noisy, so the two sides of a comparison alternate in
/// `ROUNDS` short rounds and their totals are compared.
const ROUNDS: usize = 3;

fn report(name: &str, f: &Figures, unit: &str) {
    println!(
        "  {name:<44} {:>10.0} {unit}/s   p50 {:>7.2} ms   p99 {:>7.2} ms   ({} requests, {} errors)",
        f.per_second(),
        f.percentile(0.50),
        f.percentile(0.99),
        f.requests,
        f.errors
    );
}

/// A fix dated `seq` seconds (plus `lane` ms) after a base 20 days back: distinct
/// per (seq, lane), all within the accepted 30 days, none in the future for any
/// `seq` below 1.7 million.
fn fix_body(seq: u64, lane: usize) -> String {
    fix_fields(seq, lane, None)
}

/// The JSON of one fix (with `load_id` for a batch), written directly: the load
/// generator shares the machine with the servers, so it must be cheap.
fn fix_fields(seq: u64, lane: usize, load_id: Option<&str>) -> String {
    static BASE: std::sync::OnceLock<chrono::DateTime<Utc>> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(|| Utc::now() - chrono::Duration::days(20));
    let at = base + chrono::Duration::milliseconds((seq * 1000 + lane as u64) as i64);
    let load = load_id
        .map(|id| format!(r#""load_id":"{id}","#))
        .unwrap_or_default();
    format!(
        r#"{{{load}"lat":{:.3},"lng":{:.3},"timestamp":"{}","speed":61.5,"heading":92.0}}"#,
        32.0 + (seq % 1000) as f64 * 0.001,
        -96.0 + (lane % 100) as f64 * 0.001,
        at.to_rfc3339_opts(SecondsFormat::Millis, true)
    )
}

fn main() {
    let seconds = env_or("BENCH_SECONDS", 3) as u64;
    let connections = env_or("BENCH_CONNECTIONS", 64);
    let loads = env_or("BENCH_LOADS", 2000);
    let actors = env_or("BENCH_ACTORS", 100_000);
    // Which phases to run (comma-separated): ingest, reads, bulk, actors.
    let phases =
        std::env::var("BENCH_PHASES").unwrap_or_else(|_| "ingest,reads,bulk,actors".into());
    let phase = move |name: &str| phases.split(',').any(|p| p.trim() == name);
    let dir = tempfile::tempdir().expect("temp dir");
    let running = start_servers(dir.path().to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async move {
        let Running { base, bare_base, key, account, services, cert_pem } = running;
        let ids = Arc::new(seed_loads(&services, &account, loads).await);
        println!(
            "GPS ingest, {connections} keep-alive HTTPS connections, {loads} loads, {seconds} s per phase, 2 server workers:"
        );

        if phase("ingest") {
        let (mut bare, mut ingest) = (None::<Figures>, None::<Figures>);
        for round in 0..ROUNDS as u64 {
        let bare_url = bare_base.clone();
        let b = drive(connections, seconds, &cert_pem, move |client, worker, n| {
            let url = format!("{bare_url}/loads/load_x/tracking");
                        let request = client
                .post(url)
                .header("content-type", "application/json")
                .body(fix_body(n, worker));
            (request, 1)
        })
        .await;
        bare = Some(match bare { Some(f) => f.merge(b), None => b });

        let (url, k, ids2) = (base.clone(), key.clone(), ids.clone());
        let f = drive(connections, seconds, &cert_pem, move |client, worker, n| {
            let id = &ids2[(worker + n as usize * connections) % ids2.len()];
            let request = client
                .post(format!("{url}/loads/{id}/tracking"))
                .bearer_auth(&k)
                                .header("content-type", "application/json")
                .body(fix_body(n + round * 400_000, worker));
            (request, 1)
        })
        .await;
        ingest = Some(match ingest { Some(g) => g.merge(f), None => f });
        }
        let (bare, ingest) = (bare.expect("ran"), ingest.expect("ran"));
        report("bare handler: POST fix (parse only)", &bare, "points");
        report("freight: POST fix (durable before 201)", &ingest, "points");
        println!(
            "  => single-point ingest at {:.0}% of the bare handler (target >= 50%)",
            100.0 * ingest.per_second() / bare.per_second()
        );
        }
        if phase("reads") {
        let (mut bare_reads, mut reads) = (None::<Figures>, None::<Figures>);
        for _ in 0..ROUNDS {
        let bare_url = bare_base.clone();
        let b = drive(connections, seconds, &cert_pem, move |client, _, _| {
            (client.get(format!("{bare_url}/loads/load_x/tracking")), 1)
        })
        .await;
        bare_reads = Some(match bare_reads { Some(f) => f.merge(b), None => b });
        let (url, k, ids2) = (base.clone(), key.clone(), ids.clone());
        let f = drive(connections, seconds, &cert_pem, move |client, worker, n| {
            let id = &ids2[(worker + n as usize * connections) % ids2.len()];
            (client.get(format!("{url}/loads/{id}/tracking?points=1")).bearer_auth(&k), 1)
        })
        .await;
        reads = Some(match reads { Some(g) => g.merge(f), None => f });
        }
        let (bare_reads, reads) = (bare_reads.expect("ran"), reads.expect("ran"));
        report("bare handler: GET latest position", &bare_reads, "reads");
        report("freight: GET /loads/{id}/tracking", &reads, "reads");
        println!(
            "  => latest-position reads at {:.0}% of the bare handler (target >= 70%)",
            100.0 * reads.per_second() / bare_reads.per_second()
        );
        }
        let batch_connections = connections.min(8);
        if phase("bulk") {
            // Two shapes of 1,000-point batch: a device uploading its buffer (one
            // load, consecutive seconds) and a gateway relaying 1,000 different loads.
            for (shape, lane, one_load) in [
                ("one load's buffer", 100, true),
                ("1,000 loads, a point each", 200, false),
            ] {
                let batch_for = move |ids: &[String], n: u64, worker: usize| {
                    let points: Vec<String> = (0..1000usize)
                        .map(|i| {
                            if one_load {
                                let id = &ids[(worker * 7919 + n as usize) % ids.len()];
                                fix_fields(n * 1000 + i as u64, lane + worker, Some(id))
                            } else {
                                let id = &ids[(i + worker * 7919 + n as usize * 13) % ids.len()];
                                fix_fields(n, lane + worker, Some(id))
                            }
                        })
                        .collect();
                    format!(r#"{{"points":[{}]}}"#, points.join(","))
                };
                let (mut bare_bulk, mut bulk) = (None::<Figures>, None::<Figures>);
                for round in 0..ROUNDS as u64 {
                    let (bare_url, ids2) = (bare_base.clone(), ids.clone());
                    let b = drive(batch_connections, seconds, &cert_pem, move |client, worker, n| {
                        let request = client
                            .post(format!("{bare_url}/tracking/batch"))
                            .header("content-type", "application/json")
                            .body(batch_for(&ids2, n, worker));
                        (request, 1000)
                    })
                    .await;
                    bare_bulk = Some(match bare_bulk {
                        Some(f) => f.merge(b),
                        None => b,
                    });
                    let (url, k, ids2) = (base.clone(), key.clone(), ids.clone());
                    let f = drive(batch_connections, seconds, &cert_pem, move |client, worker, n| {
                        let request = client
                            .post(format!("{url}/tracking/batch"))
                            .bearer_auth(&k)
                            .header("content-type", "application/json")
                            .body(batch_for(&ids2, n + round * 500, worker));
                        (request, 1000)
                    })
                    .await;
                    bulk = Some(match bulk {
                        Some(g) => g.merge(f),
                        None => f,
                    });
                }
                let (bare_bulk, bulk) = (bare_bulk.expect("ran"), bulk.expect("ran"));
                println!("  bulk ingest, {shape}, {batch_connections} connections:");
                report("bare handler: POST batch (parse only)", &bare_bulk, "points");
                report("freight: POST /tracking/batch", &bulk, "points");
                println!(
                    "  => {:.0} points/s (target >= 250,000), {:.0}% of the bare parse",
                    bulk.per_second(),
                    100.0 * bulk.per_second() / bare_bulk.per_second()
                );
            }
        }
        if !phase("actors") {
            return;
        }
        println!("Resident load actors ({actors}):");
        let actor_ids = seed_loads(&services, &account, actors).await;
        let idle = rss_bytes();
        let resident_before = services.tracking.registry().resident();
        let started = Instant::now();
        let mut pending = Vec::new();
        for id in &actor_ids {
            let (services, account, id) = (services.clone(), account.clone(), id.clone());
            pending.push(tokio::spawn(async move { let id = freight::domain::ids::LoadId::parse(&id).expect("a load id"); services.tracking.current(&account, &id).await }));
            if pending.len() == 512 {
                for p in pending.drain(..) {
                    p.await.expect("task").expect("actor answers");
                }
            }
        }
        for p in pending {
            p.await.expect("task").expect("actor answers");
        }
        let woken = services.tracking.registry().resident() - resident_before;
        let grown = rss_bytes().saturating_sub(idle);
        println!(
            "  {woken} actors started in {:.2?}; RSS grew {:.1} MiB = {:.0} bytes per actor (target: 100,000 under 200 MiB)",
            started.elapsed(),
            grown as f64 / 1048576.0,
            grown as f64 / woken.max(1) as f64
        );
    });
}
