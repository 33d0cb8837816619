//! Start-up time of `freight serve` over a data directory holding millions of GPS
//! points: from the process starting to its first answered tracking read. Nothing
//! at start may scan the time series, so the figure should not grow with it.
//!
//!   cargo bench --bench startup                 # 10,000,000 points over 1,000 loads
//!   BENCH_POINTS=1000000 cargo bench --bench startup
//!
//! The service is started once to create an account and a key (through the
//! operator commands, as an operator would), stopped, then the points are
//! written straight into its store (their ingest is not what is measured), and
//! the service is started again, three times, each timed to the first `200` of
//! `GET /v1/loads/{id}/tracking` for a load with points: that read starts the
//! load's actor, which reads its latest points from the store.

#[path = "../tests/storage/fixtures.rs"]
mod fixtures;

#[path = "support/knobs.rs"]
mod knobs;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use freight::domain::ids::{AccountId, LoadId};
use freight::domain::load::LoadStatus;
use freight::domain::tracking::{FixSource, GpsFix, TrackingPoint};
use freight::storage::embedded::EmbeddedStore;
use freight::storage::{LoadStore, TrackingStore};
use knobs::env_or;

const FREIGHT: &str = env!("CARGO_BIN_EXE_freight");
const LOADS: usize = 1_000;
const POINTS_PER_BATCH: usize = 10_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Server {
    child: Child,
    api: u16,
    admin: u16,
}

fn serve(data: &Path) -> Server {
    let (api, admin) = (free_port(), free_port());
    let child = Command::new(FREIGHT)
        .args(["serve", "--data-dir"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--no-bootstrap-key")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("freight serve starts");
    Server { child, api, admin }
}

fn stop(mut server: Server) {
    // SIGTERM: a graceful stop, as an operator's restart would be.
    let _ = Command::new("kill")
        .arg(server.child.id().to_string())
        .status();
    let _ = server.child.wait();
}

/// Runs an operator command against `server` and returns its JSON answer.
fn operator(data: &Path, server: &Server, args: &[&str]) -> serde_json::Value {
    let admin_url = format!("http://127.0.0.1:{}", server.admin);
    for _ in 0..100 {
        let out = Command::new(FREIGHT)
            .args(args)
            .arg("--data-dir")
            .arg(data)
            .args(["--admin-url", &admin_url, "--json"])
            .output()
            .expect("operator command runs");
        if out.status.success() {
            return serde_json::from_slice(&out.stdout).expect("JSON answer");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("operator command {args:?} kept failing");
}

fn client(data: &Path) -> reqwest::Client {
    let pem = std::fs::read(data.join("tls/cert.pem")).expect("the service's certificate");
    let cert = reqwest::Certificate::from_pem(&pem).expect("a PEM certificate");
    reqwest::Client::builder()
        .add_root_certificate(cert)
        .build()
        .expect("client")
}

/// Writes `total` points over `loads` in-transit loads straight into the store.
async fn seed(store_dir: &Path, account: &AccountId, total: usize) -> Vec<LoadId> {
    let store = EmbeddedStore::open(store_dir).await.expect("store opens");
    let mut loads = Vec::with_capacity(LOADS);
    for _ in 0..LOADS {
        let mut load = fixtures::sample_load(account, "TX", "GA");
        load.status = LoadStatus::InTransit;
        store.insert_load(&load, &[]).await.expect("load stored");
        loads.push(load.id);
    }
    let start = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    let started = Instant::now();
    let mut written = 0;
    while written < total {
        let batch: Vec<TrackingPoint> = (written..(written + POINTS_PER_BATCH).min(total))
            .map(|n| TrackingPoint {
                load_id: loads[n % LOADS].clone(),
                fix: GpsFix {
                    // One load's fixes a second apart.
                    timestamp: start + chrono::Duration::seconds((n / LOADS) as i64),
                    lat: 32.0 + (n % 1000) as f64 / 1000.0,
                    lng: -96.0 - (n % 997) as f64 / 1000.0,
                    speed_mph: Some(55.0),
                    heading_deg: Some(90.0),
                    source: FixSource::Api,
                },
                event: None,
                stops: None,
            })
            .collect();
        written += batch.len();
        store.append_points(batch).await.expect("points stored");
        if written % 1_000_000 == 0 {
            println!(
                "  {written} points written ({:.0}/s)",
                written as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    loads
}

fn main() {
    freight::telemetry::install_crypto_provider();
    let points = env_or("BENCH_POINTS", 10_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let data: PathBuf = dir.path().join("data");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // First start: the operator creates an account and a key.
    let server = serve(&data);
    let account = operator(
        &data,
        &server,
        &[
            "accounts",
            "create",
            "--name",
            "bench",
            "--plan",
            "enterprise",
        ],
    );
    let account_id = account["id"].as_str().expect("account id").to_owned();
    let key = operator(
        &data,
        &server,
        &[
            "keys",
            "create",
            "--account",
            &account_id,
            "--permissions",
            "read",
        ],
    )["key"]
        .as_str()
        .expect("key")
        .to_owned();
    stop(server);

    println!("Start-up with {points} stored GPS points over {LOADS} loads:");
    let account = AccountId::parse(&account_id).expect("an account id");
    let loads = runtime.block_on(seed(&data.join("store"), &account, points));
    let client = client(&data);
    let url = |port: u16| format!("https://localhost:{port}/v1/loads/{}/tracking", loads[7]);
    for round in 1..=3 {
        let started = Instant::now();
        let server = serve(&data);
        let answered = runtime.block_on(async {
            loop {
                let sent = client.get(url(server.api)).bearer_auth(&key).send().await;
                if let Ok(response) = sent {
                    assert_eq!(response.status(), 200, "the read is answered");
                    let body: serde_json::Value = response.json().await.expect("JSON");
                    let points = body["data"]["points"].as_array().map_or(0, Vec::len);
                    assert_eq!(points, 10, "the load's latest fixes are read back");
                    return started.elapsed();
                }
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "never answered"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        println!(
            "  start {round}: first tracking read answered after {answered:.2?} (target < 2 s)"
        );
        stop(server);
    }
}
