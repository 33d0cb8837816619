//! `spawn_app()`: the real server on random loopback ports, HTTPS with the
//! self-signed certificate it generates, over the binary's backend
//! (`crate::backend`): fjall in a temporary directory, or a fresh keyspace on
//! a CQL cluster.

use std::path::Path;

use chrono::Utc;
use freight::clock::{Clock, ManualClock};
use freight::server::settings::Settings;
use freight::server::startup::Application;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::backend::TestStore;

pub struct TestApp {
    /// `https://localhost:<port>/v1`
    pub base: String,
    /// `http://127.0.0.1:<port>` (the admin listener)
    pub admin_base: String,
    pub api_port: u16,
    /// The read+write key the first start created.
    pub key: String,
    pub account_id: String,
    pub admin_token: String,
    pub client: reqwest::Client,
    pub clock: ManualClock,
    pub data_dir: TempDir,
    /// The tracker listeners the settings asked for, where they listen.
    pub trackers: Vec<(
        freight::server::trackers::TrackerProtocol,
        std::net::SocketAddr,
    )>,
    store: TestStore,
    run: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    handles: Vec<actix_server::ServerHandle>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// A server whose webhooks may reach a local plain-HTTP receiver
/// (`crate::receiver::Receiver`).
pub async fn spawn_app_with_local_webhooks() -> TestApp {
    spawn_app_with(|s| {
        s.webhooks = freight::webhooks::dispatcher::DispatchSettings {
            url_policy: freight::domain::webhook::UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            ..Default::default()
        }
    })
    .await
}

/// Asks `probe` every 25 ms until it answers `Ok`, and returns that; fails
/// the test after `within`, saying `what` was awaited and the last `Err`
/// (what was seen instead). The one wait loop of the suite: a wait that
/// cannot end is a failure, never a hang.
pub async fn eventually<T, F, Fut>(within: std::time::Duration, what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    match within_deadline(within, probe).await {
        Ok(found) => found,
        Err(seen) => panic!("timed out after {within:?} waiting for {what}; last seen: {seen}"),
    }
}

/// `eventually`, answering the last `Err` at the deadline instead of failing:
/// for a test that gathers more evidence (a server log) before it fails.
pub async fn within_deadline<T, F, Fut>(
    within: std::time::Duration,
    mut probe: F,
) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = std::time::Instant::now() + within;
    loop {
        match probe().await {
            Ok(found) => return Ok(found),
            Err(seen) if std::time::Instant::now() >= deadline => return Err(seen),
            Err(_) => {}
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// The id of the first delivery in `webhook`'s log, once there is one (10 s
/// at most).
pub async fn first_delivery(app: &TestApp, webhook: &str) -> String {
    let path = format!("/webhooks/{webhook}/deliveries");
    eventually(
        std::time::Duration::from_secs(10),
        "a delivery in the log",
        || async {
            let (_, log) = app.get(&path).await;
            match log["data"]["deliveries"].as_array().and_then(|d| d.first()) {
                Some(first) => Ok(first["id"].as_str().unwrap().to_owned()),
                None => Err(log.to_string()),
            }
        },
    )
    .await
}

/// Starts the server with settings adjusted by `adjust`.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::starting_at(Utc::now());
    start(data_dir, TestStore::new().await, clock, adjust).await
}

async fn start(
    data_dir: TempDir,
    store: TestStore,
    clock: ManualClock,
    adjust: impl FnOnce(&mut Settings),
) -> TestApp {
    freight::telemetry::install_crypto_provider();
    let mut settings = Settings::ephemeral(data_dir.path().to_owned());
    store.apply(&mut settings);
    settings.clock = Clock::manual(clock.clone());
    // The test clock stands still, so a device's allowance would never refill:
    // tests post as fast as they like unless they set the limits they test.
    settings.devices.positions_per_second = 1000.0;
    settings.devices.burst = 1_000_000;
    adjust(&mut settings);
    // On a restart, the stopped server's last threads (its webhook dispatcher's
    // arbiter, stopped, not joined) may hold the store a moment longer than
    // `run_until_stopped`: a process that exits lets go at once, a test in the
    // same process waits for it, 10 s at most.
    let app = eventually(
        std::time::Duration::from_secs(10),
        "the stopped server to let go of the store",
        || async {
            match Application::build(settings.clone()).await {
                Ok(app) => Ok(app),
                Err(error) if format!("{error:#}").contains("another freight process is using") => {
                    Err(format!("{error:#}"))
                }
                Err(error) => panic!("server starts: {error:?}"),
            }
        },
    )
    .await;
    let api_port = app.api_addr().port();
    let admin_base = format!("http://{}", app.admin_addr());
    let (key, account_id) = match app.bootstrap_key() {
        Some(first) => (first.token.clone(), first.account.id.to_string()),
        None => (String::new(), String::new()),
    };
    let handles = app.handles().to_vec();
    let trackers = freight::server::trackers::TrackerProtocol::ALL
        .into_iter()
        .filter_map(|p| app.tracker_addr(p).map(|addr| (p, addr)))
        .collect();
    let run = tokio::spawn(app.run_until_stopped());
    let admin_token = freight::server::admin_token::read(data_dir.path()).expect("admin token");
    TestApp {
        base: format!("https://localhost:{api_port}/v1"),
        admin_base,
        api_port,
        key,
        account_id,
        admin_token,
        client: https_client(data_dir.path()),
        clock,
        data_dir,
        trackers,
        store,
        run: Some(run),
        handles,
    }
}

/// A client that trusts exactly the server's generated certificate (a plain client
/// when the server runs behind a TLS proxy and so has none).
pub fn https_client(data_dir: &Path) -> reqwest::Client {
    freight::telemetry::install_crypto_provider();
    let Ok(pem) = std::fs::read(data_dir.join("tls/cert.pem")) else {
        return reqwest::Client::new();
    };
    let cert = reqwest::Certificate::from_pem(&pem).expect("certificate parses");
    reqwest::Client::builder()
        .tls_certs_only([cert])
        .build()
        .expect("client builds")
}

impl TestApp {
    /// Stops the server, waits until it let go of the data directory, and starts it
    /// again on the same directory (and clock).
    pub async fn restart(self) -> TestApp {
        self.restart_with(|_| {}).await
    }

    /// [`restart`](Self::restart) with settings adjusted as at the first start.
    pub async fn restart_with(self, adjust: impl FnOnce(&mut Settings)) -> TestApp {
        self.restart_after(async {}, adjust).await
    }

    /// [`restart_with`](Self::restart_with), running `meanwhile` while the
    /// server is down.
    pub async fn restart_after(
        mut self,
        meanwhile: impl std::future::Future<Output = ()>,
        adjust: impl FnOnce(&mut Settings),
    ) -> TestApp {
        for handle in &self.handles {
            handle.stop(true).await;
        }
        if let Some(run) = self.run.take() {
            run.await.expect("server task").expect("server ran");
        }
        self.handles.clear();
        meanwhile.await;
        let data_dir = std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap());
        let (key, account) = (self.key.clone(), self.account_id.clone());
        let store = self.store.clone();
        let mut restarted = start(data_dir, store, self.clock.clone(), adjust).await;
        restarted.key = key;
        restarted.account_id = account;
        restarted
    }

    /// Stops the server, waits until it let go of the data directory, and
    /// hands the directory back.
    pub async fn stop(mut self) -> TempDir {
        for handle in &self.handles {
            handle.stop(true).await;
        }
        if let Some(run) = self.run.take() {
            run.await.expect("server task").expect("server ran");
        }
        self.handles.clear();
        std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap())
    }

