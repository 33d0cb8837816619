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
use crate::storage::{Storage, StorageError, StorageResult};
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;

/// Submissions waiting for the committer; beyond this, senders wait (back-pressure).
const QUEUE_CAPACITY: usize = 16_384;
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
        storage: Arc<dyn Storage>,
    ) -> std::io::Result<(Self, std::thread::JoinHandle<()>)> {
        let (queue, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("freight-gps-commit".into())
            .spawn(move || {
                crate::storage::mark_thread_may_block();
                runtime.block_on(run(storage, receiver));
            })?;
        Ok((Self { queue }, thread))
    }

    /// Stores `points` (of any loads) and returns once they are durable.
    pub async fn append(&self, points: Vec<TrackingPoint>) -> Result<Vec<Appended>, LoadError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Submission { points, reply })
            .await
            .map_err(|_| Unavailable::GpsCommitter)?;
        let stored = answer.await.map_err(|_| Unavailable::GpsCommitter)?;
        Ok(stored?)
    }
}

/// Points per group commit, and how long each took (one durable batch).
pub const BATCH_POINTS_METRIC: &str = "freight_gps_commit_batch_points";
pub const COMMIT_SECONDS_METRIC: &str = "freight_gps_commit_seconds";

async fn run(storage: Arc<dyn Storage>, mut queue: mpsc::Receiver<Submission>) {
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

async fn commit(storage: &dyn Storage, batch: Vec<Submission>) {
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
