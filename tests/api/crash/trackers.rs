//! A Teltonika unit whose server is SIGKILLed mid-stream: every record it
//! was acknowledged (the unit deletes those) is a stored fix after the
//! restart, once; what it was not acknowledged it sends again.

use super::*;
use crate::trackers::{Unit, teltonika_packet};

#[actix_web::test]
async fn every_record_a_tracker_was_acknowledged_survives_sigkill() {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    use tokio::io::AsyncReadExt;

    let dir = tempfile::tempdir().unwrap();
    let (mut server, key) = start(dir.path()).await;
    let key = key.expect("first start prints a key");
    let client = https_client(dir.path());
    let id = server.assigned_load(&client, &key).await;
    let unit = json!({"name": "Unit", "identifier": "356307042441013"});
    server.attached_device(&client, &key, &id, unit).await;

    let base = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp() - 3600, 0).unwrap();
    let addr = server.teltonika;
    let acked: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    // The unit sends packets of 10 records, each once its last was answered.
    let sending = acked.clone();
    let unit = tokio::spawn(async move {
        let mut unit = Unit::connect(addr).await;
        unit.send(&[0, 15]).await;
        unit.send(b"356307042441013").await;
        assert_eq!(unit.answer(1).await, [1]);
        for packet in 0..10_000i64 {
            let millis: Vec<i64> = (0..10).map(|i| packet * 10 + i).collect();
            let records: Vec<_> = millis
                .iter()
                .map(|m| {
                    (
                        base + chrono::Duration::milliseconds(*m),
                        33.0,
                        -95.0,
                        60,
                        8,
                    )
                })
                .collect();
            unit.send(&teltonika_packet(&records)).await;
            let mut ack = [0u8; 4];
            match unit.0.read_exact(&mut ack).await {
                Ok(_) if ack == [0, 0, 0, 10] => sending.lock().unwrap().extend(millis),
                _ => break,
            }
        }
    });
    eventually(
        Duration::from_secs(60),
        "100 acknowledged records",
        || async {
            match acked.lock().unwrap().len() {
                n if n >= 100 => Ok(()),
                n => Err(format!("{n} acknowledged")),
            }
        },
    )
    .await;
    server.child.start_kill().unwrap(); // SIGKILL, a packet in flight
    server.child.wait().await.unwrap();
    unit.await.unwrap();
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 100,
        "only {} records acknowledged before the kill",
        acked.len()
    );
    let (server, _) = start(dir.path()).await;
    nothing_acknowledged_lost(&server, &client, &key, &id, base, &acked).await;
}
