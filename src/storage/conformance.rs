//! The storage conformance suite: what every backend must do, written once.
//!
//! Each check creates its own accounts, so all of them can share one store.
//! `tests/storage` instantiates the suite per backend; a check panics on failure.

use chrono::{DateTime, Duration, Utc};

use super::{CarrierInsert, LoadFilter, PageRequest, PointRange, Storage};
use crate::api::input::carrier::NewCarrierInput;
use crate::api::input::load::NewLoadInput;
use crate::api::input::location::LocationInput;
use crate::domain::account::{Account, PlanKind};
use crate::domain::api_key::{ApiKey, NewKey, Permission};
use crate::domain::carrier::Carrier;
use crate::domain::ids::{AccountId, CarrierId, KeyId, LoadId};
use crate::domain::load::{CarrierSummary, Load, LoadStatus, StatusChange};
use crate::domain::location::UsState;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};

fn account() -> Account {
    Account {
        id: AccountId::generate(),
        name: "Conformance".into(),
        plan: PlanKind::Standard,
        custom_requests_per_hour: None,
        created_at: Utc::now(),
    }
}

/// A valid posted load of `account` on the lane `origin` → `destination` (state
/// codes); for tests and benchmarks elsewhere too.
pub fn sample_load(account: &AccountId, origin: &str, destination: &str) -> Load {
    let place = |state: &str| LocationInput {
        city: Some("Somewhere".into()),
        state: Some(state.into()),
        zip: Some("12345".into()),
        address: None,
    };
    let new = NewLoadInput {
        origin: Some(place(origin)),
        destination: Some(place(destination)),
        weight: Some(1000.0),
        equipment_type: Some("flatbed".into()),
        ..Default::default()
    }
    .validate()
    .expect("valid load");
    Load::create(LoadId::generate(), account.clone(), new, Utc::now())
}

fn carrier(account: &AccountId, mc: &str) -> Carrier {
    let new = NewCarrierInput {
        name: Some("Carrier".into()),
        mc_number: Some(mc.into()),
        ..Default::default()
    }
    .validate()
    .expect("valid carrier");
    Carrier::create(CarrierId::generate(), account.clone(), new, Utc::now())
}

const ALL: PageRequest = PageRequest {
    offset: 0,
    limit: 100,
};

