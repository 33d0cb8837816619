//! What this process knows of each load's stored point times, so that a fix
//! can be told new or duplicate without a lookup in the store.
//!
//! A load whose fixes come in time order needs only its newest time: a later
//! fix is new. A load whose fixes come out of order (a gateway forwarding
//! batches over several connections) would need a point lookup for each late
//! fix, and under sustained bulk ingest those lookups grow dearer as tables
//! pile up (docs/perf-notes.md, "Bulk ingest collapses"). Such a load gets a
//! window instead: every stored time from a floor up, held exactly, so a late
//! fix inside it is answered from memory.
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
    /// Below what memory holds: look it up in the store.
    LookUp,
}

#[derive(Default)]
pub(super) struct RecentPoints {
    loads: FastHashMap<LoadId, Known>,
}

impl RecentPoints {
    /// Whether `at` (µs) is a stored time of `load`.
    pub(super) fn answer(&self, load: &LoadId, at: u64) -> Answer {
        match self.loads.get(load) {
            None => Answer::Unknown,
            Some(Known::Newest(None)) => Answer::New,
            Some(Known::Newest(Some(newest))) if at > *newest => Answer::New,
            Some(Known::Newest(Some(newest))) if at == *newest => Answer::Stored,
            Some(Known::Newest(Some(_))) => Answer::LookUp,
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
        if self.loads.len() >= CAPACITY {
            self.loads.clear();
        }
        self.loads.insert(load.clone(), Known::Newest(newest));
    }

    /// Records that a point of `load` at `at` was written (the caller holds
    /// this map's lock from its check to here). A time below the load's newest
    /// shows its fixes come out of order: from then on it keeps a window.
    pub(super) fn stored(&mut self, load: &LoadId, at: u64) {
        let Some(known) = self.loads.get_mut(load) else {
            return;
        };
        match known {
            Known::Newest(newest) => match *newest {
                Some(n) if at < n => {
                    // Out of order: from here on, keep a window. It starts
                    // exact from the newest time up; `at` lies below it.
                    // Allocated whole: grown by doubling, it would end
                    // at twice the size it needs.
                    let mut times = Vec::with_capacity(WINDOW + 1);
                    times.push(n);
                    *known = Known::Window { floor: n, times };
                }
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
        assert_eq!(recent.answer(&l, 9), Answer::LookUp);
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
        assert_eq!(recent.answer(&l, 150), Answer::LookUp);
        assert_eq!(recent.answer(&l, 99), Answer::LookUp);
    }

    #[test]
    fn a_late_fix_starts_a_window_that_answers_later_late_fixes() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(100));
        // A late fix: looked up, then stored below the window.
        assert_eq!(recent.answer(&l, 90), Answer::LookUp);
        recent.stored(&l, 90);
        // Later fixes, some skipped (they arrive late, below).
        for at in [102, 104, 105, 108] {
            recent.stored(&l, at);
        }
        assert_eq!(recent.answer(&l, 104), Answer::Stored);
        assert_eq!(recent.answer(&l, 103), Answer::New);
        recent.stored(&l, 103);
        assert_eq!(recent.answer(&l, 103), Answer::Stored);
        assert_eq!(recent.answer(&l, 100), Answer::Stored);
        assert_eq!(recent.answer(&l, 101), Answer::New);
        assert_eq!(recent.answer(&l, 109), Answer::New);
        // Below the window's floor (100), the store decides, 90 included.
        assert_eq!(recent.answer(&l, 99), Answer::LookUp);
        assert_eq!(recent.answer(&l, 90), Answer::LookUp);
    }

    #[test]
    fn the_window_moves_up_and_stays_exact() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(1_000));
        recent.stored(&l, 999);
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
    fn forgetting_makes_every_load_unknown() {
        let mut recent = RecentPoints::default();
        let l = load();
        recent.learn(&l, Some(3));
        recent.stored(&l, 4);
        recent.forget_all();
        assert_eq!(recent.answer(&l, 4), Answer::Unknown);
    }
}
