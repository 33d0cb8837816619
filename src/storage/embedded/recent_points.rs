//! What this process knows of each load's stored point times, so that a fix
//! can be told new or duplicate without a lookup in the store.
//!
//! A load whose fixes come in time order needs only its newest time: a later
//! fix is new. A load whose fixes come out of order (a gateway forwarding
//! batches over several connections) would need a point lookup for each late
//! fix, and under sustained bulk ingest those lookups grow dearer as tables
//! pile up (docs/perf-notes.md, "Bulk ingest collapses"). Such a load gets a
//! window instead: every stored time from a floor up, held exactly, so a late
//! fix inside it is answered from memory. The window is read from the store
//! at the load's first late fix (its newest `WINDOW` times: one reverse seek,
//! as reading its newest time is): a batch sent again, all of it duplicates,
//! costs that one read for its fixes among the load's newest 64, and a
//! lookup only for each fix older than those.
//!
//! What is known here must be exact both ways. A time wrongly taken as stored
//! would answer a new fix "duplicate" and drop it, so times are recorded only
//! once written, and a failed write forgets everything (`forget_all`):
//! knowledge is rebuilt from the store.

use crate::domain::ids::LoadId;
use crate::shared_map::FastHashMap;

/// Loads remembered; past this the memory is dropped and rebuilt as points
/// arrive. An in-order load costs about 64 bytes, a windowed one about 600
/// (its window is allocated whole): 160 MiB if every load were windowed.
const CAPACITY: usize = 262_144;

/// Stored times a windowed load keeps below its newest: late fixes arriving
/// within this many of the load's newest points are answered from memory.
const WINDOW: usize = 64;

/// One load's stored point times, as far as this process knows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    /// No stored time is later than `newest` (`None`: the load has none), and
    /// `newest` itself is stored.
    Newest(Option<u64>),
    /// Every stored time at or after `floor` is in `times` (ascending, at most
    /// `WINDOW`); times below `floor` are unknown.
    Window { floor: u64, times: Vec<u64> },
}

/// Whether a fix's time is stored, as far as memory can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// The load is not remembered: read its newest time from the store
    /// (`learn`) and ask again.
    Unknown,
    /// Known not stored: the fix is new.
    New,
    /// Known stored: the fix is a duplicate.
    Stored,
    /// Below the newest time of a load that kept only that: read the load's
    /// newest `WINDOW` stored times (`widen`) and ask again.
    Widen,
    /// Below what memory holds: look it up in the store.
    LookUp,
}

pub(super) struct RecentPoints {
    loads: FastHashMap<LoadId, Known>,
    /// Loads remembered at most (`CAPACITY`; smaller in tests).
    capacity: usize,
}

impl Default for RecentPoints {
    fn default() -> Self {
        RecentPoints {
            loads: FastHashMap::default(),
            capacity: CAPACITY,
        }
    }
}

impl RecentPoints {
    /// Whether `at` (µs) is a stored time of `load`.
    pub(super) fn answer(&self, load: &LoadId, at: u64) -> Answer {
        match self.loads.get(load) {
            None => Answer::Unknown,
            Some(Known::Newest(None)) => Answer::New,
            Some(Known::Newest(Some(newest))) if at > *newest => Answer::New,
            Some(Known::Newest(Some(newest))) if at == *newest => Answer::Stored,
            Some(Known::Newest(Some(_))) => Answer::Widen,
            Some(Known::Window { floor, .. }) if at < *floor => Answer::LookUp,
            Some(Known::Window { times, .. }) => match times.binary_search(&at) {
                Ok(_) => Answer::Stored,
                Err(_) => Answer::New,
            },
        }
    }

    /// Remembers `load`'s newest stored time, as read from the store. Drops
    /// everything first when the map is full.
    pub(super) fn learn(&mut self, load: &LoadId, newest: Option<u64>) {
        if self.loads.len() >= self.capacity {
            self.loads.clear();
        }
        self.loads.insert(load.clone(), Known::Newest(newest));
    }

    /// How many of a load's newest stored times `widen` wants.
    pub(super) fn window() -> usize {
        WINDOW
    }

