//! Load listing through the filter indexes: a selective filter costs in proportion
//! to what it returns, not to the size of the account.
//!
//! Run: `cargo bench --bench load_index`. Reports durable inserts per second and the
//! time of one list call for filters of different selectivity, as ratios to the
//! unfiltered first page measured in the same run.

/// `sample_load`, shared with the storage conformance suite.
#[path = "../tests/storage/fixtures.rs"]
mod fixtures;

use std::time::{Duration, Instant};

use freight::domain::ids::AccountId;
use freight::domain::load::{Load, LoadStatus};
use freight::domain::location::UsState;
use freight::storage::embedded::EmbeddedStore;
use freight::storage::{LoadFilter, LoadStore, PageRequest};

use fixtures::sample_load;

const LOADS: usize = 4_000;
const CONCURRENCY: usize = 32;
const QUERY_ROUNDS: u32 = 200;

fn load(account: &AccountId, i: usize) -> Load {
    let states = ["TX", "GA", "CA", "OK", "IL", "NY", "FL", "WA"];
    let mut load = sample_load(
        account,
        states[i % states.len()],
        states[(i / 8) % states.len()],
    );
    // 1 in 100 loads is delivered: the selective filter.
    if i.is_multiple_of(100) {
        load.status = LoadStatus::Delivered;
    }
    load
}

async fn time_query(
    store: &EmbeddedStore,
    account: &AccountId,
    filter: &LoadFilter,
) -> (Duration, u64) {
    let page = PageRequest {
        offset: 0,
        limit: 50,
    };
    let mut total = 0;
    let started = Instant::now();
    for _ in 0..QUERY_ROUNDS {
        total = store
            .list_loads(account, filter, page)
            .await
            .expect("list")
            .total;
    }
    (started.elapsed() / QUERY_ROUNDS, total)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path()).await.expect("store");
    let account = AccountId::generate();

    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..CONCURRENCY {
        let store = store.clone();
        let account = account.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..LOADS).step_by(CONCURRENCY) {
                store
                    .insert_load(&load(&account, i), &[])
                    .await
                    .expect("insert");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let elapsed = started.elapsed();
    println!(
        "durable inserts: {LOADS} loads in {:.2?} = {:.0} loads/s ({CONCURRENCY} concurrent writers, each durable before it returns)",
        elapsed,
        LOADS as f64 / elapsed.as_secs_f64()
    );

    let tx = UsState::parse("TX").expect("state");
    let ga = UsState::parse("GA").expect("state");
    let cases = [
        ("no filter (first page)", LoadFilter::default()),
        (
            "origin_state=TX",
            LoadFilter {
                origin_state: Some(tx),
                ..Default::default()
            },
        ),
        (
            "origin_state=TX&destination_state=GA",
            LoadFilter {
                origin_state: Some(tx),
                destination_state: Some(ga),
                ..Default::default()
            },
        ),
        (
            "status=delivered",
            LoadFilter {
                status: Some(LoadStatus::Delivered),
                ..Default::default()
            },
        ),
    ];
    let (baseline, _) = time_query(&store, &account, &cases[0].1).await;
    println!("list call, mean of {QUERY_ROUNDS} (ratio to the unfiltered first page):");
    for (name, filter) in &cases {
        let (mean, total) = time_query(&store, &account, filter).await;
        println!(
            "  {name:<40} total={total:<5} {mean:>10.2?}  ratio {:.2}",
            mean.as_secs_f64() / baseline.as_secs_f64()
        );
    }
}
