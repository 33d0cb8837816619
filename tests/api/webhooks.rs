//! Webhooks end to end: a real receiver, every signature checked independently.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use freight::domain::webhook::UrlPolicy;
use freight::webhooks::dispatcher::DispatchSettings;
use freight::webhooks::retry::RetryPolicy;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, load_body, spawn_app, spawn_app_with};
use crate::receiver::{Receiver, verify};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

pub(crate) const SECRET: &str = "a-very-secret-shared-key";

/// A server whose webhooks may call loopback over http, retrying every 100 ms.
pub(crate) async fn webhook_app() -> TestApp {
    spawn_app_with(|s| s.webhooks = webhook_settings()).await
}

pub(crate) fn webhook_settings() -> DispatchSettings {
    {
        DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            retry: RetryPolicy {
                schedule: vec![Duration::ZERO; 1]
                    .into_iter()
                    .chain(std::iter::repeat_n(Duration::from_millis(100), 40))
                    .collect(),
                jitter: 0.0,
            },
            tick: Duration::from_millis(20),
            ..DispatchSettings::default()
        }
    }
}

/// A server that delivers webhooks to local receivers, and a receiver
/// answering 200 that is subscribed (signing with [`SECRET`]) to `events`.
pub(crate) async fn subscribed_app(events: &[&str]) -> (TestApp, Receiver) {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    subscribe(
        &app,
        &app.key,
        &format!("{}/hooks", receiver.base),
        events,
        SECRET,
    )
    .await;
    (app, receiver)
}

