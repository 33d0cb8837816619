//! What an admission of fixes gives back: where its outcome is recorded, the
//! stop changes its fixes made (and how to take them back), and the views a
//! reader gets.

use std::sync::Arc;

use bytes::Bytes;

use super::SharedState;
use crate::domain::eta::EtaChanged;
use crate::domain::hos::DriverClock;
use crate::domain::load::LoadStatus;
use crate::domain::speed_history::DeliveredSpeed;
use crate::domain::stop_etas::Speed;
use crate::domain::stops::{Milestone, StopTimer, StopWatch, StopsProgress};
use crate::domain::tracking::TrackingState;

/// What one admitted fix changed of its load's stops.
#[derive(Debug, Clone, PartialEq)]
pub struct StopsAdmitted {
    /// The fix's place among the admission's fixes.
    pub index: usize,
    pub milestones: Vec<Milestone>,
    /// What the milestones did to the load's detention clock.
    pub timer: Option<StopTimer>,
    /// The stops' ETAs to send in `load.eta_changed`.
    pub eta_changed: Vec<EtaChanged>,
    /// The progress after the fix, to store with it.
    pub progress: StopsProgress,
    /// The sequence number of the first milestone's event.
    pub first_sequence: u64,
}

/// How to take back an admission's stop changes if its commit fails.
pub struct StopsUndo {
    pub(super) before: StopWatch,
    pub(super) driver: DriverClock,
    /// The watch's version once the admission changed it.
    pub(super) version: u64,
}

/// Which of the optional events an admission's fixes make: those only a
/// subscriber reads (`tracking.updated` would double the writes of GPS ingest;
/// `load.eta_changed` costs an estimate a minute per load).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wanted {
    pub tracking: bool,
    pub eta: bool,
    /// The account's ETA speed setting, which its loads' ETAs plan with...
    pub speed: Speed,
    /// ...until its delivered loads' own speeds say otherwise (newest first).
    pub delivered: Option<Arc<Vec<DeliveredSpeed>>>,
}

impl Wanted {
    /// Both (tests).
    pub const ALL: Wanted = Wanted {
        tracking: true,
        eta: true,
        speed: Speed::DEFAULT,
        delivered: None,
    };
}

/// An admission: where its outcome is recorded, the load's status, the first
/// of the event sequence numbers reserved for the fixes (when events are
/// wanted), and the stop milestones the fixes made.
pub struct Admission {
    pub state: SharedState,
    pub status: LoadStatus,
    pub first_sequence: Option<u64>,
    pub stops: Vec<StopsAdmitted>,
    pub stops_undo: Option<StopsUndo>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("status", &self.status)
            .field("first_sequence", &self.first_sequence)
            .finish_non_exhaustive()
    }
}

/// A load's live view: the rendered one, still current, or the state of a given
/// version to render it from.
pub enum View {
    Current(Bytes),
    Stale { state: TrackingState, version: u64 },
}
