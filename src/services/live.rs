//! Live tracking for server-sent event streams: a hub, keyed by account, that
//! fans the GPS fixes out to the streams open on the account, and keeps the
//! account's latest fixes in a bounded ring so that a client that reconnects
//! resumes where it was.
//!
//! - **What is published**: only fixes that are durable and were stored (not
//!   duplicates): the GPS write path publishes once its group commit answered
//!   (`tracking::ingest`), before the poster is answered.
//! - **Nobody listening costs one atomic load** per GPS request: no lock, no
//!   allocation. The account's entry (its *feed*) exists only while a stream of
//!   the account is open, and for [`LiveSettings::resume_window`] after the last
//!   one closed, so that a client can reconnect and resume.
//! - **Ids** are `<epoch>-<n>`: `n` counts the feed's events from 1, `epoch` is
//!   random per feed (a restart, or a feed dropped after its resume window, starts
//!   a new one), so an id from elsewhere is recognised as stale rather than
//!   misread as a position in the current sequence.
//! - **Resume**: the events after the client's id are replayed from the ring if
//!   it still holds them all; otherwise the client gets `event: reset` and must
//!   re-read the tracking views.
//! - **Bounded buffers**: each stream has a channel of [`LiveSettings::buffer`]
//!   events; publishing never waits. A stream whose channel is full when an event
//!   comes is dropped: it is sent what it had buffered, then `event: overflow`,
//!   and ends. Memory per stream never grows past its channel.
//!
//! - **Credentials**: a stream is opened with a credential (an API key, a
//!   dashboard session) and ends, with `event: revoked` or `event: expired`,
//!   when the [`Ending`] it was opened with resolves (`services::stream_guard`
//!   watches the credential).
//! - **A cap per account**: an account holds at most its plan's number of
//!   streams open at once (on this instance); one more is refused.
//!
//! Frames are formatted once per event, not once per stream: every stream of the
//! account is sent the same bytes.

mod connection;
mod event_id;
mod stream_end;
mod tap;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use dashmap::mapref::entry::Entry;
use futures_util::stream::BoxStream;
use tokio::sync::{mpsc, watch};
use tokio::time::{Interval, MissedTickBehavior};

use crate::domain::event::{self, EventType};
use crate::domain::ids::{AccountId, LoadId};
use crate::shared_map::SharedMap;
use connection::{Connection, Open, RETRY_FRAME, replay};
pub use event_id::{EventId, Resume};
pub use stream_end::{Ending, StreamEnd, TooManyStreams};
use tap::Tap;
pub use tap::parse_tap_line;

/// Streams open now (set when `/metrics` is scraped).
pub const STREAMS_METRIC: &str = "freight_tracking_streams";
/// Streams dropped because their client fell behind.
pub const DROPPED_METRIC: &str = "freight_tracking_stream_dropped_total";

/// The `event:` of a stored fix.
pub const TRACKING_EVENT: &str = "tracking.updated";
/// The committed events streams carry as their webhooks do (fixes are sent
/// as `tracking.updated` frames of their own, with the load's ETA).
pub(super) const STREAMED: [EventType; 6] = [
    EventType::LoadArrived,
    EventType::LoadDeparted,
    EventType::LoadStopSkipped,
    EventType::LoadEtaChanged,
    EventType::LoadDetentionStarted,
    EventType::LoadStatusChanged,
];

#[derive(Debug, Clone, Copy)]
pub struct LiveSettings {
    /// Events per account kept for resuming.
    pub ring: usize,
    /// Events a stream may have waiting to be sent; one more and it is dropped.
    pub buffer: usize,
    /// A comment line is sent after this long without an event, so that idle
    /// connections (and proxies) stay open and a gone client is noticed.
    pub heartbeat: Duration,
    /// After an account's last stream closes, its ring is kept (and fed) this
    /// long, so that a client that reconnects can resume.
    pub resume_window: Duration,
}

impl Default for LiveSettings {
    fn default() -> Self {
        LiveSettings {
            ring: 1024,
            buffer: 256,
            heartbeat: Duration::from_secs(15),
            resume_window: Duration::from_secs(300),
        }
    }
}

/// A stored fix to publish: its load and the JSON of its `data` line (one line).
pub struct Update {
    pub load: LoadId,
    /// The frame's `event:` name: `tracking.updated`, a milestone's event
    /// type (`load.arrived`, `load.departed`, `load.eta_changed`,
    /// `load.detention_started`), or `load.status_changed`.
    pub kind: &'static str,
    pub data: String,
}

/// The stream of one connection: SSE frames, ending on overflow, shutdown, or
/// its credential's end.
pub type LiveStream = BoxStream<'static, Bytes>;

/// The hub; cheap to clone.
#[derive(Clone)]
pub struct LiveHub(Arc<Hub>);

