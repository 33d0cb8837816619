//! Operations: request ids, Prometheus metrics and probes on the admin listener.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{assert_media_type, load_body, spawn_app};

#[actix_web::test]
async fn every_response_carries_a_request_id() {
    let app = spawn_app().await;
    let generated = app.get_response("/loads").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req_") && id.len() > 20, "{id}");
    // A client's own id is echoed; a refusal carries one too.
    let echoed = app
        .client
        .get(app.url("/loads"))
        .header("X-Request-Id", "trace-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(echoed.headers()["x-request-id"], "trace-abc-123");
    // One that could not be logged safely is replaced.
    let replaced = app
        .client
        .get(app.url("/loads"))
        .bearer_auth(&app.key)
        .header("X-Request-Id", "has spaces in it")
        .send()
        .await
        .unwrap();
    let id = replaced.headers()["x-request-id"].to_str().unwrap();
    assert!(id.starts_with("req_"), "{id}");
}

#[actix_web::test]
async fn metrics_report_requests_gps_points_commits_actors_and_quotas() {
    let app = spawn_app().await;
    let load = app.create_load(load_body("TX", "GA")).await;
    let id = load["id"].as_str().unwrap();
    let carrier = app.create_carrier("777001").await;
    let (status, _) = app
        .patch(
            &format!("/loads/{id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let fix = json!({"lat": 32.7, "lng": -96.8, "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)});
    let (status, _) = app
        .post(&format!("/loads/{id}/tracking"), fix.clone())
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app.post(&format!("/loads/{id}/tracking"), fix).await;
    assert_eq!(status, StatusCode::OK, "the duplicate");
    // A 429, for the refusal counter.
    app.admin(
        reqwest::Method::PUT,
        &format!("/accounts/{}/plan", app.account_id),
        Some(json!({"plan": "enterprise", "requests_per_hour": 1})),
    )
    .await;
    let (status, _) = app.get("/loads").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);

    let page = reqwest::get(format!("{}/metrics", app.admin_base))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_media_type(&page, "text/plain");
    let text = page.text().await.unwrap();
    for expected in [
        "freight_http_requests_total{route=\"/v1/loads\",method=\"POST\",status=\"201\"}",
        "freight_http_request_duration_seconds_bucket{route=\"/v1/loads/{load_id}/tracking\",method=\"POST\",status=\"201\",le=",
        "freight_gps_points_total{outcome=\"stored\"}",
        "freight_gps_points_total{outcome=\"duplicate\"}",
        "freight_gps_commit_batch_points_bucket{le=",
        "freight_gps_commit_seconds_bucket{le=",
        "freight_store_gps_write_seconds_bucket{le=",
        "freight_resident_load_actors ",
        "freight_rate_limited_total ",
        "freight_point_lookups_total ",
        "freight_webhook_backlog ",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    // What the embedded store does, read at the scrape: a flush count per
    // keyspace, and the journal the fixes above were written to.
    for keyspace in ["loads", "gps_track"] {
        let name = format!("freight_store_flushes_total{{keyspace=\"{keyspace}\"}} ");
        assert!(text.contains(&name), "{name} missing from:\n{text}");
    }
    let journal = sample(&text, "freight_store_journal_bytes ").expect("the journal's size");
    assert!(journal > 0.0, "{journal}");
    // The fixes above went into the store in timed batches (registered at
    // zero, the histogram would be on the page without a single sample).
    let batches = sample(&text, "freight_store_gps_write_seconds_count ")
        .expect("the GPS batches' write times");
    assert!(batches >= 1.0, "{batches}");
    for name in [
        "freight_store_compactions_total{keyspace=\"gps_track\"} ",
        "freight_store_write_stall_seconds_total ",
        "freight_store_memtable_bytes ",
    ] {
        assert!(
            sample(&text, name).is_some(),
            "{name} missing from:\n{text}"
        );
    }

    // Liveness and readiness.
    for probe in ["/health", "/ready"] {
        let response = reqwest::get(format!("{}{probe}", app.admin_base))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{probe}");
    }
}

/// The value of the Prometheus sample whose name and labels start `line`.
fn sample(text: &str, line: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line))
        .and_then(|value| value.trim().parse().ok())
}

