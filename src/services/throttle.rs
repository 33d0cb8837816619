//! Attempt limits for the dashboard's sign-in and sign-up: a sliding log of
//! recent attempts per key (a client address, an email address), in memory.
//! Guessing passwords from one address, or at one account from many, slows to
//! the limit; per process, like the API quotas.

use std::collections::VecDeque;

use chrono::{DateTime, Duration, Utc};
use dashmap::DashMap;

pub struct Throttle {
    limit: usize,
    window: Duration,
    attempts: DashMap<String, VecDeque<DateTime<Utc>>>,
}

impl Throttle {
    pub fn new(limit: usize, window: Duration) -> Self {
        Throttle {
            limit,
            window,
            attempts: DashMap::new(),
        }
    }

    /// Whether `key` may try now; when it may not, how many seconds until it may.
    pub fn check(&self, key: &str, now: DateTime<Utc>) -> Result<(), u64> {
        let Some(mut recent) = self.attempts.get_mut(key) else {
            return Ok(());
        };
        while recent.front().is_some_and(|at| *at <= now - self.window) {
            recent.pop_front();
        }
        match recent.len() < self.limit {
            true => Ok(()),
            false => {
                let oldest = *recent.front().expect("full, so not empty");
                let wait = (oldest + self.window - now).num_seconds().max(1);
                Err(wait as u64)
            }
        }
    }

    /// Checks and counts an attempt of `key` in one step, so attempts made at
    /// the same moment cannot all pass the check before any is counted.
    pub fn take(&self, key: &str, now: DateTime<Utc>) -> Result<(), u64> {
        let mut recent = self.attempts.entry(key.to_owned()).or_default();
        while recent.front().is_some_and(|at| *at <= now - self.window) {
            recent.pop_front();
        }
        if recent.len() >= self.limit {
            let oldest = *recent.front().expect("full, so not empty");
            return Err((oldest + self.window - now).num_seconds().max(1) as u64);
        }
        recent.push_back(now);
        Ok(())
    }

    /// Returns an attempt taken with [`take`](Self::take) that turned out not
    /// to count (a sign-in that succeeded).
    pub fn give_back(&self, key: &str) {
        if let Some(mut recent) = self.attempts.get_mut(key) {
            recent.pop_back();
        }
    }

    /// Counts an attempt of `key` (a failed one, for sign-in).
    pub fn count(&self, key: &str, now: DateTime<Utc>) {
        let mut recent = self.attempts.entry(key.to_owned()).or_default();
        recent.push_back(now);
        while recent.len() > self.limit {
            recent.pop_front();
        }
    }

    /// Forgets `key`'s attempts (a successful sign-in clears its failures).
    pub fn clear(&self, key: &str) {
        self.attempts.remove(key);
    }

    /// Drops keys with no attempt inside the window (housekeeping).
    pub fn forget_idle(&self, now: DateTime<Utc>) {
        self.attempts
            .retain(|_, recent| recent.back().is_some_and(|at| *at > now - self.window));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_limit_until_the_oldest_attempt_leaves_the_window() {
        let throttle = Throttle::new(3, Duration::minutes(10));
        let start = Utc::now();
        for n in 0..3 {
            assert!(throttle.check("ip", start).is_ok());
            throttle.count("ip", start + Duration::minutes(n));
        }
        assert_eq!(
            throttle.check("ip", start + Duration::minutes(3)),
            Err(7 * 60)
        );
        assert!(throttle.check("other", start).is_ok());
        assert!(throttle.check("ip", start + Duration::minutes(10)).is_ok());
        throttle.clear("ip");
        assert!(throttle.check("ip", start + Duration::minutes(3)).is_ok());
    }

    #[test]
    fn take_counts_at_once_and_gives_back() {
        let throttle = Throttle::new(2, Duration::minutes(10));
        let now = Utc::now();
        assert!(throttle.take("mail", now).is_ok());
        assert!(throttle.take("mail", now).is_ok());
        assert!(
            throttle.take("mail", now).is_err(),
            "the third attempt, however soon"
        );
        throttle.give_back("mail");
        assert!(throttle.take("mail", now).is_ok());
    }
}
