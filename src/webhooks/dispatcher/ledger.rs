//! Which fanned-out events still have fresh deliveries without a record.

use chrono::{DateTime, Utc};

use super::fan_out::PASS_OVERLAP;
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
    /// The smallest id of an event made since this dispatcher started, less
    /// `PASS_OVERLAP`: its start, not its last take-over (see `taken_over`).
    started: EventId,
}

impl FreshLedger {
    pub(super) fn new() -> Self {
        // Ids are made from the wall clock, whatever clock the service is given,
        // when a change is planned, before its write and its notice: an event
        // made just before this start, or under a clock stepped back, can have
        // an id below it and a notice still to come.
        Self::started_at(Utc::now() - PASS_OVERLAP)
    }

    fn started_at(at: DateTime<Utc>) -> Self {
        FreshLedger {
            unrecorded: FastMap::default(),
            scanned: Default::default(),
            started: EventId::floor_at(at),
        }
    }

    /// Forgets the deliveries an earlier time as the active instance left in
    /// progress, for a take-over (their markers stay in the outbox, and the
    /// take-over's scan finds them), but neither the events scans found nor
    /// when the dispatcher started. An event committed just before the
    /// take-over may have its notice still in the mailbox, handled after it; the
    /// take-over's scan finds that event in the outbox too, and must remember
    /// it, or the notice fans it out a second time once its delivery is
    /// recorded (a duplicate delivery CI caught on 28 November).
    pub(super) fn taken_over(&mut self) {
        self.unrecorded.clear();
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

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    #[test]
    fn an_event_scanned_at_a_take_over_is_not_fanned_out_again_by_its_late_notice() {
        let now = Utc::now();
        let mut ledger = FreshLedger::started_at(now - TimeDelta::seconds(60));
        // Committed while standing by, a moment before the take-over; its
        // notice is still on the way.
        let event = EventId::floor_at(now - TimeDelta::milliseconds(5));
        ledger.taken_over();
        // The take-over's scan fans it out, and its one delivery is recorded
        // and the event marked before the notice is looked at.
        ledger.fanned_out(event.clone(), 1, true);
        assert!(ledger.one_less_unrecorded(&event));
        ledger.marked(&event);

        assert!(!ledger.in_progress(&event));
        assert!(ledger.seen_by_scan(&event), "the late notice is let go");
    }

    #[test]
    fn a_take_over_forgets_deliveries_in_progress_but_not_scans() {
        let now = Utc::now();
        let mut ledger = FreshLedger::started_at(now - TimeDelta::seconds(60));
        let scanned = EventId::floor_at(now);
        let noticed = EventId::floor_at(now + TimeDelta::milliseconds(1));
        ledger.fanned_out(scanned.clone(), 2, true);
        ledger.fanned_out(noticed.clone(), 1, false);
        ledger.taken_over();
        assert!(!ledger.in_progress(&scanned));
        assert!(!ledger.in_progress(&noticed));
        assert!(ledger.seen_by_scan(&scanned));
        assert!(!ledger.seen_by_scan(&noticed));
    }
}
