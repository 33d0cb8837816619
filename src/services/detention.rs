//! The detention clock: when a truck waits at a stop past its free time,
//! `load.detention_started` goes out then, from a timer, without waiting for a
//! fix (the truck is parked; its device may send nothing for hours).
//!
//! A load's clock is set in storage with the arrival's point and cleared with
//! the departure's (`StopTimer`). This service keeps the set clocks in memory,
//! ordered by due time: those this instance's loads set as they commit, and
//! every stored one, read at start (so a restart misses none) and again every
//! minute (so clocks set on another instance are seen). Each second it hands
//! the due ones to their loads' actors, which check that the truck is still
//! there and end the clock with its event in one write.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::actors::load_actor::DetentionDue;
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::domain::ids::LoadId;
use crate::domain::stops::{StopKey, StopTimer};
use crate::storage::Storage;
use crate::telemetry::error_chain;

/// How often due clocks are looked for.
const TICK: Duration = Duration::from_secs(1);
/// How often the stored clocks are read again.
const RESCAN: Duration = Duration::from_secs(60);

/// The set clocks, by due time and by load.
#[derive(Default)]
struct Clocks {
    by_due: BTreeSet<(DateTime<Utc>, LoadId)>,
    by_load: HashMap<LoadId, (DateTime<Utc>, StopKey)>,
}

impl Clocks {
    fn set(&mut self, load: LoadId, stop: StopKey, due: DateTime<Utc>) {
        self.clear(&load);
        self.by_due.insert((due, load.clone()));
        self.by_load.insert(load, (due, stop));
    }

    fn clear(&mut self, load: &LoadId) {
        if let Some((due, _)) = self.by_load.remove(load) {
            self.by_due.remove(&(due, load.clone()));
        }
    }

    fn take_due(&mut self, now: DateTime<Utc>) -> Vec<(LoadId, StopKey, DateTime<Utc>)> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.by_due.first()
            && *at <= now
        {
            let (at, load) = self.by_due.pop_first().expect("a first");
            if let Some((_, stop)) = self.by_load.remove(&load) {
                due.push((load, stop, at));
            }
        }
        due
    }
}

#[derive(Default)]
pub struct DetentionClock {
    clocks: Mutex<Clocks>,
}

impl DetentionClock {
    /// What a committed point did to its load's clock.
    pub fn note(&self, load: &LoadId, timer: StopTimer) {
        let mut clocks = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
        match timer {
            StopTimer::Set { stop, due } => clocks.set(load.clone(), stop, due),
            StopTimer::Clear => clocks.clear(load),
        }
    }

    /// How many clocks are set (for tests and metrics).
    pub fn len(&self) -> usize {
        self.clocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_load
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take_due(&self, now: DateTime<Utc>) -> Vec<(LoadId, StopKey, DateTime<Utc>)> {
        self.clocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take_due(now)
    }

    /// Replaces what is known with what storage holds (a clock this instance
    /// set and has not yet seen stored is stored already: it is written with
    /// its point, before the commit is answered).
    async fn reload(&self, storage: &dyn Storage) {
        match storage.stop_timers().await {
            Ok(stored) => {
                let mut clocks = Clocks::default();
                for timer in stored {
                    clocks.set(timer.load, timer.stop, timer.due);
                }
                *self.clocks.lock().unwrap_or_else(|p| p.into_inner()) = clocks;
            }
            Err(error) => {
                tracing::warn!(error = %error_chain(&error), "could not read the detention clocks; retrying")
            }
        }
    }
}

/// Runs the clock until it is dropped: reads the stored clocks, then each
/// second hands the due ones to their loads' actors (whose events reach
/// webhooks and live streams through the notifier).
pub async fn run(
    clock: Weak<DetentionClock>,
    storage: Weak<dyn Storage>,
    registry: Weak<LoadRegistry>,
    time: Clock,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_reload: Option<tokio::time::Instant> = None;
    loop {
        tick.tick().await;
        // Held weakly, so that the store closes with the services.
        let (Some(clock), Some(registry), Some(storage)) =
            (clock.upgrade(), registry.upgrade(), storage.upgrade())
        else {
            return;
        };
        if last_reload.is_none_or(|at| at.elapsed() >= RESCAN) {
            clock.reload(&*storage).await;
            last_reload = Some(tokio::time::Instant::now());
        }
        for (load, stop, since) in clock.take_due(time.now()) {
            let registry = registry.clone();
            actix_rt::spawn(async move {
                match registry.send(&load, DetentionDue { stop, since }).await {
                    Ok(_) => {}
                    // Still stored: the next reload brings it back.
                    Err(error) => {
                        tracing::warn!(load = %load, %error, "a detention clock could not reach its load")
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::stops::StopKind;

    #[test]
    fn clocks_come_due_in_order_and_a_clear_or_a_new_set_replaces() {
        let mut clocks = Clocks::default();
        let t = |m: i64| DateTime::from_timestamp(1_790_000_000 + m * 60, 0).unwrap();
        let (a, b, c) = (LoadId::generate(), LoadId::generate(), LoadId::generate());
        clocks.set(a.clone(), StopKey::Legacy(StopKind::Pickup), t(10));
        clocks.set(b.clone(), StopKey::Legacy(StopKind::Delivery), t(5));
        clocks.set(c.clone(), StopKey::Legacy(StopKind::Pickup), t(1));
        clocks.clear(&c);
        clocks.set(a.clone(), StopKey::Legacy(StopKind::Delivery), t(7)); // a new arrival replaces
        assert_eq!(clocks.take_due(t(4)), []);
        assert_eq!(
            clocks.take_due(t(8)),
            [
                (b, StopKey::Legacy(StopKind::Delivery), t(5)),
                (a, StopKey::Legacy(StopKind::Delivery), t(7))
            ]
        );
        assert_eq!(clocks.take_due(t(100)), []);
        assert!(clocks.by_load.is_empty());
    }
}