pub(crate) async fn subscribe(
    app: &TestApp,
    key: &str,
    url: &str,
    events: &[&str],
    secret: &str,
) -> String {
    let (status, body) = app
        .post_as(
            key,
            "/webhooks",
            json!({"url": url, "events": events, "secret": secret}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(
        body["data"].get("secret").is_none(),
        "the secret is never returned"
    );
    body["data"]["id"].as_str().unwrap().to_owned()
}

const ALL: [&str; 5] = [
    "load.created",
    "load.assigned",
    "load.status_changed",
    "tracking.updated",
    "delivery.completed",
];

/// Drives a load through its whole life with two fixes; returns its id.
async fn full_lifecycle(app: &TestApp) -> String {
    let load = app.create_load(load_body("TX", "GA")).await;
    let id = load["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("515151").await;
    let path = format!("/loads/{id}/status");
    app.patch(
        &path,
        json!({"status": "assigned", "carrier_id": carrier["id"]}),
    )
    .await;
    app.patch(&path, json!({"status": "in_transit"})).await;
    let now = app.clock.now();
    for (minutes, lat) in [(2, 33.0), (1, 33.1)] {
        let at = (now - chrono::Duration::minutes(minutes))
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let (status, body) = app
            .post(
                &format!("/loads/{id}/tracking"),
                json!({"lat": lat, "lng": -90.0, "timestamp": at, "speed": 55}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = app.patch(&path, json!({"status": "delivered"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    id
}

#[actix_web::test]
async fn every_event_arrives_signed_with_its_sequence() {
    let (app, receiver) = subscribed_app(&ALL).await;
    let load = full_lifecycle(&app).await;

    let received = receiver
        .wait_for("8 events", |r| {
            r.iter().map(|d| &d.id).collect::<HashSet<_>>().len() >= 8
        })
        .await;
    let mut by_sequence = BTreeMap::new();
    let mut seen = HashSet::new();
    for delivery in &received {
        // At-least-once: a repeat of an event id is allowed, and is the same event.
        if !seen.insert(delivery.id.clone()) {
            continue;
        }
        verify(SECRET, delivery).unwrap_or_else(|e| panic!("signature: {e}"));
        assert!(verify("another-secret-entirely", delivery).is_err());
        assert_eq!(
            delivery.json["id"],
            delivery.id.as_str(),
            "webhook-id is the event id"
        );
        assert!(delivery.id.starts_with("evt_"));
        assert_eq!(delivery.json["data"]["load_id"], load.as_str());
        let sequence = delivery.json["data"]["sequence"].as_u64().unwrap();
        assert!(
            by_sequence
                .insert(sequence, delivery.json["type"].as_str().unwrap().to_owned())
                .is_none()
        );
    }
    let types: Vec<&str> = by_sequence.values().map(String::as_str).collect();
    assert_eq!(
        types,
        [
            "load.created",
            "load.assigned",
            "load.status_changed",
            "load.status_changed",
            "tracking.updated",
            "tracking.updated",
            "load.status_changed",
            "delivery.completed",
        ]
    );
    assert_eq!(
        by_sequence.keys().copied().collect::<Vec<_>>(),
        (1..=8).collect::<Vec<u64>>()
    );
    let completed = received
        .iter()
        .find(|r| r.json["type"] == "delivery.completed")
        .unwrap();
    let data = &completed.json["data"];
    assert_eq!(data["load"]["status"], "delivered");
    assert_eq!(data["carrier"]["mc_number"], "515151");
    assert_eq!(data["final_position"]["lat"], 33.1);
    let changed = received
        .iter()
        .filter(|r| r.json["type"] == "load.status_changed")
        .map(|r| {
            (
                r.json["data"]["previous_status"].clone(),
                r.json["data"]["status"].clone(),
            )
        })
        .collect::<HashSet<_>>();
    assert!(changed.contains(&(json!("in_transit"), json!("delivered"))));
}

#[actix_web::test]
async fn a_receiver_that_was_down_gets_everything_under_the_same_ids() {
    let app = webhook_app().await;
    let receiver = Receiver::start(503).await;
    let webhook = subscribe(
        &app,
        &app.key,
        &format!("{}/hooks", receiver.base),
        &["load.created"],
        SECRET,
    )
    .await;
    for _ in 0..5 {
        app.create_load(load_body("TX", "GA")).await;
    }
    // Every event is tried and refused several times.
    let refused = receiver
        .wait_advancing(Some(&app.clock), "retries", |r| {
            let ids: HashSet<&str> = r.iter().map(|d| d.id.as_str()).collect();
            ids.len() == 5 && r.len() >= 15
        })
        .await;
    let (_, log) = app.get(&format!("/webhooks/{webhook}/deliveries")).await;
    assert_eq!(log["data"]["total"], 5);
    for entry in log["data"]["deliveries"].as_array().unwrap() {
        assert_eq!(entry["status"], "pending", "{entry}");
        assert!(entry["attempts"].as_u64().unwrap() >= 1);
        assert_eq!(entry["last_status_code"], 503);
        assert!(entry["next_attempt_at"].is_string());
    }

    receiver.answer(200);
    let accepted = receiver
        .wait_advancing(Some(&app.clock), "every event accepted", |r| {
            r.iter()
                .filter(|d| d.json["type"] == "load.created")
                .count()
                > refused.len()
                && log_delivered(r) == 5
        })
        .await;
    let ids: HashSet<String> = accepted.iter().map(|d| d.id.clone()).collect();
    assert_eq!(ids.len(), 5, "no event changed its id between attempts");
    for delivery in &accepted {
        verify(SECRET, delivery).unwrap();
    }
    // The log says delivered, with the attempts counted. A delivery refused just
    // before the switch waits for its next attempt: the clock moves on meanwhile.
    let entries = eventually(
        Duration::from_secs(10),
        "the log to show delivered",
        || async {
            app.clock.advance(chrono::Duration::milliseconds(200));
            let (_, log) = app.get(&format!("/webhooks/{webhook}/deliveries")).await;
            let entries = log["data"]["deliveries"].as_array().unwrap().clone();
            if entries.iter().all(|e| e["status"] == "delivered") {
                Ok(entries)
            } else {
                Err(log.to_string())
            }
        },
    )
    .await;
    for entry in entries {
        assert!(entry["attempts"].as_u64().unwrap() >= 2);
        assert!(entry["delivered_at"].is_string());
        assert_eq!(entry["last_status_code"], 200);
    }
}

/// Distinct event ids that got a 200 (the receiver answers 200 from some point on,
/// so the last delivery of each id is a success).
fn log_delivered(received: &[crate::receiver::Received]) -> usize {
    received
        .iter()
        .map(|d| d.id.as_str())
        .collect::<HashSet<_>>()
        .len()
}

#[actix_web::test]
async fn a_restart_mid_backlog_loses_nothing_and_changes_no_id() {
    let app = webhook_app().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener); // nothing listens: connections are refused
    subscribe(
        &app,
        &app.key,
        &format!("http://{address}/hooks"),
        &["load.created"],
        SECRET,
    )
    .await;
    let mut created = HashSet::new();
    for _ in 0..6 {
        created.insert(
            app.create_load(load_body("TX", "GA")).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // let some attempts fail
    let app = app.restart_with(|s| s.webhooks = webhook_settings()).await;
    let receiver = Receiver::start_on(std::net::TcpListener::bind(address).unwrap(), 200);
    let received = receiver
        .wait_advancing(Some(&app.clock), "the backlog", |r| {
            r.iter()
                .map(|d| d.id.as_str())
                .collect::<HashSet<_>>()
                .len()
                == 6
        })
        .await;
    let loads: HashSet<String> = received
        .iter()
        .map(|d| d.json["data"]["load_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(loads, created);
    for delivery in &received {
        verify(SECRET, delivery).unwrap();
    }
    drop(app);
}

#[actix_web::test]
async fn gone_disables_the_subscription_and_says_why() {
    let app = webhook_app().await;
    let receiver = Receiver::start(410).await;
    let webhook = subscribe(
        &app,
        &app.key,
        &format!("{}/gone", receiver.base),
        &["load.created"],
        SECRET,
    )
    .await;
    app.create_load(load_body("TX", "GA")).await;
    receiver.wait_for("one attempt", |r| !r.is_empty()).await;
    let body = eventually(Duration::from_secs(10), "the webhook disabled", || async {
        let (_, body) = app.get(&format!("/webhooks/{webhook}")).await;
        match body["data"]["enabled"] == false {
            true => Ok(body),
            false => Err(body.to_string()),
        }
    })
    .await;
    assert!(
        body["data"]["disabled_reason"]
            .as_str()
            .unwrap()
            .contains("410"),
        "{body}"
    );
    // Nothing more is sent to it.
    app.create_load(load_body("TX", "GA")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), 1);

    // Enabling it again clears the reason.
    receiver.answer(200);
    let (status, body) = app
        .patch(&format!("/webhooks/{webhook}"), json!({"enabled": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["disabled_reason"], Value::Null);
}

#[actix_web::test]
async fn a_rotated_secret_signs_what_follows() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let webhook = subscribe(
        &app,
        &app.key,
        &format!("{}/r", receiver.base),
        &["load.created"],
        SECRET,
    )
    .await;
    app.create_load(load_body("TX", "GA")).await;
    receiver.wait_for("first", |r| r.len() == 1).await;
    let rotated = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let (status, body) = app
        .patch(&format!("/webhooks/{webhook}"), json!({"secret": rotated}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["data"].get("secret").is_none());
    assert_eq!(
        body["data"]["signing_secret"], rotated,
        "shown once, already whsec_"
    );
    let (_, unchanged) = app.get(&format!("/webhooks/{webhook}")).await;
    assert!(
        unchanged["data"].get("signing_secret").is_none(),
        "only once"
    );
    app.create_load(load_body("TX", "GA")).await;
    let received = receiver.wait_for("second", |r| r.len() == 2).await;
    verify(SECRET, &received[0]).unwrap();
    verify(rotated, &received[1]).unwrap();
    assert!(verify(SECRET, &received[1]).is_err());
}

#[actix_web::test]
async fn subscriptions_never_see_another_accounts_events() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let (_, other) = app.new_account().await;
    subscribe(
        &app,
        &app.key,
        &format!("{}/mine", receiver.base),
        &ALL,
        SECRET,
    )
    .await;
    subscribe(
        &app,
        &other,
        &format!("{}/theirs", receiver.base),
        &ALL,
        SECRET,
    )
    .await;
    let mine = app.create_load(load_body("TX", "GA")).await;
    let (_, theirs) = app.post_as(&other, "/loads", load_body("OK", "CA")).await;
    let received = receiver.wait_for("both", |r| r.len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let received = if receiver.received().len() > received.len() {
        receiver.received()
    } else {
        received
    };
    assert_eq!(
        received.len(),
        2,
        "each event to its own account's subscription only"
    );
    for delivery in received {
        let expected = if delivery.path == "/mine" {
            &mine["id"]
        } else {
            &theirs["data"]["id"]
        };
        assert_eq!(&delivery.json["data"]["load_id"], expected);
    }
    // Another account's webhook is not found.
    let (_, list) = app.get_as(&other, "/webhooks").await;
    let theirs_id = list["data"]["webhooks"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = app.get(&format!("/webhooks/{theirs_id}")).await;
    assert_error(status, &body, 404, "WEBHOOK_NOT_FOUND");
}

#[actix_web::test]
async fn test_pings_and_redeliveries_keep_the_event_id() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let webhook = subscribe(
        &app,
        &app.key,
        &format!("{}/ping", receiver.base),
        &["load.created"],
        SECRET,
    )
    .await;
    let (status, ping) = app
        .post(&format!("/webhooks/{webhook}/test"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{ping}");
    assert_eq!(ping["data"]["delivered"], true);
    assert_eq!(ping["data"]["status_code"], 200);
    let received = receiver.wait_for("ping", |r| r.len() == 1).await;
    assert_eq!(received[0].json["type"], "webhook.test");
    verify(SECRET, &received[0]).unwrap();

    app.create_load(load_body("TX", "GA")).await;
    let received = receiver.wait_for("event", |r| r.len() == 2).await;
    let event_id = received[1].id.clone();
    eventually(
        Duration::from_secs(10),
        "the delivery delivered",
        || async {
            let (_, log) = app.get(&format!("/webhooks/{webhook}/deliveries")).await;
            match log["data"]["deliveries"][0]["status"] == "delivered" {
                true => Ok(()),
                false => Err(log.to_string()),
            }
        },
    )
    .await;
    let (status, again) = app
        .post(
            &format!("/webhooks/{webhook}/deliveries/{event_id}/redeliver"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    let received = receiver.wait_for("redelivery", |r| r.len() == 3).await;
    assert_eq!(received[2].id, event_id, "a redelivery keeps the event id");
    verify(SECRET, &received[2]).unwrap();
    let (status, body) = app
        .post(
            &format!("/webhooks/{webhook}/deliveries/evt_01m7zsaxzk3pb3vfdnxzkmn1s1/redeliver"),
            json!({}),
        )
        .await;
    assert_error(status, &body, 404, "DELIVERY_NOT_FOUND");
}

#[actix_web::test]
async fn subscriptions_are_validated_and_private_addresses_refused() {
    let app = spawn_app().await; // the default policy: https only, no private addresses
    for (body, field) in [
        (
            json!({"url": "http://hooks.example.com/x", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://127.0.0.1/x", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://169.254.169.254/latest/meta-data", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://10.0.0.7/x", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://[::1]/x", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://localhost/x", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        // Found by a black-box probe: IPv6 forms that embed a loopback IPv4
        // address, and an IETF protocol-assignment address.
        (
            json!({"url": "https://[::127.0.0.1]/hook", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://[64:ff9b:1::7f00:1]/", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://[2002:7f00:1::]/", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://192.0.0.1/", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "ftp://example.com", "events": ["load.created"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "https://93.184.216.34/x", "events": ["load.exploded"], "secret": SECRET}),
            "events[0]",
        ),
        (
            json!({"url": "https://93.184.216.34/x", "events": [], "secret": SECRET}),
            "events",
        ),
        (
            json!({"url": "https://93.184.216.34/x", "events": ["load.created"], "secret": "short"}),
            "secret",
        ),
        (
            json!({"url": "https://93.184.216.34/x", "events": ["load.created"], "secret": "whsec_not base64 at all!"}),
            "secret",
        ),
        (json!({"events": ["load.created"], "secret": SECRET}), "url"),
        (
            json!({"url": "https://93.184.216.34/x", "events": ["load.created"], "secret": SECRET, "active": true}),
            "active",
        ),
    ] {
        let (status, answer) = app.post("/webhooks", body.clone()).await;
        let error = assert_error(status, &answer, 400, "VALIDATION_FAILED");
        assert_eq!(error["details"]["field"], field, "{body}");
    }
    let (_, list) = app.get("/webhooks").await;
    assert_eq!(list["data"]["total"], 0, "nothing was created");
    let (status, body) = app.get("/webhooks/wh_01m7zsaxzk3pb3vfdnxzkmn1s1").await;
    assert_error(status, &body, 404, "WEBHOOK_NOT_FOUND");
}

#[actix_web::test]
async fn subscriptions_can_be_listed_changed_and_deleted() {
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let first = subscribe(
        &app,
        &app.key,
        &format!("{}/a", receiver.base),
        &["load.created"],
        SECRET,
    )
    .await;
    let second = subscribe(
        &app,
        &app.key,
        &format!("{}/b", receiver.base),
        &ALL,
        SECRET,
    )
    .await;
    let (_, list) = app.get("/webhooks").await;
    assert_eq!(list["pagination"]["total"], 2);
    assert_eq!(
        list["data"]["webhooks"][0]["id"],
        second.as_str(),
        "newest first"
    );
    let (status, changed) = app
        .patch(
            &format!("/webhooks/{first}"),
            json!({"events": ["delivery.completed"], "enabled": false}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["data"]["events"], json!(["delivery.completed"]));
    assert_eq!(changed["data"]["enabled"], false);
    let (status, body) = app
        .patch(&format!("/webhooks/{first}"), json!({"url": "ftp://x"}))
        .await;
    assert_error(status, &body, 400, "VALIDATION_FAILED");
    let (status, _) = app
        .client
        .delete(app.url(&format!("/webhooks/{second}")))
        .bearer_auth(&app.key)
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.get(&format!("/webhooks/{second}")).await;
    assert_error(status, &body, 404, "WEBHOOK_NOT_FOUND");
    // A deleted subscription gets nothing; a disabled one neither.
    app.create_load(load_body("TX", "GA")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(receiver.received().is_empty());
}

/// Deliveries queued behind a receiver that does not answer are not attempted
/// yet, but the delivery log shows them as pending within seconds.
#[actix_web::test]
async fn deliveries_waiting_behind_a_silent_receiver_show_in_the_log() {
    let app = spawn_app_with(|s| {
        s.webhooks = DispatchSettings {
            max_per_webhook: 1,
            ..webhook_settings()
        }
    })
    .await;
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let webhook = subscribe(&app, &app.key, &url, &["load.created"], SECRET).await;
    for _ in 0..3 {
        app.create_load(load_body("TX", "GA")).await;
    }
    let log = eventually(
        Duration::from_secs(20),
        "the waiting deliveries",
        || async {
            // Past the time a fresh delivery may wait unrecorded.
            app.clock.advance(chrono::Duration::milliseconds(500));
            let (status, log) = app.get(&format!("/webhooks/{webhook}/deliveries")).await;
            assert_eq!(status, StatusCode::OK, "{log}");
            match log["data"]["deliveries"].as_array().unwrap().len() >= 2 {
                true => Ok(log),
                false => Err(log.to_string()),
            }
        },
    )
    .await;
    for delivery in log["data"]["deliveries"].as_array().unwrap() {
        assert_eq!(delivery["status"], "pending", "{delivery}");
        assert_eq!(delivery["attempts"], 0, "{delivery}");
        assert_eq!(delivery["event_type"], "load.created", "{delivery}");
    }
    held.abort();
}

/// The Python interpreter of `tests/python/.venv` (see `.ci/run`), which has
/// the Standard Webhooks library; `Err` says why not.
fn python_with_standardwebhooks() -> Result<std::path::PathBuf, String> {
    let python =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/.venv/bin/python");
    let found = std::process::Command::new(&python)
        .args(["-c", "import standardwebhooks"])
        .output();
    match found {
        Ok(out) if out.status.success() => Ok(python),
        _ => Err(format!(
            "{} with standardwebhooks is not installed (python3 -m venv tests/python/.venv && \
             tests/python/.venv/bin/pip install -r tests/python/requirements.txt)",
            python.display()
        )),
    }
}

/// A receiver written with the Standard Webhooks library verifies real
/// deliveries with the `signing_secret` the create answer gave: for a plain
/// secret (its UTF-8 bytes, base64 in the whsec_ form), and for a secret the
/// service made when none was sent.
#[actix_web::test]
async fn the_standard_webhooks_library_verifies_deliveries_with_the_signing_secret() {
    let python = match python_with_standardwebhooks() {
        Ok(python) => python,
        Err(reason) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the Standard Webhooks check: {reason}");
            return;
        }
        Err(reason) => panic!("CI must run the Standard Webhooks check, but {reason}"),
    };
    let app = webhook_app().await;
    let receiver = Receiver::start(200).await;
    let mut secrets = BTreeMap::new();
    for (path, body) in [
        ("plain", json!({"secret": "plain-secret-0123456789"})),
        ("made", json!({})),
    ] {
        let mut body = body;
        body["url"] = json!(format!("{}/{path}", receiver.base));
        body["events"] = json!(["load.created"]);
        let (status, created) = app.post("/webhooks", body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let secret = created["data"]["signing_secret"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(secret.starts_with("whsec_"), "{secret}");
        assert!(created["data"].get("secret").is_none());
        secrets.insert(format!("/{path}"), secret);
    }
    assert_eq!(
        secrets["/plain"],
        format!("whsec_{}", STANDARD.encode("plain-secret-0123456789")),
    );
    app.create_load(load_body("TX", "GA")).await;
    app.create_load(load_body("TX", "OK")).await;
    let received = receiver.wait_for("4 deliveries", |r| r.len() >= 4).await;
    assert!(received.iter().all(|d| secrets.contains_key(&d.path)));
    let captured: Vec<Value> = received
        .iter()
        .map(|d| {
            json!({
                "signing_secret": secrets[&d.path],
                "id": d.id,
                "timestamp": d.timestamp,
                "signature": d.signature,
                "body": String::from_utf8(d.body.clone()).unwrap(),
            })
        })
        .collect();
    let file = app.data_dir.path().join("deliveries.json");
    std::fs::write(&file, serde_json::to_vec(&captured).unwrap()).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/verify_webhooks.py"
    );
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the library refused a delivery: {said}"
    );
    assert!(
        said.contains(&format!("verified {} deliveries", captured.len())),
        "{said}"
    );
}
