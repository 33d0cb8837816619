//! One open stream: what it is sent first (the retry hint, a replay or a
//! reset), then live frames and heartbeats until it ends; and what its end
//! leaves behind (an idle feed kept for the resume window).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::Interval;

use super::event_id::Resume;
use super::stream_end::{Ending, ending_frame};
use super::{Feed, FeedState, Hub, LiveStream};
use crate::domain::ids::{AccountId, LoadId};

/// The first frame of every stream: EventSource reconnects after 2 s.
pub(super) const RETRY_FRAME: &[u8] = b"retry: 2000\n\n";

pub(super) const KEEP_ALIVE_FRAME: &[u8] = b": keep-alive\n\n";

/// What a new stream is sent before live events: the events after the
/// client's id, or a reset if they are not all in the ring.
pub(super) fn replay(
    feed: &Feed,
    state: &FeedState,
    load: Option<&LoadId>,
    resume: Resume,
) -> Vec<Bytes> {
    let after = match resume {
        Resume::Start => return Vec::new(),
        Resume::After(id)
            if id.epoch == feed.epoch && (state.evicted..=state.last).contains(&id.seq) =>
        {
            id.seq
        }
        Resume::After(id) => {
            let reason = if id.epoch == feed.epoch {
                "too_old"
            } else {
                "unknown_epoch"
            };
            return vec![reset_frame(feed, state, reason)];
        }
        Resume::Unknown => return vec![reset_frame(feed, state, "unknown_epoch")],
    };
    state
        .ring
        .iter()
        .filter(|event| event.seq > after && load.is_none_or(|load| *load == event.load))
        .map(|event| event.frame.clone())
        .collect()
}

/// Tells the client that events it missed are gone. Its id is the latest
/// event's, so that a reconnection after it resumes from here.
fn reset_frame(feed: &Feed, state: &FeedState, reason: &str) -> Bytes {
    let data = json!({
        "reason": reason,
        "message": "the events after the given id are not held any more (a restart, or too \
                    long ago); re-read GET /v1/loads/{load_id}/tracking, then carry on with \
                    this stream",
    });
    Bytes::from(format!(
        "id: {}\nevent: reset\ndata: {data}\n\n",
        feed.id(state.last)
    ))
}

fn overflow_frame(buffer: usize) -> Bytes {
    let data = json!({
        "buffer": buffer,
        "message": "this client fell behind and its stream was closed; reconnect with the \
                    id of the last event received to resume",
    });
    Bytes::from(format!("event: overflow\ndata: {data}\n\n"))
}

/// One open stream.
pub(super) struct Connection {
    /// Frames to send before live ones: the retry hint and the replay (or reset).
    pub(super) queued: VecDeque<Bytes>,
    pub(super) events: mpsc::Receiver<Bytes>,
    pub(super) overflowed: Arc<AtomicBool>,
    pub(super) heartbeat: Interval,
    pub(super) shutdown: watch::Receiver<bool>,
    /// Resolves when the credential the stream was opened with ends.
    pub(super) ending: Ending,
    pub(super) finished: bool,
    pub(super) _open: Open,
}

impl Connection {
    pub(super) fn into_stream(self) -> LiveStream {
        stream::unfold(self, |mut connection| async move {
            let frame = connection.next().await?;
            Some((frame, connection))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<Bytes> {
        if let Some(frame) = self.queued.pop_front() {
            return Some(frame);
        }
        if self.finished {
            return None;
        }
        tokio::select! {
            biased;
            _ = self.shutdown.wait_for(|stopped| *stopped) => None,
            end = &mut self.ending => {
                self.finished = true;
                Some(ending_frame(end))
            }
            event = self.events.recv() => match event {
                Some(frame) => {
                    self.heartbeat.reset();
                    Some(frame)
                }
                // Dropped by the publisher: what was buffered has been sent.
                None => {
                    self.finished = true;
                    self.overflowed
                        .load(Ordering::Acquire)
                        .then(|| overflow_frame(self.events.max_capacity()))
                }
            },
            _ = self.heartbeat.tick() => Some(Bytes::from_static(KEEP_ALIVE_FRAME)),
        }
    }
}

/// Unsubscribes when the stream is dropped (the client went away, or the
/// stream ended).
pub(super) struct Open {
    pub(super) hub: Arc<Hub>,
    pub(super) account: AccountId,
    pub(super) feed: Arc<Feed>,
    pub(super) subscriber: u64,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.hub.streams.fetch_sub(1, Ordering::Relaxed);
        let mut state = self.feed.state();
        state.subscribers.retain(|s| s.id != self.subscriber);
        state.open -= 1;
        if state.open > 0 {
            return;
        }
        state.idle_since += 1;
        let idle_since = state.idle_since;
        drop(state);
        // Outside a runtime (the process is ending) there is nothing to expire.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hub = Arc::downgrade(&self.hub);
        let account = self.account.clone();
        let epoch = self.feed.epoch;
        let window = self.hub.settings.resume_window;
        runtime.spawn(async move {
            tokio::time::sleep(window).await;
            expire(hub, &account, epoch, idle_since);
        });
    }
}

/// Forgets the account's feed if no stream opened on it since it went idle.
fn expire(hub: Weak<Hub>, account: &AccountId, epoch: u64, idle_since: u64) {
    let Some(hub) = hub.upgrade() else { return };
    let removed = hub.feeds.remove_if(account, |_, feed| {
        let state = feed.state();
        feed.epoch == epoch && state.open == 0 && state.idle_since == idle_since
    });
    if removed.is_some() {
        hub.feed_count.fetch_sub(1, Ordering::AcqRel);
    }
}
