//! Other instances' taps on an account: the updates stored here, as lines, for
//! an instance whose streams of the account would otherwise not hear of them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use tokio::sync::mpsc;

use super::{Hub, LiveHub, LiveStream, STREAMED, TRACKING_EVENT, Update};
use crate::domain::ids::{AccountId, LoadId};

/// Another instance's tap on an account: the updates stored here, as lines.
pub(super) struct Tap {
    id: u64,
    lines: mpsc::Sender<Bytes>,
}

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
    // The kinds a hub publishes: fixes, and the committed events streams carry.
    let kind = std::iter::once(TRACKING_EVENT)
        .chain(STREAMED.iter().map(|streamed| streamed.as_str()))
        .find(|known| *known == kind)?;
    let data = parts.next()?.trim_end_matches('\n').to_owned();
    Some(Update { load, kind, data })
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

impl LiveHub {
    /// Hands the updates to the account's taps; a tap that cannot keep up is
    /// dropped (its instance reconnects).
    pub(super) fn feed_taps(&self, account: &AccountId, updates: &[Update]) {
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
        let heartbeat = self.0.heartbeat();
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
}
