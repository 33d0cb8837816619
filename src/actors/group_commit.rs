//! Group commit of GPS points: every point that arrives while the previous batch is
//! being synced goes into the next batch, so one fdatasync covers many requests.
//! Each caller is answered only after the batch holding its points is durable.
//!
//! There is no fixed linger: under light load a point is written at once (lowest
//! latency), and under heavy load batches grow by themselves to whatever arrived
//! during one sync (highest throughput).

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::LoadError;
use crate::domain::tracking::{Appended, TrackingPoint};
use crate::storage::{StorageError, StorageResult, TrackingStore};
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
    reply: oneshot::Sender<StorageResult<Vec<Appended>>>,
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

    /// Stores `points` (of any loads) and returns once they are durable; refused
    /// at once when the queue is full (see `QUEUE_CAPACITY`).
    pub async fn append(&self, points: Vec<TrackingPoint>) -> Result<Vec<Appended>, LoadError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .try_send(Submission { points, reply })
            .map_err(|refused| match refused {
                mpsc::error::TrySendError::Full(_) => {
                    metrics::counter!(SHED_METRIC).increment(1);
                    Unavailable::GpsOverloaded
                }
                mpsc::error::TrySendError::Closed(_) => Unavailable::GpsCommitter,
            })?;
        let stored = answer.await.map_err(|_| Unavailable::GpsCommitter)?;
        Ok(stored?)
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

async fn commit(storage: &dyn TrackingStore, batch: Vec<Submission>) {
    let mut sizes = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    let mut points = Vec::new();
    for submission in batch {
        sizes.push(submission.points.len());
        replies.push(submission.reply);
        points.extend(submission.points);
    }
    let expected = points.len();
    metrics::histogram!(BATCH_POINTS_METRIC).record(expected as f64);
    let started = std::time::Instant::now();
    let stored = storage.append_points(points).await;
    metrics::histogram!(COMMIT_SECONDS_METRIC).record(started.elapsed().as_secs_f64());
    let stored = stored.and_then(|outcomes| {
        if outcomes.len() == expected {
            Ok(outcomes)
        } else {
            Err(StorageError::corrupt(format!(
                "the store answered {} outcomes for {expected} points",
                outcomes.len()
            )))
        }
    });
    match stored {
        Ok(outcomes) => {
            let mut outcomes = outcomes.into_iter();
            for (size, reply) in sizes.into_iter().zip(replies) {
                let _ = reply.send(Ok(outcomes.by_ref().take(size).collect()));
            }
        }
        Err(error) => {
            tracing::error!(error = %error_chain(&error), "GPS batch failed; its points were not stored");
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::domain::ids::LoadId;
    use crate::domain::tracking::GpsFix;
    use crate::storage::PointRange;

    /// A store whose writes wait until the test lets them through.
    struct Gated {
        open: tokio::sync::Semaphore,
        /// Batches that reached storage (and wait there until let through).
        entered: std::sync::atomic::AtomicUsize,
        stored: Mutex<usize>,
    }

    #[async_trait]
    impl TrackingStore for Gated {
        async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
            self.entered
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.open.acquire().await.expect("open").forget();
            *self.stored.lock().unwrap() += points.len();
            Ok(vec![Appended::Stored; points.len()])
        }
        async fn load_points(&self, _: &LoadId, _: PointRange) -> StorageResult<Vec<GpsFix>> {
            Ok(Vec::new())
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

    fn point() -> TrackingPoint {
        TrackingPoint {
            load_id: LoadId::generate(),
            fix: GpsFix {
                timestamp: Utc::now(),
                lat: 32.0,
                lng: -96.0,
                speed_mph: None,
                heading_deg: None,
            },
            event: None,
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
}
