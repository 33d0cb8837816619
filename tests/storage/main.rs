//! The storage conformance suite (`conformance`), instantiated per backend, and
//! checks particular to a backend.

mod conformance;
mod fixtures;

use std::sync::Arc;

use freight::domain::ids::AccountId;
use freight::storage::embedded::EmbeddedStore;
use freight::storage::{CarrierStore, LoadFilter, LoadStore, PageRequest, Storage};

/// One test per conformance check for a backend made by `$open`, in a module
/// named `$backend`; each test opens its own store.
macro_rules! conformance_tests {
    ($backend:ident, $open:expr) => {
        conformance_tests!(
            $backend,
            $open,
            accounts_and_keys,
            loads_round_trip_and_move_between_indexes,
            load_lists_filter_order_and_paginate,
            carriers_are_unique_by_mc_number_per_account,
            points_are_ordered_deduplicated_and_ranged,
            outbox_fan_out_and_delivery_schedule,
            idempotency_answers_are_kept_and_purged,
            webhook_history_is_pruned_but_nothing_pending,
            users_are_unique_by_email_and_bring_their_account,
            sessions_end_and_expire,
            answers_ping,
        );
    };
    ($backend:ident, $open:expr, $($check:ident),+ $(,)?) => {
        mod $backend {
            use super::*;

            $(
                #[tokio::test]
                async fn $check() {
                    let (_guard, store) = $open.await;
                    conformance::$check(&*store).await;
                }
            )+
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
    let carrier = conformance::carrier(&AccountId::generate(), "31337");
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
