//! Each device's own allowance of positions, apart from its account's hourly
//! API quota: a phone posting every few seconds must not use up the quota the
//! shipper's own integration runs on, and one device must not flood the
//! account's loads.
//!
//! A token bucket per device: `positions_per_second` refill it, up to `burst`.
//! A post is taken while the bucket is not empty, and costs one per position
//! (a heartbeat costs one), once per load the position feeds. A batch larger
//! than what is left is taken whole and drives the bucket below zero, so the
//! device then waits that debt off: a phone that was offline for an hour sends
//! its backlog at once, and is slowed afterwards, rather than refused forever
//! for a batch it cannot split.
//!
//! Buckets live in this process's memory: with several instances, a device
//! posting to each is metered by each.

use std::sync::Mutex;

use crate::clock::Clock;
pub use crate::domain::device::DeviceLimits;
use crate::domain::ids::DeviceId;
use crate::shared_map::SharedMap;
use chrono::{DateTime, Utc};

/// A device's bucket: tokens as of `at`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: DateTime<Utc>,
}

/// A post refused because the device's bucket is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// Whole seconds until the bucket holds a position again.
    pub retry_after: u64,
}

pub struct DeviceMeter {
    limits: DeviceLimits,
    clock: Clock,
    buckets: SharedMap<DeviceId, Mutex<Bucket>>,
}

impl DeviceMeter {
    pub fn new(limits: DeviceLimits, clock: Clock) -> Self {
        DeviceMeter {
            limits,
            clock,
            buckets: SharedMap::default(),
        }
    }

    pub fn limits(&self) -> DeviceLimits {
        self.limits
    }

    /// Takes a post of `positions` (0: a heartbeat, which costs one), or says
    /// how long the device must wait.
    pub fn take(&self, device: &DeviceId, positions: usize) -> Result<(), Exhausted> {
        let cost = positions.max(1) as f64;
        self.with_bucket(device, |bucket, rate| {
            if bucket.tokens < 1.0 {
                return Err(Exhausted {
                    retry_after: ((1.0 - bucket.tokens) / rate).ceil().max(1.0) as u64,
                });
            }
            bucket.tokens -= cost;
            Ok(())
        })
    }

    /// Charges positions already taken once for each further load they fed.
    pub fn charge(&self, device: &DeviceId, extra: usize) {
        if extra > 0 {
            self.with_bucket(device, |bucket, _| bucket.tokens -= extra as f64);
        }
    }

    /// Positions the device may send now (negative: the debt it is waiting off).
    pub fn available(&self, device: &DeviceId) -> f64 {
        match self.buckets.get(device) {
            Some(bucket) => {
                let mut bucket = *bucket.lock().unwrap_or_else(|p| p.into_inner());
                self.refill(&mut bucket);
                bucket.tokens
            }
            None => f64::from(self.limits.burst),
        }
    }

    /// Forgets buckets that have refilled: they hold nothing a new one would not.
    pub fn forget_full(&self) {
        let now = self.clock.now();
        let burst = f64::from(self.limits.burst);
        let rate = self.limits.positions_per_second;
        self.buckets.retain(|_, bucket| {
            let bucket = bucket.get_mut().unwrap_or_else(|p| p.into_inner());
            let seconds = (now - bucket.at).num_milliseconds() as f64 / 1000.0;
            bucket.tokens + seconds * rate < burst
        });
    }

    pub fn forget(&self, device: &DeviceId) {
        self.buckets.remove(device);
    }

    fn refill(&self, bucket: &mut Bucket) {
        let now = self.clock.now();
        let seconds = (now - bucket.at).num_milliseconds().max(0) as f64 / 1000.0;
        bucket.tokens = (bucket.tokens + seconds * self.limits.positions_per_second)
            .min(f64::from(self.limits.burst));
        bucket.at = now;
    }

    fn with_bucket<T>(&self, device: &DeviceId, f: impl FnOnce(&mut Bucket, f64) -> T) -> T {
        let entry = self.buckets.entry(device.clone()).or_insert_with(|| {
            Mutex::new(Bucket {
                tokens: f64::from(self.limits.burst),
                at: self.clock.now(),
            })
        });
        let mut bucket = entry.lock().unwrap_or_else(|p| p.into_inner());
        self.refill(&mut bucket);
        f(&mut bucket, self.limits.positions_per_second)
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::clock::ManualClock;

    fn meter() -> (DeviceMeter, ManualClock) {
        let manual = ManualClock::starting_at(Utc::now());
        let meter = DeviceMeter::new(DeviceLimits::default(), Clock::manual(manual.clone()));
        (meter, manual)
    }

    #[test]
    fn a_burst_then_one_a_second() {
        let (meter, clock) = meter();
        let device = DeviceId::generate();
        for _ in 0..60 {
            assert_eq!(meter.take(&device, 1), Ok(()));
        }
        assert_eq!(meter.take(&device, 1), Err(Exhausted { retry_after: 1 }));
        clock.advance(Duration::seconds(1));
        assert_eq!(meter.take(&device, 1), Ok(()));
        assert!(meter.take(&device, 0).is_err(), "a heartbeat costs one too");
        // Another device has its own bucket.
        assert_eq!(meter.take(&DeviceId::generate(), 1), Ok(()));
    }

    #[test]
    fn a_large_batch_is_taken_whole_and_waited_off() {
        let (meter, clock) = meter();
        let device = DeviceId::generate();
        assert_eq!(meter.take(&device, 1000), Ok(()));
        assert_eq!(meter.available(&device), -940.0);
        assert_eq!(meter.take(&device, 1), Err(Exhausted { retry_after: 941 }));
        clock.advance(Duration::seconds(941));
        assert_eq!(meter.take(&device, 1), Ok(()));
    }

    #[test]
    fn each_further_load_fed_is_charged() {
        let (meter, clock) = meter();
        let device = DeviceId::generate();
        // 10 positions, each fed to 3 loads: 30.
        assert_eq!(meter.take(&device, 10), Ok(()));
        meter.charge(&device, 20);
        assert_eq!(meter.available(&device), 30.0);
        clock.advance(Duration::seconds(600));
        assert_eq!(meter.available(&device), 60.0, "never above the burst");
        meter.forget_full();
        assert!(meter.buckets.is_empty());
    }
}
