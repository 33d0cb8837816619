//! The Devices page tells what to set on a tracker: per listener the operator
//! opened, this host and that listener's port (and for the units set by SMS,
//! the message to send), and the broker for OwnTracks over MQTT.

use super::*;
use freight::server::trackers::TrackerListen;

#[actix_web::test]
async fn the_devices_page_shows_each_open_listener_and_the_broker() {
    // Its broker is never reached, and the MQTT metrics are the process's.
    let _turn = crate::broker::turn().await;
    let app = crate::helpers::spawn_app_with(|s| {
        s.public_url = Some("https://freight.example.com".into());
        s.trackers.listeners = ["gt06=127.0.0.1:0", "teltonika+tls=127.0.0.1:0"]
            .iter()
            .map(|l| l.parse::<TrackerListen>().unwrap())
            .collect();
        s.mqtt.broker = Some("mqtts://broker.example.com".parse().unwrap());
    })
    .await;
    let port = |protocol| {
        let found = app.trackers.iter().find(|(p, _)| *p == protocol);
        found.expect("a listener").1.port().to_string()
    };
    use freight::server::trackers::TrackerProtocol::{Gt06, Teltonika};
    let mut browser = Browser::new(&app);
    browser.register("trackers@example.com").await;
    let page = browser.get("/dashboard/devices").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.input("gt06-host"), "freight.example.com");
    assert_eq!(page.input("gt06-port"), port(Gt06));
    assert_eq!(
        page.input("gt06-sms"),
        format!("SERVER,0,freight.example.com,{},0#", port(Gt06))
    );
    assert_eq!(page.input("teltonika-port"), port(Teltonika));
    assert!(page.body.contains("Protocol: TLS"), "{}", page.body);
    assert!(
        !page.body.contains("data-tracker-setup=\"h02\""),
        "only what is open"
    );
    assert_eq!(page.input("mqtt-host"), "broker.example.com");
    assert_eq!(page.input("mqtt-port"), "8883");
}

#[actix_web::test]
async fn without_listeners_the_page_says_none_is_open() {
    let app = crate::helpers::spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("notrackers@example.com").await;
    let page = browser.get("/dashboard/devices").await;
    assert!(
        page.body.contains("no tracker listener open"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("data-tracker-setup="), "{}", page.body);
}

/// The device list names the protocol each device last posted by.
#[actix_web::test]
async fn the_device_list_shows_the_protocol_a_device_last_used() {
    use crate::trackers::{Unit, addr, app_with_trackers, teltonika_imei};
    let app = app_with_trackers(|_| {}).await;
    let mut browser = Browser::new(&app);
    browser.register("protocols@example.com").await;
    let fields = [
        ("name", "Unit 9"),
        ("carrier_id", ""),
        ("identifier", "356307042441099"),
    ];
    let made = browser
        .post_from("/dashboard/devices", "/dashboard/devices", &fields)
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let page = browser.get("/dashboard/devices").await;
    assert!(
        page.body.contains("data-label=\"Protocol\">—"),
        "{}",
        page.body
    );

    let to = addr(&app, freight::server::trackers::TrackerProtocol::Teltonika);
    let mut unit = Unit::connect(to).await;
    unit.send(&teltonika_imei("356307042441099")).await;
    assert_eq!(unit.answer(1).await, [1]);
    let page = browser.get("/dashboard/devices").await;
    assert!(
        page.body
            .contains("data-label=\"Protocol\"><code>teltonika</code>"),
        "{}",
        page.body
    );
}
