//! Three instances in one process over one store acting as a shared one
//! (`EmbeddedStore::as_if_shared`: leases and the instance registry as
//! ScyllaDB keeps them), each with its HTTPS API and its internal listener on
//! loopback, talked to as clients would.

use std::sync::Arc;
use std::time::Duration;

use actix_server::ServerHandle;
use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Value, json};

use super::ClusterSettings;
use super::signing::ClusterSecret;
use crate::server::settings::Settings;
use crate::server::startup::Application;
use crate::storage::Storage;
use crate::storage::embedded::EmbeddedStore;

/// Short, so that a stopped instance's loads move within the test.
const LEASE_TTL: Duration = Duration::from_secs(3);

struct Instance {
    name: Arc<str>,
    services: crate::services::Services,
    /// The internal listener, `host:port`.
    internal: String,
    base: String,
    client: reqwest::Client,
    handles: Vec<ServerHandle>,
    _dir: tempfile::TempDir,
}

struct Cluster {
    instances: Vec<Instance>,
    key: String,
    storage: Arc<dyn Storage>,
    _store_dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_instance(
    storage: &Arc<dyn Storage>,
    secret: &ClusterSecret,
    first: bool,
    adjust: fn(&mut Settings),
) -> (Instance, Option<String>) {
    crate::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::ephemeral(dir.path().to_owned());
    settings.bootstrap_key = first;
    settings.actors.lease_ttl = LEASE_TTL;
    adjust(&mut settings);
    let port = free_port();
    settings.cluster = Some(ClusterSettings {
        internal_listen: format!("127.0.0.1:{port}").parse().unwrap(),
        internal_address: format!("127.0.0.1:{port}"),
        secret: secret.clone(),
    });
    let app = Application::build_over(settings, storage.clone())
        .await
        .expect("instance starts");
    let key = app.bootstrap_key().map(|k| k.token.clone());
    let name = app.services().actors.instance().clone();
    let services = app.services().clone();
    let base = format!("https://{}/v1", app.api_addr());
    let pem = std::fs::read(dir.path().join("tls/cert.pem")).unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .build()
        .unwrap();
    let handles = app.handles();
    actix_rt::spawn(app.run_until_stopped());
    let instance = Instance {
        name,
        services,
        internal: format!("127.0.0.1:{port}"),
        base,
        client,
        handles,
        _dir: dir,
    };
    (instance, key)
}

async fn cluster_of(n: usize) -> Cluster {
    cluster_with(n, |_| {}).await
}

async fn cluster_with(n: usize, adjust: fn(&mut Settings)) -> Cluster {
    let store_dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(
        EmbeddedStore::open(store_dir.path())
            .await
            .unwrap()
            .as_if_shared(),
    );
    let secret = ClusterSecret::parse("a-cluster-secret-of-32-characters!!").unwrap();
    let mut instances = Vec::new();
    let mut key = None;
    for i in 0..n {
        let (instance, first_key) = start_instance(&storage, &secret, i == 0, adjust).await;
        key = key.or(first_key);
        instances.push(instance);
    }
    Cluster {
        instances,
        key: key.expect("the first instance made the first key"),
        storage,
        _store_dir: store_dir,
    }
}

impl Instance {
    async fn call(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the instance answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body, headers)
    }

    /// Stops its listeners; the caller drops what is left of it.
    async fn stop(&self) {
        for handle in &self.handles {
            handle.stop(false).await;
        }
    }
}

impl Cluster {
    async fn call(
        &self,
        on: usize,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let (status, body, _) = self.instances[on].call(&self.key, method, path, body).await;
        (status, body)
    }

    /// A load created and assigned through instance `on`, whose actor (and
    /// so the load's lease) is there from then on.
    async fn assigned_load_on(&self, on: usize, carrier: &str) -> String {
        let (status, load) = self
            .call(
                on,
                reqwest::Method::POST,
                "/loads",
                Some(json!({
                    "origin": {"city": "Dallas", "state": "TX", "zip": "75201"},
                    "destination": {"city": "Atlanta", "state": "GA", "zip": "30301"},
                    "weight": 42000,
                    "equipment_type": "dry_van"
                })),
            )
            .await;
        assert_eq!(status, 201, "{load}");
        let id = load["data"]["id"].as_str().unwrap().to_owned();
        let (status, assigned) = self
            .call(
                on,
                reqwest::Method::PATCH,
                &format!("/loads/{id}/status"),
                Some(json!({"status": "assigned", "carrier_id": carrier})),
            )
            .await;
        assert_eq!(status, 200, "{assigned}");
        id
    }

