//! Per-account request quotas over a rolling hour.
//!
//! Each account has 60 one-minute counters: a request is admitted while the
//! current minute and the 59 before it hold fewer requests than the plan allows.
//! The window slides a minute at a time, so there is no hour boundary at which a
//! fresh quota stacks on a spent one (a fixed window allows twice the quota across
//! its boundary), and draining a quota quickly gives exact figures: the limit, then
//! one fewer per request, then 429.
//!
//! The state is a sharded map of small mutex-guarded arrays, touched once per
//! request with no storage round trip. With the embedded store it is all there
//! is: quotas restart when the service does. With a store shared by several
//! instances, [`share_counts`] adds each instance's counts to per-account
//! minute counters in the store every [`SHARE_INTERVAL`] and reads back what the
//! others counted, which the windows then include. The error is bounded by
//! that interval: an account can get past its limit by at most what the other
//! instances admit for it in one interval before they all know it.
//! Counter adds are not idempotent: a minute whose add failed (it may have
//! applied) is not added again, so a failure under-counts by that minute's
//! requests rather than double-counting them into early 429s ([`add_each`]).

use std::sync::Mutex;

use crate::shared_map::SharedMap;

use crate::clock::Clock;
use crate::domain::ids::AccountId;

/// The window, in one-minute slots.
const SLOTS: usize = 60;
const SLOT_SECONDS: i64 = 60;
pub const WINDOW_SECONDS: i64 = SLOTS as i64 * SLOT_SECONDS;

/// What the limiter decided, with everything the response headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub allowed: bool,
    /// Requests per rolling hour.
    pub limit: u32,
    /// Requests left in the window after this one.
    pub remaining: u32,
    /// When (Unix seconds) the oldest requests counted now leave the window, so
    /// `remaining` grows; on a refusal, when a request will be admitted again.
    pub reset: i64,
    /// On a refusal: seconds to wait before a request will be admitted.
    pub retry_after: Option<u64>,
    /// When (Unix seconds) the check was made.
    pub checked_at: i64,
}

impl Quota {
    /// Seconds from the check to `reset`, at least 0.
    pub fn reset_in(&self) -> i64 {
        (self.reset - self.checked_at).max(0)
    }
}

/// How often counts are shared through a store shared by several instances.
pub const SHARE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug)]
struct Window {
    /// Requests this instance admitted, per minute slot.
    counts: [u32; SLOTS],
    /// Of `counts`, those not yet added to the shared counters.
    unshared: [u32; SLOTS],
    /// Requests other instances admitted, as last read from the shared counters.
    others: [u32; SLOTS],
    /// The sum of `counts` and `others`, kept so a check does not add up slots.
    used: u64,
    /// The minute (Unix seconds / 60) the newest slot holds.
    newest: i64,
}

impl Window {
    fn new(minute: i64) -> Self {
        Window {
            counts: [0; SLOTS],
            unshared: [0; SLOTS],
            others: [0; SLOTS],
            used: 0,
            newest: minute,
        }
    }

    /// Forgets the minutes that have left the window by `minute`.
    fn advance(&mut self, minute: i64) {
        if minute <= self.newest {
            return;
        }
        let gone = (minute - self.newest).min(SLOTS as i64);
        for step in 1..=gone {
            let i = slot(self.newest + step);
            self.used -= u64::from(self.counts[i]) + u64::from(self.others[i]);
            self.counts[i] = 0;
            self.unshared[i] = 0;
            self.others[i] = 0;
        }
        self.newest = minute;
    }

    /// The counts not yet shared, by minute, marked shared.
    fn take_unshared(&mut self) -> Vec<(i64, u32)> {
        let first = self.newest - SLOTS as i64 + 1;
        let mut out = Vec::new();
        for minute in first..=self.newest {
            let count = std::mem::take(&mut self.unshared[slot(minute)]);
            if count > 0 {
                out.push((minute, count));
            }
        }
        out
    }

    /// Takes what the shared counters say each minute holds, all instances
    /// together: the others' part is that less what this one has shared.
    fn merge_shared(&mut self, totals: &[(i64, u64)]) {
        let first = self.newest - SLOTS as i64 + 1;
        for &(minute, total) in totals {
            if minute < first || minute > self.newest {
                continue;
            }
            let i = slot(minute);
            let shared_mine = u64::from(self.counts[i].saturating_sub(self.unshared[i]));
            let others = total.saturating_sub(shared_mine).min(u64::from(u32::MAX)) as u32;
            self.used = self.used - u64::from(self.others[i]) + u64::from(others);
            self.others[i] = others;
        }
    }

    fn used(&self) -> u64 {
        self.used
    }

