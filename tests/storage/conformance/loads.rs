//! Loads and their listing by filter, newest first.

use freight::domain::ids::{AccountId, CarrierId, LoadId};
use freight::domain::load::{CarrierSummary, ChangeSource, Load, LoadStatus, StatusChange};
use freight::domain::location::UsState;
use freight::storage::{LoadFilter, PageRequest, Storage};

use super::ALL;
use crate::fixtures::sample_load;

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
        source: ChangeSource::Api,
    };
    let summary = CarrierSummary {
        id: CarrierId::generate(),
        name: "C".into(),
        mc_number: "1".into(),
    };
    let assigned = original.apply(
        LoadStatus::Assigned,
        Some(summary),
        &change,
        crate::fixtures::now(),
    );
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
