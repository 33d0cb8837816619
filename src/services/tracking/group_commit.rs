//! Group commit of GPS points: every point that arrives while the previous batch is
//! being synced goes into the next batch, so one fdatasync covers many requests.
//! Each caller is answered only after the batch holding its points is durable.
//!
//! There is no fixed linger: under light load a point is written at once (lowest
//! latency), and under heavy load batches grow by themselves to whatever arrived
//! during one sync (highest throughput).
//!
//! One thread writes a batch, waits for its sync and answers its callers, then
//! takes everything that arrived meanwhile as the next batch. (A second thread
//! writing while the other synced gained nothing: the store holds its
//! journal's lock through a sync; docs/perf-notes.md, 26 November.) While the
//! thread is busy, submitting wakes nobody.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::actors::LoadError;
use crate::domain::tracking::{Appended, TrackingPoint};
use crate::storage::{StorageError, TrackingStore};
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;

/// Submissions waiting for the committer. Beyond this, GPS ingest is more than
/// storage absorbs, and a submission is refused at once (503 with
/// `Retry-After`) rather than held: waiting senders would each hold a request,
/// its connection and its points, without bound.
pub const QUEUE_CAPACITY: usize = 16_384;
/// A batch stops growing at this many points (bounds one batch's memory and latency).
const MAX_BATCH_POINTS: usize = 8_192;

struct Submission {
    points: Vec<TrackingPoint>,
    then: Completion,
}

/// What becomes of a submission once its batch is durable, or has failed: run
/// exactly once with the submission's outcomes, on the committer's thread
/// (before the next batch is answered), whatever happens to the caller meanwhile.
/// Dropped unrun (the committer gone), it runs with `GpsCommitter` unavailable.
pub struct Completion(Option<Then>);

type Then = Box<dyn FnOnce(Result<Vec<Appended>, LoadError>) + Send>;

impl Completion {
    pub fn new(then: impl FnOnce(Result<Vec<Appended>, LoadError>) + Send + 'static) -> Self {
        Completion(Some(Box::new(then)))
    }

    fn run(mut self, outcomes: Result<Vec<Appended>, LoadError>) {
        if let Some(then) = self.0.take() {
            then(outcomes);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(then) = self.0.take() {
            then(Err(Unavailable::GpsCommitter.into()));
        }
    }
}

/// Handle to the committer task; cheap to clone.
#[derive(Clone)]
pub struct GroupCommitter {
    queue: mpsc::Sender<Submission>,
}

impl GroupCommitter {
    /// Starts the committer on a thread of its own, which waits on storage
    /// itself (no blocking-pool hop per batch). It runs until every handle is
    /// dropped, then finishes the queued batches and ends.
    pub fn start(
        storage: Arc<dyn TrackingStore>,
    ) -> std::io::Result<(Self, std::thread::JoinHandle<()>)> {
        Self::start_with_capacity(storage, QUEUE_CAPACITY)
    }

    /// [`Self::start`] with a queue of `capacity` submissions.
    pub fn start_with_capacity(
        storage: Arc<dyn TrackingStore>,
        capacity: usize,
    ) -> std::io::Result<(Self, std::thread::JoinHandle<()>)> {
        Self::start_placed(storage, capacity, || {})
    }