    /// Gives `load` a window from its newest stored times as read from the
    /// store (ascending, at most `WINDOW`; fewer when the load has no more, so
    /// every stored time is known). Only for a load that kept its newest time.
    pub(super) fn widen(&mut self, load: &LoadId, newest_times: Vec<u64>) {
        let Some(known @ Known::Newest(_)) = self.loads.get_mut(load) else {
            return;
        };
        debug_assert!(newest_times.is_sorted() && newest_times.len() <= WINDOW);
        let floor = match newest_times.len() {
            WINDOW => newest_times[0],
            _ => 0,
        };
        // Allocated whole, with room for the one time `stored` adds before
        // it drops the oldest: grown by doubling, it would end at twice the
        // size it needs.
        let mut times = Vec::with_capacity(WINDOW + 1);
        times.extend(newest_times);
        *known = Known::Window { floor, times };
    }

    /// Records that a point of `load` at `at` was written (the caller holds
    /// this map's lock from its check to here).
    pub(super) fn stored(&mut self, load: &LoadId, at: u64) {
        let Some(known) = self.loads.get_mut(load) else {
            return;
        };
        match known {
            Known::Newest(newest) => match *newest {
                // Not asked about (`widen` would have made a window): what is
                // below the newest stays for the store to tell.
                Some(n) if at < n => {}
                _ => *newest = Some(at),
            },
            Known::Window { floor, times } => {
                if at < *floor {
                    return;
                }
                if let Err(position) = times.binary_search(&at) {
                    times.insert(position, at);
                }
                if times.len() > WINDOW {
                    // The window moves up: its oldest time leaves, and with it
                    // what memory can say below the next one.
                    let oldest = times.remove(0);
                    *floor = oldest + 1;
                }
            }
        }
    }

