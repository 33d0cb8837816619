//! The delivery ETA a load's state watches as fixes arrive, and where it aims.

use chrono::DateTime;

use super::{HeldFix, StopsAdmitted, Tracked};
use crate::domain::eta::{self, EtaChanged};
use crate::domain::load::Load;
use crate::domain::stops::{Geofence, StopKind, StopsProgress};
use crate::domain::tracking::{GpsFix, TrackingState};

impl Tracked {
    /// Looks at the delivery ETA once the newest admitted fix is a minute
    /// (of fix time) past the last one looked at, and adds `load.eta_changed`
    /// to that fix's changes when the ETA must be sent.
    pub(super) fn watch_eta(&mut self, fixes: &[GpsFix], changes: &mut Vec<StopsAdmitted>) {
        let Some(destination) = self.destination.map(|d| (d.lat, d.lng)) else {
            return;
        };
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
        let Some(estimate) = eta::estimate(&window, destination) else {
            return;
        };
        let appointment = self.appointments[StopKind::Delivery.index()];
        let previous = self.stops.progress().eta_sent;
        let Some(sent) = eta::change_to_send(
            previous.as_ref(),
            estimate.at,
            newest.timestamp,
            appointment,
        ) else {
            return;
        };
        self.stops.eta_sent(sent);
        let change = EtaChanged {
            eta: estimate.at,
            previous: previous.and_then(|p| DateTime::from_timestamp_micros(p.eta)),
            late_risk: sent.late_risk,
            appointment,
            sequence: self.next_sequence,
        };
        self.next_sequence += 1;
        let progress = *self.stops.progress();
        match changes.iter_mut().find(|c| c.index == index) {
            Some(existing) => {
                existing.progress = progress;
                existing.eta_changed = Some(change);
            }
            None => changes.push(StopsAdmitted {
                index,
                milestones: Vec::new(),
                timer: None,
                eta_changed: Some(change),
                progress,
                first_sequence: change.sequence,
            }),
        }
    }
}

/// The tracking state of `load` as stored, `recent` its newest fixes (newest
/// first) and `progress` its stops' as stored: what its actor would hold, for
/// a reader on an instance that does not act for the load.
pub fn stored_state(load: &Load, recent: Vec<GpsFix>, progress: &StopsProgress) -> TrackingState {
    TrackingState {
        status: load.status,
        recent,
        destination: eta_target(&load.destination),
        delivery_appointment: load.delivery_date,
        delivery_arrived_at: progress.delivery.arrived(),
    }
}

/// Where the ETA aims: the delivery's own coordinates when the load gives them
/// (the centre of its geofence), else its ZIP's centroid.
pub(super) fn eta_target(destination: &crate::domain::location::Location) -> Option<Geofence> {
    Geofence::of(destination)
}
