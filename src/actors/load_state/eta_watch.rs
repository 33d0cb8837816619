//! The stops' ETAs a load's state watches as fixes arrive.

use chrono::DateTime;

use super::{HeldFix, StopsAdmitted, Tracked};
use crate::domain::eta::{self, EtaChanged};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::stop_etas::{self, Speed};
use crate::domain::stops::{StopWatch, StopsProgress};
use crate::domain::tracking::{GpsFix, TrackingState};

impl Tracked {
    /// Looks at the stops' ETAs once the newest admitted fix is a minute (of
    /// fix time) past the last one looked at, and adds a `load.eta_changed`
    /// per stop whose ETA must be sent to that fix's changes.
    pub(super) fn watch_eta(&mut self, fixes: &[GpsFix], changes: &mut Vec<StopsAdmitted>) {
        let Some((index, newest)) = fixes.iter().enumerate().max_by_key(|(_, f)| f.timestamp)
        else {
            return;
        };
        let micros = newest.timestamp.timestamp_micros();
        let every = eta::ETA_CHECK_EVERY.num_microseconds().unwrap_or(i64::MAX);
        let latest_held = self.recent.front().map_or(i64::MIN, |f| f.micros);
        if micros <= latest_held || micros.saturating_sub(self.eta_checked) < every {
            return;
        }
        self.eta_checked = micros;
        // The newest fixes once these are stored, newest first.
        let mut window: Vec<GpsFix> = fixes
            .iter()
            .filter(|f| f.timestamp.timestamp_micros() > latest_held)
            .copied()
            .collect();
        window.sort_by_key(|f| std::cmp::Reverse(f.timestamp));
        window.extend(self.recent.iter().map(HeldFix::fix));
        let route = self.stops.route(self.status() == LoadStatus::InTransit);
        let Some(estimate) =
            stop_etas::estimate(&window, &route, Some(&self.driver), self.team, &self.speed)
        else {
            return;
        };
        let mut sent_now = Vec::new();
        for stop_eta in &estimate.stops {
            let Some((stop, progress)) = self.stops.stops().nth(stop_eta.index) else {
                continue;
            };
            let previous = progress.eta_sent;
            let Some(sent) = eta::change_to_send(
                previous.as_ref(),
                stop_eta.at,
                newest.timestamp,
                stop_eta.late_risk,
            ) else {
                continue;
            };
            sent_now.push((
                stop_eta.index,
                sent,
                EtaChanged {
                    stop: stop.clone(),
                    eta: stop_eta.at,
                    previous: previous.and_then(|p| DateTime::from_timestamp_micros(p.eta)),
                    late_risk: sent.late_risk,
                    appointment: stop.appointment.map(|a| a.start),
                    sequence: 0,
                },
            ));
        }
        if sent_now.is_empty() {
            return;
        }
        let mut changed = Vec::with_capacity(sent_now.len());
        for (stop, sent, mut change) in sent_now {
            self.stops.eta_sent(stop, sent);
            change.sequence = self.next_sequence;
            self.next_sequence += 1;
            changed.push(change);
        }
        self.stops.set_driver(self.driver);
        let progress = self.stops.progress().clone();
        match changes.iter_mut().find(|c| c.index == index) {
            Some(existing) => {
                existing.progress = progress;
                existing.eta_changed = changed;
            }
            None => changes.push(StopsAdmitted {
                index,
                milestones: Vec::new(),
                timer: None,
                first_sequence: changed[0].sequence,
                eta_changed: changed,
                progress,
            }),
        }
    }
}

/// The tracking state of `load` as stored, `recent` its newest fixes (newest
/// first) and `progress` its stops' as stored: what its actor would hold, for
/// a reader on an instance that does not act for the load.
pub fn stored_state(load: &Load, recent: Vec<GpsFix>, progress: &StopsProgress) -> TrackingState {
    let watch = StopWatch::new(&load.stops(), load.free_minutes(), progress, recent.first());
    let mut driver = progress.driver.unwrap_or_default();
    for fix in recent.iter().rev() {
        driver.observe(fix);
    }
    TrackingState {
        status: load.status,
        route: watch.route(load.status == LoadStatus::InTransit),
        recent,
        driver: Some(driver),
        team: load.team,
        speed: Speed::default(),
    }
}