    /// The minutes in the window, oldest first, with their counts (all
    /// instances' as far as known).
    fn oldest_first(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        let first = self.newest - SLOTS as i64 + 1;
        (first..=self.newest).map(|minute| {
            let i = slot(minute);
            (minute, self.counts[i] + self.others[i])
        })
    }

    /// When the window will hold fewer than `limit` requests (`used` now).
    fn admits_again_at(&self, used: u64, limit: u32) -> i64 {
        let mut left = used;
        for (minute, count) in self.oldest_first() {
            left -= u64::from(count);
            if left < u64::from(limit) {
                return (minute + SLOTS as i64) * SLOT_SECONDS;
            }
        }
        (self.newest + SLOTS as i64) * SLOT_SECONDS
    }
}

fn slot(minute: i64) -> usize {
    minute.rem_euclid(SLOTS as i64) as usize
}

pub struct RateLimiter {
    clock: Clock,
    windows: SharedMap<AccountId, Mutex<Window>>,
}

impl RateLimiter {
    pub fn new(clock: Clock) -> Self {
        RateLimiter {
            clock,
            windows: SharedMap::default(),
        }
    }

    /// Counts a request of `account` against `limit` requests per rolling hour, if
    /// the window has room. The limit is the account's plan as it stands now, so a
    /// plan change applies to the very next request.
    pub fn check(&self, account: &AccountId, limit: u32) -> Quota {
        let now = self.clock.now().timestamp();
        let minute = now.div_euclid(SLOT_SECONDS);
        // A read lock on the map's shard for the usual case, a known account.
        let entry = match self.windows.get(account) {
            Some(entry) => entry,
            None => self
                .windows
                .entry(account.clone())
                .or_insert_with(|| Mutex::new(Window::new(minute)))
                .downgrade(),
        };
        let mut window = entry.lock().unwrap_or_else(|p| p.into_inner());
        window.advance(minute);
        let used = window.used();
        if used >= u64::from(limit) {
            let at = window.admits_again_at(used, limit);
            return Quota {
                allowed: false,
                limit,
                remaining: 0,
                reset: at,
                retry_after: Some((at - now).max(1) as u64),
                checked_at: now,
            };
        }
        window.counts[slot(minute)] += 1;
        window.unshared[slot(minute)] += 1;
        window.used += 1;
        let used = used + 1;
        let oldest = window
            .oldest_first()
            .find(|(_, count)| *count > 0)
            .map_or(minute, |(m, _)| m);
        Quota {
            allowed: true,
            limit,
            remaining: (u64::from(limit) - used) as u32,
            reset: (oldest + SLOTS as i64) * SLOT_SECONDS,
            retry_after: None,
            checked_at: now,
        }
    }

    /// What `account` has used of `limit` in the window now, without counting a
    /// request (the dashboard's plan page): requests used, and when (Unix
    /// seconds) the oldest of them leave the window, if any are counted.
    pub fn usage(&self, account: &AccountId) -> (u64, Option<i64>) {
        let minute = self.clock.now().timestamp().div_euclid(SLOT_SECONDS);
        let Some(entry) = self.windows.get(account) else {
            return (0, None);
        };
        let mut window = entry.lock().unwrap_or_else(|p| p.into_inner());
        window.advance(minute);
        let oldest = window
            .oldest_first()
            .find(|(_, count)| *count > 0)
            .map(|(m, _)| (m + SLOTS as i64) * SLOT_SECONDS);
        (window.used(), oldest)
    }

    /// Forgets accounts with nothing in their window (run now and then, so a
    /// million one-off accounts do not stay in memory).
    pub fn forget_idle(&self) {
        let minute = self.clock.now().timestamp().div_euclid(SLOT_SECONDS);
        self.windows.retain(|_, window| {
            let window = window.get_mut().unwrap_or_else(|p| p.into_inner());
            window.advance(minute);
            window.used() > 0
        });
    }

    pub fn tracked_accounts(&self) -> usize {
        self.windows.len()
    }

    /// Every account's counts not yet shared, by minute, marked shared.
    fn take_unshared(&self) -> Vec<(AccountId, Vec<(i64, u32)>)> {
        let minute = self.clock.now().timestamp().div_euclid(SLOT_SECONDS);
        let mut out = Vec::new();
        self.windows.retain(|account, window| {
            let window = window.get_mut().unwrap_or_else(|p| p.into_inner());
            window.advance(minute);
            let unshared = window.take_unshared();
            if !unshared.is_empty() {
                out.push((account.clone(), unshared));
            }
            true
        });
        out
    }

    /// Puts back counts whose sharing failed, to be shared next time.
    fn restore_unshared(&self, account: &AccountId, counts: &[(i64, u32)]) {
        if let Some(entry) = self.windows.get(account) {
            let mut window = entry.lock().unwrap_or_else(|p| p.into_inner());
            let first = window.newest - SLOTS as i64 + 1;
            for &(minute, count) in counts {
                if (first..=window.newest).contains(&minute) {
                    window.unshared[slot(minute)] += count;
                }
            }
        }
    }

