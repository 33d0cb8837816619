//! The cost of the per-request quota check, the only rate-limit work on the GPS
//! ingest path: nanoseconds per `RateLimiter::check`, from one thread and from two
//! at once (sharded state, no storage), against a bare `DashMap` lookup of the
//! same keys as the floor.
//!
//! Run: `cargo bench --bench rate_limit`.

use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;
use freight::clock::Clock;
use freight::domain::ids::AccountId;
use freight::services::rate_limits::RateLimiter;

const CHECKS: usize = 2_000_000;

fn main() {
    let accounts: Arc<Vec<AccountId>> =
        Arc::new((0..1_000).map(|_| AccountId::generate()).collect());
    let limiter = Arc::new(RateLimiter::new(Clock::system()));
    let floor: Arc<DashMap<AccountId, u64>> =
        Arc::new(accounts.iter().map(|a| (a.clone(), 0)).collect());

    for threads in [1usize, 2] {
        let run = |work: Arc<dyn Fn(usize) + Send + Sync>| {
            let started = Instant::now();
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let work = work.clone();
                    std::thread::spawn(move || {
                        for n in 0..CHECKS {
                            work(n * 7 + t);
                        }
                    })
                })
                .collect();
            for handle in handles {
                handle.join().unwrap();
            }
            started.elapsed().as_nanos() as f64 / CHECKS as f64
        };
        let (limiter, accounts2) = (limiter.clone(), accounts.clone());
        let check = run(Arc::new(move |n| {
            let quota = limiter.check(&accounts2[n % accounts2.len()], u32::MAX);
            std::hint::black_box(quota);
        }));
        let (floor, accounts3) = (floor.clone(), accounts.clone());
        let lookup = run(Arc::new(move |n| {
            let hit = floor.get(&accounts3[n % accounts3.len()]).map(|v| *v);
            std::hint::black_box(hit);
        }));
        println!(
            "{threads} thread(s): quota check {check:.0} ns per request (wall time per check per thread); bare DashMap lookup {lookup:.0} ns"
        );
    }
}
