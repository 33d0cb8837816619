//! The operator command line against a running server.

use std::process::Output;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, assert_error, free_port, spawn_app, until_healthy};

pub async fn freight(app: &TestApp, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"));
    command
        .args(args)
        .env("FREIGHT_DATA_DIR", app.data_dir.path())
        .env("FREIGHT_ADMIN_URL", &app.admin_base);
    command.output().await.expect("freight runs")
}

pub fn json_out(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object on stdout")
}

#[actix_web::test]
async fn accounts_and_keys_from_the_command_line() {
    let app = spawn_app().await;
    let account = json_out(
        &freight(
            &app,
            &[
                "accounts",
                "create",
                "--name",
                "Acme Logistics",
                "--plan",
                "pro",
                "--json",
            ],
        )
        .await,
    );
    assert_eq!(account["plan"], "pro");
    assert_eq!(account["requests_per_hour"], 10000);
    let account_id = account["id"].as_str().unwrap();

    let key = json_out(
        &freight(
            &app,
            &[
                "keys",
                "create",
                "--account",
                account_id,
                "--permissions",
                "read,write",
                "--description",
                "dispatch board",
                "--json",
            ],
        )
        .await,
    );
    let token = key["key"].as_str().unwrap();
    assert_eq!(key["permissions"], serde_json::json!(["read", "write"]));
    let (status, verify) = app.get_as(token, "/auth/verify").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(verify["data"]["user_id"], account_id);

    let listed =
        json_out(&freight(&app, &["keys", "list", "--account", account_id, "--json"]).await);
    assert_eq!(listed["keys"][0]["id"], key["id"]);
    assert!(
        !listed.to_string().contains(token),
        "a listing must never show the secret"
    );

    let revoked = json_out(
        &freight(
            &app,
            &["keys", "revoke", key["id"].as_str().unwrap(), "--json"],
        )
        .await,
    );
    assert!(revoked["revoked_at"].is_string());
    let (status, body) = app.get_as(token, "/auth/verify").await;
    assert_error(status, &body, 401, "REVOKED_API_KEY");

    // Human-readable output shows the key once.
    let text = freight(
        &app,
        &[
            "keys",
            "create",
            "--account",
            account_id,
            "--permissions",
            "read",
        ],
    )
    .await;
    assert!(text.status.success());
    let printed = String::from_utf8_lossy(&text.stdout).to_string();
    let token = printed
        .split_whitespace()
        .find(|word| word.starts_with("frk_"))
        .expect("the key printed");
    // Revoked by the token's start, as a person copies it.
    let start: String = token.splitn(3, '_').take(2).collect::<Vec<_>>().join("_");
    let revoked = freight(&app, &["keys", "revoke", &start]).await;
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    let (status, body) = app.get_as(token, "/auth/verify").await;
    assert_error(status, &body, 401, "REVOKED_API_KEY");
    // The list names its columns and says which keys no longer work.
    let list = freight(&app, &["keys", "list", "--account", account_id]).await;
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.starts_with("ID  ACCOUNT  PERMISSIONS  STATE"),
        "{listed}"
    );
    assert_eq!(listed.matches("REVOKED").count(), 2, "{listed}");
}

#[actix_web::test]
async fn the_command_line_says_what_is_wrong() {
    let app = spawn_app().await;
    let unknown = freight(
        &app,
        &[
            "keys",
            "create",
            "--account",
            "acct_nope",
            "--permissions",
            "read",
        ],
    )
    .await;
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("ACCOUNT_NOT_FOUND"));

    let bad_permission = freight(
        &app,
        &[
            "keys",
            "create",
            "--account",
            &app.account_id,
            "--permissions",
            "read,admin",
        ],
    )
    .await;
    assert!(!bad_permission.status.success());
    assert!(String::from_utf8_lossy(&bad_permission.stderr).contains("permissions[1]"));

    let bad_expiry = freight(
        &app,
        &[
            "keys",
            "create",
            "--account",
            &app.account_id,
            "--permissions",
            "read",
            "--expires",
            "next week",
        ],
    )
    .await;
    assert!(!bad_expiry.status.success());
    let said = String::from_utf8_lossy(&bad_expiry.stderr);
    assert!(
        said.contains("--expires") && said.contains("2027-01-01"),
        "{said}"
    );

    // Permissions are never assumed: a key's powers are said out loud.
    let unsaid = freight(&app, &["keys", "create", "--account", &app.account_id]).await;
    assert!(!unsaid.status.success());
    assert!(String::from_utf8_lossy(&unsaid.stderr).contains("--permissions"));

    let mut down = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"));
    down.args(["accounts", "list", "--admin-url", "http://127.0.0.1:9"])
        .env("FREIGHT_DATA_DIR", app.data_dir.path());
    let down = down.output().await.unwrap();
    assert!(!down.status.success());
    assert!(String::from_utf8_lossy(&down.stderr).contains("Is `freight serve` running?"));

    let mut no_token = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"));
    no_token.args(["accounts", "list", "--data-dir", "/nonexistent-freight-dir"]);
    let no_token = no_token.output().await.unwrap();
    assert!(!no_token.status.success());
    assert!(String::from_utf8_lossy(&no_token.stderr).contains("admin token"));
}