    /// The CQL keyspace the server runs over, on the CQL backend (for
    /// tests/api_cql's store refusals).
    #[allow(dead_code)]
    pub fn cql_keyspace(&self) -> Option<&freight::storage::scylla::ScyllaConfig> {
        match &self.store {
            TestStore::Cql(keyspace) => Some(&keyspace.0),
            _ => None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.get_as(&self.key, path).await
    }

    /// The whole response to a GET with the first-start key, for its headers.
    pub async fn get_response(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("request reaches the server")
    }

    pub async fn get_as(&self, key: &str, path: &str) -> (StatusCode, Value) {
        send(self.client.get(self.url(path)).bearer_auth(key)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.post_as(&self.key, path, body).await
    }

    pub async fn post_as(&self, key: &str, path: &str, body: Value) -> (StatusCode, Value) {
        send(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .json(&body),
        )
        .await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.patch_as(&self.key, path, body).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        send(self.client.delete(self.url(path)).bearer_auth(&self.key)).await
    }

    pub async fn patch_as(&self, key: &str, path: &str, body: Value) -> (StatusCode, Value) {
        send(
            self.client
                .patch(self.url(path))
                .bearer_auth(key)
                .json(&body),
        )
        .await
    }

    /// An admin-listener call with the admin token.
    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = reqwest::Client::new()
            .request(method, format!("{}/admin/v1{path}", self.admin_base))
            .bearer_auth(&self.admin_token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        send(request).await
    }

    /// A new account with a read+write key: (account id, key).
    pub async fn new_account(&self) -> (String, String) {
        let (status, account) = self
            .admin(
                reqwest::Method::POST,
                "/accounts",
                Some(json!({"name": "Other Co"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{account}");
        let id = account["data"]["id"].as_str().unwrap().to_owned();
        let key = self.new_key(&id, &["read", "write"], None).await;
        (id, key)
    }

    pub async fn new_key(
        &self,
        account: &str,
        permissions: &[&str],
        expires_at: Option<String>,
    ) -> String {
        let (status, key) = self
            .admin(
                reqwest::Method::POST,
                "/keys",
                Some(json!({"account_id": account, "permissions": permissions, "expires_at": expires_at})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{key}");
        key["data"]["key"].as_str().unwrap().to_owned()
    }

    pub async fn create_load(&self, body: Value) -> Value {
        let (status, load) = self.post("/loads", body).await;
        assert_eq!(status, StatusCode::CREATED, "{load}");
        load["data"].clone()
    }

    pub async fn create_carrier(&self, mc_number: &str) -> Value {
        let (status, carrier) = self.post("/carriers", carrier_body(mc_number)).await;
        assert_eq!(status, StatusCode::CREATED, "{carrier}");
        carrier["data"].clone()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        for handle in &self.handles {
            // `stop` sends the command at once; the future only waits for completion.
            drop(handle.stop(false));
        }
    }
}

pub async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("request reaches the server");
    let status = response.status();
    let text = response.text().await.expect("body");
    let body =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, body)
}

pub fn load_body(origin_state: &str, destination_state: &str) -> Value {
    json!({
        "origin": {"city": "Dallas", "state": origin_state, "zip": "75201"},
        "destination": {"city": "Atlanta", "state": destination_state, "zip": "30301"},
        "weight": 42000,
        "equipment_type": "dry_van"
    })
}

pub fn carrier_body(mc_number: &str) -> Value {
    json!({
        "name": "Lone Star Hauling",
        "mc_number": mc_number,
        "dot_number": "2233445",
        "contact": {"email": "dispatch@lonestar.example", "phone": "+1 214-555-0100"},
        "equipment_types": ["dry_van", "refrigerated"],
        "service_areas": ["TX", "OK", "GA"]
    })
}

/// The fields a `VALIDATION_FAILED` error names, in its order.
pub fn error_fields(error: &Value) -> Vec<String> {
    error["details"]["errors"]
        .as_array()
        .expect("the error's list")
        .iter()
        .map(|e| e["field"].as_str().expect("a field").to_owned())
        .collect()
}

/// Asserts the error envelope and returns `error`.
/// The response's `Content-Type` is `media_type` (parameters such as a charset aside).
pub fn assert_media_type(response: &reqwest::Response, media_type: &str) {
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with(media_type),
        "content-type {content_type}, expected {media_type}"
    );
}

pub fn assert_error(status: StatusCode, body: &Value, want_status: u16, want_code: &str) -> Value {
    assert_eq!(status.as_u16(), want_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(body["error"]["details"].is_object(), "{body}");
    body["error"].clone()
}

/// A loopback port free a moment ago, for a server process a test starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How long a started `freight` process may take to answer its health check,
/// and to write its first key. A start takes well under a second alone, but
/// with the whole suite's servers and browsers on two cores, the crash test's
/// SIGTERM run once found no key after 10 s + 10 s. Only a failing start waits
/// this long.
const START_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits (at most [`START_DEADLINE`]) until the admin listener at `admin_url` answers
/// `/health`; false if it never did.
pub async fn until_healthy(admin_url: &str) -> bool {
    within_deadline(START_DEADLINE, || async {
        match reqwest::get(format!("{admin_url}/health")).await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(r.status().to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
    .is_ok()
}

/// The key a first start of the `freight` binary wrote into `data_dir` (its
/// standard output, in a test, is not a terminal); waits (at most [`START_DEADLINE`]) for
/// the file, which is written once the server is built.
pub async fn first_key_in(data_dir: &Path) -> Option<String> {
    let path = data_dir.join(freight::server::bootstrap::FIRST_KEY_FILE);
    within_deadline(START_DEADLINE, || async {
        match std::fs::read_to_string(&path) {
            Ok(text) if text.ends_with('\n') => Ok(text.trim().to_owned()),
            Ok(_) => Err("written in part".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
    .ok()
}
