//! The CQL backend on a real cluster: two `freight serve` processes over a
//! keyspace with three replicas on a three-node Apache Cassandra cluster
//! (`deploy/cql-test-cluster`, started by `.ci/run`), talked to only through
//! their public HTTPS listeners, as clients would.
//!
//! Needs `FREIGHT_CQL_CLUSTER3` (the cluster's contact points) and
//! `FREIGHT_CQL_CLUSTER3_STATE` (its state file, through which nodes are
//! killed and restarted); without them the tests say so and pass, except
//! under `CI=true`, where they fail.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::helpers::{free_port, https_client, until_healthy};

pub(crate) struct Cluster3 {
    nodes: String,
    state: String,
}

/// One test at a time kills nodes of the cluster.
pub(crate) static NODES: std::sync::LazyLock<tokio::sync::Mutex<()>> =
    std::sync::LazyLock::new(|| tokio::sync::Mutex::new(()));

pub(crate) fn cluster3() -> Option<Cluster3> {
    match (
        std::env::var("FREIGHT_CQL_CLUSTER3"),
        std::env::var("FREIGHT_CQL_CLUSTER3_STATE"),
    ) {
        (Ok(nodes), Ok(state)) => Some(Cluster3 { nodes, state }),
        _ => {
            let why = "FREIGHT_CQL_CLUSTER3 and FREIGHT_CQL_CLUSTER3_STATE are not set (start \
                       a three-node cluster: CQL_CLUSTER_STATE=… CQL_CLUSTER_FIRST=4 \
                       deploy/cql-test-cluster/cluster.sh start 3)";
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI must run the three-node tests, but {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}

impl Cluster3 {
    /// `cluster.sh kill N` or `restart N`.
    fn node(&self, command: &str, node: u8) {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/cql-test-cluster/cluster.sh"
        );
        let status = std::process::Command::new(script)
            .args([command, &node.to_string()])
            .env("CQL_CLUSTER_STATE", &self.state)
            .status()
            .unwrap();
        assert!(status.success(), "cluster.sh {command} {node}");
    }
}

/// One `freight serve` over the shared keyspace.
pub(crate) struct Instance {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) admin: String,
    pub(crate) data: std::path::PathBuf,
    pub(crate) client: reqwest::Client,
    /// The internal listener other instances forward to (plain HTTP, signed).
    pub(crate) internal: String,
}

/// Starts instance `n` over `keyspace` (instance 0 makes the first key).
async fn instance(cluster: &Cluster3, keyspace: &str, dir: &std::path::Path, n: usize) -> Instance {
    let (api, admin, internal) = (free_port(), free_port(), free_port());
    let data = dir.join(format!("instance-{n}"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_freight"));
    command
        .args(["serve", "--storage", "scylla", "--workers", "1"])
        .args([
            "--scylla-nodes",
            &cluster.nodes,
            "--scylla-keyspace",
            keyspace,
        ])
        .args(["--cluster-secret", "a-cluster-secret-of-32-characters!!"])
        // The tests' webhook receiver listens on plain http on loopback.
        .args(["--webhooks-allow-http", "--webhooks-allow-private"])
        .args(["--internal-listen", &format!("127.0.0.1:{internal}")])
        .args(["--internal-address", &format!("127.0.0.1:{internal}")])
        .args(["--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--secrets-key-file")
        .arg(dir.join("secrets.key"))
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("instance-{n}.log"))).unwrap())
        .kill_on_drop(true);
    if n > 0 {
        command.arg("--no-bootstrap-key");
    }
    let child = command.spawn().unwrap();
    let admin = format!("http://127.0.0.1:{admin}");
    assert!(until_healthy(&admin).await, "instance {n} started");
    Instance {
        child,
        base: format!("https://localhost:{api}/v1"),
        admin,
        client: https_client(&data),
        data,
        internal: format!("http://127.0.0.1:{internal}"),
    }
}

impl Instance {
    pub(crate) async fn call(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.try_call(key, method, path, body)
            .await
            .unwrap_or_else(|why| panic!("{why}"))
    }

    /// As [`Self::call`]; a request that got no answer is an error saying why.
    pub(crate) async fn try_call(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), String> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                Ok((status, response.json().await.unwrap_or(Value::Null)))
            }
            Err(error) => Err(format!(
                "{path}: no answer: {}; the instances' logs: {} (FREIGHT_KEEP_LOGS keeps them)",
                freight::telemetry::error_chain(&error),
                self.data.parent().unwrap().display()
            )),
        }
    }
}

