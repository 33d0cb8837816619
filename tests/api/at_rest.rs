//! What a copy of the data directory gives away: its files are the service
//! user's alone, and webhook secrets are sealed with a key kept beside the
//! admin token, so the store's files alone sign nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use freight::server::settings::Settings;
use freight::server::startup::Application;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app_with_local_webhooks};

const FIRST_SECRET: &str = "at-rest-first-secret-7f3a9c1e5b";
const ROTATED_SECRET: &str = "at-rest-rotated-secret-c4d2e8a06f";

/// Every file and directory under `dir` (not following links), with its mode.
fn everything_under(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        if metadata.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
        if !metadata.file_type().is_symlink() {
            let mode = metadata.permissions().mode() & 0o777;
            found.push((path, mode, metadata.is_dir()));
        }
    }
    found
}

fn assert_private(dir: &Path, when: &str) {
    for (path, mode, is_dir) in everything_under(dir) {
        let want = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(
            mode,
            want,
            "{when}: {} is {mode:o}, not {want:o}",
            path.display()
        );
    }
}

/// No file under `dir` holds any of `secrets` in plain text.
fn assert_nowhere(dir: &Path, secrets: &[&str], when: &str) {
    for (path, _, is_dir) in everything_under(dir) {
        if is_dir {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for secret in secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{when}: {} holds the secret {secret} in plain text",
                path.display()
            );
        }
    }
}

async fn subscribe(app: &TestApp, secret: &str) -> String {
    let (status, body) = app
        .post(
            "/webhooks",
            json!({"url": "http://127.0.0.1:9/hook", "events": ["load.created"], "secret": secret}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// Neither a secret given at creation nor one rotated in later is in any file
/// of the data directory (journal, tables, anything), before or after a
/// restart, which replays the journal; the key that seals them is 0600.
#[actix_web::test]
async fn webhook_secrets_are_not_in_the_data_directory_in_plain_text() {
    let app = spawn_app_with_local_webhooks().await;
    let webhook = subscribe(&app, FIRST_SECRET).await;
    let (status, body) = app
        .patch(
            &format!("/webhooks/{webhook}"),
            json!({"secret": ROTATED_SECRET}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let search =
        |dir: &Path, when: &str| assert_nowhere(dir, &[FIRST_SECRET, ROTATED_SECRET], when);
    search(app.data_dir.path(), "while running");
    let key = app
        .data_dir
        .path()
        .join(freight::server::secrets_key::FILE_NAME);
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the secrets key is the service user's alone");

    let app = app.restart_with(|s| {
        s.webhooks.url_policy.allow_http = true;
        s.webhooks.url_policy.allow_private = true;
    });
    let app = app.await;
    let (status, body) = app.get(&format!("/webhooks/{webhook}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let data_dir = app.stop().await;
    search(data_dir.path(), "after a restart");
}

/// The data directory is 0700 and everything in it private from the first
/// start; one opened up since (by hand, or by an older version) is tightened
/// at the next start.
#[actix_web::test]
async fn the_data_directory_is_private_and_tightened_at_start() {
    let app = spawn_app_with_local_webhooks().await;
    subscribe(&app, FIRST_SECRET).await;
    app.create_load(crate::helpers::load_body("TX", "GA")).await;
    assert_private(app.data_dir.path(), "after the first start");

    let opened: Vec<PathBuf> = everything_under(app.data_dir.path())
        .into_iter()
        .map(|(path, _, is_dir)| {
            let mode = if is_dir { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        })
        .collect();
    assert!(
        opened.len() > 5,
        "the store, TLS and token files: {opened:?}"
    );
    let data_dir = app.restart().await.stop().await;
    assert_private(data_dir.path(), "after a start on an opened-up directory");
}

/// A secrets key other than the one that sealed the store's secrets stops the
/// start, saying which key file and why, rather than signing with garbage.
#[actix_web::test]
async fn a_wrong_secrets_key_stops_the_start() {
    let app = spawn_app_with_local_webhooks().await;
    subscribe(&app, FIRST_SECRET).await;
    let data_dir = app.stop().await;
    let key = data_dir
        .path()
        .join(freight::server::secrets_key::FILE_NAME);
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();

    let settings = Settings::ephemeral(data_dir.path().to_owned());
    let Err(refused) = Application::build(settings).await else {
        panic!("the server started with a key that does not open its webhook secrets");
    };
    let message = format!("{refused:#}");
    assert!(message.contains(&key.display().to_string()), "{message}");
    assert!(message.contains("does not open with this key"), "{message}");
}

/// The answers kept for `Idempotency-Key` replays hold one-time secrets (a new
/// device's token, a share link's token, a generated webhook signing secret):
/// they are sealed, so no file of the data directory holds them, before or
/// after a restart; the same key replays them, another key of the account is
/// refused.
#[actix_web::test]
async fn one_time_secrets_in_kept_answers_are_sealed() {
    let app = spawn_app_with_local_webhooks().await;
    let load = app.create_load(crate::helpers::load_body("TX", "GA")).await;
    let load = load["id"].as_str().unwrap().to_owned();
    let requests = [
        ("/devices".to_owned(), json!({"name": "Truck 9"}), "token"),
        (format!("/loads/{load}/share-links"), json!({}), "url"),
        (
            "/webhooks".to_owned(),
            json!({"url": "http://127.0.0.1:9/hook", "events": ["load.created"]}),
            "signing_secret",
        ),
    ];
    let post = |app: &TestApp, key: &str, n: usize| {
        let (path, body, _) = &requests[n];
        app.client
            .post(app.url(path))
            .bearer_auth(key)
            .header("idempotency-key", format!("once-{n}"))
            .json(body)
            .send()
    };
    let mut secrets = Vec::new();
    for n in 0..requests.len() {
        let response = post(&app, &app.key, n).await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: serde_json::Value = response.json().await.unwrap();
        let shown = body["data"][requests[n].2].as_str().unwrap().to_owned();
        // The part that is secret: a token's tail, a URL's last segment, a
        // whole signing secret.
        let secret = match requests[n].2 {
            "token" => shown.rsplit('_').next().unwrap().to_owned(),
            "url" => shown.rsplit('/').next().unwrap().to_owned(),
            _ => shown.clone(),
        };
        assert!(secret.len() >= 32, "{shown}");
        secrets.push((shown, secret));
    }
    let tails: Vec<&str> = secrets.iter().map(|(_, s)| s.as_str()).collect();
    assert_nowhere(app.data_dir.path(), &tails, "while running");

    let app = app.restart_with(|s| {
        s.webhooks.url_policy.allow_http = true;
        s.webhooks.url_policy.allow_private = true;
    });
    let app = app.await;
    for (n, (shown, _)) in secrets.iter().enumerate() {
        let replay = post(&app, &app.key, n).await.unwrap();
        assert_eq!(replay.headers()["idempotent-replayed"], "true");
        let body: serde_json::Value = replay.json().await.unwrap();
        assert_eq!(body["data"][requests[n].2], shown.as_str(), "{body}");
    }
    let other = app.new_key(&app.account_id, &["read", "write"], None).await;
    let refused = post(&app, &other, 0).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "IDEMPOTENCY_KEY_REUSED", "{body}");
    let data_dir = app.stop().await;
    assert_nowhere(data_dir.path(), &tails, "after a restart");
}
