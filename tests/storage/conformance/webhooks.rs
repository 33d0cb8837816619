//! The webhook pipeline: the outbox, subscriptions, delivery records and their
//! schedule, and history pruning.

use chrono::{DateTime, Duration, Utc};
use freight::domain::event::{Event, EventType};
use freight::domain::ids::{EventId, WebhookId};
use freight::domain::webhook::{Delivery, DeliveryStatus, Subscription};
use freight::storage::{PageRequest, Storage};

use super::{ALL, account};
use crate::fixtures::{delivered_at, sample_load};

/// An account subscribed to `load.created`, and `loads` new loads of it, each
/// with its `load.created` event in the outbox (sequence 1).
async fn webhook_and_loads(
    store: &dyn Storage,
    loads: usize,
    now: DateTime<Utc>,
) -> (Subscription, Vec<Event>) {
    let owner = account();
    let webhook = Subscription {
        id: WebhookId::generate(),
        account_id: owner.id.clone(),
        url: "https://hooks.example.com/freight".into(),
        events: vec![EventType::LoadCreated],
        secret: "conformance-secret-0123".into(),
        enabled: true,
        disabled_reason: None,
        created_at: now,
        updated_at: now,
    };
    store.put_webhook(&webhook).await.unwrap();
    let mut events = Vec::new();
    for _ in 0..loads {
        let load = sample_load(&owner.id, "TX", "GA");
        let event = Event::new(
            owner.id.clone(),
            load.id.clone(),
            EventType::LoadCreated,
            1,
            now,
            serde_json::json!({"load": {"id": load.id}}),
        );
        store
            .insert_load(&load, std::slice::from_ref(&event))
            .await
            .unwrap();
        assert_eq!(store.last_event_sequence(&load.id).await.unwrap(), 1);
        events.push(event);
    }
    (webhook, events)
}

/// A subscription's secret comes back as it was put, by id and among all,
/// also once changed; and nothing is stored plain for a start to seal again.
/// (The suite's stores seal secrets, as `storage::open` makes them.)
pub async fn webhook_secrets_come_back_as_put(store: &dyn Storage) {
    let now = crate::fixtures::now();
    let (webhook, _) = webhook_and_loads(store, 0, now).await;
    assert_eq!(
        store.get_webhook(&webhook.id).await.unwrap(),
        Some(webhook.clone())
    );
    assert_eq!(store.all_webhooks().await.unwrap(), vec![webhook.clone()]);
    let rotated = Subscription {
        secret: "whsec_cm90YXRlZCBzZWNyZXQgMDEyMzQ1".into(),
        ..webhook.clone()
    };
    store.put_webhook(&rotated).await.unwrap();
    assert_eq!(store.get_webhook(&webhook.id).await.unwrap(), Some(rotated));
    assert_eq!(store.reseal_webhook_secrets().await.unwrap(), 0);
}

/// The outbox read back when only some events still wait: runs of waiting
/// events next to each other, and waiting events far apart with fanned-out
/// ones between them, come back exactly, in order, after a given event and
/// within a limit.
pub async fn outbox_reads_waiting_events_near_and_far_apart(store: &dyn Storage) {
    let now = crate::fixtures::now();
    let (_, events) = webhook_and_loads(store, 60, now).await;
    let ids: Vec<_> = events.iter().map(|e| e.id.clone()).collect();
    // Waiting: a run at the start, one after a gap of 20, one after a gap of
    // 1, one after a gap of 30, and the last.
    let waiting = [0, 1, 2, 3, 4, 25, 27, 58, 59];
    let fanned: Vec<_> = (0..ids.len())
        .filter(|n| !waiting.contains(n))
        .map(|n| ids[n].clone())
        .collect();
    store.put_deliveries(Vec::new(), fanned).await.unwrap();
    // Each check has a store of its own, so an event this check did not write
    // is a wrong answer, not a neighbour's.
    let mine = |found: Vec<Event>| -> Vec<usize> {
        found
            .into_iter()
            .map(|e| {
                ids.iter().position(|id| *id == e.id).unwrap_or_else(|| {
                    panic!("the outbox answered an event never written: {}", e.id)
                })
            })
            .collect()
    };
    assert_eq!(
        mine(store.unfanned_events(None, 10_000).await.unwrap()),
        waiting
    );
    let read = store.unfanned_events(Some(&ids[4]), 10_000).await.unwrap();
    assert_eq!(
        read.iter().find(|e| e.id == ids[25]),
        Some(&events[25]),
        "each event whole"
    );
    assert_eq!(mine(read), [25, 27, 58, 59]);
    assert_eq!(
        mine(store.unfanned_events(Some(&ids[25]), 2).await.unwrap()),
        [27, 58]
    );
}

