//! Three `freight serve` processes over a three-node Cassandra cluster (RF 3)
//! serve as one service, talked to only through their public HTTPS listeners
//! as a client would (what `src/server/cluster/tests` shows over a store that
//! pretends to be shared): any instance serves any request, a batch spread
//! over the loads' holders is accepted whole, an account stream opened on one
//! instance hears of fixes and status changes made through the others, and
//! the internal listener takes only signed requests.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::cql_cluster::{Instance, NODES, cluster3, instances};
use crate::event_stream::EventStream;

/// Makes a load through `via` and assigns it there, so that `via` acts for it.
async fn load_held_by(via: &Instance, key: &str, carrier: &str) -> String {
    let body = crate::helpers::load_body("TX", "GA");
    let (status, load) = via.call(key, Method::POST, "/loads", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{load}");
    let id = load["data"]["id"].as_str().unwrap().to_owned();
    let assign = json!({"status": "assigned", "carrier_id": carrier});
    let path = format!("/loads/{id}/status");
    let (status, moved) = via.call(key, Method::PATCH, &path, Some(assign)).await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    id
}

/// Seconds counted up across the test, so that every fix has its own time.
fn tick() -> i64 {
    static N: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

async fn stream_on(instance: &Instance, key: &str) -> EventStream {
    let response = instance
        .client
        .get(format!("{}/tracking/stream", instance.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    EventStream::open(response).await
}

#[actix_web::test]
async fn three_instances_on_a_real_cluster_serve_as_one() {
    let Some(cluster) = cluster3() else {
        return;
    };
    // Not while another test kills nodes of the cluster.
    let _alone = NODES.lock().await;
    let (_dir, all, key, first) = instances(&cluster, 3, 1).await;
    let (status, carrier) = all[0].call(&key, Method::GET, "/carriers", None).await;
    assert_eq!(status, StatusCode::OK, "{carrier}");
    let carrier = carrier["data"]["carriers"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut loads = first;
    for via in &all[1..] {
        loads.push(load_held_by(via, &key, &carrier).await);
    }

    // Any instance serves any load, whoever acts for it.
    for via in &all {
        for load in &loads {
            let (status, body) = via
                .call(&key, Method::GET, &format!("/loads/{load}"), None)
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["data"]["status"], "assigned", "{body}");
        }
    }

    // An account stream on B hears what A and C store, once B taps them: B
    // finds instances in the registry (renewed every 5 s) and looks again
    // every 5 s while the account streams, so within about 10 s of C joining.
    let mut stream = stream_on(&all[1], &key).await;
    let start = Utc::now() - chrono::Duration::minutes(30);
    for (n, load) in loads.iter().enumerate() {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        'heard: loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the stream on B never heard {load}'s fixes through instance {n}"
            );
            let at = (start + chrono::Duration::seconds(tick()))
                .to_rfc3339_opts(SecondsFormat::Secs, true);
            let fix = json!({"lat": 33.0, "lng": -96.3, "timestamp": at});
            let path = format!("/loads/{load}/tracking");
            let (status, body) = all[n].call(&key, Method::POST, &path, Some(fix)).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            let wait = tokio::time::Instant::now() + Duration::from_secs(2);
            while let Ok(frame) = tokio::time::timeout_at(wait, stream.event()).await {
                if frame.json()["load_id"] == load.as_str() {
                    break 'heard;
                }
            }
        }
    }

    // One batch through C, with a point for each load (held by A, B and C):
    // accepted whole, and every point readable through A.
    let at = (Utc::now() - chrono::Duration::minutes(5)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let points: Vec<_> = loads
        .iter()
        .map(|load| json!({"load_id": load, "lat": 33.1, "lng": -96.4, "timestamp": at}))
        .collect();
    let (status, batch) = all[2]
        .call(
            &key,
            Method::POST,
            "/tracking/batch",
            Some(json!({ "points": points })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{batch}");
    assert_eq!(batch["data"]["accepted"], loads.len(), "{batch}");
    for load in &loads {
        let path = format!("/loads/{load}/tracking/history");
        let (status, history) = all[0].call(&key, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{history}");
        assert_eq!(history["data"]["points"][0]["timestamp"], at, "{history}");
    }
    // (Frames of the fixes above may still come first.)
    let mut heard = std::collections::BTreeSet::new();
    while heard.len() < loads.len() {
        let frame = stream.event().await;
        assert_eq!(
            frame.event.as_deref(),
            Some("tracking.updated"),
            "{frame:?}"
        );
        let data = frame.json();
        if data["position"]["timestamp"] == at.as_str() {
            heard.insert(data["load_id"].as_str().unwrap().to_owned());
        }
    }

    // A status change through A of the load C acts for reaches the stream on B.
    let path = format!("/loads/{}/status", loads[2]);
    let (status, moved) = all[0]
        .call(
            &key,
            Method::PATCH,
            &path,
            Some(json!({"status": "in_transit"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let frame = loop {
        let frame = stream.event().await;
        if frame.event.as_deref() != Some("tracking.updated") {
            break frame;
        }
    };
    assert_eq!(
        frame.event.as_deref(),
        Some("load.status_changed"),
        "{frame:?}"
    );
    let change = frame.json();
    assert_eq!(change["load"]["id"], loads[2].as_str(), "{change}");
    assert_eq!(change["status"], "in_transit", "{change}");

    // The internal listener refuses what no instance signed.
    let plain = reqwest::Client::new();
    for forged in [None, Some("v1,bm90IGEgc2lnbmF0dXJl")] {
        let mut request = plain.get(format!("{}/v1/loads/{}", all[0].internal, loads[0]));
        // As forwarding instances send it: without it the listener answers
        // HTTPS_REQUIRED before it looks at a signature.
        request = request
            .bearer_auth(&key)
            .header("x-forwarded-proto", "https");
        if let Some(signature) = forged {
            request = request.header("x-freight-signature", signature);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body["error"]["code"], "CLUSTER_SIGNATURE_INVALID", "{body}");
    }
}