    /// [`Self::start_with_capacity`], running `place` first on the committer's
    /// thread (the server keeps it off the HTTP workers' CPUs with it).
    pub fn start_placed(
        storage: Arc<dyn TrackingStore>,
        capacity: usize,
        place: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<(Self, std::thread::JoinHandle<()>)> {
        let (queue, receiver) = mpsc::channel(capacity);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("freight-gps-commit".into())
            .spawn(move || {
                place();
                crate::storage::mark_thread_may_block();
                runtime.block_on(run(storage, receiver));
            })?;
        Ok((Self { queue }, thread))
    }

    /// Stores `points` (of any loads), then runs `then` with their outcomes once
    /// they are durable. Refused at once when the queue is full (see
    /// `QUEUE_CAPACITY`): `then` runs here and now with the refusal.
    pub fn submit(&self, points: Vec<TrackingPoint>, then: Completion) {
        let Err(refused) = self.queue.try_send(Submission { points, then }) else {
            return;
        };
        let (submission, why) = match refused {
            mpsc::error::TrySendError::Full(submission) => {
                metrics::counter!(SHED_METRIC).increment(1);
                (submission, Unavailable::GpsOverloaded)
            }
            mpsc::error::TrySendError::Closed(submission) => {
                (submission, Unavailable::GpsCommitter)
            }
        };
        submission.then.run(Err(why.into()));
    }

    /// Stores `points` (of any loads) and returns once they are durable; refused
    /// at once when the queue is full (see `QUEUE_CAPACITY`).
    pub async fn append(&self, points: Vec<TrackingPoint>) -> Result<Vec<Appended>, LoadError> {
        let (reply, answer) = oneshot::channel();
        self.submit(
            points,
            Completion::new(move |outcomes| {
                let _ = reply.send(outcomes);
            }),
        );
        answer.await.map_err(|_| Unavailable::GpsCommitter)?
    }
}

/// Points per group commit, and how long each took (one durable batch).
pub const BATCH_POINTS_METRIC: &str = "freight_gps_commit_batch_points";
pub const COMMIT_SECONDS_METRIC: &str = "freight_gps_commit_seconds";
/// GPS submissions refused because the committer's queue was full.
pub const SHED_METRIC: &str = "freight_gps_shed_total";

async fn run(storage: Arc<dyn TrackingStore>, mut queue: mpsc::Receiver<Submission>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        let mut points = batch[0].points.len();
        while points < MAX_BATCH_POINTS {
            match queue.try_recv() {
                Ok(next) => {
                    points += next.points.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        commit(&*storage, batch).await;
    }
}

/// Stores one batch durably, then answers its callers (or tells them it failed).
async fn commit(storage: &dyn TrackingStore, batch: Vec<Submission>) {
    // Each caller's share of the outcomes, in order, with what follows it.
    let mut callers = Vec::with_capacity(batch.len());
    let mut points = Vec::new();
    for submission in batch {
        callers.push((submission.points.len(), submission.then));
        points.extend(submission.points);
    }
    let expected = points.len();
    metrics::histogram!(BATCH_POINTS_METRIC).record(expected as f64);
    let started = std::time::Instant::now();
    let stored = storage.append_points(points).await;
    metrics::histogram!(COMMIT_SECONDS_METRIC).record(started.elapsed().as_secs_f64());
    let outcomes = match stored {
        Ok(outcomes) if outcomes.len() == expected => outcomes,
        Ok(outcomes) => {
            let error = StorageError::corrupt(format!(
                "the store answered {} outcomes for {expected} points",
                outcomes.len()
            ));
            return failed(&error, callers);
        }
        Err(error) => return failed(&error, callers),
    };
    let mut outcomes = outcomes.into_iter();
    for (size, then) in callers {
        then.run(Ok(outcomes.by_ref().take(size).collect()));
    }
}

fn failed(error: &StorageError, callers: Vec<(usize, Completion)>) {
    tracing::error!(error = %error_chain(error), "GPS batch failed; its points were not stored");
    for (_, then) in callers {
        then.run(Err(error.clone().into()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::domain::ids::LoadId;
    use crate::domain::tracking::{FixSource, GpsFix};
    use crate::storage::{PointRange, StorageResult};

    /// `impl TrackingStore` for a test store that is only written to: the
    /// given write methods, and reads that find nothing.
    macro_rules! write_only_store {
        ($store:ty { $($writes:tt)* }) => {
            #[async_trait]
            impl TrackingStore for $store {
                $($writes)*
                async fn load_points(&self, _: &LoadId, _: PointRange) -> StorageResult<Vec<GpsFix>> {
                    Ok(Vec::new())
                }
                async fn load_stops(
                    &self,
                    _: &LoadId,
                ) -> StorageResult<Option<crate::domain::stops::StopsProgress>> {
                    Ok(None)
                }
                async fn stop_timers(&self) -> StorageResult<Vec<crate::storage::StopTimerEntry>> {
                    Ok(Vec::new())
                }
                async fn end_stop_timer(
                    &self,
                    _: &LoadId,
                    _: Option<&crate::domain::event::Event>,
                ) -> StorageResult<()> {
                    Ok(())
                }
                async fn count_points(
                    &self,
                    _: &LoadId,
                    _: DateTime<Utc>,
                    _: DateTime<Utc>,
                ) -> StorageResult<u64> {
                    Ok(0)
                }
            }
        };
    }

    /// A store whose writes wait until the test lets them through.
    struct Gated {
        open: tokio::sync::Semaphore,
        /// Batches that reached storage (and wait there until let through).
        entered: std::sync::atomic::AtomicUsize,
        stored: Mutex<usize>,
    }

    write_only_store!(Gated {
        async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
            self.entered
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.open.acquire().await.expect("open").forget();
            *self.stored.lock().unwrap() += points.len();
            Ok(vec![Appended::Stored; points.len()])
        }
    });

    fn point() -> TrackingPoint {
        TrackingPoint {
            load_id: LoadId::generate(),
            fix: GpsFix {
                timestamp: Utc::now(),
                lat: 32.0,
                lng: -96.0,
                speed_mph: None,
                heading_deg: None,
                source: FixSource::Api,
            },
            event: None,
            stops: None,
        }
    }

    #[tokio::test]
    async fn ingest_beyond_what_storage_absorbs_is_shed_not_queued() {
        let store = Arc::new(Gated {
            open: tokio::sync::Semaphore::new(0),
            entered: std::sync::atomic::AtomicUsize::new(0),
            stored: Mutex::new(0),
        });
        let (committer, _thread) = GroupCommitter::start_with_capacity(store.clone(), 4).unwrap();
        // The committer takes the first submission and waits in storage with it;
        // then four more fill the queue.
        let mut waiting = Vec::new();
        let first = committer.clone();
        waiting.push(tokio::spawn(
            async move { first.append(vec![point()]).await },
        ));
        while store.entered.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        for _ in 0..4 {
            let more = committer.clone();
            waiting.push(tokio::spawn(
                async move { more.append(vec![point()]).await },
            ));
        }
        while committer.queue.capacity() > 0 {
            tokio::task::yield_now().await;
        }
        // Full: the next one is refused at once, nothing of it stored.
        let refused = committer.append(vec![point(), point()]).await;
        assert!(
            matches!(
                refused,
                Err(LoadError::Unavailable(Unavailable::GpsOverloaded))
            ),
            "{refused:?}"
        );
        // Storage catches up: everything queued is stored and answered.
        store.open.add_permits(100);
        for answer in waiting {
            assert_eq!(answer.await.unwrap().unwrap(), [Appended::Stored]);
        }
        assert_eq!(*store.stored.lock().unwrap(), 5);
        // And new ingest is taken again.
        assert_eq!(
            committer.append(vec![point()]).await.unwrap(),
            [Appended::Stored]
        );
    }

    /// A store whose batches wait until the test lets each one's sync through
    /// (or fail).
    struct SlowSyncs {
        written: std::sync::atomic::AtomicUsize,
        syncs: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<bool>>>,
    }

    write_only_store!(SlowSyncs {
        /// Counts the batch as written, then holds it until the test lets its
        /// sync succeed or fail.
        async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
            self.written
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let succeed = self.syncs.lock().unwrap().recv().expect("the test decides");
            if succeed {
                Ok(vec![Appended::Stored; points.len()])
            } else {
                Err(StorageError::corrupt("the sync failed"))
            }
        }
    });

    #[tokio::test]
    async fn nobody_hears_before_their_sync_and_a_failed_sync_fails_only_its_batch() {
        let (let_sync, syncs) = std::sync::mpsc::channel();
        let store = Arc::new(SlowSyncs {
            written: std::sync::atomic::AtomicUsize::new(0),
            syncs: Arc::new(std::sync::Mutex::new(syncs)),
        });
        let (committer, thread) = GroupCommitter::start(store.clone()).unwrap();
        let written = || store.written.load(std::sync::atomic::Ordering::SeqCst);
        // Waits (a bounded real time) until `n` batches are written.
        let written_reaches = |n: usize| {
            tokio::time::timeout(std::time::Duration::from_secs(10), async move {
                while written() < n {
                    tokio::task::yield_now().await;
                }
            })
        };
        let (first_done, mut first) = oneshot::channel();
        committer.submit(
            vec![point()],
            Completion::new(move |outcomes| {
                let _ = first_done.send(outcomes);
            }),
        );
        written_reaches(1)
            .await
            .expect("the first batch is written");
        // The first batch waits for its sync; the second waits in the queue.
        let second = tokio::spawn({
            let committer = committer.clone();
            async move { committer.append(vec![point(), point()]).await }
        });
        // Until the second submission is queued (a bounded real time).
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while committer.queue.capacity() == QUEUE_CAPACITY {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the second submission is queued");
        assert!(first.try_recv().is_err(), "answered before its sync");
        assert!(!second.is_finished(), "answered before its sync");
        assert_eq!(written(), 1, "a batch written while the last one syncs");
        assert_eq!(
            committer.queue.capacity(),
            QUEUE_CAPACITY - 1,
            "the second batch was taken while the first one syncs"
        );
        // The first sync fails: only its caller hears it; then the second
        // batch is written, and answered once its own sync succeeds.
        let_sync.send(false).unwrap();
        let first = first.await.unwrap();
        assert!(matches!(first, Err(LoadError::Storage(_))), "{first:?}");
        written_reaches(2)
            .await
            .expect("the second batch is written after the first");
        assert!(!second.is_finished(), "answered before its sync");
        let_sync.send(true).unwrap();
        assert_eq!(
            second.await.unwrap().unwrap(),
            [Appended::Stored, Appended::Stored]
        );
        // With every handle gone the committer ends.
        drop(committer);
        thread.join().unwrap();
    }

    #[test]
    fn a_completion_the_committer_never_ran_still_runs_once_with_the_committer_unavailable() {
        let (ran, heard) = std::sync::mpsc::channel();
        drop(Completion::new(move |outcomes| ran.send(outcomes).unwrap()));
        let heard: Vec<_> = heard.try_iter().collect();
        assert!(
            matches!(
                heard.as_slice(),
                [Err(LoadError::Unavailable(Unavailable::GpsCommitter))]
            ),
            "{heard:?}"
        );
    }
}
