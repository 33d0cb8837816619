//! OwnTracks messages through a real broker while freight is SIGKILLed: a
//! message it acknowledged was stored before the acknowledgement, and one it
//! had not acknowledged the broker delivers again after the restart, so
//! every message published is a fix, once.

use super::*;
use crate::broker::{Broker, location};

/// The load's points, each once: their timestamps (Unix seconds).
async fn stored(server: &Server, client: &reqwest::Client, key: &str, load: &str) -> Vec<i64> {
    let path = format!("/loads/{load}/tracking/history?limit=1000");
    let (status, page) = send(server.call(client, key, Method::GET, &path)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let at = chrono::DateTime::parse_from_rfc3339(p["timestamp"].as_str().unwrap());
            at.unwrap().timestamp()
        })
        .collect()
}

async fn metric(server: &Server, line_start: &str) -> f64 {
    crate::trackers::metric_at(&server.admin, line_start).await
}

#[actix_web::test]
async fn every_message_survives_freight_killed_while_it_acknowledges() {
    let Some(broker) = Broker::start().await else {
        return;
    };
    let url = broker.url();
    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start_with(dir.path(), Some(&url)).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());
    let load = server.assigned_load(&client, &key).await;
    let phone = json!({"name": "Phone", "identifier": "dana/truck"});
    server.attached_device(&client, &key, &load, phone).await;
    eventually(Duration::from_secs(20), "the MQTT subscription", || async {
        match metric(&server, "freight_mqtt_connected ").await {
            1.0 => Ok(()),
            other => Err(format!("freight_mqtt_connected {other}")),
        }
    })
    .await;

    const MESSAGES: i64 = 400;
    let base = chrono::Utc::now().timestamp() - 3_600;
    let messages: Vec<String> = (0..MESSAGES)
        .map(|i| location(base + i, 33.0 + i as f64 * 1e-4, -95.0))
        .collect();
    broker.publish("owntracks/dana/truck", &messages).await;
    // Read off the admin listener, which the account's hourly quota does not meter.
    let stored_metric = "freight_mqtt_messages_total{outcome=\"stored\"} ";
    eventually(Duration::from_secs(30), "40 messages stored", || async {
        match metric(&server, stored_metric).await {
            n if n >= 40.0 => Ok(()),
            n => Err(format!("{n} stored")),
        }
    })
    .await;
    server.child.start_kill().unwrap(); // SIGKILL, messages in flight
    server.child.wait().await.unwrap();

    let (server, _) = start_with(dir.path(), Some(&url)).await;
    let all = within_deadline(Duration::from_secs(60), || async {
        // A few requests a second: the account's quota is 1,000 an hour.
        tokio::time::sleep(Duration::from_millis(250)).await;
        let found = stored(&server, &client, &key, &load).await;
        match found.len() as i64 {
            MESSAGES.. => Ok(found),
            n => Err(format!("{n} of {MESSAGES} stored")),
        }
    })
    .await;
    let all = all.unwrap_or_else(|seen| {
        let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
        panic!("timed out waiting for every message stored: {seen}; the server's log:\n{log}")
    });
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a message is stored at most once");
    assert_eq!(unique, (0..MESSAGES).map(|i| base + i).collect::<Vec<_>>());
}
