//! Acknowledged writes survive SIGKILL: the real binary, killed without warning.

use std::process::Stdio;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::helpers::{https_client, load_body, send};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    base: String,
}

/// Starts `freight serve` and waits until it listens; returns the first-start key if printed.
async fn start(data_dir: &std::path::Path) -> (Server, Option<String>) {
    let (port, admin) = (free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--workers", "2"])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("freight starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut key = None;
    // The key is printed once nothing else can fail, so it comes right before serving.
    let read_key = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(k) = line.trim().strip_prefix("frk_") {
                key = Some(format!("frk_{k}"));
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), read_key).await;
    let health = format!("http://127.0.0.1:{admin}/health");
    for _ in 0..100 {
        if reqwest::get(&health)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let server = Server {
        child,
        base: format!("https://localhost:{port}/v1"),
    };
    (server, key)
}

#[actix_web::test]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());

    let mut load_ids = Vec::new();
    for _ in 0..20 {
        let (status, load) = send(
            client
                .post(format!("{}/loads", server.base))
                .bearer_auth(&key)
                .json(&load_body("TX", "GA")),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        load_ids.push(load["data"]["id"].as_str().unwrap().to_owned());
    }
    let (status, carrier) = send(
        client
            .post(format!("{}/carriers", server.base))
            .bearer_auth(&key)
            .json(&crate::helpers::carrier_body("90001")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = send(
        client
            .patch(format!("{}/loads/{}/status", server.base, load_ids[0]))
            .bearer_auth(&key)
            .json(&json!({"status": "assigned", "carrier_id": carrier["data"]["id"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    server.child.start_kill().unwrap(); // SIGKILL
    server.child.wait().await.unwrap();

    let (server, second_key) = start(dir.path()).await;
    assert!(second_key.is_none(), "the first-start key is made once");
    let (status, list) = send(
        client
            .get(format!("{}/loads?limit=100", server.base))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["data"]["total"], 20);
    let (_, assigned) = send(
        client
            .get(format!("{}/loads?status=assigned", server.base))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(assigned["data"]["loads"][0]["id"], load_ids[0].as_str());
}
