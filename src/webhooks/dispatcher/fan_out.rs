//! Turning committed events into fresh deliveries: notices kept in memory
//! first, the outbox when one was missed (and at start, and every scan period),
//! one batch at a time, and only while the schedule has room.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::Dispatcher;
use crate::clock::Clock;
use crate::domain::event::Event;
use crate::domain::ids::EventId;
use crate::domain::webhook::Delivery;
use crate::storage::Storage;
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;
use crate::webhooks::FastSet;
use crate::webhooks::directory::Directory;
use crate::webhooks::notifier::DispatchError;
use crate::webhooks::schedule::Queued;

/// Events fanned out per storage round trip.
const FAN_OUT_BATCH: usize = 512;
/// Events held in memory awaiting fan-out; beyond it they are read from the outbox.
const MAX_NOTICED: usize = 16_384;
/// How far before a pass's start the next pass begins reading, at the least:
/// an event committed (by this or another instance) while a pass ran has an id
/// of its commit time, which can be that much earlier than this clock's.
pub(super) const PASS_OVERLAP: chrono::TimeDelta = chrono::TimeDelta::minutes(5);
/// How often a pass reads the whole outbox anyway: an event is written with
/// an id of when its change was planned, and a change finished late (its
/// writer died between commit and follow-up; the next writer finishes it,
/// maybe hours later) puts it far below any floor.
const FULL_PASS_EVERY: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// Events waiting to be fanned out, and where to find them. Every committed
/// event is in the outbox; a notice only saves reading it back, so a notice
/// that cannot be kept is dropped and the outbox scanned instead.
pub(super) struct Intake {
    /// Events noticed in memory, awaiting fan-out.
    noticed: Vec<Event>,
    /// A notice could not be kept: the outbox must be scanned from its start.
    /// Shared with the notifier, which sets it when a notice never arrives.
    missed: Arc<AtomicBool>,
    /// A pass over the outbox that has more to read.
    pass: Option<PassCursor>,
    /// Where a new pass starts reading (`None`: at the beginning, as after a
    /// start): the oldest event the last complete pass found, or its start
    /// less `PASS_OVERLAP`, whichever is earlier. So a pass reads the events
    /// not yet fanned out and the recent minutes, not every minute the outbox
    /// ever had (issue 38, finding 11).
    floor: Option<EventId>,
    /// The pass being read: when it began, and the oldest event it found.
    current: Option<(DateTime<Utc>, Option<EventId>)>,
    /// When the last pass over the whole outbox began (see `FULL_PASS_EVERY`).
    last_full: Option<DateTime<Utc>>,
}

/// Where a pass over the outbox picks up: after the last event of its last
/// batch, which was full. A batch that is not full ends the pass.
struct PassCursor(EventId);

/// Where one batch of events comes from.
enum Source {
    Notices(Vec<Event>),
    /// `after`: `None` starts a pass at the beginning of the outbox.
    Outbox {
        after: Option<EventId>,
    },
}

/// Whether a batch is being prepared. An outbox scan also collects the events
/// marked fanned out while it reads: the read may still have seen their
/// markers, and they must not be fanned out again.
pub(super) enum FanOutState {
    Idle,
    PreparingNotices,
    Scanning { settled_meanwhile: FastSet<EventId> },
}

impl Intake {
    pub(super) fn new(missed: Arc<AtomicBool>) -> Self {
        // Whatever committed before this start was never noticed.
        missed.store(true, Ordering::Relaxed);
        Intake {
            noticed: Vec::new(),
            missed,
            pass: None,
            floor: None,
            current: None,
            last_full: None,
        }
    }

    /// Keeps the events of a notice, unless they are too many (or not listed).
    pub(super) fn notice(&mut self, events: Vec<Event>) {
        if events.is_empty() || self.noticed.len() + events.len() > MAX_NOTICED {
            // Kept in the outbox alone; read from there.
            self.scan_outbox();
        } else {
            self.noticed.extend(events);
        }
    }

    /// The flag a missed notice sets (shared with the notifier).
    pub(super) fn missed_flag(&self) -> Arc<AtomicBool> {
        self.missed.clone()
    }

    /// Asks for a pass over the whole outbox.
    pub(super) fn scan_outbox(&self) {
        self.missed.store(true, Ordering::Relaxed);
    }

