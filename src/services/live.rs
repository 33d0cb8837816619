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

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::shared_map::SharedMap;
use bytes::Bytes;
use dashmap::mapref::entry::Entry;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::{Interval, MissedTickBehavior};

use crate::domain::ids::{AccountId, LoadId};

/// Streams open now (set when `/metrics` is scraped).
pub const STREAMS_METRIC: &str = "freight_tracking_streams";
/// Streams dropped because their client fell behind.
pub const DROPPED_METRIC: &str = "freight_tracking_stream_dropped_total";

/// The `event:` of a stored fix.
pub const TRACKING_EVENT: &str = "tracking.updated";
/// The first frame of every stream: EventSource reconnects after 2 s.
const RETRY_FRAME: &[u8] = b"retry: 2000\n\n";
const KEEP_ALIVE_FRAME: &[u8] = b": keep-alive\n\n";

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

/// The id of an event: the feed's epoch and the event's number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    epoch: u64,
    seq: u64,
}

impl EventId {
    /// An id as this service writes it (`<16 hex digits>-<number>`), else `None`.
    pub fn parse(raw: &str) -> Option<EventId> {
        let (epoch, seq) = raw.trim().split_once('-')?;
        let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
        if epoch.len() != 16 || !digits(epoch, 16) || seq.len() > 20 || !digits(seq, 10) {
            return None;
        }
        Some(EventId {
            epoch: u64::from_str_radix(epoch, 16).ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}-{}", self.epoch, self.seq)
    }
}

/// Where a new stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// From now on.
    Start,
    /// After this event (`Last-Event-ID`): the events since are replayed.
    After(EventId),
    /// After an id that is not one of ours: the client is told to reset.
    Unknown,
}

impl Resume {
    /// Where a `Last-Event-ID` header (as sent, bytes) says to resume; `None`
    /// when it is absent or blank. An id that is not one of ours, text or not,
    /// is `Unknown`: the client is told to reset rather than refused, since a
    /// refusal would stop EventSource from reconnecting.
    pub fn from_last_event_id(raw: Option<&[u8]>) -> Option<Resume> {
        let raw = raw?;
        let text = std::str::from_utf8(raw).map(str::trim);
        match text {
            Ok("") => None,
            Ok(text) => Some(EventId::parse(text).map_or(Resume::Unknown, Resume::After)),
            Err(_) => Some(Resume::Unknown),
        }
    }
}

/// A stored fix to publish: its load and the JSON of its `data` line (one line).
pub struct Update {
    pub load: LoadId,
    /// The frame's `event:` name: `tracking.updated`, or a milestone's event
    /// type (`load.arrived`, `load.departed`, `load.eta_changed`,
    /// `load.detention_started`).
    pub kind: &'static str,
    pub data: String,
}

/// The stream of one connection: SSE frames, ending on overflow, shutdown, or
/// its credential's end.
pub type LiveStream = BoxStream<'static, Bytes>;

/// Why a stream ended on the server's side: its credential no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The API key was revoked or deleted.
    KeyRevoked,
    /// The API key passed its expiry.
    KeyExpired,
    /// The operator disabled the account.
    AccountDisabled,
    /// The session was signed out (here, or "everywhere else"), or its user
    /// was removed or changed their password.
    SessionEnded,
    /// The session passed its lifetime.
    SessionExpired,
}

impl StreamEnd {
    /// The `event:` of the last frame: `expired` or `revoked`.
    pub fn event(self) -> &'static str {
        match self {
            StreamEnd::KeyExpired | StreamEnd::SessionExpired => "expired",
            StreamEnd::KeyRevoked | StreamEnd::AccountDisabled | StreamEnd::SessionEnded => {
                "revoked"
            }
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            StreamEnd::KeyRevoked => "key_revoked",
            StreamEnd::KeyExpired => "key_expired",
            StreamEnd::AccountDisabled => "account_disabled",
            StreamEnd::SessionEnded => "session_ended",
            StreamEnd::SessionExpired => "session_expired",
        }
    }

    fn message(self) -> &'static str {
        match self {
            StreamEnd::KeyRevoked => "the API key this stream was opened with has been revoked",
            StreamEnd::KeyExpired => "the API key this stream was opened with has expired",
            StreamEnd::AccountDisabled => "the account has been disabled",
            StreamEnd::SessionEnded => "this dashboard session has been signed out",
            StreamEnd::SessionExpired => "this dashboard session has expired; log in again",
        }
    }
}

/// Resolves when the stream's credential no longer holds, saying why.
pub type Ending = BoxFuture<'static, StreamEnd>;

/// The account holds as many streams open as its plan allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this account already has {limit} live streams open, the most its plan allows")]
pub struct TooManyStreams {
    pub limit: u32,
}

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

/// Another instance's tap on an account: the updates stored here, as lines.
struct Tap {
    id: u64,
    lines: mpsc::Sender<Bytes>,
}

