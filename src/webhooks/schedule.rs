//! The dispatcher's in-memory window onto the pending deliveries: soonest first,
//! one queue per subscription so a busy receiver's backlog is skipped in one step
//! instead of entry by entry.
//!
//! For a recorded entry storage is the truth (a pending delivery written with the
//! same due time), and this is a bounded cache of it: when one does not fit, the
//! schedule remembers that storage holds more than memory does (`overflowed`),
//! and the dispatcher reloads the soonest ones from storage. A fresh entry, not
//! recorded yet (`Queued::recorded`), has no other copy in this process: it is
//! always kept.

use std::collections::{BTreeMap, BTreeSet};

use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use super::FastMap;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::Delivery;

/// A scheduled delivery, with its event's signed-over body when it is at hand
/// (fan-out has it; a delivery reloaded from storage reads its event when sent).
#[derive(Debug, Clone)]
pub struct Queued {
    pub delivery: Delivery,
    pub body: Option<Bytes>,
    /// Storage has a record of this delivery. A fresh one from fan-out has none
    /// until its first attempt is recorded (its event's outbox marker stands for
    /// it meanwhile), so memory is its only copy in this process: it is never
    /// turned away or evicted.
    pub recorded: bool,
}

type Key = (WebhookId, EventId);

#[derive(Debug)]
pub struct Schedule {
    capacity: usize,
    queues: FastMap<WebhookId, BTreeMap<(DateTime<Utc>, EventId), Queued>>,
    /// Each non-empty queue's soonest due time.
    heads: BTreeSet<(DateTime<Utc>, WebhookId)>,
    /// Where each queued delivery sits, to find it again (redelivery, dedupe).
    index: FastMap<Key, DateTime<Utc>>,
    overflowed: bool,
    turned_away: u64,
}

