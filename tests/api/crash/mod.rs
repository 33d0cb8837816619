//! Acknowledged writes survive SIGKILL: the real binary, killed without warning.

use std::process::Stdio;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use tokio::process::{Child, Command};

use crate::helpers::{
    eventually, first_key_in, free_port, https_client, load_body, send, until_healthy,
    within_deadline,
};

struct Server {
    child: Child,
    base: String,
    /// `http://127.0.0.1:<port>`, its admin listener.
    admin: String,
    /// Its Teltonika listener.
    teltonika: std::net::SocketAddr,
}

impl Server {
    /// Creates `count` loads, each acknowledged with 201; returns their ids.
    async fn create_loads(&self, client: &reqwest::Client, key: &str, count: usize) -> Vec<String> {
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            let (status, load) = send(
                self.call(client, key, Method::POST, "/loads")
                    .json(&load_body("TX", "GA")),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{load}");
            ids.push(load["data"]["id"].as_str().unwrap().to_owned());
        }
        ids
    }

    /// A new load, assigned (so it takes fixes) to a carrier made for it (the
    /// first of this server: its MC number is taken once); its id.
    async fn assigned_load(&self, client: &reqwest::Client, key: &str) -> String {
        let call = |method, path: &str| self.call(client, key, method, path);
        let (_, load) = send(call(Method::POST, "/loads").json(&load_body("TX", "GA"))).await;
        let id = load["data"]["id"].as_str().unwrap().to_owned();
        let (_, carrier) =
            send(call(Method::POST, "/carriers").json(&crate::helpers::carrier_body("4242"))).await;
        let (status, _) = send(
            call(Method::PATCH, &format!("/loads/{id}/status"))
                .json(&json!({"status": "assigned", "carrier_id": carrier["data"]["id"]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        id
    }

    /// A new device (`body` as created) attached to `load`; the created device.
    async fn attached_device(
        &self,
        client: &reqwest::Client,
        key: &str,
        load: &str,
        body: serde_json::Value,
    ) -> serde_json::Value {
        let call = |method, path: &str| self.call(client, key, method, path);
        let (_, device) = send(call(Method::POST, "/devices").json(&body)).await;
        let attach = json!({"device_id": device["data"]["id"]});
        let (status, _) =
            send(call(Method::PUT, &format!("/loads/{load}/device")).json(&attach)).await;
        assert_eq!(status, StatusCode::OK);
        device
    }

    /// An authenticated request to `path` (under `/v1`) of this server.
    fn call(
        &self,
        client: &reqwest::Client,
        key: &str,
        method: Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key)
    }
}

/// Posts a GPS batch: the indexes of the points it stored, or `None` once the
/// server does not answer (it was killed).
async fn post_batch(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    points: Vec<serde_json::Value>,
) -> Option<Vec<usize>> {
    let response = client
        .post(url)
        .bearer_auth(key)
        .json(&json!({ "points": points }))
        .send()
        .await
        .ok()?;
    let body = response.json::<serde_json::Value>().await.ok()?;
    let results = body["data"]["results"].as_array()?;
    Some(
        results
            .iter()
            .filter(|result| result["status"] == "created")
            .map(|result| result["index"].as_u64().unwrap() as usize)
            .collect(),
    )
}

/// Starts `freight serve` and waits until it listens; returns the first-start key if printed.
async fn start(data_dir: &std::path::Path) -> (Server, Option<String>) {
    start_with(data_dir, None).await
}

/// [`start`], subscribed to the MQTT `broker` (`mqtt://…`) if one is given.
async fn start_with(data_dir: &std::path::Path, broker: Option<&str>) -> (Server, Option<String>) {
    freight::telemetry::install_crypto_provider();
    let (port, admin, teltonika) = (free_port(), free_port(), free_port());
    let first_start = !data_dir
        .join(freight::server::bootstrap::FIRST_KEY_FILE)
        .exists();
    let child = Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--workers", "2"])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        // The test receiver listens on plain http on loopback.
        .args(["--webhooks-allow-http", "--webhooks-allow-private"])
        // Devices here post as fast as they can: durability, not their
        // allowance, is under test.
        .args([
            "--device-positions-per-second",
            "1000",
            "--device-burst",
            "1000000",
        ])
        .env(
            "FREIGHT_TCP_INGEST",
            format!("teltonika=127.0.0.1:{teltonika}"),
        )
        .envs(broker.map(|url| ("FREIGHT_MQTT_BROKER", url)))
        .env("RUST_LOG", "info,freight::webhooks=debug")
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(data_dir.join("server.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("freight starts");
    until_healthy(&format!("http://127.0.0.1:{admin}")).await;
    // A first start writes its key to a file (stdout is not a terminal); the
    // file of a first start before this one says nothing of this start.
    let key = match first_start {
        true => first_key_in(data_dir).await,
        false => None,
    };
    let server = Server {
        child,
        base: format!("https://localhost:{port}/v1"),
        admin: format!("http://127.0.0.1:{admin}"),
        teltonika: ([127, 0, 0, 1], teltonika).into(),
    };
    (server, key)
}

#[actix_web::test]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());

    let load_ids = server.create_loads(&client, &key, 20).await;
    let (status, carrier) = send(
        server
            .call(&client, &key, Method::POST, "/carriers")
            .json(&crate::helpers::carrier_body("90001")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = send(
        server
            .call(
                &client,
                &key,
                Method::PATCH,
                &format!("/loads/{}/status", load_ids[0]),
            )
            .json(&json!({"status": "assigned", "carrier_id": carrier["data"]["id"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    server.child.start_kill().unwrap(); // SIGKILL
    server.child.wait().await.unwrap();

    let (server, second_key) = start(dir.path()).await;
    assert!(second_key.is_none(), "the first-start key is made once");
    let (status, list) = send(server.call(&client, &key, Method::GET, "/loads?limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["data"]["total"], 20);
    let (_, assigned) =
        send(server.call(&client, &key, Method::GET, "/loads?status=assigned")).await;
    assert_eq!(assigned["data"]["loads"][0]["id"], load_ids[0].as_str());
}

#[actix_web::test]
async fn every_acknowledged_fix_survives_sigkill_mid_stream() {
    stop_mid_stream(Stop::Kill).await;
}

/// SIGTERM: the server stops accepting, finishes the requests in flight, commits
/// their points, and exits 0; nothing acknowledged is lost.
#[actix_web::test]
async fn sigterm_drains_in_flight_requests_and_exits_zero() {
    stop_mid_stream(Stop::Term).await;
}

enum Stop {
    Kill,
    Term,
}

/// 8 connections post fixes as fast as they can, the server is stopped mid-stream
/// as `stop` says, restarted, and every acknowledged fix must be there once.
async fn stop_mid_stream(stop: Stop) {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());
    let id = server.assigned_load(&client, &key).await;

    // 8 connections post fixes as fast as they can; the server is killed mid-stream.
    let acked: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    // Whole seconds, so a fix's millisecond offset maps back exactly.
    let base = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp() - 3600, 0).unwrap();
    let url = format!("{}/loads/{id}/tracking", server.base);
    // Six connections post single fixes, two post 20-fix batches; millisecond
    // offsets are distinct per connection (offset mod 8 = connection).
    let batch_url = format!("{}/tracking/batch", server.base);
    let posters: Vec<_> = (0..8i64)
        .map(|worker| {
            let (client, url, batch_url, key, acked, id) = (
                https_client(dir.path()),
                url.clone(),
                batch_url.clone(),
                key.clone(),
                acked.clone(),
                id.clone(),
            );
            tokio::spawn(async move {
                for i in 0..100_000i64 {
                    if worker < 6 {
                        let millis = i * 8 + worker;
                        let at = base + chrono::Duration::milliseconds(millis);
                        let body = json!({"lat": 33.0, "lng": -95.0, "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true), "speed": 50});
                        match client.post(&url).bearer_auth(&key).json(&body).send().await {
                            Ok(r) if r.status() == StatusCode::CREATED => {
                                acked.lock().unwrap().insert(millis);
                            }
                            _ => break,
                        }
                    } else {
                        let millis: Vec<i64> = (0..20).map(|j| (i * 20 + j) * 8 + worker).collect();
                        let points: Vec<_> = millis
                            .iter()
                            .map(|m| {
                                let at = base + chrono::Duration::milliseconds(*m);
                                json!({"load_id": id, "lat": 33.0, "lng": -95.0, "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)})
                            })
                            .collect();
                        let Some(stored) = post_batch(&client, &batch_url, &key, points).await
                        else {
                            break;
                        };
                        for index in stored {
                            acked.lock().unwrap().insert(millis[index]);
                        }
                    }
                }
            })
        })
        .collect();
    eventually(
        Duration::from_secs(60),
        "300 acknowledged fixes",
        || async {
            let n = acked.lock().unwrap().len();
            if n >= 300 {
                Ok(())
            } else {
                Err(format!("{n} acknowledged"))
            }
        },
    )
    .await;
    match stop {
        Stop::Kill => {
            server.child.start_kill().unwrap(); // SIGKILL, with requests in flight
            server.child.wait().await.unwrap();
        }
        Stop::Term => {
            let pid = server.child.id().expect("running").to_string();
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap();
            assert!(sent.success());
            let exit = tokio::time::timeout(Duration::from_secs(45), server.child.wait())
                .await
                .expect("the server stops within its grace period")
                .unwrap();
            assert!(exit.success(), "a graceful stop exits 0, not {exit}");
            // The webhook dispatcher was still running when it was asked to finish
            // (actix-server's own SIGTERM handling used to stop it first, at times).
            let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
            assert!(log.contains("SIGTERM received"), "{log}");
            assert!(!log.contains("still in flight at shutdown"), "{log}");
        }
    }
    for poster in posters {
        poster.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();

    let (server, _) = start(dir.path()).await;
    nothing_acknowledged_lost(&server, &client, &key, &id, base, &acked).await;
    assert!(acked.len() >= 300);
}

/// Every acknowledged point of `load` (by its milliseconds after `base`) is
/// stored, each once.
async fn nothing_acknowledged_lost(
    server: &Server,
    client: &reqwest::Client,
    key: &str,
    load: &str,
    base: chrono::DateTime<chrono::Utc>,
    acked: &std::collections::BTreeSet<i64>,
) {
    use std::collections::BTreeSet;

    let mut stored = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = send(server.call(
            client,
            key,
            Method::GET,
            &format!("/loads/{load}/tracking/history?limit=1000{cursor}"),
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for point in page["data"]["points"].as_array().unwrap() {
            let at =
                chrono::DateTime::parse_from_rfc3339(point["timestamp"].as_str().unwrap()).unwrap();
            stored.push((at.with_timezone(&chrono::Utc) - base).num_milliseconds());
        }
        match page["pagination"]["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    let unique: BTreeSet<i64> = stored.iter().copied().collect();
    assert_eq!(unique.len(), stored.len(), "a point is stored at most once");
    let lost: Vec<&i64> = acked.difference(&unique).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged points lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

mod in_flight;
mod mqtt;
mod trackers;
