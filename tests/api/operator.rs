//! The operator command line against a running server.

use std::process::Output;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, assert_error, spawn_app};

async fn freight(app: &TestApp, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"));
    command
        .args(args)
        .env("FREIGHT_DATA_DIR", app.data_dir.path())
        .env("FREIGHT_ADMIN_URL", &app.admin_base);
    command.output().await.expect("freight runs")
}

fn json_out(output: &Output) -> Value {
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
    assert!(String::from_utf8_lossy(&text.stdout).contains("frk_"));
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
            "--expires",
            "next week",
        ],
    )
    .await;
    assert!(!bad_expiry.status.success());
    assert!(String::from_utf8_lossy(&bad_expiry.stderr).contains("expires_at"));

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
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
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
    let mut up = false;
    for _ in 0..100 {
        if reqwest::get(format!("http://127.0.0.1:{env_admin}/health"))
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK)
        {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
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
