//! A store that refuses writes, for real: the test keyspace's replication is
//! raised to three replicas on a one-node cluster, so every LOCAL_QUORUM write
//! is refused (Unavailable) until it is set back. A tracker is sent no
//! acknowledgement meanwhile (it keeps its records), and an OwnTracks message
//! is left to the broker; once the store takes writes again the unit's resend
//! and the broker's redelivery are each stored once.

use std::time::Duration;

use chrono::{SubsecRound, Utc};
use freight::server::trackers::TrackerProtocol;

use crate::broker::{Broker, location};
use crate::helpers::{TestApp, eventually, spawn_app_with};
use crate::trackers::{
    Unit, addr, app_with_trackers, history, teltonika_imei, teltonika_packet, tracked,
};

const IMEI: &str = "356307042441077";

/// Sets the server's keyspace to `replicas` replicas in its datacenter (named
/// explicitly: an ALTER's `replication_factor` shorthand leaves a datacenter
/// already listed as it was).
async fn replicas(app: &TestApp, replicas: u8) {
    type Replication = std::collections::HashMap<String, String>;
    let config = app.cql_keyspace().expect("the CQL backend");
    let session = config.connect(false).await.expect("the cluster answers");
    let now = session
        .query_unpaged(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (config.keyspace.clone(),),
        )
        .await
        .expect("the keyspace's replication")
        .into_rows_result()
        .expect("rows");
    let (replication,) = now.single_row::<(Replication,)>().expect("one keyspace");
    let dc = replication
        .keys()
        .find(|k| *k != "class")
        .expect("a datacenter");
    let statement = format!(
        "ALTER KEYSPACE {} WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': {replicas}}}",
        config.keyspace
    );
    session.query_unpaged(statement, ()).await.expect("altered");
}

#[actix_web::test]
async fn no_acknowledgement_while_the_store_refuses_and_the_resend_is_stored_once() {
    let app = app_with_trackers(|_| {}).await;
    if app.cql_keyspace().is_none() {
        return;
    }
    let load = tracked(&app, IMEI).await;
    let now = Utc::now().trunc_subsecs(3);
    let packet = teltonika_packet(&[
        (now - chrono::Duration::seconds(20), 32.70, -96.80, 80, 9),
        (now - chrono::Duration::seconds(10), 32.71, -96.79, 80, 9),
    ]);
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Teltonika)).await;
    unit.send(&teltonika_imei(IMEI)).await;
    assert_eq!(unit.answer(1).await, [1]);

    replicas(&app, 3).await;
    unit.send(&packet).await;
    assert_eq!(
        unit.closed().await,
        Vec::<u8>::new(),
        "closed with no acknowledgement while the store refuses"
    );
    replicas(&app, 1).await;
    assert!(history(&app, &load).await.is_empty());

    // The unit kept its records and sends them again on a new connection.
    let mut unit = Unit::connect(addr(&app, TrackerProtocol::Teltonika)).await;
    unit.send(&teltonika_imei(IMEI)).await;
    assert_eq!(unit.answer(1).await, [1]);
    unit.send(&packet).await;
    assert_eq!(unit.answer(4).await, [0, 0, 0, 2]);
    assert_eq!(history(&app, &load).await.len(), 2);
    unit.send(&packet).await;
    assert_eq!(unit.answer(4).await, [0, 0, 0, 2]);
    assert_eq!(history(&app, &load).await.len(), 2, "stored once");
}

#[actix_web::test]
async fn an_owntracks_message_the_store_refused_is_delivered_again_and_stored_once() {
    let Some(broker) = Broker::start().await else {
        return;
    };
    let url = broker.url();
    let app = spawn_app_with(|s| s.mqtt.broker = Some(url.parse().unwrap())).await;
    if app.cql_keyspace().is_none() {
        return;
    }
    let load = tracked(&app, "erin/truck").await;
    let subscribed = || async {
        match crate::trackers::metric(&app, "freight_mqtt_connected ").await {
            1.0 => Ok(()),
            other => Err(format!("freight_mqtt_connected {other}")),
        }
    };
    eventually(Duration::from_secs(20), "the subscription", subscribed).await;
    let refused = "freight_mqtt_messages_total{outcome=\"unacknowledged\"} ";
    let before = crate::trackers::metric(&app, refused).await;

    replicas(&app, 3).await;
    let tst = Utc::now().timestamp() - 30;
    broker
        .publish("owntracks/erin/truck", &[location(tst, 31.0, -97.0)])
        .await;
    eventually(
        Duration::from_secs(20),
        "the message left unacknowledged",
        || async {
            match crate::trackers::metric(&app, refused).await - before {
                n if n >= 1.0 => Ok(()),
                n => Err(format!("{n} unacknowledged")),
            }
        },
    )
    .await;
    // (Reads are refused too meanwhile: the history is read once it is back.)
    replicas(&app, 1).await;

    // freight reconnects (1 s, then 2 s...) and the broker delivers it again.
    eventually(Duration::from_secs(30), "the message stored", || async {
        match history(&app, &load).await.len() {
            1 => Ok(()),
            n => {
                assert!(n < 1, "stored once, not {n} times");
                Err(format!("{n} points"))
            }
        }
    })
    .await;
}
