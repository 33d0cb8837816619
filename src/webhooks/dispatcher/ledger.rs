//! Which fanned-out events still have fresh deliveries without a record.

use chrono::Utc;

use crate::domain::ids::EventId;
use crate::webhooks::{FastMap, FastSet};

/// Fresh deliveries per event. An event's outbox marker stands for its fresh
/// deliveries until the last is recorded, so the dispatcher must know how many
/// each event still has; and an event must not be fanned out twice, which a
/// scan and a late notice of the same event (or a scan while its deliveries are
/// still in memory) would otherwise do.
pub(super) struct FreshLedger {
    /// Events fanned out in memory whose deliveries are not all recorded yet, and
    /// how many are not; an event stays here until the write that marks it
    /// fanned out is durable.
    unrecorded: FastMap<EventId, usize>,
    /// Events fanned out from outbox scans in this scan period and the one before:
    /// a notice of one of them arriving late is not fanned out again. Only events
    /// made since this dispatcher started can have a notice still to come.
    scanned: [FastSet<EventId>; 2],
    /// The smallest id of an event made since this dispatcher started.
    started: EventId,
}

impl FreshLedger {
    pub(super) fn new() -> Self {
        FreshLedger {
            unrecorded: FastMap::default(),
            scanned: Default::default(),
            // Ids are made from the wall clock, whatever clock the service is given.
            started: EventId::floor_at(Utc::now()),
        }
    }

    /// The event's deliveries are in memory, or its marker is not yet cleared.
    pub(super) fn in_progress(&self, event: &EventId) -> bool {
        self.unrecorded.contains_key(event)
    }

    /// A recent scan fanned the event out: a notice of it comes late.
    pub(super) fn seen_by_scan(&self, event: &EventId) -> bool {
        self.scanned.iter().any(|set| set.contains(event))
    }

    /// The event was fanned out into `fresh` deliveries (`scanned`: by a scan).
    pub(super) fn fanned_out(&mut self, event: EventId, fresh: usize, scanned: bool) {
        if scanned && event >= self.started {
            self.scanned[0].insert(event.clone());
        }
        self.unrecorded.insert(event, fresh);
    }

    /// One of the event's fresh deliveries no longer needs its marker; true when
    /// none does any more, so the event can be marked fanned out.
    pub(super) fn one_less_unrecorded(&mut self, event: &EventId) -> bool {
        match self.unrecorded.get_mut(event) {
            Some(count) => {
                *count = count.saturating_sub(1);
                *count == 0
            }
            None => false,
        }
    }

    /// A first record was not written after all: the delivery needs its event's
    /// marker again.
    pub(super) fn one_more_unrecorded(&mut self, event: &EventId) {
        if let Some(count) = self.unrecorded.get_mut(event) {
            *count += 1;
        }
    }

    /// The event's marker is durably cleared: a later scan cannot find it.
    pub(super) fn marked(&mut self, event: &EventId) {
        self.unrecorded.remove(event);
    }

    /// A scan period ends: the events of the one before it are too old for a
    /// notice to come now.
    pub(super) fn next_scan_period(&mut self) {
        let recent = std::mem::take(&mut self.scanned[0]);
        self.scanned[1] = recent;
    }
}