struct Hub {
    settings: LiveSettings,
    /// Accounts with a stream open, or closed less than the resume window ago.
    feeds: SharedMap<AccountId, Arc<Feed>>,
    /// How many feeds there are, read without a lock: while it is zero,
    /// publishing is this one load.
    feed_count: AtomicUsize,
    /// Other instances' taps on accounts' updates stored here (`tap`).
    taps: SharedMap<AccountId, Vec<Tap>>,
    tap_count: AtomicUsize,
    next_tap: AtomicU64,
    /// Told of every account whose first stream opens here (so that the
    /// cluster taps the other instances for it; see `on_new_feed`).
    new_feed: std::sync::OnceLock<NewFeedHook>,
    streams: AtomicUsize,
    dropped: AtomicU64,
    shutdown: watch::Sender<bool>,
}

struct Feed {
    epoch: u64,
    state: Mutex<FeedState>,
}

#[derive(Default)]
struct FeedState {
    /// The number of the latest event (0: none yet).
    last: u64,
    /// Events up to this number have left the ring.
    evicted: u64,
    /// The latest events, oldest first.
    ring: VecDeque<Event>,
    subscribers: Vec<Subscriber>,
    next_subscriber: u64,
    /// Streams open. A dropped subscriber leaves `subscribers` at once, but its
    /// stream stays open until it has sent what it had buffered.
    open: usize,
    /// Changes each time the last stream closes; the expiry timer started then
    /// removes the feed only if it is still the same.
    idle_since: u64,
}

struct Event {
    seq: u64,
    load: LoadId,
    frame: Bytes,
}

struct Subscriber {
    id: u64,
    /// `None`: every load of the account.
    load: Option<LoadId>,
    events: mpsc::Sender<Bytes>,
    overflowed: Arc<AtomicBool>,
}

impl Subscriber {
    fn wants(&self, load: &LoadId) -> bool {
        self.load.as_ref().is_none_or(|mine| mine == load)
    }
}

impl Hub {
    /// A stream's heartbeat: it ticks after each period without a frame.
    fn heartbeat(&self) -> Interval {
        let period = self.settings.heartbeat.max(Duration::from_millis(1));
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        heartbeat
    }
}