    /// The next batch: notices first. A pass over the outbox continues from
    /// where its last batch ended, unless a notice was missed meanwhile: that
    /// event may be behind it, so start over (from the floor).
    fn next_source(&mut self, now: DateTime<Utc>) -> Option<Source> {
        if !self.noticed.is_empty() {
            let n = self.noticed.len().min(FAN_OUT_BATCH);
            return Some(Source::Notices(self.noticed.drain(..n).collect()));
        }
        if self.missed.swap(false, Ordering::Relaxed) {
            self.pass = None;
            self.current = Some((now, None));
            let full = self
                .last_full
                .is_none_or(|last| now - last >= FULL_PASS_EVERY);
            if full {
                self.last_full = Some(now);
            }
            return Some(Source::Outbox {
                after: if full { None } else { self.floor.clone() },
            });
        }
        let PassCursor(after) = self.pass.take()?;
        Some(Source::Outbox { after: Some(after) })
    }

    /// A batch of the outbox was read: its oldest event, and where the pass
    /// goes on (`None`: it is complete, and sets the next pass's floor).
    fn read_batch(&mut self, oldest: Option<&EventId>, pass: Option<PassCursor>) {
        if let (Some((_, seen)), Some(oldest)) = (&mut self.current, oldest)
            && seen.as_ref().is_none_or(|seen| oldest < seen)
        {
            *seen = Some(oldest.clone());
        }
        match pass {
            Some(pass) => self.pass = Some(pass),
            None => {
                if let Some((started, oldest)) = self.current.take() {
                    let overlap = EventId::floor_at(started - PASS_OVERLAP);
                    // A pass reads from *after* its floor: below the oldest.
                    let below = oldest.map(|oldest| just_below(&oldest));
                    self.floor = Some(below.map_or(overlap.clone(), |below| below.min(overlap)));
                }
            }
        }
    }
}

impl FanOutState {
    /// An event was marked fanned out (durably).
    pub(super) fn settled(&mut self, event: EventId) {
        if let FanOutState::Scanning { settled_meanwhile } = self {
            settled_meanwhile.insert(event);
        }
    }
}

impl Dispatcher {
    /// Turns events into fresh deliveries and schedules them: events noticed in
    /// memory first, the outbox when a notice was missed (or at start).
    pub(super) fn fan_out(&mut self, ctx: &mut Context<Self>) {
        // Back-pressure: while the schedule is half full, events wait (in the
        // outbox, and a bounded list of notices) rather than spill deliveries to
        // storage that would have to be read back.
        let busy = !matches!(self.fanning_out, FanOutState::Idle);
        if busy || !self.role.active() || self.schedule.len() >= self.schedule.capacity() / 2 {
            return;
        }
        let Some(source) = self.intake.next_source(self.clock.now()) else {
            return;
        };
        self.fanning_out = match source {
            Source::Notices(_) => FanOutState::PreparingNotices,
            Source::Outbox { .. } => FanOutState::Scanning {
                settled_meanwhile: FastSet::default(),
            },
        };
        let work = prepare(
            self.storage.clone(),
            self.directory.clone(),
            self.clock.clone(),
            source,
        );
        ctx.spawn(work.into_actor(self).map(|result, actor, ctx| {
            if actor.prepared(ctx, result) {
                actor.fan_out(ctx);
            }
        }));
    }

    /// Schedules a prepared batch; false when it failed, and fan-out waits for
    /// the next tick.
    fn prepared(
        &mut self,
        ctx: &mut Context<Self>,
        result: Result<(FanOut, Option<PassCursor>), DispatchError>,
    ) -> bool {
        let scan = match std::mem::replace(&mut self.fanning_out, FanOutState::Idle) {
            FanOutState::Scanning { settled_meanwhile } => Some(settled_meanwhile),
            FanOutState::PreparingNotices | FanOutState::Idle => None,
        };
        match result {
            Ok((fan_out, pass)) => {
                if scan.is_some() {
                    let oldest = fan_out.events.first().map(|(id, _)| id.clone());
                    self.intake.read_batch(oldest.as_ref(), pass);
                }
                self.schedule_fresh(fan_out, scan.as_ref());
                self.write_outcomes(ctx);
                self.dispatch_due(ctx);
                true
            }
            Err(error) => {
                // The events are in the outbox still: read them from there.
                self.intake.scan_outbox();
                tracing::error!(error = %error_chain(&error), "webhook fan-out failed; retrying on the next tick");
                false
            }
        }
    }

