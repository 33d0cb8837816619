use std::sync::atomic::Ordering;

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::Dispatcher;
use crate::domain::event::Event;
use crate::domain::ids::EventId;
use crate::domain::webhook::Delivery;
use crate::storage::StorageError;
use crate::webhooks::FastSet;
use crate::webhooks::directory::Directory;
use crate::webhooks::schedule::Queued;

/// Events fanned out per storage round trip.
const FAN_OUT_BATCH: usize = 512;
/// Events held in memory awaiting fan-out; beyond it they are read from the outbox.
pub(super) const MAX_NOTICED: usize = 16_384;

impl Dispatcher {
    /// Turns events into fresh deliveries and schedules them: events noticed in
    /// memory first, the outbox when a notice was missed (or at start).
    pub(super) fn fan_out(&mut self, ctx: &mut Context<Self>) {
        // Back-pressure: while the schedule is half full, events wait (in the
        // outbox, and a bounded list of notices) rather than spill deliveries to
        // storage that would have to be read back.
        if self.fanning_out || self.schedule.len() >= self.schedule.capacity() / 2 {
            return;
        }
        let noticed: Vec<Event> = if self.noticed.is_empty() {
            Vec::new()
        } else {
            let n = self.noticed.len().min(FAN_OUT_BATCH);
            self.noticed.drain(..n).collect()
        };
        // A pass over the outbox continues from where its last batch ended, unless
        // a notice was missed meanwhile: that event may be behind it, so start over.
        let mut scan_from = None;
        if noticed.is_empty() {
            if self.missed.swap(false, Ordering::Relaxed) {
                scan_from = Some(None);
            } else if let Some(floor) = self.outbox_pass.take() {
                scan_from = Some(floor);
            } else {
                return;
            }
        }
        let scan = scan_from.is_some();
        if scan {
            self.settled_during_scan = Some(FastSet::default());
        }
        self.fanning_out = true;
        let (storage, directory, clock) = (
            self.storage.clone(),
            self.directory.clone(),
            self.clock.clone(),
        );
        let work = async move {
            let events = match &scan_from {
                Some(after) => {
                    storage
                        .unfanned_events(after.as_ref(), FAN_OUT_BATCH)
                        .await?
                }
                None => noticed,
            };
            // The pass goes on after this batch's last event if the batch was full.
            let pass_goes_on = match scan && events.len() == FAN_OUT_BATCH {
                true => events.last().map(|e| e.id.clone()),
                false => None,
            };
            // Rendering bodies and matching subscriptions is CPU work; the
            // dispatcher's thread is the busiest in a drain, so it runs beside it.
            let now = clock.now();
            let FanOut { events, deliveries } =
                tokio::task::spawn_blocking(move || FanOut::prepare(&directory, events, now))
                    .await
                    .map_err(|e| StorageError::Unavailable(e.to_string()))?;
            // An event still in the outbox may have had some deliveries recorded
            // before a restart: those were attempted, and are not sent again.
            let deliveries = match scan {
                true => storage.without_records(deliveries).await?,
                false => deliveries,
            };
            Ok::<_, StorageError>((events, deliveries, pass_goes_on))
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            actor.fanning_out = false;
            let settled_meanwhile = actor.settled_during_scan.take().unwrap_or_default();
            match result {
                Ok((events, deliveries, pass_goes_on)) => {
                    actor.schedule_fresh(events, deliveries, scan, &settled_meanwhile);
                    if let Some(last) = pass_goes_on {
                        actor.outbox_pass = Some(Some(last));
                    }
                    actor.write_outcomes(ctx);
                    actor.dispatch_due(ctx);
                }
                Err(error) => {
                    // The events are in the outbox still: read them from there.
                    actor.missed.store(true, Ordering::Relaxed);
                    tracing::error!(%error, "webhook fan-out failed; retrying on the next tick");
                    return;
                }
            }
            actor.fan_out(ctx);
        }));
    }

    /// Schedules the fresh deliveries of a batch of events, but for events that
    /// are being (or have been) fanned out already: in progress here, found by a
    /// scan and now noticed late, or marked fanned out while a scan read them.
    pub(super) fn schedule_fresh(
        &mut self,
        events: Vec<(EventId, Option<Bytes>)>,
        deliveries: Vec<Delivery>,
        scan: bool,
        settled_meanwhile: &FastSet<EventId>,
    ) {
        let mut deliveries = deliveries.into_iter().peekable();
        let mut added = 0;
        for (event, body) in events {
            let skip = self.ledger.in_progress(&event)
                || settled_meanwhile.contains(&event)
                || (!scan && self.ledger.seen_by_scan(&event));
            let mut count = 0;
            let mut body = body;
            while let Some(delivery) = deliveries.next_if(|d| d.event_id == event) {
                if !skip {
                    count += 1;
                    // The last of the event's deliveries takes the body itself: a
                    // clone would make its buffer shared (an allocation) for nothing.
                    let last = deliveries.peek().is_none_or(|d| d.event_id != event);
                    let body = if last { body.take() } else { body.clone() };
                    self.schedule.push(Queued {
                        delivery,
                        body,
                        recorded: false,
                    });
                }
            }
            if skip {
                continue;
            }
            if count == 0 {
                self.writes.mark_fanned_out(event.clone());
            }
            self.ledger.fanned_out(event, count, scan);
            added += count as u64;
        }
        self.set_backlog(self.backlog + added);
    }
}

/// A batch of events turned into the deliveries they make, before recording.
struct FanOut {
    /// Every event of the batch, matched or not (all are marked fanned out once
    /// their deliveries are recorded), with the body its subscribers get.
    events: Vec<(EventId, Option<Bytes>)>,
    /// The deliveries, in the order of their events.
    deliveries: Vec<Delivery>,
}

impl FanOut {
    pub(super) fn prepare(directory: &Directory, events: Vec<Event>, now: DateTime<Utc>) -> Self {
        let mut deliveries = Vec::new();
        let mut batch = Vec::with_capacity(events.len());
        for event in events {
            // A subscription made after the event never gets it (the event may be
            // fanned out again after a restart, when more subscriptions exist).
            let mut matching = directory.matching(&event.account_id, event.kind);
            matching.retain(|subscription| subscription.created_at <= event.timestamp);
            if matching.is_empty() {
                batch.push((event.id, None));
                continue;
            }
            deliveries.extend(matching.into_iter().map(|subscription| {
                Delivery::new(subscription.id.clone(), event.id.clone(), event.kind, now)
            }));
            batch.push((event.id.clone(), Some(Bytes::from(event.body()))));
        }
        FanOut {
            events: batch,
            deliveries,
        }
    }
}