impl Feed {
    fn new() -> Self {
        Feed {
            epoch: rand::random(),
            state: Mutex::new(FeedState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn id(&self, seq: u64) -> EventId {
        EventId {
            epoch: self.epoch,
            seq,
        }
    }
}

type NewFeedHook = Box<dyn Fn(&LiveHub, &AccountId) + Send + Sync>;

impl LiveHub {
    pub fn new(settings: LiveSettings) -> Self {
        LiveHub(Arc::new(Hub {
            settings,
            feeds: SharedMap::default(),
            feed_count: AtomicUsize::new(0),
            taps: SharedMap::default(),
            tap_count: AtomicUsize::new(0),
            next_tap: AtomicU64::new(0),
            new_feed: std::sync::OnceLock::new(),
            streams: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            shutdown: watch::Sender::new(false),
        }))
    }

    /// Whether anything of the account is streamed (or resumable), here or
    /// through another instance's tap. The usual answer, no, costs two atomic
    /// loads while no account streams at all.
    pub fn listening(&self, account: &AccountId) -> bool {
        self.streaming(account)
            || (self.0.tap_count.load(Ordering::Acquire) > 0 && self.0.taps.contains_key(account))
    }

    /// Whether a stream of the account is open here (or in its resume window).
    pub fn streaming(&self, account: &AccountId) -> bool {
        self.0.feed_count.load(Ordering::Acquire) > 0 && self.0.feeds.contains_key(account)
    }

    /// Calls `hook` with each account whose first stream opens here.
    pub fn on_new_feed(&self, hook: impl Fn(&LiveHub, &AccountId) + Send + Sync + 'static) {
        let _ = self.0.new_feed.set(Box::new(hook));
    }

    /// Sends fixes stored on this instance to the account's streams, in
    /// order, keeps them for resuming, and hands them to the other
    /// instances' taps on the account.
    pub fn publish(&self, account: &AccountId, updates: Vec<Update>) {
        if updates.is_empty() {
            return;
        }
        if self.0.tap_count.load(Ordering::Acquire) > 0 {
            self.feed_taps(account, &updates);
        }
        self.publish_relayed(account, updates);
    }

    /// Sends the events just committed here that streams carry (a load's
    /// milestones and status changes) to their accounts' streams and taps,
    /// with their webhooks' `data`: the one way they reach the streams, so a
    /// client reading only a stream learns that its load was delivered.
    pub fn publish_committed(&self, events: &[event::Event]) {
        for event in events.iter().filter(|event| STREAMED.contains(&event.kind)) {
            if self.listening(&event.account_id) {
                let update = Update {
                    load: event.load_id.clone(),
                    kind: event.kind.as_str(),
                    data: event.data.to_string(),
                };
                self.publish(&event.account_id, vec![update]);
            }
        }
    }

    /// Sends fixes to the account's streams here, in order, and keeps them
    /// for resuming (not to taps: fixes stored on another instance, read
    /// from a tap there, come here). Does nothing if the account has no feed.
    pub fn publish_relayed(&self, account: &AccountId, updates: Vec<Update>) {
        if updates.is_empty() || !self.streaming(account) {
            return;
        }
        let Some(feed) = self.0.feeds.get(account).map(|f| f.clone()) else {
            return;
        };
        let mut dropped = 0;
        let mut state = feed.state();
        for update in updates {
            state.last += 1;
            let seq = state.last;
            let frame = format!(
                "id: {}\nevent: {}\ndata: {}\n\n",
                feed.id(seq),
                update.kind,
                update.data
            );
            let event = Event {
                seq,
                load: update.load,
                frame: Bytes::from(frame),
            };
            state.subscribers.retain(|subscriber| {
                if !subscriber.wants(&event.load) {
                    return true;
                }
                match subscriber.events.try_send(event.frame.clone()) {
                    Ok(()) => true,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        subscriber.overflowed.store(true, Ordering::Release);
                        dropped += 1;
                        false
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                }
            });
            if state.ring.len() == self.0.settings.ring
                && let Some(oldest) = state.ring.pop_front()
            {
                state.evicted = oldest.seq;
            }
            if self.0.settings.ring > 0 {
                state.ring.push_back(event);
            } else {
                state.evicted = seq;
            }
        }
        drop(state);
        if dropped > 0 {
            self.0.dropped.fetch_add(dropped, Ordering::Relaxed);
            metrics::counter!(DROPPED_METRIC).increment(dropped);
            tracing::info!(account = %account, streams = dropped, "tracking streams that fell behind were dropped");
        }
    }

    /// Opens a stream of the account's fixes (of one load, or all), starting
    /// as `resume` says, unless the account holds `limit` streams open
    /// already. The stream ends when `ending` resolves.
    pub fn subscribe(
        &self,
        account: &AccountId,
        load: Option<LoadId>,
        resume: Resume,
        limit: u32,
        ending: Ending,
    ) -> Result<LiveStream, TooManyStreams> {
        let (events, receiver) = mpsc::channel(self.0.settings.buffer.max(1));
        let overflowed = Arc::new(AtomicBool::new(false));
        let mut queued = VecDeque::from([Bytes::from_static(RETRY_FRAME)]);
        // Registered under the map's entry lock, so the expiry of an idle feed
        // cannot remove it between being found here and being subscribed to.
        let entry = match self.0.feeds.entry(account.clone()) {
            Entry::Occupied(entry) => entry.into_ref(),
            Entry::Vacant(entry) => {
                self.0.feed_count.fetch_add(1, Ordering::AcqRel);
                if let Some(hook) = self.0.new_feed.get() {
                    hook(self, account);
                }
                entry.insert(Arc::new(Feed::new()))
            }
        };
        let feed = entry.value().clone();
        let mut state = feed.state();
        // Counted under the feed's lock, so streams opened at once cannot all
        // pass. A new feed has none open, so a refusal never leaves an empty
        // feed behind without an expiry.
        if state.open >= limit.max(1) as usize {
            return Err(TooManyStreams { limit });
        }
        queued.extend(replay(&feed, &state, load.as_ref(), resume));
        let subscriber = state.next_subscriber;
        state.next_subscriber += 1;
        state.subscribers.push(Subscriber {
            id: subscriber,
            load,
            events,
            overflowed: overflowed.clone(),
        });
        state.open += 1;
        drop(state);
        drop(entry);
        self.0.streams.fetch_add(1, Ordering::Relaxed);
        let connection = Connection {
            queued,
            events: receiver,
            overflowed,
            heartbeat: self.0.heartbeat(),
            shutdown: self.0.shutdown.subscribe(),
            ending,
            finished: false,
            _open: Open {
                hub: self.0.clone(),
                account: account.clone(),
                feed,
                subscriber,
            },
        };
        Ok(connection.into_stream())
    }

    /// Ends every stream, open or opened from now on (the server is stopping:
    /// a stream would otherwise hold the graceful shutdown until its timeout).
    pub fn shutdown(&self) {
        self.0.shutdown.send_replace(true);
    }

    /// Streams open now.
    pub fn streams(&self) -> usize {
        self.0.streams.load(Ordering::Relaxed)
    }

    /// Streams dropped so far because they fell behind.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
