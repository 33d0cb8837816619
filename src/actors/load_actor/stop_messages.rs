//! What a load's stops make its actor do besides admitting fixes: move the
//! load when the truck leaves its first pickup or its last delivery (as the
//! account wants), and start detention when a stop's clock comes due.

use actix::prelude::*;

use super::{ChangeStatus, LoadActor};
use crate::actors::load_state::State;
use crate::domain::event::{Event, EventType};
use crate::domain::ids::AccountId;
use crate::domain::load::{ChangeSource, Load, LoadStatus, StatusChange};
use crate::domain::stops::{StopKey, StopsProgress};
use crate::telemetry::error_chain;
use crate::webhooks::payloads;

/// The truck left the first pickup while the load was `assigned` (`to`:
/// `in_transit`), or the last delivery while it was `in_transit` (`to`:
/// `delivered`): the load moves through the usual change (its history says
/// `geofence`), unless something moved it meanwhile.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct GeofenceMove {
    pub account: AccountId,
    pub to: LoadStatus,
}

/// A stop's detention clock came due (`services::detention`): if the truck is
/// still there, `load.detention_started` goes out and the clock ends with it;
/// otherwise the clock just ends. Answered with the event once it is stored.
#[derive(Message, Clone)]
#[rtype(result = "Option<Event>")]
pub struct DetentionDue {
    pub stop: StopKey,
    /// When detention started: the clock's due time.
    pub since: chrono::DateTime<chrono::Utc>,
}

/// The move the truck's departure called for but the load did not make: its
/// stored progress says the truck left the first pickup (or the last
/// delivery) after the load's last status change, and the load is still
/// `assigned` (`in_transit`). The instance stopped between writing the
/// departure and moving the load. A departure older than the last change was
/// seen before it (a person moved the load back), and stays as it is.
pub(super) fn unmade_move(load: &Load, progress: &StopsProgress) -> Option<LoadStatus> {
    let last_change = load.status_history.last().map_or(load.created_at, |e| e.at);
    let stops = load.stops();
    let left = |index: usize| {
        progress
            .of(&stops, index)
            .departed()
            .is_some_and(|departed| departed >= last_change)
    };
    match load.status {
        LoadStatus::Assigned if left(0) => Some(LoadStatus::InTransit),
        LoadStatus::InTransit if left(stops.len() - 1) => Some(LoadStatus::Delivered),
        _ => None,
    }
}

impl LoadActor {
    /// Makes a move [`unmade_move`] found, as it would have been made then, if
    /// the account still wants it (queued behind the state's loading).
    pub(super) fn finish_move(&self, ctx: &mut Context<Self>, account: AccountId, to: LoadStatus) {
        let storage = self.deps.storage.clone();
        let id = self.id.clone();
        ctx.spawn(
            async move { storage.get_account(&account).await.map(|a| (account, a)) }
                .into_actor(self)
                .map(move |read, _, ctx| match read {
                    Ok((account, Some(found))) if wanted(&found.stop_settings, to) => {
                        tracing::info!(load = %id, %to, "the truck left a stop before the last start; moving the load now");
                        ctx.notify(GeofenceMove { account, to });
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(load = %id, error = %error_chain(&error), "could not read the account to finish a departure's move; the next start tries again");
                    }
                }),
        );
    }
}

/// Whether the account moves its loads to `to` on departures.
fn wanted(settings: &crate::domain::account::StopSettings, to: LoadStatus) -> bool {
    match to {
        LoadStatus::InTransit => settings.auto_in_transit,
        LoadStatus::Delivered => settings.auto_delivered,
        _ => false,
    }
}

impl Handler<GeofenceMove> for LoadActor {
    // Answered once the move is made or refused (the actor goes on with other
    // messages meanwhile: the move itself is one of them).
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: GeofenceMove, ctx: &mut Self::Context) -> Self::Result {
        let to = msg.to;
        let change = ChangeStatus {
            account: msg.account,
            change: StatusChange {
                status: to,
                carrier_id: None,
                location: None,
                notes: None,
                source: ChangeSource::Geofence,
            },
        };
        let id = self.id.clone();
        // Behind whatever the mailbox holds: a change made meanwhile (a person
        // moving the load on) is applied first, and this one then finds the
        // load no longer where the truck left it.
        let addr = ctx.address();
        Box::pin(
            async move {
                match addr.send(change).await {
                    Ok(Ok(load)) => {
                        tracing::info!(load = %id, status = %load.status, "the truck left a stop; the load moved")
                    }
                    Ok(Err(error)) => {
                        tracing::info!(load = %id, %to, %error, "the truck left a stop; the load was not moved")
                    }
                    Err(error) => tracing::warn!(load = %id, %to, %error, "the actor stopped before moving the load"),
                }
            }
            .into_actor(self),
        )
    }
}

impl Handler<DetentionDue> for LoadActor {
    type Result = ResponseActFuture<Self, Option<Event>>;

    fn handle(&mut self, msg: DetentionDue, _: &mut Self::Context) -> Self::Result {
        let started = {
            let mut shared = self.state.lock();
            match &mut shared.state {
                State::Active(tracked) => tracked
                    .start_detention(&msg.stop)
                    .map(|(sequence, stop, free)| (tracked.account.clone(), sequence, stop, free)),
                _ => None,
            }
        };
        let stop_id = started.as_ref().map(|(_, _, stop, _)| stop.id.clone());
        let event = started.map(|(account, sequence, stop, free_minutes)| {
            Event::new(
                account,
                self.id.clone(),
                EventType::LoadDetentionStarted,
                sequence,
                self.deps.clock.now(),
                payloads::detention_started(self.id.as_str(), &stop, msg.since, free_minutes),
            )
        });
        let storage = self.deps.storage.clone();
        let notifier = self.deps.notifier.clone();
        let id = self.id.clone();
        Box::pin(
            async move {
                match storage.end_stop_timer(&id, event.as_ref()).await {
                    Ok(()) => {
                        if let Some(event) = &event {
                            notifier.events_committed(vec![event.clone()]);
                        }
                        Ok(event)
                    }
                    // Still stored: the clock's next reading of storage brings
                    // it back, and this actor tries again.
                    Err(error) => {
                        tracing::warn!(load = %id, error = %error_chain(&error), "could not end a detention clock; it will come due again");
                        Err(())
                    }
                }
            }
            .into_actor(self)
            .map(move |ended, actor, _| match ended {
                Ok(event) => event,
                Err(()) => {
                    if let (State::Active(tracked), Some(stop)) =
                        (&mut actor.state.lock().state, &stop_id)
                    {
                        tracked.detention_not_sent(stop);
                    }
                    None
                }
            }),
        )
    }
}