    async fn carrier(&self) -> String {
        let (status, carrier) = self
            .call(
                0,
                reqwest::Method::POST,
                "/carriers",
                Some(json!({
                    "name": "Lone Star Hauling",
                    "mc_number": "MC123456",
                    "dot_number": "2233445",
                    "contact": {"email": "dispatch@lonestar.example", "phone": "+1 214-555-0100"},
                    "equipment_types": ["dry_van"],
                    "service_areas": ["TX", "GA"]
                })),
            )
            .await;
        assert_eq!(status, 201, "{carrier}");
        carrier["data"]["id"].as_str().unwrap().to_owned()
    }

    /// The instance whose actor holds `load`'s lease now.
    async fn holder(&self, load: &str) -> Option<usize> {
        let id = crate::domain::ids::LoadId::parse(load).unwrap();
        let owner = self.storage.load_lease_holder(&id).await.unwrap()?;
        let (instance, _) = crate::storage::lease_owner_parts(&owner)?;
        self.instances.iter().position(|i| &*i.name == instance)
    }
}

fn fix(load: &str, at: DateTime<Utc>, lat: f64) -> Value {
    json!({"load_id": load, "lat": lat, "lng": -96.8, "timestamp": at.to_rfc3339(), "speed": 55.0})
}

#[actix_rt::test]
async fn any_instance_serves_loads_held_by_the_others() {
    let cluster = cluster_of(3).await;
    let carrier = cluster.carrier().await;
    let mut loads = Vec::new();
    for i in 0..6 {
        let load = cluster.assigned_load_on(i % 3, &carrier).await;
        assert_eq!(
            cluster.holder(&load).await,
            Some(i % 3),
            "held where assigned"
        );
        loads.push(load);
    }

    // A batch through instance 0 over loads held by all three: accepted whole.
    let start = Utc::now().trunc_subsecs(0) - chrono::Duration::minutes(10);
    let points: Vec<Value> = loads
        .iter()
        .enumerate()
        .flat_map(|(i, load)| {
            [0, 1].map(|n| {
                fix(
                    load,
                    start + chrono::Duration::seconds(n),
                    32.0 + i as f64 / 10.0 + n as f64 / 100.0,
                )
            })
        })
        .collect();
    let (status, answer) = cluster
        .call(
            0,
            reqwest::Method::POST,
            "/tracking/batch",
            Some(json!({ "points": points })),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["accepted"], 12, "{answer}");
    assert_eq!(answer["data"]["rejected"], 0, "{answer}");
    // The same batch again: every point a duplicate, wherever its load is held.
    let (_, again) = cluster
        .call(
            1,
            reqwest::Method::POST,
            "/tracking/batch",
            Some(json!({ "points": points })),
        )
        .await;
    assert_eq!(again["data"]["duplicates"], 12, "{again}");

    // Whole requests: the live view read through an instance that does not
    // hold the load is the holder's, latest fix included.
    let held_by_2 = &loads[2];
    let (status, live) = cluster
        .call(
            1,
            reqwest::Method::GET,
            &format!("/loads/{held_by_2}/tracking"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{live}");
    assert_eq!(
        live["data"]["current_location"]["lat"],
        json!(32.21),
        "{live}"
    );

    // A single fix, and a status change, through non-holders.
    let held_by_0 = &loads[0];
    let (status, single) = cluster
        .call(
            2,
            reqwest::Method::POST,
            &format!("/loads/{held_by_0}/tracking"),
            Some(json!({"lat": 33.0, "lng": -96.0, "timestamp": (start + chrono::Duration::seconds(5)).to_rfc3339()})),
        )
        .await;
    assert_eq!(status, 201, "{single}");
    let (status, moved) = cluster
        .call(
            1,
            reqwest::Method::PATCH,
            &format!("/loads/{held_by_0}/status"),
            Some(json!({"status": "in_transit"})),
        )
        .await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["data"]["status"], "in_transit", "{moved}");
    // The holder acted: the load did not move, and its actor knows the change.
    assert_eq!(cluster.holder(held_by_0).await, Some(0));
    let (_, live) = cluster
        .call(
            0,
            reqwest::Method::GET,
            &format!("/loads/{held_by_0}/tracking"),
            None,
        )
        .await;
    assert_eq!(live["data"]["status"], "in_transit", "{live}");
    assert_eq!(
        live["data"]["current_location"]["lat"],
        json!(33.0),
        "{live}"
    );
}

#[actix_rt::test]
async fn a_stopped_instance_loses_no_acknowledged_fix_and_its_loads_move() {
    let mut cluster = cluster_of(3).await;
    let carrier = cluster.carrier().await;
    let load = cluster.assigned_load_on(2, &carrier).await;
    let start = Utc::now().trunc_subsecs(0) - chrono::Duration::minutes(30);
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    let mut stopped_at = None;
    let mut moved_after = None;
    for n in 0..10_000 {
        if n == 20 {
            let gone = cluster.instances.remove(2);
            gone.stop().await;
            drop(gone);
            stopped_at = Some(std::time::Instant::now());
        }
        let at = start + chrono::Duration::seconds(n);
        let (status, body, headers) = cluster.instances[n as usize % 2]
            .call(
                &cluster.key,
                reqwest::Method::POST,
                &format!("/loads/{load}/tracking"),
                Some(json!({"lat": 32.0 + n as f64 / 1000.0, "lng": -96.8, "timestamp": at.to_rfc3339()})),
            )
            .await;
        match status {
            201 => {
                acknowledged.push(at);
                if let Some(stopped) = stopped_at
                    && moved_after.is_none()
                {
                    moved_after = Some(stopped.elapsed());
                }
            }
            503 => {
                assert!(stopped_at.is_some(), "refused before the stop: {body}");
                assert!(headers.contains_key("retry-after"), "{body}");
                assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");
                refused += 1;
                actix_rt::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("unexpected {other}: {body}"),
        }
        if moved_after.is_some() && acknowledged.len() >= 40 {
            break;
        }
    }
    let moved_after = moved_after.expect("the load moved to another instance");
    assert!(
        refused > 0,
        "the stopped instance's lease had to expire before its load moved"
    );
    assert!(matches!(cluster.holder(&load).await, Some(0 | 1)));
    eprintln!(
        "the load moved {moved_after:?} after its instance stopped (lease TTL {LEASE_TTL:?}); {refused} posts answered 503 meanwhile"
    );
    // Every acknowledged fix is stored, read through either instance left.
    let (status, history) = cluster
        .call(
            1,
            reqwest::Method::GET,
            &format!("/loads/{load}/tracking/history?limit=1000"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{history}");
    let stored: std::collections::HashSet<DateTime<Utc>> = history["data"]
        .as_array()
        .or_else(|| history["data"]["points"].as_array())
        .expect("points")
        .iter()
        .map(|p| p["timestamp"].as_str().unwrap().parse().unwrap())
        .collect();
    for at in &acknowledged {
        assert!(stored.contains(at), "acknowledged fix at {at} is lost");
    }
}

#[actix_rt::test]
async fn the_account_stream_on_one_instance_carries_fixes_stored_on_the_others() {
    let cluster = cluster_of(3).await;
    let carrier = cluster.carrier().await;
    let on_1 = cluster.assigned_load_on(1, &carrier).await;
    let on_2 = cluster.assigned_load_on(2, &carrier).await;
    let mut stream = cluster.instances[0]
        .client
        .get(format!("{}/tracking/stream", cluster.instances[0].base))
        .bearer_auth(&cluster.key)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let start = Utc::now().trunc_subsecs(0) - chrono::Duration::minutes(5);
    let mut seen = String::new();
    // Posted through the instance holding each load (no forwarding): the
    // fixes are stored there and reach instance 0 only through its taps. A
    // tap opens just after the stream does; fixes go on until one arrives.
    for n in 0..40 {
        for (via, load) in [(1, &on_1), (2, &on_2)] {
            let (status, body) = cluster
                .call(
                    via,
                    reqwest::Method::POST,
                    &format!("/loads/{load}/tracking"),
                    Some(json!({"lat": 33.0, "lng": -97.0, "timestamp": (start + chrono::Duration::seconds(n)).to_rfc3339()})),
                )
                .await;
            assert_eq!(status, 201, "{body}");
        }
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, stream.chunk()).await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        if seen.contains(on_1.as_str()) && seen.contains(on_2.as_str()) {
            break;
        }
    }
    for load in [&on_1, &on_2] {
        let event = seen
            .split("\n\n")
            .find(|frame| frame.contains(load.as_str()))
            .unwrap_or_else(|| panic!("no event of {load} on instance 0's stream: {seen}"));
        assert!(event.contains("event: tracking.updated"), "{event}");
        assert!(
            event.contains("\nid: ") || event.starts_with("id: "),
            "{event}"
        );
    }
}

mod internal;
mod views;
