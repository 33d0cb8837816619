//! The hub on its own, under paused tokio time: order and ids, load filters,
//! resume and reset, slow clients, heartbeats, shutdown and the resume window.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::{Instant, timeout};

use super::connection::KEEP_ALIVE_FRAME;
use super::*;

const HEARTBEAT: Duration = Duration::from_secs(15);

fn hub(adjust: impl FnOnce(&mut LiveSettings)) -> LiveHub {
    let mut settings = LiveSettings::default();
    adjust(&mut settings);
    LiveHub::new(settings)
}

fn update(load: &LoadId, n: u32) -> Update {
    Update {
        kind: super::TRACKING_EVENT,
        load: load.clone(),
        data: format!("{{\"n\":{n}}}"),
    }
}

/// One frame's text.
#[derive(Debug)]
struct Frame(String);

impl Frame {
    fn parse(bytes: &Bytes) -> Frame {
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(text.ends_with("\n\n"), "{text:?}");
        Frame(text.to_owned())
    }

    /// The value of a field (`""`: a comment line's text).
    fn field(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}: ");
        self.0.lines().find_map(|line| line.strip_prefix(&prefix))
    }

    fn id(&self) -> EventId {
        EventId::parse(self.field("id").expect("an id")).unwrap()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.field("data").expect("data")).unwrap()
    }
}

/// An account and two of its loads.
fn ids() -> (AccountId, LoadId, LoadId) {
    (
        AccountId::generate(),
        LoadId::generate(),
        LoadId::generate(),
    )
}

/// The next frame, which must come within a second.
async fn next(stream: &mut LiveStream) -> Frame {
    let frame = timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("a frame within a second")
        .expect("the stream goes on");
    Frame::parse(&frame)
}

/// The `n` of the next tracking event, and its frame.
async fn event(stream: &mut LiveStream) -> (u32, Frame) {
    let frame = next(stream).await;
    assert_eq!(frame.field("event"), Some(TRACKING_EVENT), "{frame:?}");
    (frame.json()["n"].as_u64().unwrap() as u32, frame)
}

/// A new stream, past its first frame (the retry hint).
fn open(hub: &LiveHub, account: &AccountId, load: Option<&LoadId>, resume: Resume) -> LiveStream {
    let never: Ending = Box::pin(std::future::pending());
    hub.subscribe(account, load.cloned(), resume, 1_000, never)
        .expect("under the cap")
}

async fn opened(
    hub: &LiveHub,
    account: &AccountId,
    load: Option<&LoadId>,
    resume: Resume,
) -> LiveStream {
    let mut stream = open(hub, account, load, resume);
    assert_eq!(next(&mut stream).await.field("retry"), Some("2000"));
    stream
}

async fn nothing_more(stream: &mut LiveStream) {
    assert!(
        timeout(Duration::from_secs(1), stream.next())
            .await
            .is_err(),
        "expected no frame"
    );
}

