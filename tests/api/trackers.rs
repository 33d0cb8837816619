//! Hardware trackers over TCP, as the units talk: a Teltonika unit's IMEI
//! handshake and Codec 8 packets, a GT06's login, positions and status, each
//! acknowledged only once stored; unknown units, bad checksums, garbage,
//! idle and over-cap connections. Frames are built here the way the units
//! build them (the decoders' own tests use Traccar's captured frames).

use std::net::SocketAddr;
use std::time::Duration;

use chrono::{DateTime, Datelike, SubsecRound, Timelike, Utc};
use freight::ingest::trackers::crc;
use freight::server::trackers::{TrackerListen, TrackerProtocol};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::devices::attach;
use crate::helpers::{TestApp, assert_error, spawn_app_with};
use crate::tracking::load_in;

/// How long a test waits for an answer or a close before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

pub(crate) async fn app_with_trackers(
    adjust: impl FnOnce(&mut freight::server::trackers::TrackerSettings),
) -> TestApp {
    spawn_app_with(|s| {
        s.trackers.listeners = [
            "teltonika=127.0.0.1:0",
            "gt06=127.0.0.1:0",
            "queclink=127.0.0.1:0",
            "h02=127.0.0.1:0",
        ]
        .iter()
        .map(|l| l.parse::<TrackerListen>().unwrap())
        .collect();
        adjust(&mut s.trackers);
    })
    .await
}

pub(crate) fn addr(app: &TestApp, protocol: TrackerProtocol) -> SocketAddr {
    app.trackers
        .iter()
        .find(|(p, _)| *p == protocol)
        .expect("a listener")
        .1
}

/// A device with `identifier`, attached to a new in-transit load: the load.
pub(crate) async fn tracked(app: &TestApp, identifier: &str) -> String {
    let (status, body) = app
        .post(
            "/devices",
            json!({"name": "Unit", "identifier": identifier}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let load = load_in(app, "in_transit").await;
    attach(app, &load, body["data"]["id"].as_str().unwrap()).await;
    load
}

pub(crate) async fn history(app: &TestApp, load: &str) -> Vec<Value> {
    let (_, body) = app.get(&format!("/loads/{load}/tracking/history")).await;
    body["data"]["points"].as_array().expect("points").clone()
}

pub(crate) struct Unit(pub(crate) TcpStream);

impl Unit {
    pub(crate) async fn connect(to: SocketAddr) -> Unit {
        Unit(TcpStream::connect(to).await.expect("the listener accepts"))
    }

    pub(crate) async fn send(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).await.expect("the server reads");
    }

    /// The next `n` bytes the server sends.
    pub(crate) async fn answer(&mut self, n: usize) -> Vec<u8> {
        let mut out = vec![0; n];
        tokio::time::timeout(PATIENCE, self.0.read_exact(&mut out))
            .await
            .expect("an answer in time")
            .expect("an answer, not a close");
        out
    }

    /// Waits for the server to close the connection (after any bytes it sent).
    pub(crate) async fn closed(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, self.0.read_to_end(&mut rest))
            .await
            .expect("closed in time")
            .ok();
        rest
    }
}

/// A Codec 8 AVL packet of `records` (time, lat, lng, speed km/h, satellites),
/// with no IO elements.
pub(crate) fn teltonika_packet(records: &[(DateTime<Utc>, f64, f64, u16, u8)]) -> Vec<u8> {
    let mut data = vec![0x08, records.len() as u8];
    for (at, lat, lng, speed, satellites) in records {
        data.extend_from_slice(&(at.timestamp_millis() as u64).to_be_bytes());
        data.push(0);
        data.extend_from_slice(&((lng * 1e7).round() as i32).to_be_bytes());
        data.extend_from_slice(&((lat * 1e7).round() as i32).to_be_bytes());
        data.extend_from_slice(&120i16.to_be_bytes());
        data.extend_from_slice(&90u16.to_be_bytes());
        data.push(*satellites);
        data.extend_from_slice(&speed.to_be_bytes());
        data.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // event id, total, N1, N2, N4, N8
    }
    data.push(records.len() as u8);
    let crc = u32::from(crc::arc(&data));
    [
        vec![0; 4],
        (data.len() as u32).to_be_bytes().to_vec(),
        data,
        crc.to_be_bytes().to_vec(),
    ]
    .concat()
}

