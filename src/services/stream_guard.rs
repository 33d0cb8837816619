//! Watches the credential a live stream was opened with, so that the stream
//! ends when the credential does: a revoked or expired API key, a signed-out or
//! expired dashboard session, a removed user, a disabled account.
//!
//! A stream is one request that never finishes, so the check made when it
//! opened is not enough. Each stream re-checks its credential
//!
//! - at once when this process changes any credential ([`CredentialChanges`]:
//!   a key revoked, an account disabled, a session ended), so a revocation here
//!   ends the stream within milliseconds;
//! - and every [`RECHECK`] in any case, which covers what no event announces:
//!   an expiry passing, a change made by another instance sharing the store
//!   (seen once this instance's key cache lets go of the record, within its
//!   30 s; sessions are read from storage each time).
//!
//! A check that cannot reach storage keeps the stream: a storage hiccup must
//! not drop every dashboard at once; the next check tries again.

use std::future::Future;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use super::live::{Ending, StreamEnd};

/// How often a stream's credential is checked without a change to prompt it:
/// the bound on how long an expired credential's stream goes on.
pub const RECHECK: Duration = Duration::from_secs(2);

/// Tells the streams' guards that some credential changed, so each checks its
/// own now rather than at its next tick. Cheap to clone.
#[derive(Clone)]
pub struct CredentialChanges(watch::Sender<u64>);

impl Default for CredentialChanges {
    fn default() -> Self {
        CredentialChanges(watch::Sender::new(0))
    }
}

impl CredentialChanges {
    /// A credential was revoked, ended or changed.
    pub fn notify(&self) {
        self.0
            .send_modify(|generation| *generation = generation.wrapping_add(1));
    }

    /// Resolves when the credential that `check` looks at no longer holds,
    /// with what `check` said. `check` runs after every change announced here
    /// and every [`RECHECK`]; `None` means the credential still holds.
    pub fn guard<F, C>(&self, check: C) -> Ending
    where
        C: Fn() -> F + Send + 'static,
        F: Future<Output = Option<StreamEnd>> + Send + 'static,
    {
        let mut changes = self.0.subscribe();
        let guard: BoxFuture<'static, StreamEnd> = Box::pin(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let mut announced = true;
            loop {
                tokio::select! {
                    changed = changes.changed(), if announced => {
                        // The sender lives as long as the services; if it is
                        // gone, the ticks alone go on.
                        announced = changed.is_ok();
                        if !announced {
                            continue;
                        }
                    }
                    _ = tick.tick() => {}
                }
                if let Some(end) = check().await {
                    return end;
                }
            }
        });
        guard
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use tokio::time::Instant;

    use super::*;

    /// A guard over a flag: the credential holds while the flag is down.
    fn flagged(changes: &CredentialChanges) -> (Arc<AtomicBool>, Arc<AtomicUsize>, Ending) {
        let (ended, checks) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (flag, count) = (ended.clone(), checks.clone());
        let guard = changes.guard(move || {
            count.fetch_add(1, Ordering::SeqCst);
            let ended = flag.load(Ordering::SeqCst);
            async move { ended.then_some(StreamEnd::KeyRevoked) }
        });
        (ended, checks, guard)
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_announced_here_is_checked_at_once() {
        let changes = CredentialChanges::default();
        let (ended, checks, guard) = flagged(&changes);
        let guard = tokio::spawn(guard);
        tokio::task::yield_now().await;
        ended.store(true, Ordering::SeqCst);
        let started = Instant::now();
        changes.notify();
        assert_eq!(guard.await.unwrap(), StreamEnd::KeyRevoked);
        assert_eq!(started.elapsed(), Duration::ZERO, "no tick was waited for");
        assert_eq!(checks.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unannounced_end_is_found_at_the_next_tick() {
        let changes = CredentialChanges::default();
        let (ended, checks, guard) = flagged(&changes);
        let started = Instant::now();
        let guard = tokio::spawn(guard);
        tokio::time::sleep(RECHECK * 3 + RECHECK / 2).await;
        assert_eq!(checks.load(Ordering::SeqCst), 3, "a check per tick");
        assert!(!guard.is_finished(), "the credential holds");
        ended.store(true, Ordering::SeqCst);
        assert_eq!(guard.await.unwrap(), StreamEnd::KeyRevoked);
        assert_eq!(started.elapsed(), RECHECK * 4);
    }

    #[tokio::test(start_paused = true)]
    async fn without_announcements_the_ticks_go_on() {
        let changes = CredentialChanges::default();
        let (ended, _, guard) = flagged(&changes);
        drop(changes);
        ended.store(true, Ordering::SeqCst);
        let started = Instant::now();
        assert_eq!(guard.await, StreamEnd::KeyRevoked);
        assert_eq!(started.elapsed(), RECHECK);
    }
}
