//! When a failed delivery is tried again.

use std::time::Duration;

use rand::Rng;

/// DESIGN.md's schedule: the delay before each attempt, the first immediate.
/// After the last attempt fails, the delivery is marked failed.
pub const DEFAULT_SCHEDULE: [Duration; 10] = [
    Duration::from_secs(0),
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(14 * 3600),
    Duration::from_secs(20 * 3600),
    Duration::from_secs(24 * 3600),
];

/// Retry timing, configurable so tests can shrink it.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub schedule: Vec<Duration>,
    /// Each delay is moved by up to this fraction either way, so receivers that
    /// come back are not hit by every retry at the same instant.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            schedule: DEFAULT_SCHEDULE.to_vec(),
            jitter: 0.1,
        }
    }
}

impl RetryPolicy {
    /// The delay before attempt number `attempt` (1-based), or `None` when the
    /// schedule is exhausted.
    pub fn delay_before(&self, attempt: u32) -> Option<Duration> {
        let base = *self.schedule.get(attempt.checked_sub(1)? as usize)?;
        if base.is_zero() || self.jitter <= 0.0 {
            return Some(base);
        }
        let factor = 1.0 + rand::rng().random_range(-self.jitter..=self.jitter);
        // Whole milliseconds, so that `next_attempt_at` (now, in milliseconds,
        // plus this) is shown in milliseconds like every time the service makes.
        let jittered = base.mul_f64(factor);
        Some(Duration::from_millis(jittered.as_millis() as u64))
    }

    pub fn attempts(&self) -> u32 {
        self.schedule.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_schedule_with_bounded_jitter() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_before(1), Some(Duration::ZERO));
        for _ in 0..100 {
            let delay = policy.delay_before(3).unwrap();
            let d = delay.as_secs_f64();
            assert!((270.0..=330.0).contains(&d), "{d}");
            assert_eq!(delay.subsec_nanos() % 1_000_000, 0, "whole milliseconds");
        }
        assert_eq!(policy.delay_before(11), None);
        assert_eq!(policy.delay_before(0), None);
        assert_eq!(policy.attempts(), 10);
    }
}