pub(crate) fn teltonika_imei(imei: &str) -> Vec<u8> {
    [
        (imei.len() as u16).to_be_bytes().to_vec(),
        imei.as_bytes().to_vec(),
    ]
    .concat()
}

/// A short GT06 frame of `protocol` with `info` and `serial`.
pub(crate) fn gt06(protocol: u8, info: &[u8], serial: u16) -> Vec<u8> {
    let mut checked = vec![(info.len() + 5) as u8, protocol];
    checked.extend_from_slice(info);
    checked.extend_from_slice(&serial.to_be_bytes());
    let crc = crc::x25(&checked);
    [
        vec![0x78, 0x78],
        checked,
        crc.to_be_bytes().to_vec(),
        vec![0x0D, 0x0A],
    ]
    .concat()
}

fn gt06_login(imei: &str, zone_word: u16, serial: u16) -> Vec<u8> {
    let digits = format!("0{imei}");
    let mut info: Vec<u8> = (0..16)
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect();
    info.extend_from_slice(&0x100Fu16.to_be_bytes());
    info.extend_from_slice(&zone_word.to_be_bytes());
    gt06(0x01, &info, serial)
}

/// A GT06 GPS block at local time `at`, north-west, positioned or not.
pub(crate) fn gt06_position(
    protocol: u8,
    at: chrono::NaiveDateTime,
    lat: f64,
    lng: f64,
    positioned: bool,
    serial: u16,
) -> Vec<u8> {
    let mut info = vec![
        (at.year() - 2000) as u8,
        at.month() as u8,
        at.day() as u8,
        at.hour() as u8,
        at.minute() as u8,
        at.second() as u8,
        0xC9,
    ];
    info.extend_from_slice(&((lat * 1_800_000.0).round() as u32).to_be_bytes());
    info.extend_from_slice(&((lng.abs() * 1_800_000.0).round() as u32).to_be_bytes());
    info.push(88); // km/h
    let flags: u16 = 0x0400 | 0x0800 | if positioned { 0x1000 } else { 0 } | 184;
    info.extend_from_slice(&flags.to_be_bytes());
    info.extend_from_slice(&[0x01, 0xCC, 0x00, 0x28, 0x7D, 0x00, 0x1F, 0xB8]);
    gt06(protocol, &info, serial)
}

pub(crate) fn gt06_echo(protocol: u8, serial: u16) -> Vec<u8> {
    freight::ingest::trackers::gt06::echo(protocol, serial.to_be_bytes())
}

pub(crate) async fn metric(app: &TestApp, line_start: &str) -> f64 {
    metric_at(&app.admin_base, line_start).await
}

