//! A tracker listener on TLS (`teltonika+tls=…`), with the API's certificate:
//! a unit that trusts it logs in and is acknowledged as on plain TCP; a peer
//! that speaks plain TCP to it is closed.

use std::sync::Arc;

use chrono::Utc;
use freight::server::trackers::{TrackerListen, TrackerProtocol};
use rustls_pki_types::pem::PemObject;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::devices::attach;
use crate::helpers::spawn_app_with;
use crate::trackers::{Unit, addr, history};
use crate::tracking::load_in;

#[actix_web::test]
async fn a_unit_on_the_tls_listener_is_served_as_on_plain_tcp() {
    let app = spawn_app_with(|s| {
        s.trackers.listeners = vec![
            "teltonika+tls=127.0.0.1:0"
                .parse::<TrackerListen>()
                .unwrap(),
        ];
    })
    .await;
    let (_, device) = app
        .post(
            "/devices",
            json!({"name": "Unit", "identifier": "356307042441099"}),
        )
        .await;
    let load = load_in(&app, "in_transit").await;
    attach(&app, &load, device["data"]["id"].as_str().unwrap()).await;
    let to = addr(&app, TrackerProtocol::Teltonika);

    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(app.data_dir.path().join("tls/cert.pem")).unwrap();
    for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(to).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let imei = b"356307042441099";
    tls.write_all(&[&(imei.len() as u16).to_be_bytes()[..], imei].concat())
        .await
        .unwrap();
    let mut accepted = [0u8; 1];
    tls.read_exact(&mut accepted).await.unwrap();
    assert_eq!(accepted, [1]);
    let packet = crate::trackers::teltonika_packet(&[(Utc::now(), 32.7, -96.8, 80, 9)]);
    tls.write_all(&packet).await.unwrap();
    let mut ack = [0u8; 4];
    tls.read_exact(&mut ack).await.unwrap();
    assert_eq!(ack, [0, 0, 0, 1]);
    assert_eq!(history(&app, &load).await.len(), 1);

    // Plain TCP to the TLS listener: no handshake, closed (after a TLS alert
    // record, 0x15), never a login's answer.
    let mut plain = Unit::connect(to).await;
    plain
        .send(&[&(imei.len() as u16).to_be_bytes()[..], imei].concat())
        .await;
    let rest = plain.closed().await;
    assert!(
        rest.is_empty() || rest[0] == 0x15,
        "a TLS alert at most: {rest:?}"
    );
}
