//! What is in flight at a crash: device positions, pending webhooks, and
//! everything at once (the five-SIGKILL harness).

use super::*;

/// Devices posting as Traccar Client 7 does (a position per request, in the
/// query string) while the server is SIGKILLed: every position answered 200
/// is a stored fix after the restart, once.
#[actix_web::test]
async fn every_acknowledged_device_position_survives_sigkill() {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());
    let id = server.assigned_load(&client, &key).await;
    let device = server
        .attached_device(&client, &key, &id, json!({"name": "Truck"}))
        .await;
    let token = device["data"]["token"].as_str().unwrap().to_owned();

    let acked: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    let base = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp() - 3600, 0).unwrap();
    let ingest = server.base.replace("/v1", "/v1/ingest/osmand");
    let posters: Vec<_> = (0..4i64)
        .map(|worker| {
            let (client, ingest, token, acked) = (
                https_client(dir.path()),
                ingest.clone(),
                token.clone(),
                acked.clone(),
            );
            tokio::spawn(async move {
                for i in 0..100_000i64 {
                    let millis = i * 4 + worker;
                    let at = base.timestamp_millis() + millis;
                    let url = format!("{ingest}?id={token}&lat=33&lon=-95&timestamp={at}&speed=40");
                    match client.post(&url).send().await {
                        Ok(r) if r.status() == StatusCode::OK => {
                            acked.lock().unwrap().insert(millis);
                        }
                        _ => break,
                    }
                }
            })
        })
        .collect();
    eventually(
        Duration::from_secs(60),
        "200 acknowledged positions",
        || async {
            let n = acked.lock().unwrap().len();
            if n >= 200 {
                Ok(())
            } else {
                Err(format!("{n} acknowledged"))
            }
        },
    )
    .await;
    server.child.start_kill().unwrap(); // SIGKILL, with posts in flight
    server.child.wait().await.unwrap();
    for poster in posters {
        poster.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let (server, _) = start(dir.path()).await;
    nothing_acknowledged_lost(&server, &client, &key, &id, base, &acked).await;
    assert!(acked.len() >= 200);
}