    /// Forgets every load: after a write whose outcome is unknown, what is
    /// remembered may name times that were never stored.
    pub(super) fn forget_all(&mut self) {
        self.loads.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> LoadId {
        LoadId::generate()
    }

    #[test]
    fn an_unknown_load_must_be_read_first() {
        let recent = RecentPoints::default();
        assert_eq!(recent.answer(&load(), 5), Answer::Unknown);
    }

    #[test]
    fn a_load_with_no_points_takes_any_fix_as_new() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, None);
        assert_eq!(recent.answer(&l, 0), Answer::New);
        recent.stored(&l, 10);
        assert_eq!(recent.answer(&l, 10), Answer::Stored);
        assert_eq!(recent.answer(&l, 11), Answer::New);
        assert_eq!(recent.answer(&l, 9), Answer::Widen);
    }

    #[test]
    fn in_order_fixes_keep_only_the_newest_time() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(100));
        for at in 101..200 {
            assert_eq!(recent.answer(&l, at), Answer::New);
            recent.stored(&l, at);
        }
        assert_eq!(recent.loads[&l], Known::Newest(Some(199)));
        assert_eq!(recent.answer(&l, 199), Answer::Stored);
        // Below the newest, memory cannot tell: 150 is stored, 99 is not.
        assert_eq!(recent.answer(&l, 150), Answer::Widen);
        assert_eq!(recent.answer(&l, 99), Answer::Widen);
    }

    #[test]
    fn a_late_fix_reads_a_window_that_answers_it_and_later_ones() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(100));
        assert_eq!(recent.answer(&l, 90), Answer::Widen);
        // The store holds even times from 2 to 100: more than a window.
        let stored: Vec<u64> = (1..=50).map(|n| 2 * n).collect();
        let newest = stored[stored.len() - WINDOW.min(stored.len())..].to_vec();
        assert_eq!(newest.len(), 50, "fewer than a window: all of them");
        recent.widen(&l, newest);
        assert_eq!(recent.answer(&l, 90), Answer::Stored);
        assert_eq!(recent.answer(&l, 91), Answer::New);
        assert_eq!(recent.answer(&l, 1), Answer::New, "the load has no more");
        recent.stored(&l, 91);
        for at in [102, 104, 105] {
            recent.stored(&l, at);
        }
        assert_eq!(recent.answer(&l, 91), Answer::Stored);
        assert_eq!(recent.answer(&l, 103), Answer::New);
        assert_eq!(recent.answer(&l, 105), Answer::Stored);
        assert_eq!(recent.answer(&l, 106), Answer::New);
    }

    #[test]
    fn a_full_window_read_from_the_store_leaves_older_times_to_it() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(1_000 + WINDOW as u64 - 1));
        let newest: Vec<u64> = (1_000..1_000 + WINDOW as u64).collect();
        recent.widen(&l, newest);
        assert_eq!(recent.answer(&l, 1_000), Answer::Stored);
        assert_eq!(recent.answer(&l, 999), Answer::LookUp);
        // A window is read once: asked again, memory answers or looks up.
        assert_eq!(recent.answer(&l, 1_010), Answer::Stored);
    }

    #[test]
    fn a_batch_sent_again_is_answered_from_memory() {
        let mut recent = RecentPoints::default();
        let l = load();
        let batch: Vec<u64> = (1..=20).map(|n| 10 * n).collect();
        recent.learn(&l, Some(200));
        assert_eq!(recent.answer(&l, batch[0]), Answer::Widen);
        recent.widen(&l, batch.clone());
        for at in &batch {
            assert_eq!(recent.answer(&l, *at), Answer::Stored, "at {at}");
        }
    }

    #[test]
    fn only_a_load_that_kept_its_newest_time_is_widened() {
        let mut recent = RecentPoints::default();
        let (unknown, windowed) = (load(), load());
        recent.widen(&unknown, vec![1, 2]);
        assert_eq!(recent.answer(&unknown, 1), Answer::Unknown);
        recent.learn(&windowed, Some(5));
        recent.widen(&windowed, vec![3, 5]);
        recent.stored(&windowed, 4);
        // Read again (a later batch), it would lose the 4 written since.
        recent.widen(&windowed, vec![3, 5]);
        assert_eq!(recent.answer(&windowed, 4), Answer::Stored);
    }

    #[test]
    fn the_window_moves_up_and_stays_exact() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(1_000));
        recent.widen(&l, vec![999, 1_000]);
        // Even times stored from 1,002 up, more than the window holds.
        let stored: Vec<u64> = (1..=(WINDOW as u64 * 2)).map(|n| 1_000 + 2 * n).collect();
        for at in &stored {
            recent.stored(&l, *at);
        }
        let Known::Window { floor, times } = &recent.loads[&l] else {
            panic!("a window was expected");
        };
        assert_eq!(times.len(), WINDOW);
        assert_eq!(*floor, times[0] - 1);
        let newest = *stored.last().unwrap();
        for at in *floor..=newest + 1 {
            let expected = if stored.contains(&at) {
                Answer::Stored
            } else {
                Answer::New
            };
            assert_eq!(recent.answer(&l, at), expected, "at {at}");
        }
        assert_eq!(recent.answer(&l, floor - 1), Answer::LookUp);
    }

    #[test]
    fn a_load_read_after_the_write_is_not_changed_by_it() {
        // `stored` for a load never learned (dropped when the map was full)
        // leaves it unknown rather than guessing.
        let mut recent = RecentPoints::default();
        let l = load();
        recent.stored(&l, 5);
        assert_eq!(recent.answer(&l, 5), Answer::Unknown);
    }

    #[test]
    fn a_full_map_is_dropped_and_read_again() {
        let mut recent = RecentPoints {
            capacity: 2,
            ..RecentPoints::default()
        };
        let (a, b, c) = (load(), load(), load());
        recent.learn(&a, Some(1));
        recent.learn(&b, Some(2));
        recent.learn(&c, Some(3));
        assert_eq!(recent.answer(&a, 1), Answer::Unknown);
        assert_eq!(recent.answer(&b, 2), Answer::Unknown);
        assert_eq!(recent.answer(&c, 3), Answer::Stored);
        // A point written for a load dropped meanwhile is not recorded.
        recent.stored(&a, 4);
        assert_eq!(recent.answer(&a, 4), Answer::Unknown);
    }

    #[test]
    fn forgetting_makes_every_load_unknown() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(3));
        recent.stored(&l, 4);
        recent.forget_all();
        assert_eq!(recent.answer(&l, 4), Answer::Unknown);
    }
}
