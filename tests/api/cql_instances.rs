//! A freight instance lost on a real cluster: two `freight serve` processes
//! over three Cassandra nodes (see `cql_cluster`), one killed with -9 while
//! fixes for the loads it acts for arrive through the other.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::json;

use crate::cql_cluster::{NODES, assert_all_stored, cluster3, two_instances};
use crate::receiver::{Receiver, verify};

const SECRET: &str = "cql-instances-webhook-secret-0123";

/// Instance A, which acts for every load, is killed mid-ingest: fixes sent
/// through B are answered 503 (with Retry-After) only until A's leases expire,
/// then B acts for the loads; no fix answered 201 is lost; webhook dispatch
/// moves to B, and every event reaches the receiver, signed, under one
/// `webhook-id`.
#[actix_web::test]
async fn a_freight_instance_lost_mid_ingest_hands_over_its_loads_and_its_webhooks() {
    let Some(cluster) = cluster3() else {
        return;
    };
    let _alone = NODES.lock().await;
    let (_dir, mut a, b, key, loads) = two_instances(&cluster, 4).await;
    let receiver = Receiver::start(200).await;
    let (status, hook) = a
        .call(
            &key,
            reqwest::Method::POST,
            "/webhooks",
            Some(json!({"url": format!("{}/hooks", receiver.base),
                "events": ["load.status_changed"], "secret": SECRET})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");

    let start = Utc::now() - chrono::Duration::hours(2);
    let mut acked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let began = tokio::time::Instant::now();
    let (mut killed, mut after_kill) = (None, 0);
    for n in 0.. {
        if killed.is_none() && began.elapsed() > Duration::from_secs(3) {
            a.child.start_kill().unwrap();
            a.child.wait().await.unwrap();
            killed = Some(tokio::time::Instant::now());
        }
        // Until fixes have been taken again for a while after the kill.
        if after_kill >= 40 || began.elapsed() > Duration::from_secs(90) {
            break;
        }
        let load = &loads[n % loads.len()];
        let at = (start + chrono::Duration::seconds(n as i64))
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let response = b
            .client
            .post(format!("{}/loads/{load}/tracking", b.base))
            .bearer_auth(&key)
            .json(&json!({"lat": 33.0, "lng": -96.0, "timestamp": at}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        *statuses.entry(status.as_u16()).or_default() += 1;
        match status {
            StatusCode::CREATED => {
                acked.entry(load.clone()).or_default().push(at);
                if killed.is_some() {
                    after_kill += 1;
                }
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(response.headers().contains_key("retry-after"));
                // Held by A until its leases run out.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => panic!("{other}: {}", response.text().await.unwrap()),
        }
    }
    let killed = killed.expect("A was killed");
    assert!(after_kill >= 40, "B took the loads over: {statuses:?}");
    eprintln!(
        "answers: {statuses:?}; fixes taken again {:?} after the kill",
        killed.elapsed()
    );
    assert_all_stored(&b, &key, &acked).await;

    // Changes through B after the kill: B dispatches their events.
    for load in &loads {
        let (status, moved) = b
            .call(
                &key,
                reqwest::Method::PATCH,
                &format!("/loads/{load}/status"),
                Some(json!({"status": "in_transit"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{moved}");
    }
    let received = receiver
        .wait_for("an event per change", |r| {
            r.iter()
                .map(|d| d.json["id"].as_str().unwrap_or_default().to_owned())
                .collect::<BTreeSet<_>>()
                .len()
                >= loads.len()
        })
        .await;
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for delivery in &received {
        verify(SECRET, delivery).unwrap();
        ids.entry(delivery.json["id"].as_str().unwrap().to_owned())
            .or_default()
            .insert(delivery.id.clone());
    }
    for (event, webhook_ids) in &ids {
        assert_eq!(webhook_ids.len(), 1, "{event}: sent under {webhook_ids:?}");
    }
}