/// The outbox and the delivery log: events wait to be fanned out (a pass may
/// continue after a given event) until their deliveries' first records mark them
/// fanned out, storage tells which deliveries it has no record of, the
/// schedule of due deliveries follows every change, and a deleted webhook's
/// deliveries are gone for good. Counts are deltas, and the outbox and schedule
/// are filtered to this check's ids, so other checks may share the store.
pub async fn outbox_fan_out_and_delivery_schedule(store: &dyn Storage) {
    let now = crate::fixtures::now();
    let (webhook, events) = webhook_and_loads(store, 2, now).await;
    let ids: Vec<_> = events.iter().map(|e| e.id.clone()).collect();
    let mine = |found: Vec<Event>| -> Vec<_> {
        found
            .into_iter()
            .map(|e| e.id)
            .filter(|id| ids.contains(id))
            .collect()
    };
    assert_eq!(
        mine(store.unfanned_events(None, 10_000).await.unwrap()),
        ids
    );
    assert_eq!(
        mine(store.unfanned_events(Some(&ids[0]), 10_000).await.unwrap()),
        ids[1..],
        "a pass continues after the event given"
    );
    assert_eq!(store.get_event(&ids[0]).await.unwrap().unwrap(), events[0]);

    let due_before = store.count_due_deliveries().await.unwrap();
    let deliveries: Vec<Delivery> = events
        .iter()
        .enumerate()
        .map(|(n, event)| Delivery {
            next_attempt_at: Some(now + Duration::milliseconds(n as i64)),
            ..Delivery::new(webhook.id.clone(), event.id.clone(), event.kind, now)
        })
        .collect();
    assert_eq!(
        store.without_records(deliveries.clone()).await.unwrap(),
        deliveries,
        "nothing recorded yet"
    );
    // First records, each with its event marked fanned out in the same write.
    store
        .put_deliveries(vec![(None, deliveries[0].clone())], vec![ids[0].clone()])
        .await
        .unwrap();
    assert_eq!(
        mine(store.unfanned_events(None, 10_000).await.unwrap()),
        ids[1..]
    );
    assert_eq!(
        store.without_records(deliveries.clone()).await.unwrap(),
        deliveries[1..]
    );
    store
        .put_deliveries(vec![(None, deliveries[1].clone())], vec![ids[1].clone()])
        .await
        .unwrap();
    assert!(mine(store.unfanned_events(None, 10_000).await.unwrap()).is_empty());
    assert!(
        store
            .without_records(deliveries.clone())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.count_due_deliveries().await.unwrap(), due_before + 2);
    let due_mine = |found: Vec<Delivery>| -> Vec<_> {
        found
            .into_iter()
            .filter(|d| d.webhook_id == webhook.id)
            .map(|d| d.event_id)
            .collect()
    };
    assert_eq!(
        due_mine(
            store
                .due_deliveries(now + Duration::seconds(1), 10_000)
                .await
                .unwrap()
        ),
        ids,
        "soonest first"
    );
    assert_eq!(
        due_mine(store.due_deliveries(now, 10_000).await.unwrap()),
        ids[..1],
        "only what is due by then"
    );

    // One delivered, one retried later, in one write.
    let delivered = delivered_at(&deliveries[0], now);
    let retry = Delivery {
        attempts: 1,
        last_status_code: Some(503),
        last_error: Some("the receiver answered 503".into()),
        next_attempt_at: Some(now + Duration::minutes(5)),
        ..deliveries[1].clone()
    };
    store
        .put_deliveries(
            vec![
                (Some(deliveries[0].clone()), delivered.clone()),
                (Some(deliveries[1].clone()), retry.clone()),
            ],
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(store.count_due_deliveries().await.unwrap(), due_before + 1);
    assert!(
        due_mine(
            store
                .due_deliveries(now + Duration::seconds(1), 10_000)
                .await
                .unwrap()
        )
        .is_empty()
    );
    assert_eq!(
        due_mine(
            store
                .due_deliveries(DateTime::<Utc>::MAX_UTC, 10_000)
                .await
                .unwrap()
        ),
        ids[1..]
    );
    let got = store.get_delivery(&webhook.id, &ids[0]).await.unwrap();
    assert_eq!(got, Some(delivered));
    let log = store.list_deliveries(&webhook.id, ALL).await.unwrap();
    assert_eq!(log.total, 2);
    assert_eq!(
        log.items,
        vec![
            retry.clone(),
            store
                .get_delivery(&webhook.id, &ids[0])
                .await
                .unwrap()
                .unwrap()
        ],
        "newest event first"
    );

    // Parked while the webhook is disabled: off the schedule, found by webhook.
    let parked = Delivery {
        next_attempt_at: None,
        ..retry.clone()
    };
    store.put_delivery(&retry, &parked).await.unwrap();
    assert_eq!(store.count_due_deliveries().await.unwrap(), due_before);
    assert_eq!(
        store.parked_deliveries(&webhook.id).await.unwrap(),
        vec![parked.clone()]
    );

    // Deleting the webhook takes its deliveries; a late write does not bring one back.
    store.delete_webhook(&webhook).await.unwrap();
    assert_eq!(store.get_webhook(&webhook.id).await.unwrap(), None);
    assert_eq!(
        store.get_delivery(&webhook.id, &ids[1]).await.unwrap(),
        None
    );
    store.put_delivery(&parked, &retry).await.unwrap();
    assert_eq!(
        store.get_delivery(&webhook.id, &ids[1]).await.unwrap(),
        None
    );
    assert_eq!(store.count_due_deliveries().await.unwrap(), due_before);
}

/// History pruning forgets finished deliveries and the events nobody waits for,
/// and keeps pending deliveries, their events, unfanned events, recent history and
/// every load's event numbering.
pub async fn webhook_history_is_pruned_but_nothing_pending(store: &dyn Storage) {
    let now = crate::fixtures::now();
    // Four events: delivered, failed, still pending, and never fanned out.
    let (webhook, events) = webhook_and_loads(store, 4, now).await;
    let delivery =
        |event: &Event| Delivery::new(webhook.id.clone(), event.id.clone(), event.kind, now);
    let fanned: Vec<Delivery> = events[..3].iter().map(delivery).collect();
    let ids: Vec<_> = events[..3].iter().map(|e| e.id.clone()).collect();
    store
        .put_deliveries(fanned.iter().map(|d| (None, d.clone())).collect(), ids)
        .await
        .unwrap();
    let finish = |d: &Delivery, status| Delivery {
        status,
        attempts: 1,
        next_attempt_at: None,
        ..d.clone()
    };
    store
        .put_deliveries(
            vec![
                (
                    Some(fanned[0].clone()),
                    finish(&fanned[0], DeliveryStatus::Delivered),
                ),
                (
                    Some(fanned[1].clone()),
                    finish(&fanned[1], DeliveryStatus::Failed),
                ),
            ],
            Vec::new(),
        )
        .await
        .unwrap();

    // Nothing is older than a day ago.
    let none = store
        .prune_webhook_history(now - Duration::days(1), 100)
        .await
        .unwrap();
    assert_eq!(none, 0);
    // Everything so far is older than a minute from now; a limit bounds one call.
    let first = store
        .prune_webhook_history(now + Duration::minutes(1), 1)
        .await
        .unwrap();
    assert_eq!(first, 1);
    let rest = store
        .prune_webhook_history(now + Duration::minutes(1), 100)
        .await
        .unwrap();
    assert!(
        first + rest >= 4,
        "two deliveries and their two events, got {}",
        first + rest
    );
    for finished in &events[..2] {
        assert_eq!(
            store.get_delivery(&webhook.id, &finished.id).await.unwrap(),
            None
        );
        assert_eq!(store.get_event(&finished.id).await.unwrap(), None);
    }
    assert!(
        store
            .get_delivery(&webhook.id, &events[2].id)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store.get_event(&events[2].id).await.unwrap().is_some(),
        "a pending delivery's event"
    );
    assert!(
        store.get_event(&events[3].id).await.unwrap().is_some(),
        "an unfanned event"
    );
    for event in &events {
        assert_eq!(
            store.last_event_sequence(&event.load_id).await.unwrap(),
            1,
            "numbering never restarts"
        );
    }
    let more = store
        .prune_webhook_history(now + Duration::minutes(1), 100)
        .await
        .unwrap();
    assert_eq!(more, 0, "nothing left to forget");
}

/// A subscription's delivery log pages newest first across the hours its
/// events were made in, and its total follows first records (not later
/// outcomes), pruning and the subscription's deletion.
pub async fn delivery_log_pages_across_hours_and_keeps_its_total(store: &dyn Storage) {
    let now = crate::fixtures::now();
    let (webhook, _) = webhook_and_loads(store, 0, now).await;
    // Seven events made over three hours: three 3 hours ago, one 2 hours
    // ago, three now; their ids carry those times.
    let made = |hours_ago: i64, ms: i64| {
        EventId::floor_at(now - Duration::hours(hours_ago) + Duration::milliseconds(ms))
    };
    let ids = [
        made(3, 0),
        made(3, 1),
        made(3, 2),
        made(2, 0),
        made(0, 0),
        made(0, 1),
        made(0, 2),
    ];
    let deliveries: Vec<Delivery> = ids
        .iter()
        .map(|id| Delivery::new(webhook.id.clone(), id.clone(), EventType::LoadCreated, now))
        .collect();
    store
        .put_deliveries(
            deliveries.iter().map(|d| (None, d.clone())).collect(),
            Vec::new(),
        )
        .await
        .unwrap();
    let newest_first: Vec<EventId> = ids.iter().rev().cloned().collect();
    let webhook_id = webhook.id.clone();
    let page_of = |offset: u64, limit: u32| {
        let webhook_id = webhook_id.clone();
        async move {
            let page = store
                .list_deliveries(&webhook_id, PageRequest { offset, limit })
                .await
                .unwrap();
            let ids: Vec<EventId> = page.items.into_iter().map(|d| d.event_id).collect();
            (ids, page.total)
        }
    };
    for (offset, limit) in [(0, 3), (2, 3), (3, 2), (6, 3), (7, 3), (0, 100)] {
        let want: Vec<EventId> = newest_first
            .iter()
            .skip(offset as usize)
            .take(limit as usize)
            .cloned()
            .collect();
        assert_eq!(
            page_of(offset, limit).await,
            (want, 7),
            "offset {offset}, limit {limit}"
        );
    }

    // The four old ones delivered: still seven records.
    store
        .put_deliveries(
            deliveries[..4]
                .iter()
                .map(|d| (Some(d.clone()), delivered_at(d, now)))
                .collect(),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(page_of(0, 2).await.1, 7);

    // Pruned before 90 minutes ago: the four old ones go.
    let gone = store
        .prune_webhook_history(now - Duration::minutes(90), 100)
        .await
        .unwrap();
    assert_eq!(gone, 4);
    assert_eq!(page_of(0, 2).await, (newest_first[..2].to_vec(), 3));
    assert_eq!(page_of(0, 100).await, (newest_first[..3].to_vec(), 3));

    store.delete_webhook(&webhook).await.unwrap();
    assert_eq!(page_of(0, 100).await, (Vec::new(), 0));
}
