//! What a fix's stop changes write with it: the milestone events, the
//! stops' ETAs, the detention clock, and the status move a departure makes.

use super::*;

/// Milestones written with a point: their events go to the dispatcher once
/// the point is stored, and a departure from the pickup of an `assigned`
/// load moves it to `in_transit`.
pub(super) struct MilestonesAt {
    /// The point's place in the commit.
    pub(super) point: usize,
    pub(super) events: Vec<Event>,
    pub(super) timer: Option<StopTimer>,
    pub(super) load: LoadId,
    /// The status the departures move the load to, as the account wants.
    pub(super) geofence_move: Option<LoadStatus>,
}

/// Gives each point of one load that changed its stops the change to store
/// with it (the progress, and its milestones' events), and returns the
/// milestones for after the commit (`point` indexing `points`).
pub(super) fn add_stops(
    account: &AccountId,
    settings: &StopSettings,
    now: chrono::DateTime<chrono::Utc>,
    points: &mut [TrackingPoint],
    load: &LoadId,
    admission: &Admission,
) -> Vec<MilestonesAt> {
    let mut milestones = Vec::new();
    for change in &admission.stops {
        let point = &mut points[change.index];
        let mut events: Vec<Event> = change
            .milestones
            .iter()
            .enumerate()
            .map(|(n, milestone)| {
                let kind = match milestone {
                    Milestone::Arrived { .. } => EventType::LoadArrived,
                    Milestone::Departed { .. } => EventType::LoadDeparted,
                    Milestone::Skipped { .. } => EventType::LoadStopSkipped,
                };
                let arrived = change
                    .progress
                    .by_id(&milestone.stop().id)
                    .and_then(|p| p.arrived());
                Event::new(
                    account.clone(),
                    load.clone(),
                    kind,
                    change.first_sequence + n as u64,
                    // When freight learned it; the milestone's own time is `at`.
                    now,
                    payloads::milestone(load.as_str(), milestone, arrived, settings),
                )
            })
            .collect();
        for eta in &change.eta_changed {
            events.push(Event::new(
                account.clone(),
                load.clone(),
                EventType::LoadEtaChanged,
                eta.sequence,
                now,
                payloads::eta_changed(load.as_str(), eta),
            ));
        }
        let geofence_move = geofence_move(settings, admission.status, &change.milestones);
        if !events.is_empty() || change.timer.is_some() {
            milestones.push(MilestonesAt {
                point: change.index,
                events: events.clone(),
                timer: change.timer.clone(),
                load: load.clone(),
                geofence_move,
            });
        }
        point.stops = Some(Box::new(StopsChange {
            progress: change.progress.clone(),
            events,
            timer: change.timer.clone(),
        }));
    }
    milestones
}

/// The status a fix's milestones move a load in `status` to: leaving the
/// first pickup starts an `assigned` load's trip, leaving the last stop ends
/// an `in_transit` one's, each as the account wants.
fn geofence_move(
    settings: &StopSettings,
    status: LoadStatus,
    milestones: &[Milestone],
) -> Option<LoadStatus> {
    milestones.iter().find_map(|m| match m {
        Milestone::Departed { stop, .. }
            if stop.sequence == 1 && status == LoadStatus::Assigned && settings.auto_in_transit =>
        {
            Some(LoadStatus::InTransit)
        }
        Milestone::Departed { stop, .. }
            if stop.last && status == LoadStatus::InTransit && settings.auto_delivered =>
        {
            Some(LoadStatus::Delivered)
        }
        _ => None,
    })
}