    /// Schedules the fresh deliveries of a batch of events, but for events that
    /// are being (or have been) fanned out already: in progress here, found by a
    /// scan and now noticed late, or marked fanned out while a scan read them.
    /// `scan`: the batch came from the outbox; the events settled meanwhile.
    fn schedule_fresh(&mut self, fan_out: FanOut, scan: Option<&FastSet<EventId>>) {
        let mut deliveries = fan_out.deliveries.into_iter().peekable();
        let mut added = 0;
        for (event, body) in fan_out.events {
            let skip = self.ledger.in_progress(&event)
                || match scan {
                    Some(settled_meanwhile) => settled_meanwhile.contains(&event),
                    None => self.ledger.seen_by_scan(&event),
                };
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
            self.ledger.fanned_out(event, count, scan.is_some());
            added += count as u64;
        }
        self.backlog.add(added);
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
    fn prepare(directory: &Directory, events: Vec<Event>, now: DateTime<Utc>) -> Self {
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

/// Reads a batch (from the outbox, for a scan) and turns it into deliveries,
/// leaving out those a scan finds recorded already; with the cursor of a pass
/// that goes on after this batch.
async fn prepare(
    storage: Arc<dyn Storage>,
    directory: Arc<Directory>,
    clock: Clock,
    source: Source,
) -> Result<(FanOut, Option<PassCursor>), DispatchError> {
    let (events, pass, scan) = match source {
        Source::Notices(events) => (events, None, false),
        Source::Outbox { after } => {
            let events = storage
                .unfanned_events(after.as_ref(), FAN_OUT_BATCH)
                .await?;
            let pass = match events.len() == FAN_OUT_BATCH {
                true => events.last().map(|e| PassCursor(e.id.clone())),
                false => None,
            };
            (events, pass, true)
        }
    };
    let FanOut { events, deliveries } = prepare_beside(directory, events, clock.now()).await?;
    // An event still in the outbox may have had some deliveries recorded
    // before a restart: those were attempted, and are not sent again.
    let deliveries = match scan {
        true => storage.without_records(deliveries).await?,
        false => deliveries,
    };
    Ok((FanOut { events, deliveries }, pass))
}

/// `FanOut::prepare` on a blocking thread: rendering bodies and matching
/// subscriptions is CPU work, and the dispatcher's thread is the busiest in a
/// drain, so it runs beside it.
async fn prepare_beside(
    directory: Arc<Directory>,
    events: Vec<Event>,
    now: DateTime<Utc>,
) -> Result<FanOut, Unavailable> {
    crate::cpu_placement::spawn_blocking(move || FanOut::prepare(&directory, events, now))
        .await
        .map_err(Unavailable::task)
}

/// An id below `id` and every other id of its millisecond.
fn just_below(id: &EventId) -> EventId {
    let millis = (id.ulid() >> 80) as i64;
    let before =
        DateTime::<Utc>::from_timestamp_millis(millis - 1).unwrap_or(DateTime::<Utc>::MIN_UTC);
    EventId::floor_at(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn outbox_after(source: Option<Source>) -> Option<EventId> {
        match source {
            Some(Source::Outbox { after }) => after,
            _ => panic!("expected an outbox read"),
        }
    }

    #[test]
    fn a_pass_starts_at_the_oldest_event_the_last_one_found_or_just_before_it_began() {
        let mut intake = Intake::new(Arc::default());
        // The first pass after a start reads the whole outbox.
        let noon = at("2026-11-27T12:00:00Z");
        assert_eq!(outbox_after(intake.next_source(noon)), None);
        let old = EventId::floor_at(at("2026-11-20T08:00:00Z"));
        intake.read_batch(Some(&old), None);

        // An event of a week ago was still there: the next pass starts at it.
        intake.scan_outbox();
        let later = at("2026-11-27T12:00:01Z");
        let floor = outbox_after(intake.next_source(later)).unwrap();
        assert!(floor < old, "the oldest event is read again");
        assert_eq!(floor, just_below(&old));
        // This pass finds nothing older than now: the one after starts five
        // minutes before this one began, not at the start of the outbox.
        intake.read_batch(None, None);
        intake.scan_outbox();
        let after = outbox_after(intake.next_source(at("2026-11-27T12:00:02Z")));
        assert_eq!(after, Some(EventId::floor_at(later - PASS_OVERLAP)));

        // Ten minutes after the last whole pass, the next reads the whole
        // outbox again: events written late sit far below any floor.
        intake.read_batch(None, None);
        intake.scan_outbox();
        assert_eq!(
            outbox_after(intake.next_source(at("2026-11-27T12:10:00Z"))),
            None
        );
    }

    #[test]
    fn a_pass_in_several_batches_keeps_its_oldest_and_sets_the_floor_at_its_end() {
        let mut intake = Intake::new(Arc::default());
        let start = at("2026-11-27T12:00:00Z");
        intake.next_source(start);
        let first = EventId::floor_at(at("2026-11-27T11:00:00Z"));
        let cursor = EventId::floor_at(at("2026-11-27T11:30:00Z"));
        intake.read_batch(Some(&first), Some(PassCursor(cursor.clone())));
        assert_eq!(outbox_after(intake.next_source(start)), Some(cursor));
        let second = EventId::floor_at(at("2026-11-27T11:40:00Z"));
        intake.read_batch(Some(&second), None);
        intake.scan_outbox();
        assert_eq!(
            outbox_after(intake.next_source(start)),
            Some(just_below(&first))
        );
    }
}