/// Every fix in `acked` (per load, the timestamps answered 201) is in its
/// load's history, read through `instance`.
pub(crate) async fn assert_all_stored(
    instance: &Instance,
    key: &str,
    acked: &BTreeMap<String, Vec<String>>,
) {
    for (load, times) in acked {
        let (status, history) = instance
            .call(
                key,
                reqwest::Method::GET,
                &format!("/loads/{load}/tracking/history?limit=1000"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{history}");
        let stored: std::collections::BTreeSet<&str> = history["data"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["timestamp"].as_str().unwrap())
            .collect();
        let lost: Vec<&String> = times
            .iter()
            .filter(|t| !stored.contains(t.as_str()))
            .collect();
        assert!(
            lost.is_empty(),
            "{load}: acknowledged and not stored: {lost:?}"
        );
    }
}

/// `freight migrate` into a new keyspace of three replicas; its name.
fn migrated_keyspace(cluster: &Cluster3) -> String {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let keyspace = format!("freight_faults_{}_{n}", std::process::id());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args([
            "migrate",
            "--scylla-nodes",
            &cluster.nodes,
            "--scylla-keyspace",
            &keyspace,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    keyspace
}

/// Two instances over a new keyspace of three replicas, an enterprise
/// account's key, and `n` loads assigned to a carrier.
pub(crate) async fn two_instances(
    cluster: &Cluster3,
    n: usize,
) -> (tempfile::TempDir, Instance, Instance, String, Vec<String>) {
    let (dir, mut started, key, loads) = instances(cluster, 2, n).await;
    let b = started.pop().unwrap();
    let a = started.pop().unwrap();
    (dir, a, b, key, loads)
}

/// `count` instances over a new keyspace of three replicas, an enterprise
/// account's key, and `n` loads made and assigned through the first.
pub(crate) async fn instances(
    cluster: &Cluster3,
    count: usize,
    n: usize,
) -> (tempfile::TempDir, Vec<Instance>, String, Vec<String>) {
    freight::telemetry::install_crypto_provider();
    // FREIGHT_KEEP_LOGS keeps the instances' data and logs for a look afterwards.
    let dir = tempfile::Builder::new()
        .prefix("freight-cql-cluster-")
        .disable_cleanup(std::env::var("FREIGHT_KEEP_LOGS").is_ok())
        .tempdir()
        .unwrap();
    std::fs::write(
        dir.path().join("secrets.key"),
        format!("{}\n", "5a".repeat(32)),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.path().join("secrets.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let keyspace = migrated_keyspace(cluster);
    let mut started = Vec::new();
    for i in 0..count {
        started.push(instance(cluster, &keyspace, dir.path(), i).await);
    }
    let a = &started[0];
    let key = crate::helpers::first_key_in(&a.data)
        .await
        .expect("the first key");
    // The fixes below are more than a Standard hour's quota.
    let (_, verified) = a
        .call(&key, reqwest::Method::GET, "/auth/verify", None)
        .await;
    let account = verified["data"]["user_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args([
            "accounts",
            "set-plan",
            "--plan",
            "enterprise",
            "--requests-per-hour",
            "1000000",
            &account,
        ])
        .args(["--admin-url", &a.admin])
        .arg("--data-dir")
        .arg(&a.data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (status, carrier) = a
        .call(
            &key,
            reqwest::Method::POST,
            "/carriers",
            Some(crate::helpers::carrier_body("707070")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    let mut loads = Vec::new();
    for _ in 0..n {
        let (status, load) = a
            .call(
                &key,
                reqwest::Method::POST,
                "/loads",
                Some(crate::helpers::load_body("TX", "GA")),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{load}");
        let id = load["data"]["id"].as_str().unwrap().to_owned();
        let (status, moved) = a
            .call(
                &key,
                reqwest::Method::PATCH,
                &format!("/loads/{id}/status"),
                Some(json!({"status": "assigned", "carrier_id": carrier["data"]["id"]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{moved}");
        loads.push(id);
    }

    (dir, started, key, loads)
}

/// During sustained ingest through two instances (at QUORUM, three
/// replicas), one Cassandra node is killed with -9 and started again: ingest
/// goes on while it is down, nothing is answered 500, and every fix answered
/// 201 is in the load's history afterwards.
#[actix_web::test]
async fn a_cassandra_node_lost_mid_ingest_loses_no_acknowledged_fix() {
    let Some(cluster) = cluster3() else {
        return;
    };
    let _alone = NODES.lock().await;
    let (_dir, a, b, key, loads) = two_instances(&cluster, 6).await;
    let start = Utc::now() - chrono::Duration::hours(2);
    let mut acked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut while_down = 0;
    let began = tokio::time::Instant::now();
    let (mut killed, mut restarted) = (false, false);
    for n in 0.. {
        let elapsed = began.elapsed();
        if !killed && elapsed > Duration::from_secs(4) {
            cluster.node("kill", 3);
            killed = true;
        }
        if killed && !restarted && elapsed > Duration::from_secs(16) {
            cluster.node("restart", 3);
            restarted = true;
        }
        if restarted && elapsed > Duration::from_secs(24) {
            break;
        }
        let load = &loads[n % loads.len()];
        let at = (start + chrono::Duration::seconds(n as i64))
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let through = if n % 2 == 0 { &a } else { &b };
        let (status, body) = through
            .call(
                &key,
                reqwest::Method::POST,
                &format!("/loads/{load}/tracking"),
                Some(json!({"lat": 33.0, "lng": -96.0 + n as f64 / 1e4, "timestamp": at})),
            )
            .await;
        assert!(
            !status.is_server_error() || status == StatusCode::SERVICE_UNAVAILABLE,
            "{status}: {body}"
        );
        *statuses.entry(status.as_u16()).or_default() += 1;
        if status == StatusCode::CREATED {
            acked.entry(load.clone()).or_default().push(at);
            if killed && !restarted {
                while_down += 1;
            }
        }
    }
    assert!(
        while_down > 10,
        "ingest went on while the node was down: {statuses:?}"
    );
    assert_all_stored(&a, &key, &acked).await;
    eprintln!("answers: {statuses:?}; {while_down} fixes acknowledged while node 3 was down");
    drop((a.child, b.child));
}

/// Every Cassandra node stopped: requests that need the store are answered
/// 503 with `Retry-After` at once (never a hang, never a 500), `/ready` fails;
/// once the nodes are back the service takes requests again by itself, and
/// what was acknowledged before is there.
#[actix_web::test]
async fn with_every_cassandra_node_down_requests_get_503_and_the_service_recovers() {
    let Some(cluster) = cluster3() else {
        return;
    };
    let _alone = NODES.lock().await;
    let (_dir, a, b, key, loads) = two_instances(&cluster, 1).await;
    let load = &loads[0];
    let fix = |minutes: i64| {
        let at = (Utc::now() - chrono::Duration::minutes(minutes))
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        json!({"lat": 33.0, "lng": -96.0, "timestamp": at})
    };
    let path = format!("/loads/{load}/tracking");
    let before = fix(30);
    let (status, body) = a
        .call(&key, reqwest::Method::POST, &path, Some(before.clone()))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for node in 1..=3 {
        cluster.node("kill", node);
    }
    for (n, instance) in [&a, &b].into_iter().enumerate() {
        let began = tokio::time::Instant::now();
        let response = instance
            .client
            .post(format!("{}{path}", instance.base))
            .bearer_auth(&key)
            .json(&fix(20 - n as i64))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            response.headers().contains_key("retry-after"),
            "{:?}",
            response.headers()
        );
        assert!(
            began.elapsed() < Duration::from_secs(15),
            "answered in {:?}",
            began.elapsed()
        );
        let (status, _) = instance
            .call(&key, reqwest::Method::GET, "/loads", None)
            .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        let ready = reqwest::get(format!("{}/ready", instance.admin))
            .await
            .unwrap();
        assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    for node in 1..=3 {
        cluster.node("restart", node);
    }
    // One fix, sent again as a client would until it is taken: a 503 while
    // the nodes come back may still have been written by the one replica up
    // (Cassandra does not undo it), and the same fix again is then a duplicate.
    let after = fix(10);
    crate::helpers::eventually(Duration::from_secs(60), "fixes taken again", || async {
        let (status, body) = b
            .try_call(&key, reqwest::Method::POST, &path, Some(after.clone()))
            .await?;
        match status {
            StatusCode::CREATED | StatusCode::OK => Ok(()),
            other => Err(format!("{other}: {body}")),
        }
    })
    .await;
    let (status, history) = a
        .call(&key, reqwest::Method::GET, &format!("{path}/history"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{history}");
    // The fix before the outage and the one after; the two sent while every
    // node was down, answered 503, may or may not have reached a replica.
    let times: Vec<&str> = history["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["timestamp"].as_str().unwrap())
        .collect();
    for sent in [before, after] {
        let at = sent["timestamp"].as_str().unwrap().to_owned();
        assert!(times.contains(&at.as_str()), "{at} is not in {history}");
    }
    let ready = reqwest::get(format!("{}/ready", a.admin)).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}