/// Stdout and stderr on a full disk (`/dev/full`: every write fails with
/// ENOSPC), logging at debug so that every request writes log lines: the
/// service starts, answers every request, and counts the lines it lost. A
/// failed log write used to panic the worker (tracing-subscriber reports it
/// with `eprintln!`), and the request lost its connection.
#[actix_web::test]
async fn a_log_that_cannot_be_written_costs_no_answer() {
    use crate::helpers::{free_port, https_client, until_healthy};
    freight::telemetry::install_crypto_provider();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let (api, admin) = (free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "debug")
        // The first start's key cannot be printed either: it starts anyway.
        .stdout(full())
        .stderr(full())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let admin_url = format!("http://127.0.0.1:{admin}");
    assert!(until_healthy(&admin_url).await, "the server did not start");
    let token = freight::server::admin_token::read(dir.path()).expect("admin token");
    let plain = reqwest::Client::new();
    let admin_post = |path: &str, body: serde_json::Value| {
        let request = plain
            .post(format!("{admin_url}/admin/v1{path}"))
            .bearer_auth(&token)
            .json(&body);
        async move { crate::helpers::send(request).await.1 }
    };
    let account = admin_post(
        "/accounts",
        json!({"name": "Full Disk Co", "plan": "enterprise"}),
    )
    .await;
    let key = admin_post(
        "/keys",
        json!({"account_id": account["data"]["id"], "permissions": ["read", "write"]}),
    )
    .await;
    let key = key["data"]["key"].as_str().expect("a key").to_owned();

    let client = https_client(dir.path());
    let base = format!("https://localhost:{api}/v1");
    let mut answered = std::collections::BTreeMap::new();
    for n in 0..200 {
        let request = match n % 4 {
            0 => client.get(format!("{base}/loads")),
            1 => client
                .post(format!("{base}/loads"))
                .json(&load_body("TX", "GA")),
            2 => client
                .post(format!("{base}/loads"))
                .json(&json!({"weight": "heavy"})),
            _ => client.get(format!("{base}/loads/load_nope")),
        };
        let status = request
            .bearer_auth(&key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("request {n} got no answer: {e}"))
            .status();
        *answered.entry(status.as_u16()).or_insert(0) += 1;
    }
    assert_eq!(
        answered,
        [(200, 50), (201, 50), (400, 50), (404, 50)].into(),
        "every request answered as usual"
    );
    assert!(server.try_wait().unwrap().is_none(), "the server is up");
    let page = plain
        .get(format!("{admin_url}/metrics"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lost: f64 = page
        .lines()
        .find_map(|l| l.strip_prefix("freight_log_lines_lost_total "))
        .unwrap_or_else(|| panic!("no lost-lines counter in:\n{page}"))
        .trim()
        .parse()
        .unwrap();
    assert!(
        lost >= 200.0,
        "every request's log lines were counted as lost: {lost}"
    );
}

/// The CPUs each of this process's threads named `name` may run on, from /proc.
fn cpus_of_threads(name: &str) -> Vec<Vec<usize>> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let Some(list) = status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        else {
            continue;
        };
        // "0-2,5": ranges and single CPUs.
        let cpus = list
            .trim()
            .split(',')
            .flat_map(|part| {
                let (first, last) = part.split_once('-').unwrap_or((part, part));
                first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap()
            })
            .collect();
        found.push(cpus);
    }
    found
}

#[actix_web::test]
async fn with_fewer_workers_than_cpus_the_committer_runs_off_the_workers_cpu() {
    use freight::cpu_placement::{CpuPinning, allowed_cpus};
    let allowed = allowed_cpus().unwrap();
    if allowed.len() < 2 {
        eprintln!("skipped: placement needs two CPUs, this process may use {allowed:?}");
        return;
    }
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.workers = 1;
        settings.cpu_pinning = CpuPinning::Auto;
    })
    .await;
    // Answered: the worker has started (and placed itself).
    let (status, _) = app.get("/loads").await;
    assert_eq!(status, StatusCode::OK);
    // Other tests' servers in this process pin nothing: the worker is kept on
    // the first CPU, the committer on the rest.
    let committers = cpus_of_threads("freight-gps-com");
    assert!(
        committers.contains(&allowed[1..].to_vec()),
        "{committers:?}"
    );
    let workers = cpus_of_threads("actix-rt|system");
    assert!(workers.contains(&vec![allowed[0]]), "{workers:?}");
    // A worker with a CPU of its own polls for work between requests and
    // sleeps once they stop (`server::idle_poll`): it still answers.
    for _ in 0..3 {
        let (status, _) = app.get("/loads").await;
        assert_eq!(status, StatusCode::OK);
    }
}

/// A deleted webhook's pending retry leaves `freight_webhook_backlog` at
/// once, not at the next restart (a process of its own: the gauge is
/// per process).
#[actix_web::test]
async fn a_deleted_webhooks_retries_leave_the_backlog_at_once() {
    use crate::helpers::{eventually, first_key_in, free_port, https_client, until_healthy};
    freight::telemetry::install_crypto_provider();
    let (api, admin) = (free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    let _server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--webhooks-allow-private", "--webhooks-allow-http"])
        .args(["--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let admin_url = format!("http://127.0.0.1:{admin}");
    assert!(until_healthy(&admin_url).await, "the server started");
    let key = first_key_in(dir.path()).await.expect("the first key");
    let client = https_client(dir.path());
    let base = format!("https://localhost:{api}/v1");
    let post = |path: &str, body: serde_json::Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(&key)
            .json(&body)
            .send()
    };
    // A receiver that always fails: the delivery waits for its retry.
    let receiver = crate::receiver::Receiver::start(500).await;
    let hook: serde_json::Value = post(
        "/webhooks",
        json!({"url": format!("{}/hooks", receiver.base), "events": ["load.created"]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let hook = hook["data"]["id"].as_str().unwrap().to_owned();
    let created = post("/loads", crate::helpers::load_body("TX", "GA"))
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let backlog = || async {
        let text = reqwest::get(format!("{admin_url}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("freight_webhook_backlog "))
            .map(str::to_owned)
            .unwrap_or_default();
        match line.ends_with(" 1") {
            true => Ok(()),
            false => Err(line),
        }
    };
    eventually(
        std::time::Duration::from_secs(10),
        "a retry waiting",
        backlog,
    )
    .await;
    let deleted = client
        .delete(format!("{base}/webhooks/{hook}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    eventually(
        std::time::Duration::from_secs(5),
        "an empty backlog",
        || async {
            let text = reqwest::get(format!("{admin_url}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            match text
                .lines()
                .find(|l| l.starts_with("freight_webhook_backlog "))
            {
                Some("freight_webhook_backlog 0") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
}