impl Schedule {
    /// Starts as overflowed: until storage has been read, memory knows nothing.
    pub fn new(capacity: usize) -> Self {
        Schedule {
            capacity: capacity.max(1),
            queues: FastMap::default(),
            heads: BTreeSet::new(),
            index: FastMap::default(),
            overflowed: true,
            turned_away: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Storage holds pending deliveries that memory does not.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub fn contains(&self, webhook: &WebhookId, event: &EventId) -> bool {
        self.index.contains_key(&(webhook.clone(), event.clone()))
    }

    /// Adds a pending delivery (replacing one of the same key). Without a next
    /// attempt time (parked) it has no place here. When memory is full, it stays
    /// in storage only and the schedule says so.
    pub fn push(&mut self, queued: Queued) {
        let key = (
            queued.delivery.webhook_id.clone(),
            queued.delivery.event_id.clone(),
        );
        self.remove(&key.0, &key.1);
        let Some(at) = queued.delivery.next_attempt_at else {
            return;
        };
        if self.index.len() >= self.capacity && queued.recorded {
            self.overflowed = true;
            self.turned_away += 1;
            return;
        }
        let queue = self.queues.entry(key.0.clone()).or_default();
        let old_head = queue.keys().next().map(|(t, _)| *t);
        queue.insert((at, key.1.clone()), queued);
        if old_head.is_none_or(|head| at < head) {
            if let Some(head) = old_head {
                self.heads.remove(&(head, key.0.clone()));
            }
            self.heads.insert((at, key.0.clone()));
        }
        self.index.insert(key, at);
    }

    /// A queued delivery, left where it is.
    pub fn get(&self, webhook: &WebhookId, event: &EventId) -> Option<&Queued> {
        let at = self.index.get(&(webhook.clone(), event.clone()))?;
        self.queues.get(webhook)?.get(&(*at, event.clone()))
    }

    /// Takes a queued delivery out (a redelivery reschedules it).
    pub fn remove(&mut self, webhook: &WebhookId, event: &EventId) -> Option<Queued> {
        let at = self.index.remove(&(webhook.clone(), event.clone()))?;
        let queue = self.queues.get_mut(webhook)?;
        let old_head = queue.keys().next().map(|(t, _)| *t);
        let removed = queue.remove(&(at, event.clone()));
        self.head_moved(webhook, old_head);
        removed
    }

    /// Takes out every queued delivery of a subscription (it was deleted).
    pub fn remove_webhook(&mut self, webhook: &WebhookId) -> Vec<Queued> {
        let Some(queue) = self.queues.remove(webhook) else {
            return Vec::new();
        };
        if let Some(((head, _), _)) = queue.first_key_value() {
            self.heads.remove(&(*head, webhook.clone()));
        }
        queue
            .into_values()
            .inspect(|queued| {
                self.index
                    .remove(&(webhook.clone(), queued.delivery.event_id.clone()));
            })
            .collect()
    }

    /// Keeps `heads` in step after a subscription's queue lost entries from its
    /// front (its head was `old_head`), dropping the queue once it is empty.
    fn head_moved(&mut self, webhook: &WebhookId, old_head: Option<DateTime<Utc>>) {
        let new_head = self
            .queues
            .get(webhook)
            .and_then(|queue| queue.keys().next().map(|(t, _)| *t));
        if new_head == old_head {
            return;
        }
        if let Some(head) = old_head {
            self.heads.remove(&(head, webhook.clone()));
        }
        match new_head {
            Some(head) => {
                self.heads.insert((head, webhook.clone()));
            }
            None => {
                self.queues.remove(webhook);
            }
        }
    }

    /// Takes out the deliveries storage has no record of that were due at
    /// `cutoff` or before: they have waited that long for their first attempt.
    pub fn take_waiting_unrecorded(&mut self, cutoff: DateTime<Utc>) -> Vec<Queued> {
        let mut waiting = Vec::new();
        for (head, webhook) in &self.heads {
            if *head > cutoff {
                break;
            }
            let Some(queue) = self.queues.get(webhook) else {
                continue;
            };
            waiting.extend(
                queue
                    .iter()
                    .take_while(|((at, _), _)| *at <= cutoff)
                    .filter(|(_, queued)| !queued.recorded)
                    .map(|((_, event), _)| (webhook.clone(), event.clone())),
            );
        }
        waiting
            .into_iter()
            .filter_map(|(webhook, event)| self.remove(&webhook, &event))
            .collect()
    }

    /// The earliest due time of anything queued.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        self.heads.first().map(|(t, _)| *t)
    }

    /// Takes up to `limit` deliveries due at `now` or before, soonest subscription
    /// first, and from each subscription at most as many as `room` allows (its free
    /// request slots). A subscription with no room keeps its whole queue.
    pub fn take_due(
        &mut self,
        now: DateTime<Utc>,
        limit: usize,
        mut room: impl FnMut(&WebhookId) -> usize,
    ) -> Vec<Queued> {
        // The subscriptions with something due and room for it, soonest first, as
        // many as could be served (usually one slot has just come free).
        let mut ready: Vec<(WebhookId, usize)> = Vec::new();
        let mut wanted = limit;
        for (at, webhook) in &self.heads {
            if *at > now || wanted == 0 {
                break;
            }
            let free = room(webhook).min(wanted);
            if free > 0 {
                ready.push((webhook.clone(), free));
                wanted -= free;
            }
        }
        let mut taken = Vec::new();
        for (webhook, free) in ready {
            let Some(queue) = self.queues.get_mut(&webhook) else {
                continue;
            };
            let old_head = queue.keys().next().map(|(t, _)| *t);
            for _ in 0..free {
                match queue.first_entry() {
                    Some(entry) if entry.key().0 <= now => {
                        let queued = entry.remove();
                        self.index
                            .remove(&(webhook.clone(), queued.delivery.event_id.clone()));
                        taken.push(queued);
                    }
                    _ => break,
                }
            }
            self.head_moved(&webhook, old_head);
        }
        taken
    }

    /// Adds the soonest pending deliveries read from storage (the caller leaves
    /// out those it knows better: in flight, or changed since the read began).
    /// When memory is full, the latest deliveries give way to sooner ones.
    /// `complete` says the read returned everything storage has and nothing was
    /// turned away meanwhile; only then does memory hold the whole backlog again.
    pub fn merge(&mut self, soonest: Vec<Delivery>, complete: bool) {
        let mut left_out = false;
        for delivery in soonest {
            if let Some(queued) = self.get(&delivery.webhook_id, &delivery.event_id) {
                // Memory's copy stands unless storage was changed behind it (a
                // redelivery stored by another instance sharing the store):
                // the caller leaves out what changed here since its read.
                let moved =
                    queued.recorded && queued.delivery.next_attempt_at != delivery.next_attempt_at;
                if !moved {
                    continue;
                }
                self.remove(&delivery.webhook_id, &delivery.event_id);
            }
            let Some(at) = delivery.next_attempt_at else {
                continue;
            };
            if self.index.len() >= self.capacity {
                match self.latest() {
                    // Only a recorded delivery gives way: storage has it still.
                    Some((latest, webhook, event))
                        if at < latest
                            && self.get(&webhook, &event).is_some_and(|q| q.recorded) =>
                    {
                        self.remove(&webhook, &event);
                        left_out = true;
                    }
                    _ => {
                        left_out = true;
                        continue;
                    }
                }
            }
            self.push(Queued {
                delivery,
                body: None,
                recorded: true,
            });
        }
        // Whatever was left out is in storage still.
        self.overflowed = !complete || left_out;
    }

    /// The latest queued delivery (found among each subscription's last).
    fn latest(&self) -> Option<(DateTime<Utc>, WebhookId, EventId)> {
        self.queues
            .iter()
            .filter_map(|(webhook, queue)| {
                queue
                    .keys()
                    .next_back()
                    .map(|(at, event)| (*at, webhook.clone(), event.clone()))
            })
            .max_by_key(|(at, _, _)| *at)
    }

    /// How many deliveries were turned away for want of room, to tell whether any
    /// were between a read of storage and its merge (then the read is incomplete).
    pub fn turned_away(&self) -> u64 {
        self.turned_away
    }

    /// Memory no longer holds everything storage has pending (a delivery left
    /// memory without being recorded): the next reload will find it.
    pub fn mark_overflowed(&mut self) {
        self.overflowed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

    fn delivery(webhook: &WebhookId, at: DateTime<Utc>) -> Delivery {
        Delivery::new(
            webhook.clone(),
            EventId::generate(),
            EventType::LoadCreated,
            at,
        )
    }

    fn queued(delivery: Delivery) -> Queued {
        Queued {
            delivery,
            body: None,
            recorded: true,
        }
    }

    #[test]
    fn a_delivery_storage_has_no_record_of_is_never_turned_away_or_evicted() {
        let now = Utc::now();
        let webhook = WebhookId::generate();
        let mut schedule = Schedule::new(1);
        schedule.merge(Vec::new(), true);
        let fresh = |at| Queued {
            delivery: delivery(&webhook, at),
            body: None,
            recorded: false,
        };
        let first = fresh(now + chrono::Duration::seconds(10));
        let first_event = first.delivery.event_id.clone();
        schedule.push(first);
        schedule.push(fresh(now + chrono::Duration::seconds(20)));
        assert_eq!(schedule.len(), 2, "over capacity rather than lost");
        assert_eq!(schedule.turned_away(), 0);
        // A sooner delivery read from storage does not push a fresh one out.
        schedule.merge(vec![delivery(&webhook, now)], true);
        assert_eq!(schedule.len(), 2);
        assert!(schedule.overflowed(), "the stored one stays in storage");
        // A recorded one is turned away when memory is full.
        schedule.push(queued(delivery(&webhook, now)));
        assert_eq!(schedule.turned_away(), 1);
        assert!(
            schedule
                .get(&webhook, &first_event)
                .is_some_and(|q| !q.recorded)
        );
        // Waiting since before the cutoff, and not recorded: taken out.
        let waiting = schedule.take_waiting_unrecorded(now + chrono::Duration::seconds(15));
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].delivery.event_id, first_event);
        assert_eq!(schedule.len(), 1);
        assert!(
            schedule
                .take_waiting_unrecorded(now + chrono::Duration::seconds(15))
                .is_empty()
        );
    }

