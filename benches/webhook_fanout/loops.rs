//! The reference loops each round measures beside freight's drain: the bare
//! reqwest loop, the same loop made durable as the dispatcher's delivery log
//! is, and freight's own `attempt` in the bare loop's shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::web;
use chrono::Utc;
use freight::domain::event::EventType;
use freight::domain::ids::{AccountId, EventId, WebhookId};
use freight::domain::webhook::{Subscription, UrlPolicy};

use crate::figures::{cpu_seconds, own_cpu_seconds};

/// `POSTs` of `sample` to `url`, `concurrency` at a time on one client: the rate
/// and the process's CPU seconds per request.
pub async fn bare_loop(
    client: &reqwest::Client,
    url: &str,
    sample: &[u8],
    events: usize,
    concurrency: usize,
) -> (f64, f64) {
    let (client, url, sample) = (
        client.clone(),
        Arc::<str>::from(url),
        web::Bytes::copy_from_slice(sample),
    );
    let request = move || {
        let (client, url, sample) = (client.clone(), url.clone(), sample.clone());
        async move {
            assert!(post(&client, &url, sample).await.is_success());
        }
    };
    timed(events, send_concurrently(events, concurrency, request)).await
}

/// One `POST` of the bare loops: the answer's status.
pub async fn post(client: &reqwest::Client, url: &str, body: web::Bytes) -> reqwest::StatusCode {
    client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("receiver answers")
        .status()
}

/// The rate of `work`, which makes `events` requests, and the process's CPU
/// seconds per request while it ran.
pub async fn timed(events: usize, work: impl std::future::Future<Output = ()>) -> (f64, f64) {
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    work.await;
    let elapsed = started.elapsed();
    (
        events as f64 / elapsed.as_secs_f64(),
        (cpu_seconds() - cpu_before) / events as f64,
    )
}

/// Makes `events` requests, `concurrency` at a time: as many tasks, each
/// making the next request (`request()`) until all are made.
pub async fn send_concurrently<F, Fut>(events: usize, concurrency: usize, request: F)
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (request, sent) = (request.clone(), sent.clone());
        tasks.push(actix_rt::spawn(async move {
            while sent.fetch_add(1, Ordering::Relaxed) < events {
                request().await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
}

/// Polls the receiver's count until it reaches `target`.
pub async fn wait_for(count: &AtomicUsize, target: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Relaxed) < target {
        if Instant::now() >= deadline {
            panic!(
                "deliveries stalled at {} of {target}",
                count.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The bare loop, recording each answer's outcome (event, status, time) the
/// way the dispatcher's delivery log is written: a writer thread appends what
/// has come since its last write to a file and syncs it, one write beginning at
/// most every `spacing` while outcomes keep coming and carrying at most
/// `MAX_WRITE_OUTCOMES` (the dispatcher's `recording` module). The rate counts
/// to the last answer, as the drain's does (in both, a request's slot frees at
/// its answer); the loop then waits for every outcome to be durable. Also
/// gives the writer thread's CPU seconds.
pub async fn durable_bare_loop(
    (client, url, sample): (&reqwest::Client, &str, &[u8]),
    events: usize,
    concurrency: usize,
    spacing: Duration,
    dir: &std::path::Path,
) -> (f64, f64) {
    /// The dispatcher's `recording::MAX_WRITE_OUTCOMES`.
    const MAX_WRITE_OUTCOMES: usize = 512;
    use std::io::Write;
    let pending = Arc::new((
        std::sync::Mutex::new(Vec::<u8>::new()),
        std::sync::Condvar::new(),
    ));
    let durable = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (pending, durable) = (pending.clone(), durable.clone());
        let mut file = std::fs::File::create(dir.join("outcomes.log")).expect("log file");
        std::thread::spawn(move || {
            let (lock, ready) = &*pending;
            let mut written = 0;
            while written < events {
                let batch = {
                    let mut waiting = lock.lock().unwrap();
                    while waiting.is_empty() {
                        waiting = ready.wait(waiting).unwrap();
                    }
                    // At most MAX_WRITE_OUTCOMES lines; the rest waits for the next write.
                    let cut = waiting
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .nth(MAX_WRITE_OUTCOMES - 1)
                        .map_or(waiting.len(), |(at, _)| at + 1);
                    let rest = waiting.split_off(cut);
                    std::mem::replace(&mut *waiting, rest)
                };
                let began = Instant::now();
                file.write_all(&batch).expect("log written");
                file.sync_data().expect("log synced");
                written += batch.iter().filter(|b| **b == b'\n').count();
                durable.store(written, Ordering::Relaxed);
                // The next write begins `spacing` after this one did, if
                // outcomes are waiting by then (the writer waits on an empty
                // buffer anyway).
                std::thread::sleep(spacing.saturating_sub(began.elapsed()));
            }
            own_cpu_seconds()
        })
    };
    let (client, url, sample) = (
        client.clone(),
        Arc::<str>::from(url),
        web::Bytes::copy_from_slice(sample),
    );
    let request = move || {
        let (client, url, sample, pending) =
            (client.clone(), url.clone(), sample.clone(), pending.clone());
        async move {
            let event = EventId::generate();
            let status = post(&client, &url, sample).await;
            let line = format!(
                "{event} {} {}\n",
                status.as_u16(),
                Utc::now().timestamp_millis()
            );
            let (lock, ready) = &*pending;
            let mut waiting = lock.lock().unwrap();
            // The writer waits only on an empty buffer.
            let wake = waiting.is_empty();
            waiting.extend_from_slice(line.as_bytes());
            drop(waiting);
            if wake {
                ready.notify_one();
            }
        }
    };
    let (rate, _) = timed(events, send_concurrently(events, concurrency, request)).await;
    wait_for(&durable, events).await;
    (rate, writer.join().expect("log writer"))
}

/// The bare loop's shape, each request made by the dispatcher's own `attempt`
/// with a client built as the dispatcher's is (`client`, kept warm across
/// rounds like the bare loop's): the rate and CPU seconds per request.
pub async fn attempt_loop(
    client: &reqwest::Client,
    policy: UrlPolicy,
    url: &str,
    sample: &[u8],
    events: usize,
    concurrency: usize,
) -> (f64, f64) {
    use freight::webhooks::attempt::{Endpoint, attempt};
    let client = client.clone();
    let now = Utc::now();
    let subscription = Subscription {
        id: WebhookId::generate(),
        account_id: AccountId::generate(),
        url: url.to_owned(),
        events: vec![EventType::LoadCreated],
        secret: "whsec_bench".into(),
        enabled: true,
        disabled_reason: None,
        created_at: now,
        updated_at: now,
    };
    let endpoint = Arc::new(Endpoint::new(&subscription, policy));
    let clock = freight::clock::Clock::system();
    let body = web::Bytes::copy_from_slice(sample);
    timed(
        events,
        send_concurrently(events, concurrency, move || {
            let (client, endpoint, clock, body) = (
                client.clone(),
                endpoint.clone(),
                clock.clone(),
                body.clone(),
            );
            async move {
                let event = EventId::generate();
                let outcome = attempt(&client, &clock, &endpoint, &event, body).await;
                assert_eq!(outcome.status_code, Some(200), "{outcome:?}");
            }
        }),
    )
    .await
}
