//! A late GPS point's changes on the CQL store, where the point's conditional
//! insert and the batch of its changes are two writes (`point_series`): a try
//! whose batch failed leaves the point marked, and the retry that finds the
//! mark writes the changes. Not a conformance check: the embedded store writes
//! a point and its changes in one commit.

use chrono::{DateTime, Utc};
use freight::domain::event::{Event, EventType};
use freight::domain::ids::{AccountId, LoadId};
use freight::domain::tracking::{Appended, FixSource, GpsFix, TrackingPoint};

use crate::open_scylla;

fn point(load: &LoadId, at: DateTime<Utc>, event: Option<Event>) -> TrackingPoint {
    TrackingPoint {
        load_id: load.clone(),
        fix: GpsFix {
            timestamp: at,
            lat: 32.7,
            lng: -96.8,
            speed_mph: Some(55.0),
            heading_deg: None,
            source: FixSource::Api,
        },
        event,
        stops: None,
    }
}

fn event(account: &AccountId, load: &LoadId, at: DateTime<Utc>) -> Event {
    Event::new(
        account.clone(),
        load.clone(),
        EventType::TrackingUpdated,
        1,
        at,
        serde_json::json!({"status": "in_transit"}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_late_points_changes_are_written_by_the_retry_that_finds_it_marked() {
    let Some((keyspace, store)) = open_scylla().await else {
        return;
    };
    let (account, load) = (AccountId::generate(), LoadId::generate());
    let evening: DateTime<Utc> = "2026-11-27T18:00:00Z".parse().unwrap();
    let noon: DateTime<Utc> = "2026-11-27T12:00:00Z".parse().unwrap();
    let stored = store.append_points(vec![point(&load, evening, None)]).await;
    assert_eq!(stored.unwrap(), [Appended::Stored]);

    // Late, with an event: the conditional insert and the batch both land.
    let first = event(&account, &load, noon);
    let late = store
        .append_points(vec![point(&load, noon, Some(first.clone()))])
        .await;
    assert_eq!(late.unwrap(), [Appended::Stored]);
    assert!(store.get_event(&first.id).await.unwrap().is_some());
    // A repeat finds the mark cleared by that batch: a duplicate, no event.
    let repeat = event(&account, &load, noon);
    let again = store
        .append_points(vec![point(&load, noon, Some(repeat.clone()))])
        .await;
    assert_eq!(again.unwrap(), [Appended::Duplicate]);
    assert!(store.get_event(&repeat.id).await.unwrap().is_none());

    // A try whose batch failed leaves the point marked, as this does.
    let session = keyspace.0.connect(false).await.expect("a session");
    let ts = noon.timestamp_micros();
    let day = i32::try_from(ts.div_euclid(86_400_000_000)).unwrap();
    session
        .query_unpaged(
            format!(
                "UPDATE {}.gps_points SET changes_pending = true \
                 WHERE load_id = ? AND day = ? AND ts = ?",
                keyspace.0.keyspace
            ),
            (load.as_str(), day, ts),
        )
        .await
        .expect("marking the point");
    // The retry writes the changes and is the point's store; once.
    let retry = event(&account, &load, noon);
    let retried = store
        .append_points(vec![point(&load, noon, Some(retry.clone()))])
        .await;
    assert_eq!(retried.unwrap(), [Appended::Stored]);
    assert!(store.get_event(&retry.id).await.unwrap().is_some());
    let last = event(&account, &load, noon);
    let once_more = store
        .append_points(vec![point(&load, noon, Some(last.clone()))])
        .await;
    assert_eq!(once_more.unwrap(), [Appended::Duplicate]);
    assert!(store.get_event(&last.id).await.unwrap().is_none());
}