/// `freight serve --config`: the file's settings apply under flags and the
/// environment, and a mistake in it stops the start with its name.
#[actix_web::test]
async fn serve_reads_a_config_file_under_flags_and_environment() {
    let free = free_port;
    let (file_admin, env_admin) = (free(), free());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("freight.toml");
    std::fs::write(
        &config,
        format!(
            "data-dir = {:?}\nlisten = \"127.0.0.1:{}\"\nadmin_listen = \"127.0.0.1:{file_admin}\"\nno-bootstrap-key = true\n",
            data.display(),
            free()
        ),
    )
    .unwrap();
    // The environment overrides the file's admin address; the rest comes from the file.
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("FREIGHT_ADMIN_LISTEN", format!("127.0.0.1:{env_admin}"))
        .env_remove("FREIGHT_DATA_DIR")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let up = until_healthy(&format!("http://127.0.0.1:{env_admin}")).await;
    assert!(up, "the admin listener is where the environment put it");
    assert!(
        reqwest::get(format!("http://127.0.0.1:{file_admin}/health"))
            .await
            .is_err()
    );
    assert!(
        data.join("admin.token").exists(),
        "the file's data directory is used"
    );
    server.start_kill().unwrap();
    server.wait().await.unwrap();

    std::fs::write(&config, "listne = \"127.0.0.1:1\"\n").unwrap();
    let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown setting `listne`"));
}

/// `accounts get`, `disable` and `enable`, and `--expires` as a plain date: a
/// disabled account's keys are refused with their own code and its data stays.
#[actix_web::test]
async fn an_account_can_be_disabled_and_enabled_again() {
    let app = spawn_app().await;
    let load = app.create_load(crate::helpers::load_body("TX", "GA")).await;
    let key = json_out(
        &freight(
            &app,
            &[
                "keys",
                "create",
                "--account",
                &app.account_id,
                "--permissions",
                "read",
                "--expires",
                "2099-01-01",
                "--json",
            ],
        )
        .await,
    );
    assert_eq!(key["expires_at"], "2099-01-01T00:00:00Z");
    let token = key["key"].as_str().unwrap();

    let disabled =
        json_out(&freight(&app, &["accounts", "disable", &app.account_id, "--json"]).await);
    assert_eq!(disabled["disabled"], true);
    for key in [token, app.key.as_str()] {
        let (status, body) = app.get_as(key, "/loads").await;
        assert_error(status, &body, 403, "ACCOUNT_DISABLED");
    }
    let shown = json_out(&freight(&app, &["accounts", "get", &app.account_id, "--json"]).await);
    assert_eq!(shown["disabled"], true);
    let text = freight(&app, &["accounts", "get", &app.account_id]).await;
    assert!(String::from_utf8_lossy(&text.stdout).contains("DISABLED"));

    let enabled =
        json_out(&freight(&app, &["accounts", "enable", &app.account_id, "--json"]).await);
    assert_eq!(enabled["disabled"], false);
    let path = format!("/loads/{}", load["id"].as_str().unwrap());
    let (status, body) = app.get_as(token, &path).await;
    assert_eq!(status, StatusCode::OK, "the data was kept: {body}");

    let missing = freight(&app, &["accounts", "get", "acct_nope"]).await;
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("ACCOUNT_NOT_FOUND"));
}

/// What an operator reads in the log, from a real `freight serve` writing to a
/// file: the start-up summary, a warning for each protection switched off, the
/// accounts and keys made and revoked, and no colour codes (not a terminal).
#[actix_web::test]
async fn the_log_says_what_an_operator_needs_without_colour() {
    freight::telemetry::install_crypto_provider();
    let free = free_port;
    let (api, admin) = (free(), free());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("freight.log");
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--webhooks-allow-private", "--webhooks-allow-http"])
        .args(["--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--data-dir")
        .arg(&data)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let admin_url = format!("http://127.0.0.1:{admin}");
    assert!(until_healthy(&admin_url).await, "the server started");
    // A fresh process: every metric is described, and counters read 0 before
    // their first event.
    let metrics = reqwest::get(format!("{admin_url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for expected in [
        "# HELP freight_gps_shed_total ",
        "# HELP freight_rate_limited_total ",
        "freight_rate_limited_total 0",
        "freight_gps_shed_total 0",
        "freight_tracking_stream_dropped_total 0",
        "freight_gps_points_total{outcome=\"refused\"} 0",
        "freight_webhook_deliveries_total{outcome=\"failed\"} 0",
        "freight_webhook_backlog 0",
        "freight_gps_commit_seconds_count 0",
    ] {
        assert!(metrics.contains(expected), "no {expected:?} in:\n{metrics}");
    }
    let cli = |args: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"));
        command
            .args(args)
            .args(["--json", "--admin-url", &admin_url])
            .env("FREIGHT_DATA_DIR", &data);
        command
    };
    let account = json_out(
        &cli(&["accounts", "create", "--name", "Logged"])
            .output()
            .await
            .unwrap(),
    );
    let account_id = account["id"].as_str().unwrap();
    let key = json_out(
        &cli(&[
            "keys",
            "create",
            "--account",
            account_id,
            "--permissions",
            "read",
        ])
        .output()
        .await
        .unwrap(),
    );
    let key_id = key["id"].as_str().unwrap();
    json_out(&cli(&["keys", "revoke", key_id]).output().await.unwrap());
    json_out(
        &cli(&["accounts", "set-plan", account_id, "--plan", "pro"])
            .output()
            .await
            .unwrap(),
    );
    let pid = server.id().unwrap().to_string();
    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(stopped.success());
    server.wait().await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains('\x1b'), "colour codes in a file: {text}");
    for expected in [
        "freight is serving",
        "storage=embedded",
        "--webhooks-allow-private is on",
        "--webhooks-allow-http is on",
        &format!("account created account={account_id}"),
        &format!("key={key_id}"),
        "API key created",
        "API key revoked",
        "plan changed",
        "freight stopped",
    ] {
        assert!(
            text.contains(expected),
            "no {expected:?} in the log:\n{text}"
        );
    }
}
