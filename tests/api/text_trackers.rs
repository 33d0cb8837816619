//! The text trackers over TCP: a Queclink unit's GTFRI reports and heartbeat,
//! an H02 unit's V1 positions and heartbeats, each naming itself in every
//! frame, answered as the units expect once what they report is stored; and a
//! GT06 placed in time by its device's `time_zone`.

use chrono::{SubsecRound, Utc};
use freight::server::trackers::TrackerProtocol;

use serde_json::json;

use crate::trackers::{
    Unit, addr, app_with_trackers, gt06, gt06_echo, gt06_position, history, tracked,
};

/// Reads what the server sends up to and including `end`.
async fn until(unit: &mut Unit, end: u8) -> String {
    let mut out = Vec::new();
    loop {
        let byte = unit.answer(1).await[0];
        out.push(byte);
        if byte == end {
            return String::from_utf8(out).expect("text");
        }
    }
}

#[actix_web::test]
async fn a_queclink_report_is_acknowledged_by_its_count_once_stored_and_its_heartbeat_answered() {
    let app = app_with_trackers(|_| {}).await;
    let load = tracked(&app, "865284042140479").await;
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Queclink)).await;
    let at = Utc::now().trunc_subsecs(0) - chrono::Duration::seconds(30);
    let time = at.format("%Y%m%d%H%M%S");
    // Two positions, the second without a fix (accuracy 0).
    let report = format!(
        "+RESP:GTFRI,DE0114,865284042140479,,0,0,2,\
         1,96.5,180,28.0,-96.797000,32.776700,{time},0311,0480,3500,00D07F02,18,\
         0,0.0,0,0.0,-96.797000,32.776700,{time},0311,0480,3500,00D07F02,18,\
         0,,93,0,,,{time},0A1F$\r\n"
    );
    unit.send(report.as_bytes()).await;
    assert_eq!(until(&mut unit, b'$').await, "+SACK:0A1F$");
    let points = history(&app, &load).await;
    assert_eq!(points.len(), 1, "{points:?}");
    assert_eq!(points[0]["source"], "queclink");
    assert_eq!(
        points[0]["timestamp"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<Utc>>()
            .unwrap(),
        at
    );
    assert!((points[0]["speed"].as_f64().unwrap() - 96.5 * 0.621_371).abs() < 0.01);

    unit.send(format!("+ACK:GTHBD,DE0114,865284042140479,,{time},0A20$").as_bytes())
        .await;
    assert_eq!(until(&mut unit, b'$').await, "+SACK:GTHBD,DE0114,0A20$");
    // Another unit's IMEI on the same connection ends it.
    unit.send(format!("+ACK:GTHBD,DE0114,865284042140470,,{time},0A21$").as_bytes())
        .await;
    assert_eq!(unit.closed().await, Vec::<u8>::new());
}

#[actix_web::test]
async fn an_h02_position_is_answered_v4_once_stored_and_an_unknown_unit_gets_nothing() {
    let app = app_with_trackers(|_| {}).await;
    let load = tracked(&app, "355488020119695").await;
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::H02)).await;
    let at = Utc::now().trunc_subsecs(0) - chrono::Duration::seconds(40);
    let (hms, dmy) = (at.format("%H%M%S"), at.format("%d%m%y"));
    // 32°46.602' N, 96°47.820' W; 10 knots.
    unit.send(
        format!(
            "*HQ,355488020119695,V1,{hms},A,3246.6020,N,09647.8200,W,10.00,270,{dmy},FFFFFBFF# \r\n"
        )
        .as_bytes(),
    )
    .await;
    let answer = until(&mut unit, b'#').await;
    assert!(answer.starts_with("*HQ,355488020119695,V4,V1,"), "{answer}");
    let points = history(&app, &load).await;
    assert_eq!(points.len(), 1, "{points:?}");
    assert_eq!(points[0]["source"], "h02");
    assert!((points[0]["lat"].as_f64().unwrap() - 32.7767).abs() < 1e-4);
    assert!((points[0]["lng"].as_f64().unwrap() + 96.797).abs() < 1e-4);
    assert!((points[0]["speed"].as_f64().unwrap() - 10.0 * 1.852 * 0.621_371).abs() < 0.01);

    unit.send(b"*HQ,355488020119695,HTBT,100#").await;
    assert_eq!(until(&mut unit, b'#').await, "*HQ,355488020119695,HTBT#");

    let mut stranger = Unit::connect(addr(&app, TrackerProtocol::H02)).await;
    stranger.send(b"*HQ,4210051415,HTBT,100#").await;
    assert_eq!(
        stranger.closed().await,
        Vec::<u8>::new(),
        "no reply for an unknown unit"
    );
}

#[actix_web::test]
async fn a_gt06_that_gives_no_zone_is_placed_by_its_devices_time_zone() {
    let app = app_with_trackers(|_| {}).await;
    let load = tracked(&app, "123456789012345").await;
    let (_, devices) = app.get("/devices").await;
    let id = devices["data"]["devices"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = app
        .patch(&format!("/devices/{id}"), json!({"time_zone": "+08"}))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["data"]["time_zone"], "+08:00");
    let (status, _) = app
        .patch(
            &format!("/devices/{id}"),
            json!({"time_zone": "Asia/Shanghai"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "only UTC offsets");

    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Gt06)).await;
    // The short login of older units: the IMEI alone, no time-zone word.
    unit.send(&gt06(
        0x01,
        &[0x01, 0x23, 0x45, 0x67, 0x89, 0x01, 0x23, 0x45],
        1,
    ))
    .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x01, 1));
    let taken = Utc::now().trunc_subsecs(0) - chrono::Duration::seconds(15);
    let local = (taken + chrono::Duration::hours(8)).naive_utc();
    unit.send(&gt06_position(0x12, local, 32.7767, -96.797, true, 2))
        .await;
    assert_eq!(unit.answer(10).await, gt06_echo(0x12, 2));
    let points = history(&app, &load).await;
    assert_eq!(
        points[0]["timestamp"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<Utc>>()
            .unwrap(),
        taken
    );
}
