//! Wall-clock time, injectable so that expiry logic is tested without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeZone, Utc};

/// Source of "now" for everything that compares against wall-clock time
/// (key expiry, `created_at`). Production uses [`Clock::system`]; tests use a
/// [`ManualClock`] they can move forward.
#[derive(Clone, Default)]
pub struct Clock {
    manual: Option<ManualClock>,
}

impl Clock {
    pub fn system() -> Self {
        Self { manual: None }
    }

    pub fn manual(clock: ManualClock) -> Self {
        Self {
            manual: Some(clock),
        }
    }

    /// Now, truncated to milliseconds: the precision the API shows and stores.
    pub fn now(&self) -> DateTime<Utc> {
        let now = match &self.manual {
            Some(clock) => clock.now(),
            None => Utc::now(),
        };
        // Rebuilt from whole milliseconds: `duration_trunc` is a general rounding
        // routine several times dearer, and this runs for every webhook attempt.
        DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.manual {
            Some(clock) => write!(f, "Clock::manual({})", clock.now()),
            None => f.write_str("Clock::system"),
        }
    }
}

/// A clock that only moves when told to; shared between a test and the server it started.
#[derive(Clone)]
pub struct ManualClock {
    micros: Arc<AtomicI64>,
}

impl ManualClock {
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        Self {
            micros: Arc::new(AtomicI64::new(start.timestamp_micros())),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        let micros = self.micros.load(Ordering::SeqCst);
        Utc.timestamp_micros(micros)
            .single()
            .expect("manual clock holds a valid timestamp")
    }

    pub fn advance(&self, by: chrono::Duration) {
        let delta = by
            .num_microseconds()
            .expect("advance fits in i64 microseconds");
        self.micros.fetch_add(delta, Ordering::SeqCst);
    }
}