/// The kinds of update a tap carries, by name (a tap line names its kind).
const KINDS: [&str; 5] = [
    TRACKING_EVENT,
    "load.arrived",
    "load.departed",
    "load.eta_changed",
    "load.detention_started",
];

/// An update as a tap line: `<load>\t<kind>\t<data>\n` (the data is one line).
fn tap_line(update: &Update) -> Bytes {
    Bytes::from(format!(
        "{}\t{}\t{}\n",
        update.load, update.kind, update.data
    ))
}

/// A tap line read back; `None` for a line that is not one.
pub fn parse_tap_line(line: &str) -> Option<Update> {
    let mut parts = line.splitn(3, '\t');
    let load = LoadId::parse(parts.next()?)?;
    let kind = parts.next()?;
    let kind = KINDS.into_iter().find(|k| *k == kind)?;
    let data = parts.next()?.trim_end_matches('\n').to_owned();
    Some(Update { load, kind, data })
}

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

    /// Hands the updates to the account's taps; a tap that cannot keep up is
    /// dropped (its instance reconnects).
    fn feed_taps(&self, account: &AccountId, updates: &[Update]) {
        let Some(mut taps) = self.0.taps.get_mut(account) else {
            return;
        };
        let lines: Vec<Bytes> = updates.iter().map(tap_line).collect();
        taps.retain(|tap| {
            lines
                .iter()
                .all(|line| tap.lines.try_send(line.clone()).is_ok())
        });
    }

    /// A tap on the account: every update stored on this instance from now
    /// on, as lines ([`parse_tap_line`]), and an empty line after each
    /// heartbeat period without one, until the returned stream is dropped,
    /// falls behind by `buffer` lines, or the hub shuts down.
    pub fn tap(&self, account: &AccountId, buffer: usize) -> LiveStream {
        let (lines, receiver) = mpsc::channel(buffer.max(1));
        let id = self.0.next_tap.fetch_add(1, Ordering::Relaxed);
        self.0
            .taps
            .entry(account.clone())
            .or_default()
            .push(Tap { id, lines });
        self.0.tap_count.fetch_add(1, Ordering::AcqRel);
        let guard = TapGuard {
            hub: self.0.clone(),
            account: account.clone(),
            id,
        };
        let shutdown = self.0.shutdown.subscribe();
        let heartbeat = self.0.settings.heartbeat.max(Duration::from_millis(1));
        let mut heartbeat =
            tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        stream::unfold(
            (receiver, shutdown, heartbeat, guard),
            |(mut receiver, mut shutdown, mut heartbeat, guard)| async move {
                let line = tokio::select! {
                    biased;
                    _ = shutdown.wait_for(|stopped| *stopped) => None,
                    line = receiver.recv() => line,
                    // An empty line now and then: the tapping instance
                    // notices a connection that died without closing.
                    _ = heartbeat.tick() => Some(Bytes::from_static(b"\n")),
                }?;
                Some((line, (receiver, shutdown, heartbeat, guard)))
            },
        )
        .boxed()
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
        let heartbeat = self.0.settings.heartbeat.max(Duration::from_millis(1));
        let mut heartbeat =
            tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let connection = Connection {
            queued,
            events: receiver,
            overflowed,
            heartbeat,
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
        Ok(stream::unfold(connection, |mut connection| async move {
            let frame = connection.next().await?;
            Some((frame, connection))
        })
        .boxed())
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

/// What a new stream is sent before live events: the events after the
/// client's id, or a reset if they are not all in the ring.
fn replay(feed: &Feed, state: &FeedState, load: Option<&LoadId>, resume: Resume) -> Vec<Bytes> {
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

/// The last frame of a stream whose credential ended.
fn ending_frame(end: StreamEnd) -> Bytes {
    let data = json!({"reason": end.reason(), "message": end.message()});
    Bytes::from(format!("event: {}\ndata: {data}\n\n", end.event()))
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
struct Connection {
    /// Frames to send before live ones: the retry hint and the replay (or reset).
    queued: VecDeque<Bytes>,
    events: mpsc::Receiver<Bytes>,
    overflowed: Arc<AtomicBool>,
    heartbeat: Interval,
    shutdown: watch::Receiver<bool>,
    /// Resolves when the credential the stream was opened with ends.
    ending: Ending,
    finished: bool,
    _open: Open,
}

impl Connection {
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
struct Open {
    hub: Arc<Hub>,
    account: AccountId,
    feed: Arc<Feed>,
    subscriber: u64,
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

/// Removes a tap when its stream is dropped.
struct TapGuard {
    hub: Arc<Hub>,
    account: AccountId,
    id: u64,
}

impl Drop for TapGuard {
    fn drop(&mut self) {
        self.hub.tap_count.fetch_sub(1, Ordering::AcqRel);
        self.hub.taps.remove_if_mut(&self.account, |_, taps| {
            taps.retain(|tap| tap.id != self.id);
            taps.is_empty()
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

#[cfg(test)]
mod tests;