pub async fn accounts_and_keys(store: &dyn Storage) {
    let first = account();
    let second = account();
    store.put_account(&first).await.unwrap();
    store.put_account(&second).await.unwrap();
    assert_eq!(
        store.get_account(&first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.get_account(&AccountId::generate()).await.unwrap(),
        None
    );
    let listed = store.list_accounts().await.unwrap();
    assert!(listed.contains(&first) && listed.contains(&second));

    let mut upgraded = first.clone();
    upgraded.plan = PlanKind::Pro;
    store.put_account(&upgraded).await.unwrap();
    assert_eq!(store.get_account(&first.id).await.unwrap(), Some(upgraded));

    let issue = |account: &Account| {
        ApiKey::issue(
            NewKey {
                account_id: account.id.clone(),
                permissions: vec![Permission::Read],
                description: Some("conformance".into()),
                expires_at: Some(Utc::now() + Duration::days(1)),
            },
            Utc::now(),
        )
        .record
    };
    let mut key = issue(&first);
    let other_key = issue(&second);
    store.put_api_key(&key).await.unwrap();
    store.put_api_key(&other_key).await.unwrap();
    assert_eq!(store.get_api_key(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.get_api_key(&KeyId::generate()).await.unwrap(), None);
    assert_eq!(
        store.list_api_keys(&first.id).await.unwrap(),
        vec![key.clone()]
    );

    key.revoked_at = Some(Utc::now());
    store.put_api_key(&key).await.unwrap();
    assert_eq!(store.get_api_key(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.list_api_keys(&first.id).await.unwrap(), vec![key]);
}

pub async fn loads_round_trip_and_move_between_indexes(store: &dyn Storage) {
    let owner = AccountId::generate();
    let original = sample_load(&owner, "TX", "GA");
    store.insert_load(&original, &[]).await.unwrap();
    assert_eq!(
        store.get_load(&original.id).await.unwrap(),
        Some(original.clone())
    );
    assert_eq!(store.get_load(&LoadId::generate()).await.unwrap(), None);
    let stranger = store
        .list_loads(&AccountId::generate(), &LoadFilter::default(), ALL)
        .await
        .unwrap();
    assert_eq!(stranger.total, 0, "another account must not list the load");

    let change = StatusChange {
        status: LoadStatus::Assigned,
        carrier_id: None,
        location: None,
        notes: None,
    };
    let summary = CarrierSummary {
        id: CarrierId::generate(),
        name: "C".into(),
        mc_number: "1".into(),
    };
    let assigned = original.apply(LoadStatus::Assigned, Some(summary), &change, Utc::now());
    store.update_load(&original, &assigned, &[]).await.unwrap();
    assert_eq!(
        store.get_load(&original.id).await.unwrap(),
        Some(assigned.clone())
    );

    let by_status = |status| LoadFilter {
        status: Some(status),
        ..Default::default()
    };
    let posted = store
        .list_loads(&owner, &by_status(LoadStatus::Posted), ALL)
        .await
        .unwrap();
    assert_eq!(posted.total, 0, "the old index entry must be gone");
    let now_assigned = store
        .list_loads(&owner, &by_status(LoadStatus::Assigned), ALL)
        .await
        .unwrap();
    assert_eq!(now_assigned.items, vec![assigned]);
}

pub async fn load_lists_filter_order_and_paginate(store: &dyn Storage) {
    let owner = AccountId::generate();
    let stranger = AccountId::generate();
    store
        .insert_load(&sample_load(&stranger, "TX", "GA"), &[])
        .await
        .unwrap();
    let lanes = [
        ("TX", "GA"),
        ("TX", "CA"),
        ("OK", "GA"),
        ("TX", "GA"),
        ("CA", "TX"),
    ];
    let mut created = Vec::new();
    for (i, (origin, destination)) in lanes.iter().enumerate() {
        let mut l = sample_load(&owner, origin, destination);
        if i % 2 == 1 {
            l.status = LoadStatus::InTransit;
        }
        store.insert_load(&l, &[]).await.unwrap();
        created.push(l);
    }
    let newest_first: Vec<Load> = created.iter().rev().cloned().collect();
    let states = [None, Some("TX"), Some("GA"), Some("CA")];
    let statuses = [None, Some(LoadStatus::Posted), Some(LoadStatus::InTransit)];
    for status in statuses {
        for origin in states {
            for destination in states {
                let filter = LoadFilter {
                    status,
                    origin_state: origin.map(|s| UsState::parse(s).unwrap()),
                    destination_state: destination.map(|s| UsState::parse(s).unwrap()),
                };
                let expected: Vec<Load> = newest_first
                    .iter()
                    .filter(|l| filter.status.is_none_or(|s| l.status == s))
                    .filter(|l| filter.origin_state.is_none_or(|s| l.origin.state == s))
                    .filter(|l| {
                        filter
                            .destination_state
                            .is_none_or(|s| l.destination.state == s)
                    })
                    .cloned()
                    .collect();
                let page = store.list_loads(&owner, &filter, ALL).await.unwrap();
                assert_eq!(page.items, expected, "{filter:?}");
                assert_eq!(page.total, expected.len() as u64, "{filter:?}");
            }
        }
    }
    let everything = LoadFilter::default();
    let mut paged = Vec::new();
    for offset in (0..6).step_by(2) {
        let page = store
            .list_loads(&owner, &everything, PageRequest { offset, limit: 2 })
            .await
            .unwrap();
        assert_eq!(page.total, 5);
        paged.extend(page.items);
    }
    assert_eq!(paged, newest_first);
    let beyond = store
        .list_loads(
            &owner,
            &everything,
            PageRequest {
                offset: 50,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert!(beyond.items.is_empty());
    assert_eq!(beyond.total, 5);
}

pub async fn carriers_are_unique_by_mc_number_per_account(store: &dyn Storage) {
    let owner = AccountId::generate();
    let first = carrier(&owner, "1001");
    let second = carrier(&owner, "1002");
    assert_eq!(
        store.insert_carrier(&first).await.unwrap(),
        CarrierInsert::Inserted
    );
    assert_eq!(
        store.insert_carrier(&second).await.unwrap(),
        CarrierInsert::Inserted
    );
    assert_eq!(
        store
            .insert_carrier(&carrier(&owner, "1001"))
            .await
            .unwrap(),
        CarrierInsert::DuplicateMcNumber(first.id.clone())
    );
    let elsewhere = carrier(&AccountId::generate(), "1001");
    assert_eq!(
        store.insert_carrier(&elsewhere).await.unwrap(),
        CarrierInsert::Inserted
    );

    assert_eq!(
        store.get_carrier(&owner, &first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store
            .get_carrier(&elsewhere.account_id, &first.id)
            .await
            .unwrap(),
        None
    );
    let page = store.list_carriers(&owner, ALL).await.unwrap();
    assert_eq!(page.items, vec![second.clone(), first.clone()]);
    assert_eq!(page.total, 2);
    let second_page = store
        .list_carriers(
            &owner,
            PageRequest {
                offset: 1,
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(second_page.items, vec![first]);
}

fn fix(seconds: i64, lat: f64) -> GpsFix {
    GpsFix {
        timestamp: DateTime::from_timestamp(1_780_000_000 + seconds, 0).expect("valid"),
        lat,
        lng: -96.8,
        speed_mph: (seconds % 2 == 0).then_some(55.5),
        heading_deg: None,
    }
}

pub async fn points_are_ordered_deduplicated_and_ranged(store: &dyn Storage) {
    let load = LoadId::generate();
    let other = LoadId::generate();
    let point = |load: &LoadId, seconds, lat| TrackingPoint {
        load_id: load.clone(),
        fix: fix(seconds, lat),
        event: None,
    };
    // Out of order, with a repeat inside the batch and a point of another load.
    let outcomes = store
        .append_points(vec![
            point(&load, 20, 1.0),
            point(&load, 10, 2.0),
            point(&load, 30, 3.0),
            point(&load, 10, 9.0),
            point(&other, 15, 4.0),
        ])
        .await
        .unwrap();
    use Appended::{Duplicate, Stored};
    assert_eq!(outcomes, [Stored, Stored, Stored, Duplicate, Stored]);
    // A repeat across batches keeps the first point.
    let again = store
        .append_points(vec![point(&load, 20, 7.0), point(&load, 40, 5.0)])
        .await
        .unwrap();
    assert_eq!(again, [Duplicate, Stored]);

    let all = store
        .load_points(&load, PointRange::latest(100))
        .await
        .unwrap();
    let seconds: Vec<i64> = all
        .iter()
        .map(|f| f.timestamp.timestamp() - 1_780_000_000)
        .collect();
    assert_eq!(seconds, [40, 30, 20, 10], "newest first, one per timestamp");
    assert_eq!(all[2], fix(20, 1.0), "the first stored point wins");
    assert_eq!(all[3].lat, 2.0);

    let latest_two = store
        .load_points(&load, PointRange::latest(2))
        .await
        .unwrap();
    assert_eq!(latest_two, all[..2]);
    let window = PointRange {
        from: fix(10, 0.0).timestamp,
        to: fix(30, 0.0).timestamp,
        before: None,
        limit: 100,
    };
    assert_eq!(store.load_points(&load, window).await.unwrap(), all[1..]);
    let next_page = PointRange {
        before: Some(fix(30, 0.0).timestamp),
        ..window
    };
    assert_eq!(store.load_points(&load, next_page).await.unwrap(), all[2..]);
    assert_eq!(
        store
            .count_points(&load, window.from, window.to)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        store
            .count_points(&LoadId::generate(), window.from, window.to)
            .await
            .unwrap(),
        0
    );
    let empty = PointRange {
        from: fix(30, 0.0).timestamp,
        to: fix(10, 0.0).timestamp,
        ..window
    };
    assert!(store.load_points(&load, empty).await.unwrap().is_empty());
}

/// An account subscribed to `load.created`, and `loads` new loads of it, each
/// with its `load.created` event in the outbox (sequence 1).
async fn webhook_and_loads(
    store: &dyn Storage,
    loads: usize,
    now: DateTime<Utc>,
) -> (
    crate::domain::webhook::Subscription,
    Vec<crate::domain::event::Event>,
) {
    use crate::domain::event::{Event, EventType};
    use crate::domain::ids::WebhookId;
    use crate::domain::webhook::Subscription;

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

/// `delivery` after its first attempt was answered 200 at `at`.
pub fn delivered_at(
    delivery: &crate::domain::webhook::Delivery,
    at: DateTime<Utc>,
) -> crate::domain::webhook::Delivery {
    crate::domain::webhook::Delivery {
        status: crate::domain::webhook::DeliveryStatus::Delivered,
        attempts: 1,
        last_status_code: Some(200),
        next_attempt_at: None,
        delivered_at: Some(at),
        ..delivery.clone()
    }
}

pub async fn answers_ping(store: &dyn Storage) {
    store.ping().await.expect("store answers");
}

/// The outbox and the delivery log: events wait to be fanned out (a pass may
/// continue after a given event) until their deliveries' first records mark them
/// fanned out, storage tells which deliveries it has no record of, the
/// schedule of due deliveries follows every change, and a deleted webhook's
/// deliveries are gone for good. Counts are deltas, and the outbox and schedule
/// are filtered to this check's ids, so other checks may share the store.
pub async fn outbox_fan_out_and_delivery_schedule(store: &dyn Storage) {
    use crate::domain::event::Event;
    use crate::domain::webhook::Delivery;

    let now = Utc::now();
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

/// Idempotency answers are kept per (account, key), replaced on a second put, and
/// purged by age.
pub async fn idempotency_answers_are_kept_and_purged(store: &dyn Storage) {
    use crate::domain::idempotency::StoredResponse;

    let (a, b) = (account(), account());
    let now = Utc::now();
    let answer = |owner: &Account, key: &str, at: DateTime<Utc>| StoredResponse {
        account_id: owner.id.clone(),
        key: key.into(),
        fingerprint: "f".repeat(64),
        status: 201,
        content_type: Some("application/json".into()),
        body: format!("{{\"key\":\"{key}\"}}"),
        created_at: at,
    };
    let old = answer(&a, "old", now - Duration::hours(25));
    let fresh = answer(&a, "fresh", now);
    store.put_idempotent(&old).await.unwrap();
    store.put_idempotent(&fresh).await.unwrap();
    assert_eq!(
        store.get_idempotent(&a.id, "fresh").await.unwrap(),
        Some(fresh.clone())
    );
    assert_eq!(
        store.get_idempotent(&b.id, "fresh").await.unwrap(),
        None,
        "per account"
    );
    let replaced = StoredResponse {
        status: 400,
        ..fresh.clone()
    };
    store.put_idempotent(&replaced).await.unwrap();
    assert_eq!(
        store.get_idempotent(&a.id, "fresh").await.unwrap(),
        Some(replaced)
    );
    let purged = store
        .purge_idempotent(now - Duration::hours(24))
        .await
        .unwrap();
    assert!(purged >= 1);
    assert_eq!(store.get_idempotent(&a.id, "old").await.unwrap(), None);
    assert!(
        store
            .get_idempotent(&a.id, "fresh")
            .await
            .unwrap()
            .is_some()
    );
}

/// History pruning forgets finished deliveries and the events nobody waits for,
/// and keeps pending deliveries, their events, unfanned events, recent history and
/// every load's event numbering.
pub async fn webhook_history_is_pruned_but_nothing_pending(store: &dyn Storage) {
    use crate::domain::event::Event;
    use crate::domain::webhook::{Delivery, DeliveryStatus};

    let now = Utc::now();
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
