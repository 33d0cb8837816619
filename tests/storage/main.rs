//! The storage conformance suite, instantiated per backend.

use std::sync::Arc;

use freight::storage::conformance;
use freight::storage::embedded::EmbeddedStore;
use freight::storage::{CarrierStore, LoadFilter, LoadStore, PageRequest, Storage};

/// One test per conformance check for a backend made by `$open`.
macro_rules! conformance_tests {
    ($backend:ident, $open:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test]
            async fn accounts_and_keys() {
                let (_guard, store) = $open.await;
                conformance::accounts_and_keys(&*store).await;
            }

            #[tokio::test]
            async fn loads_round_trip_and_move_between_indexes() {
                let (_guard, store) = $open.await;
                conformance::loads_round_trip_and_move_between_indexes(&*store).await;
            }

            #[tokio::test]
            async fn load_lists_filter_order_and_paginate() {
                let (_guard, store) = $open.await;
                conformance::load_lists_filter_order_and_paginate(&*store).await;
            }

            #[tokio::test]
            async fn carriers_are_unique_by_mc_number_per_account() {
                let (_guard, store) = $open.await;
                conformance::carriers_are_unique_by_mc_number_per_account(&*store).await;
            }

            #[tokio::test]
            async fn points_are_ordered_deduplicated_and_ranged() {
                let (_guard, store) = $open.await;
                conformance::points_are_ordered_deduplicated_and_ranged(&*store).await;
            }

            #[tokio::test]
            async fn outbox_fan_out_and_delivery_schedule() {
                let (_guard, store) = $open.await;
                conformance::outbox_fan_out_and_delivery_schedule(&*store).await;
            }

            #[tokio::test]
            async fn idempotency_answers_are_kept_and_purged() {
                let (_guard, store) = $open.await;
                conformance::idempotency_answers_are_kept_and_purged(&*store).await;
            }

            #[tokio::test]
            async fn webhook_history_is_pruned_but_nothing_pending() {
                let (_guard, store) = $open.await;
                conformance::webhook_history_is_pruned_but_nothing_pending(&*store).await;
            }

            #[tokio::test]
            async fn answers_ping() {
                let (_guard, store) = $open.await;
                conformance::answers_ping(&*store).await;
            }
        }
    };
}

async fn open_embedded() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    (dir, Arc::new(store))
}

conformance_tests!(embedded, open_embedded());

#[tokio::test(flavor = "multi_thread")]
async fn embedded_writes_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let carrier = {
        let input = freight::domain::carrier::NewCarrierInput {
            name: Some("Durable".into()),
            mc_number: Some("31337".into()),
            ..Default::default()
        };
        freight::domain::carrier::Carrier::create(
            freight::domain::ids::CarrierId::generate(),
            freight::domain::ids::AccountId::generate(),
            input.validate().unwrap(),
            chrono::Utc::now(),
        )
    };
    {
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        store.insert_carrier(&carrier).await.unwrap();
    }
    let reopened = EmbeddedStore::open(dir.path()).await.unwrap();
    assert_eq!(
        reopened
            .get_carrier(&carrier.account_id, &carrier.id)
            .await
            .unwrap(),
        Some(carrier.clone())
    );
    let page = reopened
        .list_carriers(
            &carrier.account_id,
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.items, vec![carrier]);
    let no_loads = reopened
        .list_loads(
            &page.items[0].account_id,
            &LoadFilter::default(),
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(no_loads.total, 0);
}