#[actix_web::test]
async fn webhooks_pending_at_sigkill_arrive_after_restart_under_their_ids() {
    use std::collections::HashSet;

    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());
    // The receiver's port is held (so no other test can take it) but nothing
    // accepts on it until after the restart: no attempt before the SIGKILL succeeds.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = held.local_addr().unwrap();
    let secret = "crash-test-secret-0123456789";
    let (status, body) = send(
        server.call(&client, &key, Method::POST, "/webhooks")
            .json(&json!({"url": format!("http://{address}/hook"), "events": ["load.created"], "secret": secret})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let loads: HashSet<String> = server
        .create_loads(&client, &key, 30)
        .await
        .into_iter()
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await; // first attempts fail
    server.child.start_kill().unwrap(); // SIGKILL mid-backlog
    server.child.wait().await.unwrap();

    let (restarted, _) = start(dir.path()).await;
    let receiver = crate::receiver::Receiver::start_on(held, 200);
    // Attempts made before the kill time out or fail; the retry is due 5 s (±10%)
    // after each.
    let arrived = within_deadline(Duration::from_secs(40), || async {
        let received = receiver.received();
        let ids: HashSet<&str> = received.iter().map(|d| d.id.as_str()).collect();
        if ids.len() == 30 {
            Ok(received)
        } else {
            Err(format!("{} distinct deliveries", ids.len()))
        }
    })
    .await;
    let received = match arrived {
        Ok(received) => received,
        Err(seen) => {
            let (_, hooks) = send(restarted.call(&client, &key, Method::GET, "/webhooks")).await;
            let id = hooks["data"]["webhooks"][0]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let (_, log) = send(restarted.call(
                &client,
                &key,
                Method::GET,
                &format!("/webhooks/{id}/deliveries?limit=100"),
            ))
            .await;
            let server_log =
                std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
            let tail: String = server_log
                .lines()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .join("\n");
            panic!("{seen} received; log: {log}\nserver log (newest first):\n{tail}");
        }
    };
    let delivered: HashSet<String> = received
        .iter()
        .map(|d| {
            crate::receiver::verify(secret, d).unwrap();
            assert_eq!(d.json["id"], d.id.as_str());
            d.json["data"]["load_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(delivered, loads, "every load.created arrived");
}

/// What one round's clients were told succeeded.
#[derive(Default)]
struct Acknowledged {
    /// (tracking load index, milliseconds after the base) of every fix answered 201.
    fixes: std::collections::BTreeSet<(usize, i64)>,
    /// Loads answered 201.
    created: Vec<String>,
    /// (load id, status) of every status change answered 200.
    transitions: Vec<(String, String)>,
}

/// The crash harness: GPS ingest (single and batch), load creation and status
/// changes, and the webhooks they produce, while the server is SIGKILLed at a
/// random moment five times and restarted on the same data directory; the
/// receiver fails (503) during the first round. Then: every acknowledged fix is
/// stored exactly once, every acknowledged creation and transition is there,
/// every load is whole (no half-applied change), and every event of an
/// acknowledged change arrived, signed, under one id per event.
///
/// Run it alone: `cargo test --test api crash::in_flight::five_sigkills -- --nocapture`.
#[actix_web::test]
async fn five_sigkills_lose_nothing_acknowledged() {
    use std::collections::{BTreeSet, HashMap, HashSet};
    use std::sync::{Arc, Mutex};

    use rand::Rng;

    const KILLS: usize = 5;
    const TRACKED: usize = 4;
    let secret = "crash-harness-secret-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let receiver = crate::receiver::Receiver::start(503).await;

    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    // Trusts the certificate the first start made.
    let client = https_client(dir.path());
    let (status, body) = send(
        server
            .call(&client, &key, Method::POST, "/webhooks")
            .json(&json!({"url": format!("{}/hook", receiver.base),
                "events": ["load.created", "load.status_changed"], "secret": secret})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, carrier) = send(
        server
            .call(&client, &key, Method::POST, "/carriers")
            .json(&crate::helpers::carrier_body("777001")),
    )
    .await;
    let carrier_id = carrier["data"]["id"].as_str().unwrap().to_owned();
    // Loads that take fixes (assigned), made before the first kill.
    let mut acked = Acknowledged::default();
    let mut tracked = Vec::new();
    for id in server.create_loads(&client, &key, TRACKED).await {
        let (status, _) = send(
            server
                .call(&client, &key, Method::PATCH, &format!("/loads/{id}/status"))
                .json(&json!({"status": "assigned", "carrier_id": carrier_id})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        acked.created.push(id.clone());
        acked.transitions.push((id.clone(), "assigned".into()));
        tracked.push(id);
    }
    let acked = Arc::new(Mutex::new(acked));
    let base = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp() - 3600, 0).unwrap();
    let tracked = Arc::new(tracked);

    for round in 0..KILLS {
        if round == 1 {
            receiver.answer(200); // the receiver comes back
        }
        let mut workers = Vec::new();
        // Five fix posters (four single, one batch), each with its own
        // millisecond slots: offset = ((round * 1e6 + i) * 5 + worker).
        for worker in 0..5i64 {
            let (client, base_url, key, acked, tracked) = (
                https_client(dir.path()),
                server.base.clone(),
                key.clone(),
                acked.clone(),
                tracked.clone(),
            );
            workers.push(tokio::spawn(async move {
                for i in 0..1_000_000i64 {
                    let slot = |j: i64| (round as i64 * 1_000_000 + i * 10 + j) * 5 + worker;
                    let at = |ms: i64| {
                        (base + chrono::Duration::milliseconds(ms))
                            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                    };
                    let load = (i as usize + worker as usize) % TRACKED;
                    if worker < 4 {
                        let ms = slot(0);
                        let sent = client
                            .post(format!("{base_url}/loads/{}/tracking", tracked[load]))
                            .bearer_auth(&key)
                            .json(&json!({"lat": 33.0, "lng": -95.0, "timestamp": at(ms)}))
                            .send()
                            .await;
                        match sent {
                            Ok(r) if r.status() == StatusCode::CREATED => {
                                acked.lock().unwrap().fixes.insert((load, ms));
                            }
                            _ => break,
                        }
                    } else {
                        let points: Vec<(usize, i64)> =
                            (0..10).map(|j| ((load + j as usize) % TRACKED, slot(j))).collect();
                        let body: Vec<_> = points
                            .iter()
                            .map(|(l, ms)| json!({"load_id": tracked[*l], "lat": 33.0, "lng": -95.0, "timestamp": at(*ms)}))
                            .collect();
                        let url = format!("{base_url}/tracking/batch");
                        let Some(stored) = post_batch(&client, &url, &key, body).await else {
                            break;
                        };
                        for index in stored {
                            acked.lock().unwrap().fixes.insert(points[index]);
                        }
                    }
                }
            }));
        }
        // Two workers create loads and move them: posted -> assigned -> in_transit.
        for _ in 0..2 {
            let (client, base_url, key, acked, carrier_id) = (
                https_client(dir.path()),
                server.base.clone(),
                key.clone(),
                acked.clone(),
                carrier_id.clone(),
            );
            workers.push(tokio::spawn(async move {
                loop {
                    let Ok(r) = client
                        .post(format!("{base_url}/loads"))
                        .bearer_auth(&key)
                        .json(&load_body("TX", "GA"))
                        .send()
                        .await
                    else {
                        break;
                    };
                    if r.status() != StatusCode::CREATED {
                        break;
                    }
                    let Ok(load) = r.json::<serde_json::Value>().await else {
                        break;
                    };
                    let id = load["data"]["id"].as_str().unwrap().to_owned();
                    acked.lock().unwrap().created.push(id.clone());
                    for (status, extra) in [
                        ("assigned", json!({"carrier_id": carrier_id})),
                        ("in_transit", json!({})),
                    ] {
                        let mut body = extra;
                        body["status"] = json!(status);
                        let sent = client
                            .patch(format!("{base_url}/loads/{id}/status"))
                            .bearer_auth(&key)
                            .json(&body)
                            .send()
                            .await;
                        match sent {
                            Ok(r) if r.status() == StatusCode::OK => {
                                acked
                                    .lock()
                                    .unwrap()
                                    .transitions
                                    .push((id.clone(), status.into()));
                            }
                            _ => return,
                        }
                    }
                }
            }));
        }
        let after = rand::rng().random_range(400..1200);
        tokio::time::sleep(Duration::from_millis(after)).await;
        server.child.start_kill().unwrap(); // SIGKILL, requests in flight
        server.child.wait().await.unwrap();
        for worker in workers {
            worker.await.unwrap();
        }
        server = start(dir.path()).await.0;
    }

    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let call = |method, path: &str| server.call(&client, &key, method, path);

    // Every acknowledged fix, exactly once.
    let mut stored_fixes = 0;
    for (index, id) in tracked.iter().enumerate() {
        let mut stored = Vec::new();
        let mut cursor = String::new();
        loop {
            let (status, page) = send(call(
                Method::GET,
                &format!("/loads/{id}/tracking/history?limit=1000{cursor}"),
            ))
            .await;
            assert_eq!(status, StatusCode::OK, "{page}");
            for point in page["data"]["points"].as_array().unwrap() {
                let at = chrono::DateTime::parse_from_rfc3339(point["timestamp"].as_str().unwrap())
                    .unwrap();
                stored.push((at.with_timezone(&chrono::Utc) - base).num_milliseconds());
            }
            match page["pagination"]["next_cursor"].as_str() {
                Some(next) => cursor = format!("&cursor={next}"),
                None => break,
            }
        }
        let unique: BTreeSet<i64> = stored.iter().copied().collect();
        assert_eq!(unique.len(), stored.len(), "a fix is stored at most once");
        let want: BTreeSet<i64> = acked
            .fixes
            .iter()
            .filter(|(load, _)| *load == index)
            .map(|(_, ms)| *ms)
            .collect();
        let lost: Vec<&i64> = want.difference(&unique).collect();
        assert!(
            lost.is_empty(),
            "{} acknowledged fixes of {id} lost",
            lost.len()
        );
        stored_fixes += stored.len();
    }

    // Every acknowledged load and transition; every load whole.
    let mut statuses: HashMap<String, Vec<String>> = HashMap::new();
    for id in &acked.created {
        let (status, load) = send(call(Method::GET, &format!("/loads/{id}"))).await;
        assert_eq!(status, StatusCode::OK, "acknowledged load {id}: {load}");
        let history: Vec<String> = load["data"]["status_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap().to_owned())
            .collect();
        let current = load["data"]["status"].as_str().unwrap();
        assert_eq!(history.last().map(String::as_str), Some(current), "{load}");
        assert_eq!(
            load["data"]["carrier"].is_null(),
            current == "posted",
            "a carrier exactly when assigned or later: {load}"
        );
        statuses.insert(id.clone(), history);
    }
    for (id, status) in &acked.transitions {
        assert!(
            statuses[id].contains(status),
            "acknowledged transition of {id} to {status} missing: {:?}",
            statuses[id]
        );
    }

    // Every event of an acknowledged change delivered, signed, one id per event.
    let wanted_created: HashSet<&str> = acked.created.iter().map(String::as_str).collect();
    let wanted_moves: HashSet<(&str, &str)> = acked
        .transitions
        .iter()
        .map(|(id, status)| (id.as_str(), status.as_str()))
        .collect();
    let arrived = |received: &[crate::receiver::Received]| {
        let mut created = HashSet::new();
        let mut moves = HashSet::new();
        for d in received.iter().filter(|d| !d.json.is_null()) {
            let data = &d.json["data"];
            let id = data["load_id"].as_str().unwrap_or_default().to_owned();
            match d.json["type"].as_str() {
                Some("load.created") => {
                    created.insert(id);
                }
                Some("load.status_changed") => {
                    moves.insert((id, data["status"].as_str().unwrap_or_default().to_owned()));
                }
                _ => {}
            }
        }
        (created, moves)
    };
    eventually(
        Duration::from_secs(60),
        "a webhook for every acknowledged change",
        || async {
            let received = receiver.received();
            let (created, moves) = arrived(&received);
            let missing_created = wanted_created
                .iter()
                .filter(|id| !created.contains(**id))
                .count();
            let missing_moves = wanted_moves
                .iter()
                .filter(|(id, s)| !moves.contains(&((*id).to_owned(), (*s).to_owned())))
                .count();
            if missing_created == 0 && missing_moves == 0 {
                Ok(())
            } else {
                Err(format!(
                    "{missing_created} load.created and {missing_moves} load.status_changed missing"
                ))
            }
        },
    )
    .await;
    let received = receiver.received();
    let mut bodies: HashMap<String, Vec<u8>> = HashMap::new();
    for delivery in &received {
        crate::receiver::verify(secret, delivery).unwrap();
        assert_eq!(delivery.json["id"], delivery.id.as_str());
        let first = bodies
            .entry(delivery.id.clone())
            .or_insert_with(|| delivery.body.clone());
        assert_eq!(*first, delivery.body, "one event id, one body");
    }
    println!(
        "crash harness: {KILLS} SIGKILLs; fixes acknowledged {} (stored {stored_fixes}); \
         loads acknowledged {}; transitions acknowledged {}; deliveries received {} \
         ({} distinct events)",
        acked.fixes.len(),
        acked.created.len(),
        acked.transitions.len(),
        received.len(),
        bodies.len()
    );
    assert!(
        acked.fixes.len() >= 100,
        "too little work was done to prove anything"
    );
}