    /// Takes an account's shared counters: `(minute, all instances' requests)`.
    fn merge_shared(&self, account: &AccountId, totals: &[(i64, u64)]) {
        let minute = self.clock.now().timestamp().div_euclid(SLOT_SECONDS);
        if let Some(entry) = self.windows.get(account) {
            let mut window = entry.lock().unwrap_or_else(|p| p.into_inner());
            window.advance(minute);
            window.merge_shared(totals);
        }
    }
}

/// Shares this instance's counts through `storage` every [`SHARE_INTERVAL`]
/// and reads back the totals of the accounts it counted (see the module doc).
/// Runs until `limiter` is dropped.
pub async fn share_counts(
    limiter: std::sync::Weak<RateLimiter>,
    storage: std::sync::Arc<dyn crate::storage::Storage>,
) {
    let mut tick = tokio::time::interval(SHARE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(limiter) = limiter.upgrade() else {
            return;
        };
        let window_start =
            limiter.clock.now().timestamp().div_euclid(SLOT_SECONDS) - SLOTS as i64 + 1;
        for (account, counts) in limiter.take_unshared() {
            let add = |minute: (i64, u32)| {
                let storage = storage.clone();
                let account = account.clone();
                async move { storage.add_request_counts(&account, &[minute]).await }
            };
            if let Err((error, unsent)) = add_each(&counts, add).await {
                limiter.restore_unshared(&account, &unsent);
                tracing::warn!(error = %crate::telemetry::error_chain(&error), "could not share rate-limit counts; the minute that failed is not added again");
                continue;
            }
            match storage.request_counts(&account, window_start).await {
                Ok(totals) => limiter.merge_shared(&account, &totals),
                Err(error) => {
                    tracing::warn!(error = %crate::telemetry::error_chain(&error), "could not read shared rate-limit counts")
                }
            }
        }
    }
}

