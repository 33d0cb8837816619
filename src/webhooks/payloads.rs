//! The `data` of each event type: the API's own representations, so a receiver
//! parses what a client of the API already parses.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::domain::account::StopSettings;
use crate::domain::eta::EtaChanged;
use crate::domain::load::Load;
use crate::domain::stop_plan::Stop;
use crate::domain::stops::{self, Milestone, StopRef};
use crate::domain::timestamp;
use crate::domain::tracking::GpsFix;
use crate::views::load::LoadView;
use crate::views::tracking::PointView;

pub fn load(load: &Load) -> Value {
    json!({ "load": LoadView::new(load) })
}

pub fn status_changed(previous: &Load, load: &Load) -> Value {
    json!({
        "previous_status": previous.status.as_str(),
        "status": load.status.as_str(),
        "load": LoadView::new(load),
    })
}

/// `load.updated`: which fields changed (as the API names them), and the load
/// as it stands.
pub fn updated(load: &Load, changed: &[&str]) -> Value {
    json!({ "changed": changed, "load": LoadView::new(load) })
}

/// `delivery.completed`: the delivered load with its carrier and final position.
pub fn delivered(load: &Load, final_position: Option<&GpsFix>) -> Value {
    json!({
        "load": LoadView::new(load),
        "carrier": load.carrier,
        "final_position": final_position.map(PointView::new),
    })
}

pub fn tracking(status: &str, fix: &GpsFix) -> Value {
    json!({ "status": status, "position": PointView::new(fix) })
}

/// `load.arrived`, `load.departed` and `load.stop_skipped`: the stop (its
/// type, id and place in the order), when, whether inferred from sparse
/// fixes, and how the stop's arrival (`arrived_at`) compares with its
/// appointment (null without one).
pub fn milestone(
    load_id: &str,
    milestone: &Milestone,
    arrived_at: Option<DateTime<Utc>>,
    settings: &StopSettings,
) -> Value {
    let (stop, at, inferred) = match milestone {
        Milestone::Arrived { stop, at, inferred } | Milestone::Departed { stop, at, inferred } => {
            (stop, at, *inferred)
        }
        Milestone::Skipped { stop, at } => {
            return json!({
                "load_id": load_id,
                "stop": stop.kind.as_str(),
                "stop_id": stop.id,
                "stop_sequence": stop.sequence,
                "at": timestamp::format(at),
                "source": "geofence",
            });
        }
    };
    let status =
        arrived_at.and_then(|arrived| stops::arrival_status(arrived, stop.appointment, settings));
    json!({
        "load_id": load_id,
        "stop": stop.kind.as_str(),
        "stop_id": stop.id,
        "stop_sequence": stop.sequence,
        "at": timestamp::format(at),
        "inferred": inferred,
        "arrival_status": status.map(|(s, _)| s),
        "deviation_minutes": status.map(|(_, minutes)| minutes),
    })
}

/// `load.stop_skipped` for a stop a client skipped (`source: api`; one the
/// truck went past says `source: geofence`).
pub fn skipped_by_client(load_id: &str, stop: &Stop, index: usize, at: DateTime<Utc>) -> Value {
    json!({
        "load_id": load_id,
        "stop": stop.kind.as_str(),
        "stop_id": stop.id,
        "stop_sequence": index + 1,
        "at": timestamp::format(&at),
        "source": "api",
    })
}

/// `load.detention_started`: the stop, when detention started (the later of
/// arrival and appointment, plus the free time) and the free time.
pub fn detention_started(
    load_id: &str,
    stop: &StopRef,
    since: DateTime<Utc>,
    free_minutes: u32,
) -> Value {
    json!({
        "load_id": load_id,
        "stop": stop.kind.as_str(),
        "stop_id": stop.id,
        "stop_sequence": stop.sequence,
        "since": timestamp::format(&since),
        "free_minutes": free_minutes,
    })
}

/// `load.eta_changed`: a stop's ETA, the one sent before (null for the
/// first), whether the stop is at risk of being late, and its appointment
/// (a window's start).
pub fn eta_changed(load_id: &str, change: &EtaChanged) -> Value {
    json!({
        "load_id": load_id,
        "stop": change.stop.kind.as_str(),
        "stop_id": change.stop.id,
        "stop_sequence": change.stop.sequence,
        "eta": timestamp::format(&change.eta),
        "previous_eta": change.previous.as_ref().map(timestamp::format),
        "late_risk": change.late_risk,
        "appointment": change.appointment.as_ref().map(timestamp::format),
    })
}