/// The value of the metric line starting `line_start` on the admin listener
/// at `admin_base` (`http://127.0.0.1:<port>`).
pub(crate) async fn metric_at(admin_base: &str, line_start: &str) -> f64 {
    let page = reqwest::get(format!("{admin_base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    page.lines()
        .find_map(|l| {
            l.strip_prefix(line_start)
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no {line_start} in /metrics"))
}

#[actix_web::test]
async fn a_teltonika_unit_is_acknowledged_only_what_is_stored_and_a_resend_stores_nothing_twice() {
    let app = app_with_trackers(|_| {}).await;
    let load = tracked(&app, "356307042441013").await;
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Teltonika)).await;
    // A keep-alive byte first, as units send, then the handshake.
    unit.send(&[0xFF]).await;
    unit.send(&teltonika_imei("356307042441013")).await;
    assert_eq!(unit.answer(1).await, [0x01]);

    let now = Utc::now().trunc_subsecs(3);
    let secs = |s| now - chrono::Duration::seconds(s);
    // Newest first, as units send their flash; one record without a fix.
    let packet = teltonika_packet(&[
        (secs(10), 32.70, -96.80, 88, 9),
        (secs(20), 32.69, -96.81, 90, 8),
        (secs(30), 32.68, -96.82, 0, 0),
    ]);
    unit.send(&packet).await;
    assert_eq!(
        unit.answer(4).await,
        [0, 0, 0, 3],
        "every record is counted, stored or not"
    );
    let points = history(&app, &load).await;
    assert_eq!(
        points.len(),
        2,
        "the record without a fix is not a fix: {points:?}"
    );
    assert!(points.iter().all(|p| p["source"] == "teltonika"));
    let speed = points[0]["speed"].as_f64().unwrap();
    assert!(
        (speed - 88.0 * 0.621_371).abs() < 0.01,
        "km/h become mph: {speed}"
    );

    // The ACK was lost: the unit resends the packet, one byte at a time.
    for byte in &packet {
        unit.send(&[*byte]).await;
    }
    assert_eq!(unit.answer(4).await, [0, 0, 0, 3]);
    assert_eq!(history(&app, &load).await.len(), 2, "nothing stored twice");

    // A packet whose CRC is wrong is not acknowledged; the one after it is.
    let mut corrupt = teltonika_packet(&[
        (secs(5), 32.71, -96.79, 80, 7),
        (secs(4), 32.72, -96.78, 80, 7),
    ]);
    *corrupt.last_mut().unwrap() ^= 0x55;
    let good = teltonika_packet(&[(secs(3), 32.73, -96.77, 80, 7)]);
    unit.send(&[corrupt, good].concat()).await;
    assert_eq!(
        unit.answer(4).await,
        [0, 0, 0, 1],
        "the first answer is the good packet's"
    );
    assert_eq!(history(&app, &load).await.len(), 3);
    assert!(
        metric(
            &app,
            "freight_tcp_frames_total{protocol=\"teltonika\",outcome=\"bad_checksum\"}"
        )
        .await
            >= 1.0
    );

    let (_, devices) = app.get("/devices").await;
    let device = &devices["data"]["devices"][0];
    assert!(device["last_seen_at"].is_string(), "{device}");
    assert_eq!(
        device["ignored_positions"]["counts"]["no_fix"], 2,
        "sent twice: {device}"
    );
}

#[actix_web::test]
async fn an_unknown_imei_is_answered_00_and_closed_and_garbage_closes_the_connection() {
    let app = app_with_trackers(|_| {}).await;
    let to = addr(&app, TrackerProtocol::Teltonika);
    for _ in 0..2 {
        // The second time the refusal comes from memory (counted `throttled`).
        let mut unit = Unit::connect(to).await;
        unit.send(&teltonika_imei("490154203237518")).await;
        assert_eq!(unit.closed().await, [0x00]);
    }
    assert!(
        metric(
            &app,
            "freight_tcp_closed_total{protocol=\"teltonika\",reason=\"throttled\"}"
        )
        .await
            >= 1.0
    );

    let mut talker = Unit::connect(to).await;
    talker.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(talker.closed().await, Vec::<u8>::new());
    let mut gt06_talker = Unit::connect(addr(&app, TrackerProtocol::Gt06)).await;
    gt06_talker.send(&[0x78, 0x78, 0xFF, 0x13]).await;
    gt06_talker.send(&[0u8; 300]).await;
    assert_eq!(
        gt06_talker.closed().await,
        Vec::<u8>::new(),
        "no 0D0A where the length says"
    );
    // Positions before any login are refused too.
    let mut anonymous = Unit::connect(addr(&app, TrackerProtocol::Gt06)).await;
    anonymous
        .send(&gt06_position(
            0x12,
            Utc::now().naive_utc(),
            32.7,
            -96.8,
            true,
            1,
        ))
        .await;
    assert_eq!(anonymous.closed().await, Vec::<u8>::new());
    // And the service still serves.
    let (status, _) = app.get("/loads").await;
    assert_eq!(status, StatusCode::OK);
}

#[actix_web::test]
async fn a_gt06_logs_in_with_its_time_zone_and_positions_and_status_are_echoed() {
    let app = app_with_trackers(|_| {}).await;
    let load = tracked(&app, "864717003664467").await;
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Gt06)).await;
    // UTC+05:30 in the login's time-zone word (HHMM 530 in bits 15..4).
    unit.send(&gt06_login("864717003664467", (530 << 4) as u16, 1))
        .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x01, 1));

    let taken = Utc::now().trunc_subsecs(0) - chrono::Duration::seconds(20);
    let local = (taken + chrono::Duration::minutes(330)).naive_utc();
    unit.send(&gt06_position(0x22, local, 32.7767, -96.797, true, 2))
        .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x22, 2));
    // Not positioned: echoed, not stored. Then a status packet, echoed at once.
    unit.send(&gt06_position(
        0x12,
        local + chrono::Duration::seconds(5),
        1.0,
        -1.0,
        false,
        3,
    ))
    .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x12, 3));
    unit.send(&gt06(0x13, &[0x44, 0x06, 0x04, 0x00, 0x02], 4))
        .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x13, 4));

    let points = history(&app, &load).await;
    assert_eq!(points.len(), 1, "{points:?}");
    let at: DateTime<Utc> = points[0]["timestamp"].as_str().unwrap().parse().unwrap();
    assert_eq!(at, taken, "the local time placed by the login's zone");
    assert!((points[0]["lat"].as_f64().unwrap() - 32.7767).abs() < 1e-4);
    assert!(
        (points[0]["lng"].as_f64().unwrap() + 96.797).abs() < 1e-4,
        "bit 11 set: west"
    );
    assert_eq!(points[0]["source"], "gt06");
}