/// Adds `counts` one minute at a time. A counter add is not idempotent, and
/// a failed one may have applied (a timeout after the replicas wrote it), so a
/// failed minute is never added again: the shared count may be short by it
/// (an account can then get past its limit by that much), never doubled (which
/// would answer 429 before the limit). A minute refused before it was sent
/// (writes stopped for clock skew) did not apply, and is kept with the rest. On
/// a failure, the error and the minutes to add on the next pass.
async fn add_each<F, Fut>(
    counts: &[(i64, u32)],
    mut add: F,
) -> Result<(), (crate::storage::StorageError, Vec<(i64, u32)>)>
where
    F: FnMut((i64, u32)) -> Fut,
    Fut: std::future::Future<Output = crate::storage::StorageResult<()>>,
{
    for (i, &minute) in counts.iter().enumerate() {
        if let Err(error) = add(minute).await {
            let from = if error.was_not_sent() { i } else { i + 1 };
            return Err((error, counts[from..].to_vec()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn a_failed_counter_add_is_not_added_again_and_the_rest_wait_for_the_next_pass() {
        let counts = [(100, 5), (101, 7), (102, 2)];
        let added = Mutex::new(Vec::new());
        let outcome = add_each(&counts, |minute| {
            let failed = minute.0 == 101;
            added.lock().unwrap().push(minute);
            async move {
                match failed {
                    // Perhaps applied: the replicas may have written it.
                    true => Err(crate::storage::StorageError::unavailable(
                        std::io::Error::other("timed out"),
                    )),
                    false => Ok(()),
                }
            }
        })
        .await;
        let (_, unsent) = outcome.unwrap_err();
        assert_eq!(unsent, [(102, 2)], "only what was never tried is kept");
        assert_eq!(*added.lock().unwrap(), [(100, 5), (101, 7)]);
        assert!(add_each(&counts, |_| async { Ok(()) }).await.is_ok());
    }

    #[tokio::test]
    async fn a_minute_refused_before_it_was_sent_is_kept_for_the_next_pass() {
        let counts = [(100, 5), (101, 7), (102, 2)];
        let outcome = add_each(&counts, |minute| async move {
            match minute.0 {
                // Writes stopped for clock skew: nothing reached the store.
                101 => Err(crate::storage::StorageError::refused_before_sending(
                    std::io::Error::other("clock skew"),
                )),
                _ => Ok(()),
            }
        })
        .await;
        let (error, unsent) = outcome.unwrap_err();
        assert!(error.was_not_sent());
        assert_eq!(unsent, [(101, 7), (102, 2)]);
        let timed_out = crate::storage::StorageError::unavailable(std::io::Error::other("x"));
        assert!(!timed_out.was_not_sent());
    }

    fn limiter(at: &str) -> (RateLimiter, ManualClock) {
        let start = crate::domain::timestamp::parse_utc(at).unwrap();
        let manual = ManualClock::starting_at(start);
        (RateLimiter::new(Clock::manual(manual.clone())), manual)
    }

    #[test]
    fn drains_exactly_then_refuses_until_the_oldest_minute_leaves() {
        let (limiter, clock) = limiter("2026-11-21T10:00:30Z");
        let account = AccountId::generate();
        let ten = crate::domain::timestamp::parse_utc("2026-11-21T10:00:00Z")
            .unwrap()
            .timestamp();
        for n in 0..1000u32 {
            let quota = limiter.check(&account, 1000);
            assert!(quota.allowed);
            assert_eq!(quota.remaining, 999 - n);
            assert_eq!(quota.reset, ten + 3600, "the 10:00 minute leaves at 11:00");
        }
        let refused = limiter.check(&account, 1000);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.reset, ten + 3600);
        assert_eq!(refused.retry_after, Some(3600 - 30));

        // No boundary burst: at 10:59:59 still refused, at 11:00:00 all back.
        clock.advance(chrono::Duration::seconds(3600 - 30 - 1));
        assert!(!limiter.check(&account, 1000).allowed);
        clock.advance(chrono::Duration::seconds(1));
        let quota = limiter.check(&account, 1000);
        assert!(quota.allowed);
        assert_eq!(quota.remaining, 999);
    }

    #[test]
    fn the_window_slides_a_minute_at_a_time() {
        let (limiter, clock) = limiter("2026-11-21T10:00:00Z");
        let account = AccountId::generate();
        // 3 requests in minute 0, 2 in minute 30.
        for _ in 0..3 {
            limiter.check(&account, 5);
        }
        clock.advance(chrono::Duration::minutes(30));
        for _ in 0..2 {
            limiter.check(&account, 5);
        }
        let refused = limiter.check(&account, 5);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after, Some(30 * 60));
        // A downgrade: with 3 allowed, the first minute leaving makes room; with 2,
        // both must leave.
        let refused = limiter.check(&account, 3);
        assert_eq!(refused.retry_after, Some(30 * 60));
        let refused = limiter.check(&account, 2);
        assert_eq!(refused.retry_after, Some(60 * 60));
        clock.advance(chrono::Duration::minutes(30));
        let quota = limiter.check(&account, 5);
        assert!(quota.allowed);
        assert_eq!(quota.remaining, 2);
        // An upgrade applies at once.
        assert_eq!(limiter.check(&account, 100).remaining, 96);
    }

    #[test]
    fn accounts_are_counted_apart_and_idle_ones_forgotten() {
        let (limiter, clock) = limiter("2026-11-21T10:00:00Z");
        let (a, b) = (AccountId::generate(), AccountId::generate());
        assert_eq!(limiter.check(&a, 1).remaining, 0);
        assert!(!limiter.check(&a, 1).allowed);
        assert!(limiter.check(&b, 1).allowed);
        clock.advance(chrono::Duration::hours(2));
        limiter.forget_idle();
        assert_eq!(limiter.tracked_accounts(), 0);
        assert!(limiter.check(&a, 1).allowed);
    }

    #[test]
    fn shared_counts_of_other_instances_count_against_the_limit() {
        let (limiter, clock) = limiter("2026-11-21T10:00:30Z");
        let account = AccountId::generate();
        let minute = clock.now().timestamp().div_euclid(60);
        for _ in 0..3 {
            assert!(limiter.check(&account, 10).allowed);
        }
        // Shared: this instance's 3 go to the store once, and are marked shared.
        assert_eq!(
            limiter.take_unshared(),
            [(account.clone(), vec![(minute, 3)])]
        );
        assert!(limiter.take_unshared().is_empty());
        // The store says 8 this minute (3 mine, 5 others') and 1 a minute ago.
        limiter.merge_shared(&account, &[(minute, 8), (minute - 1, 1)]);
        assert_eq!(limiter.usage(&account).0, 9);
        assert_eq!(limiter.check(&account, 10).remaining, 0, "the 10th request");
        assert!(!limiter.check(&account, 10).allowed);
        // Reading the totals again does not count the others twice, and a
        // count not yet shared is not taken for the others'.
        limiter.merge_shared(&account, &[(minute, 8), (minute - 1, 1)]);
        assert_eq!(limiter.usage(&account).0, 10);
        // A failed share is shared next time; the others' minutes leave the
        // window like this instance's.
        let unshared = limiter.take_unshared();
        assert_eq!(unshared, [(account.clone(), vec![(minute, 1)])]);
        limiter.restore_unshared(&account, &unshared[0].1);
        assert_eq!(limiter.take_unshared(), unshared);
        clock.advance(chrono::Duration::minutes(60));
        assert_eq!(limiter.usage(&account).0, 0);
    }
}