    #[test]
    fn a_deleted_webhooks_deliveries_all_leave_and_the_rest_stay_due() {
        let now = Utc::now();
        let (gone, kept) = (WebhookId::generate(), WebhookId::generate());
        let mut schedule = Schedule::new(100);
        schedule.merge(Vec::new(), true);
        for n in 0..3 {
            schedule.push(queued(delivery(&gone, now - chrono::Duration::seconds(n))));
        }
        let stays = delivery(&kept, now - chrono::Duration::seconds(1));
        schedule.push(queued(stays.clone()));
        assert_eq!(schedule.remove_webhook(&gone).len(), 3);
        assert_eq!(schedule.len(), 1);
        assert!(schedule.remove_webhook(&gone).is_empty());
        assert_eq!(schedule.next_due(), stays.next_attempt_at);
        let due = schedule.take_due(now, 10, |_| 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].delivery.webhook_id, kept);
        assert!(schedule.is_empty());
    }

    #[test]
    fn takes_due_soonest_first_and_respects_room() {
        let now = Utc::now();
        let (busy, free) = (WebhookId::generate(), WebhookId::generate());
        let mut schedule = Schedule::new(100);
        schedule.merge(Vec::new(), true);
        for n in 0..5 {
            schedule.push(queued(delivery(
                &busy,
                now - chrono::Duration::seconds(10 - n),
            )));
        }
        let later = delivery(&free, now + chrono::Duration::seconds(5));
        schedule.push(queued(later.clone()));
        let soon = delivery(&free, now - chrono::Duration::seconds(1));
        schedule.push(queued(soon.clone()));
        assert_eq!(schedule.len(), 7);

        // The busy subscription has no room: only the other's due delivery comes out.
        let taken = schedule.take_due(now, 10, |w| if *w == busy { 0 } else { 10 });
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].delivery.event_id, soon.event_id);
        // Room for two: the two oldest of the busy one.
        let taken = schedule.take_due(now, 10, |w| if *w == busy { 2 } else { 10 });
        assert_eq!(taken.len(), 2);
        assert!(taken[0].delivery.next_attempt_at < taken[1].delivery.next_attempt_at);
        // The limit caps the total.
        assert_eq!(schedule.take_due(now, 1, |_| 10).len(), 1);
        assert_eq!(schedule.take_due(now, 10, |_| 10).len(), 2);
        assert_eq!(schedule.next_due(), later.next_attempt_at);
        assert!(schedule.take_due(now, 10, |_| 10).is_empty());
        assert!(schedule.contains(&free, &later.event_id));
        assert!(schedule.remove(&free, &later.event_id).is_some());
        assert!(schedule.is_empty());
        assert_eq!(schedule.next_due(), None);
    }

    /// Storage changed behind memory (another instance stored a redelivery):
    /// the read's due time wins; an unchanged copy keeps memory's body.
    #[test]
    fn a_reload_takes_a_due_time_storage_moved() {
        let now = Utc::now();
        let webhook = WebhookId::generate();
        let mut schedule = Schedule::new(10);
        let (later, same) = (
            delivery(&webhook, now + chrono::Duration::minutes(30)),
            delivery(&webhook, now + chrono::Duration::minutes(5)),
        );
        schedule.push(queued(later.clone()));
        schedule.push(Queued {
            body: Some(Bytes::from_static(b"{}")),
            ..queued(same.clone())
        });
        let redelivered = Delivery {
            next_attempt_at: Some(now),
            ..later.clone()
        };
        schedule.merge(vec![redelivered.clone(), same.clone()], true);
        assert_eq!(schedule.len(), 2);
        assert_eq!(schedule.next_due(), Some(now));
        let moved = schedule.get(&webhook, &later.event_id).unwrap();
        assert_eq!(moved.delivery, redelivered);
        let kept = schedule.get(&webhook, &same.event_id).unwrap();
        assert!(kept.body.is_some(), "memory's copy stands");
    }

    #[test]
    fn a_full_schedule_overflows_and_a_reload_recovers() {
        let now = Utc::now();
        let webhook = WebhookId::generate();
        let mut schedule = Schedule::new(2);
        assert!(schedule.overflowed(), "nothing read from storage yet");
        schedule.merge(Vec::new(), true);
        assert!(!schedule.overflowed());
        let all: Vec<Delivery> = (0..3)
            .map(|n| delivery(&webhook, now + chrono::Duration::seconds(n)))
            .collect();
        for d in &all {
            schedule.push(queued(d.clone()));
        }
        assert_eq!(schedule.len(), 2);
        assert!(schedule.overflowed());
        // Re-pushing a queued key replaces it rather than overflowing.
        let moved = Delivery {
            next_attempt_at: Some(now + chrono::Duration::seconds(9)),
            ..all[0].clone()
        };
        schedule.push(queued(moved));
        assert_eq!(schedule.len(), 2);
        assert_eq!(schedule.next_due(), all[1].next_attempt_at);

        assert_eq!(schedule.turned_away(), 1);

        // A read of storage: sooner deliveries push the latest out.
        let sooner = delivery(&webhook, now - chrono::Duration::seconds(1));
        schedule.merge(vec![sooner.clone(), all[1].clone()], true);
        assert_eq!(schedule.len(), 2);
        assert_eq!(schedule.next_due(), sooner.next_attempt_at);
        assert!(
            schedule.overflowed(),
            "the one pushed out is in storage only"
        );
        assert!(!schedule.contains(&webhook, &all[0].event_id));
        // Everything fits: memory holds the whole backlog again.
        let mut roomy = Schedule::new(10);
        roomy.merge(all.clone(), true);
        assert!(!roomy.overflowed());
        assert_eq!(roomy.len(), 3);
        roomy.merge(Vec::new(), false);
        assert!(
            roomy.overflowed(),
            "an incomplete read leaves it overflowed"
        );
        // A parked delivery (no next attempt) is not scheduled, and replaces its
        // scheduled self.
        schedule.push(queued(Delivery {
            next_attempt_at: None,
            ..all[1].clone()
        }));
        assert_eq!(schedule.len(), 1);
        assert!(!schedule.contains(&webhook, &all[1].event_id));
    }
}