#[actix_web::test]
async fn idle_and_over_cap_connections_are_closed() {
    let app = app_with_trackers(|t| {
        t.idle_timeout = Duration::from_millis(300);
        t.max_per_address = 2;
    })
    .await;
    let to = addr(&app, TrackerProtocol::Teltonika);
    let mut half = Unit::connect(to).await;
    half.send(&[0x00, 0x0F, b'3', b'5']).await; // half an IMEI frame, then nothing
    let _second = Unit::connect(to).await;
    let mut third = Unit::connect(to).await;
    assert_eq!(
        third.closed().await,
        Vec::<u8>::new(),
        "over the per-address cap"
    );
    assert_eq!(
        half.closed().await,
        Vec::<u8>::new(),
        "idle past the timeout"
    );
    assert!(
        metric(
            &app,
            "freight_tcp_closed_total{protocol=\"teltonika\",reason=\"address_capacity\"}"
        )
        .await
            >= 1.0
    );
    assert!(
        metric(
            &app,
            "freight_tcp_closed_total{protocol=\"teltonika\",reason=\"idle\"}"
        )
        .await
            >= 1.0
    );
}

#[actix_web::test]
async fn identifiers_are_unique_across_accounts_and_freed_by_a_change_or_a_removal() {
    let app = app_with_trackers(|_| {}).await;
    let (status, first) = app
        .post(
            "/devices",
            json!({"name": "A", "identifier": "356307042441013"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["data"]["identifier"], "356307042441013");
    let (_, other_key) = app.new_account().await;
    let (status, body) = app
        .post_as(
            &other_key,
            "/devices",
            json!({"name": "B", "identifier": "356307042441013"}),
        )
        .await;
    assert_error(status, &body, 409, "IDENTIFIER_TAKEN");
    let (status, body) = app
        .post(
            "/devices",
            json!({"name": "C", "identifier": "owntracks/+"}),
        )
        .await;
    assert_error(status, &body, 400, "VALIDATION_FAILED");

    let id = first["data"]["id"].as_str().unwrap();
    let (status, body) = app
        .patch(
            &format!("/devices/{id}"),
            json!({"identifier": "356307042441014"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["identifier"], "356307042441014");
    // The old one is free now; the new one is not.
    let (status, b) = app
        .post_as(
            &other_key,
            "/devices",
            json!({"name": "B", "identifier": "356307042441013"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let (status, body) = app
        .patch(
            &format!("/devices/{id}"),
            json!({"identifier": "356307042441013"}),
        )
        .await;
    assert_error(status, &body, 409, "IDENTIFIER_TAKEN");

    // A connected unit whose identifier moves away is refused at its next packet.
    let load = load_in(&app, "in_transit").await;
    attach(&app, &load, id).await;
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Teltonika)).await;
    unit.send(&teltonika_imei("356307042441014")).await;
    assert_eq!(unit.answer(1).await, [0x01]);
    let (status, _) = app
        .patch(&format!("/devices/{id}"), json!({"identifier": null}))
        .await;
    assert_eq!(status, StatusCode::OK);
    unit.send(&teltonika_packet(&[(Utc::now(), 32.7, -96.8, 50, 6)]))
        .await;
    assert_eq!(
        unit.closed().await,
        Vec::<u8>::new(),
        "no ACK for a device that is not its own"
    );

    // Removing a device frees its identifier.
    let b_id = b["data"]["id"].as_str().unwrap();
    let (status, _) = send_delete(&app, &other_key, &format!("/devices/{b_id}")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app
        .patch(
            &format!("/devices/{id}"),
            json!({"identifier": "356307042441013"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn send_delete(app: &TestApp, key: &str, path: &str) -> (StatusCode, Value) {
    crate::helpers::send(app.client.delete(app.url(path)).bearer_auth(key)).await
}