#[tokio::test(start_paused = true)]
async fn publishing_to_an_account_nobody_streams_does_nothing() {
    let hub = hub(|_| {});
    let (account, load, _) = ids();
    assert!(!hub.listening(&account));
    hub.publish(&account, vec![update(&load, 1)]);
    assert_eq!(hub.0.feed_count.load(Ordering::Relaxed), 0);
    assert!(hub.0.feeds.is_empty());

    // Another account's stream does not make this one listened to.
    let _other = opened(&hub, &AccountId::generate(), None, Resume::Start).await;
    assert!(!hub.listening(&account));
    hub.publish(&account, vec![update(&load, 2)]);
    assert_eq!(hub.0.feeds.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn events_come_in_order_with_increasing_ids_and_only_to_their_load() {
    let hub = hub(|_| {});
    let (account, a, b) = ids();
    let mut all = opened(&hub, &account, None, Resume::Start).await;
    let mut only_a = opened(&hub, &account, Some(&a), Resume::Start).await;
    assert_eq!(hub.streams(), 2);
    hub.publish(&account, vec![update(&a, 1), update(&b, 2), update(&a, 3)]);
    let mut last = 0;
    for expected in [1, 2, 3] {
        let (n, frame) = event(&mut all).await;
        assert_eq!(n, expected);
        assert!(frame.id().seq > last, "{frame:?}");
        last = frame.id().seq;
    }
    assert_eq!(event(&mut only_a).await.0, 1);
    assert_eq!(event(&mut only_a).await.0, 3);
    nothing_more(&mut only_a).await;
    drop((all, only_a));
    assert_eq!(hub.streams(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_resumed_stream_replays_exactly_what_it_missed() {
    let hub = hub(|_| {});
    let (account, a, b) = ids();
    let mut first = opened(&hub, &account, None, Resume::Start).await;
    hub.publish(&account, vec![update(&a, 1), update(&b, 2)]);
    event(&mut first).await;
    let after = event(&mut first).await.1.id();
    drop(first);
    // Nobody streams, but the account is within its resume window.
    assert!(hub.listening(&account));
    hub.publish(&account, vec![update(&a, 3), update(&b, 4)]);

    let mut resumed = opened(&hub, &account, None, Resume::After(after)).await;
    assert_eq!(event(&mut resumed).await.0, 3);
    assert_eq!(event(&mut resumed).await.0, 4);
    nothing_more(&mut resumed).await;
    hub.publish(&account, vec![update(&a, 5)]);
    assert_eq!(event(&mut resumed).await.0, 5);

    // A load's stream replays that load's events only.
    let mut only_b = opened(&hub, &account, Some(&b), Resume::After(after)).await;
    assert_eq!(event(&mut only_b).await.0, 4);
    nothing_more(&mut only_b).await;
}

#[tokio::test(start_paused = true)]
async fn an_id_of_another_epoch_or_older_than_the_ring_is_a_reset() {
    let hub = hub(|s| s.ring = 4);
    let (account, load, _) = ids();
    let mut stream = opened(&hub, &account, None, Resume::Start).await;
    hub.publish(&account, (1..=6).map(|n| update(&load, n)).collect());
    let mut seen = Vec::new();
    for _ in 1..=6 {
        seen.push(event(&mut stream).await.1.id());
    }
    let id = |n: usize| seen[n - 1];

    // The ring holds 3 to 6: after 2 is complete, after 1 is not.
    let mut complete = opened(&hub, &account, None, Resume::After(id(2))).await;
    assert_eq!(event(&mut complete).await.0, 3);
    let resets = [
        (Resume::After(id(1)), "too_old"),
        (
            Resume::After(EventId {
                epoch: id(1).epoch.wrapping_add(1),
                seq: 2,
            }),
            "unknown_epoch",
        ),
        (Resume::Unknown, "unknown_epoch"),
    ];
    for (latest, (resume, reason)) in (6..).zip(resets) {
        let mut reset = opened(&hub, &account, None, resume).await;
        let frame = next(&mut reset).await;
        assert_eq!(frame.field("event"), Some("reset"), "{frame:?}");
        // Its id is the latest event's, so a reconnection after it resumes from here.
        assert_eq!(
            frame.id(),
            EventId {
                seq: latest,
                ..id(1)
            }
        );
        assert_eq!(frame.json()["reason"], reason);
        nothing_more(&mut reset).await;
        hub.publish(&account, vec![update(&load, 7)]);
        assert_eq!(event(&mut reset).await.0, 7);
    }
}

#[tokio::test(start_paused = true)]
async fn a_client_that_falls_behind_gets_what_it_had_then_overflow_and_the_end() {
    let hub = hub(|s| s.buffer = 4);
    let (account, load, _) = ids();
    let mut slow = opened(&hub, &account, None, Resume::Start).await;
    let mut fast = opened(&hub, &account, None, Resume::Start).await;
    hub.publish(&account, (1..=3).map(|n| update(&load, n)).collect());
    for n in 1..=3 {
        assert_eq!(event(&mut fast).await.0, n);
    }
    hub.publish(&account, (4..=5).map(|n| update(&load, n)).collect());
    assert_eq!(hub.dropped(), 1);
    for n in 4..=5 {
        assert_eq!(event(&mut fast).await.0, n);
    }
    // The slow one: the four it had room for, then the notice, then the end.
    for n in 1..=4 {
        assert_eq!(event(&mut slow).await.0, n);
    }
    let overflow = next(&mut slow).await;
    assert_eq!(overflow.field("event"), Some("overflow"), "{overflow:?}");
    assert_eq!(
        overflow.field("id"),
        None,
        "the last id received stays the one to resume from"
    );
    assert!(slow.next().await.is_none());
    assert_eq!(hub.streams(), 1);
    // Its memory is gone: later events go to the fast one only.
    hub.publish(&account, vec![update(&load, 6)]);
    assert_eq!(event(&mut fast).await.0, 6);
    assert_eq!(
        hub.0.feeds.get(&account).unwrap().state().subscribers.len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_stream_gets_a_heartbeat_every_interval() {
    let hub = hub(|_| {});
    let (account, load, _) = ids();
    let mut stream = opened(&hub, &account, None, Resume::Start).await;
    let started = Instant::now();
    let frame = stream.next().await.unwrap();
    assert_eq!(&frame[..], KEEP_ALIVE_FRAME);
    assert_eq!(started.elapsed(), HEARTBEAT);
    let frame = stream.next().await.unwrap();
    assert_eq!(Frame::parse(&frame).field(""), Some("keep-alive"));
    assert_eq!(started.elapsed(), HEARTBEAT * 2);
    // An event puts the next heartbeat off.
    tokio::time::sleep(Duration::from_secs(10)).await;
    hub.publish(&account, vec![update(&load, 1)]);
    event(&mut stream).await;
    let evented = Instant::now();
    assert_eq!(&stream.next().await.unwrap()[..], KEEP_ALIVE_FRAME);
    assert_eq!(evented.elapsed(), HEARTBEAT);
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_every_stream() {
    let hub = hub(|_| {});
    let account = AccountId::generate();
    let mut open_before = opened(&hub, &account, None, Resume::Start).await;
    hub.shutdown();
    assert!(open_before.next().await.is_none());
    let mut opened_after = opened(&hub, &account, None, Resume::Start).await;
    assert!(opened_after.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn an_account_is_forgotten_a_resume_window_after_its_last_stream() {
    let window = LiveSettings::default().resume_window;
    let hub = hub(|_| {});
    let (account, load, _) = ids();
    let mut stream = opened(&hub, &account, None, Resume::Start).await;
    hub.publish(&account, vec![update(&load, 1)]);
    let seen = event(&mut stream).await.1.id();
    drop(stream);

    // A stream opened within the window keeps the account; one after it resumes.
    tokio::time::sleep(window / 2).await;
    drop(opened(&hub, &account, None, Resume::Start).await);
    tokio::time::sleep(window / 2 + Duration::from_secs(1)).await;
    assert!(hub.listening(&account));
    let mut resumed = opened(&hub, &account, None, Resume::After(seen)).await;
    nothing_more(&mut resumed).await;
    drop(resumed);

    tokio::time::sleep(window + Duration::from_secs(1)).await;
    assert!(!hub.listening(&account));
    assert_eq!(hub.0.feed_count.load(Ordering::Relaxed), 0);
    // Its ids are stale now: a new epoch.
    let mut late = opened(&hub, &account, None, Resume::After(seen)).await;
    assert_eq!(next(&mut late).await.field("event"), Some("reset"));
}

#[tokio::test(start_paused = true)]
async fn an_account_holds_at_most_its_limit_of_streams() {
    let hub = hub(|_| {});
    let (account, _, _) = ids();
    let never = || -> Ending { Box::pin(std::future::pending()) };
    let first = hub.subscribe(&account, None, Resume::Start, 2, never());
    let second = hub.subscribe(&account, None, Resume::Start, 2, never());
    assert!(first.is_ok() && second.is_ok());
    let third = hub.subscribe(&account, None, Resume::Start, 2, never());
    assert_eq!(third.err(), Some(TooManyStreams { limit: 2 }));
    // Another account has its own count.
    assert!(
        hub.subscribe(&AccountId::generate(), None, Resume::Start, 2, never())
            .is_ok()
    );
    // A closed stream makes room.
    drop(first);
    assert!(
        hub.subscribe(&account, None, Resume::Start, 2, never())
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_ends_with_its_credential_and_says_why() {
    let hub = hub(|_| {});
    let (account, load, _) = ids();
    let (ended, ending) = tokio::sync::oneshot::channel::<StreamEnd>();
    let ending: Ending = Box::pin(async move { ending.await.expect("sent") });
    let mut stream = hub
        .subscribe(&account, None, Resume::Start, 10, ending)
        .unwrap();
    assert_eq!(next(&mut stream).await.field("retry"), Some("2000"));
    hub.publish(&account, vec![update(&load, 1)]);
    assert_eq!(event(&mut stream).await.0, 1);
    ended.send(StreamEnd::KeyRevoked).unwrap();
    let last = next(&mut stream).await;
    assert_eq!(last.field("event"), Some("revoked"));
    assert_eq!(last.json()["reason"], "key_revoked");
    assert!(stream.next().await.is_none(), "and nothing after it");
    assert_eq!(hub.streams(), 0, "no longer counted");
    assert_eq!(StreamEnd::SessionExpired.event(), "expired");
}

#[test]
fn event_ids_parse_only_as_written() {
    let id = EventId {
        epoch: 0x00ab_cdef_0123_4567,
        seq: 42,
    };
    assert_eq!(id.to_string(), "00abcdef01234567-42");
    assert_eq!(EventId::parse(&id.to_string()), Some(id));
    for bad in [
        "",
        "42",
        "00abcdef01234567",
        "00abcdef01234567-",
        "abcdef01234567-42",
        "00abcdef0123456g-42",
        "00abcdef01234567--42",
        "00abcdef01234567-+42",
        "00abcdef01234567-99999999999999999999999",
    ] {
        assert_eq!(EventId::parse(bad), None, "{bad}");
    }
}

#[tokio::test(start_paused = true)]
async fn only_the_committed_events_streams_carry_are_streamed_and_they_cross_taps() {
    use crate::domain::event::{Event, EventType};
    let hub = hub(|_| {});
    let (account, load, _) = ids();
    let mut stream = opened(&hub, &account, Some(&load), Resume::Start).await;
    let mut tap = hub.tap(&account, 8);
    let at = chrono::Utc::now();
    let event = |kind, data| Event::new(account.clone(), load.clone(), kind, 1, at, data);
    hub.publish_committed(&[
        event(
            EventType::LoadArrived,
            serde_json::json!({"stop": "delivery"}),
        ),
        event(
            EventType::LoadUpdated,
            serde_json::json!({"changed": ["notes"]}),
        ),
        event(
            EventType::LoadStatusChanged,
            serde_json::json!({"previous_status": "in_transit", "status": "delivered"}),
        ),
        event(EventType::DeliveryCompleted, serde_json::json!({})),
    ]);
    let arrived = next(&mut stream).await;
    assert_eq!(arrived.field("event"), Some("load.arrived"), "{arrived:?}");
    let frame = next(&mut stream).await;
    assert_eq!(
        frame.field("event"),
        Some(EventType::LoadStatusChanged.as_str()),
        "{frame:?}"
    );
    assert_eq!(frame.json()["status"], "delivered");
    nothing_more(&mut stream).await;

    // The other instance reading the tap gets the same updates back.
    let line = tap.next().await.expect("a tap line");
    let update = parse_tap_line(std::str::from_utf8(&line).unwrap()).expect("a known kind");
    assert_eq!(update.kind, "load.arrived");
    let line = tap.next().await.expect("a tap line");
    let update = parse_tap_line(std::str::from_utf8(&line).unwrap()).expect("a known kind");
    assert_eq!(
        (update.kind, &update.load),
        (EventType::LoadStatusChanged.as_str(), &load)
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&update.data).unwrap()["previous_status"],
        "in_transit"
    );
}
