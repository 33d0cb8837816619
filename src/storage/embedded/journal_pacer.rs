//! Flushes the small keyspaces one at a time, well before the journal reaches
//! its size limit, so fjall never flushes them all at once.
//!
//! Why: fjall deletes a journal file only once every keyspace that wrote to it
//! has flushed. The GPS keyspace flushes every 64 MiB; the small ones (loads,
//! events, accounts, ...) may hold a few writes for hours. When the sealed
//! journals reach `max_journaling_size`, fjall asks every such keyspace to
//! flush at the same moment, and those flushes each take the journal's lock to
//! sync it: GPS writes stopped for 100-174 ms once every few minutes of
//! sustained ingest (docs/perf-notes.md, "the 13-keyspace flush").
//!
//! Once two sealed journals wait to be deleted, the pacer flushes, at most one
//! a second and longest-holding first, the small keyspaces whose memtables
//! have held data since before the oldest of them was sealed (those are what
//! keep it), so it is freed long before fjall's own trigger. A keyspace
//! written only since then is left alone: flushing it would free nothing.
//!
//! `Keyspace::rotate_memtable` is public but hidden from fjall's documentation;
//! a fjall release that changes it fails the build here.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use fjall::{AbstractTree, Database, Keyspace};

use super::watcher_thread::{WatcherThread, every_keyspace};

/// fjall's limit on the sealed journals' size (its default, set explicitly so
/// the pacing below stays well under it).
pub(super) const JOURNAL_LIMIT: u64 = 512 * 1024 * 1024;

/// Pace once this many sealed journals wait to be deleted. A journal is sealed
/// at the first flush past 64 MB, so fjall's limit is reached at eight sealed
/// journals at the most; from two, six seals are left for the keyspaces that
/// keep the oldest one (the dozen written at set-up, in the stall runs) to
/// flush a second apart: enough unless journals are sealed faster than one
/// every two seconds, which takes over 30 MB/s of writes. Past that, fjall's
/// own trigger flushes the rest at once, as before.
const PACE_FROM_SEALED: usize = 2;

/// At most one flush this often: each takes the journal's lock for a sync,
/// which costs a write about what one group commit does.
const SPACING: Duration = Duration::from_secs(1);

/// How often the pacer looks.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// The running pacer; dropping it stops the thread.
pub(super) struct JournalPacer {
    _thread: WatcherThread,
}

impl JournalPacer {
    /// Starts pacing every keyspace of `db` but `busy` (the GPS series, which
    /// flushes by size often enough to free journals on its own).
    pub(super) fn start(db: &Database, busy: &str) -> std::io::Result<Self> {
        let mut pacing = Pacing::new(small_keyspaces(db, busy)?);
        let db = db.clone();
        let thread = WatcherThread::spawn(
            "freight-journal",
            LOOK_EVERY,
            || {},
            move || match pacing.look(&db, Instant::now()) {
                Ok(Some(keyspace)) => {
                    tracing::debug!(%keyspace, "flushed ahead of the journal limit");
                }
                Ok(None) => {}
                // Not fatal: fjall's own trigger still frees the journals,
                // only all at once.
                Err(error) => {
                    tracing::warn!(%error, "could not flush a keyspace ahead of the journal limit");
                }
            },
        )?;
        Ok(JournalPacer { _thread: thread })
    }
}

/// Every keyspace of `db` but `busy`.
fn small_keyspaces(db: &Database, busy: &str) -> std::io::Result<Vec<Keyspace>> {
    let mut keyspaces = every_keyspace(db)?;
    keyspaces.retain(|keyspace| keyspace.name().as_ref() != busy);
    Ok(keyspaces)
}

/// What the pacer remembers between looks.
struct Pacing {
    small: Vec<Keyspace>,
    /// Per small keyspace: its written memtable's id and when the pacer first
    /// saw it hold data; `None` while it is empty.
    holding_since: Vec<Option<(u64, Instant)>>,
    /// When the pacer saw each sealed journal appear, oldest first. fjall
    /// seals one journal at a time and deletes them oldest first, so the
    /// count's rises and falls say which; a seal and a deletion between two
    /// looks go unseen, which leaves the front too old: fewer flushes, never
    /// more.
    sealed_at: VecDeque<Instant>,
    last_flush: Option<Instant>,
}

impl Pacing {
    fn new(small: Vec<Keyspace>) -> Self {
        let holding_since = vec![None; small.len()];
        Pacing {
            small,
            holding_since,
            sealed_at: VecDeque::new(),
            last_flush: None,
        }
    }

    /// Notes which memtables hold data and which journals are sealed, and
    /// flushes the one that has held data longest if it keeps the oldest
    /// sealed journal and the journals call for it. Returns the flushed
    /// keyspace's name, if one was.
    fn look(&mut self, db: &Database, now: Instant) -> fjall::Result<Option<String>> {
        for (keyspace, since) in self.small.iter().zip(&mut self.holding_since) {
            let memtable = keyspace.tree.active_memtable();
            *since = match *since {
                _ if memtable.is_empty() => None,
                Some((id, seen)) if id == memtable.id() => Some((id, seen)),
                _ => Some((memtable.id(), now)),
            };
        }
        // The written journal is not sealed.
        let sealed = db.journal_count().saturating_sub(1);
        while self.sealed_at.len() > sealed {
            self.sealed_at.pop_front();
        }
        while self.sealed_at.len() < sealed {
            self.sealed_at.push_back(now);
        }
        if sealed < PACE_FROM_SEALED
            || self
                .last_flush
                .is_some_and(|last| now.duration_since(last) < SPACING)
        {
            return Ok(None);
        }
        let oldest_sealed = self.sealed_at[0];
        // Seen holding data no later than the seal was seen: it may hold
        // writes the oldest journal has (a flush too many costs a tiny table).
        let keeping = self
            .holding_since
            .iter()
            .enumerate()
            .filter_map(|(index, since)| since.map(|(_, seen)| (seen, index)))
            .filter(|&(seen, _)| seen <= oldest_sealed)
            .min();
        let Some((_, index)) = keeping else {
            return Ok(None);
        };
        // Spaced even when it fails, so a lasting error is not retried (and
        // logged) at every look.
        self.last_flush = Some(now);
        let keyspace = &self.small[index];
        let rotated = keyspace.rotate_memtable()?;
        self.holding_since[index] = None;
        Ok(rotated.then(|| keyspace.name().as_ref().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::KeyspaceCreateOptions;

    /// A database whose journal has been sealed twice, as sustained GPS
    /// ingest leaves it, with `older` and `newer` written before the seals
    /// (so they keep the oldest sealed journal) and `idle` never.
    fn sealed_twice(dir: &std::path::Path) -> (Database, Keyspace, Keyspace, Keyspace) {
        let db = Database::builder(dir)
            .max_journaling_size(JOURNAL_LIMIT)
            .open()
            .unwrap();
        let open = |name| db.keyspace(name, KeyspaceCreateOptions::default).unwrap();
        let (gps, older, newer, idle) = (open("gps"), open("older"), open("newer"), open("idle"));
        older.insert("a", "1").unwrap();
        newer.insert("b", "2").unwrap();
        // fjall seals the journal at a flush once it is past 64 MB (of
        // bytes that do not compress).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let value: Vec<u8> = (0..64 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for round in 0..2u32 {
            for i in 0..1_100u32 {
                gps.insert(format!("{round}-{i}"), value.as_slice())
                    .unwrap();
            }
            gps.rotate_memtable_and_wait().unwrap();
        }
        assert!(
            db.journal_count() > PACE_FROM_SEALED,
            "two journals sealed, and the written one"
        );
        (db, older, newer, idle)
    }

    /// With sealed journals waiting, the pacer flushes the keyspaces that
    /// keep the oldest one, longest-holding first, one per `SPACING`, and
    /// leaves empty keyspaces alone.
    #[test]
    fn flushes_the_longest_holding_small_keyspace_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (db, older, newer, idle) = sealed_twice(dir.path());
        let mut pacing = Pacing::new(vec![idle.clone(), newer.clone(), older.clone()]);
        let start = Instant::now();
        // The pacer saw `older` hold data before `newer`, both before it saw
        // the journals sealed (at its first look, below).
        pacing.holding_since[2] = Some((older.tree.active_memtable().id(), start));
        pacing.holding_since[1] = Some((newer.tree.active_memtable().id(), start + SPACING / 4));

        let first = pacing.look(&db, start + SPACING / 2).unwrap();
        assert_eq!(first.as_deref(), Some("older"));
        assert!(older.tree.active_memtable().is_empty(), "older was rotated");
        assert!(!newer.tree.active_memtable().is_empty(), "newer waits");

        let too_soon = pacing.look(&db, start + SPACING).unwrap();
        assert_eq!(too_soon, None, "one flush per SPACING");

        let second = pacing.look(&db, start + SPACING * 2).unwrap();
        assert_eq!(second.as_deref(), Some("newer"));
        assert!(idle.tree.active_memtable().is_empty(), "idle holds nothing");
    }

    /// A keyspace written only after the oldest sealed journal was sealed
    /// does not keep it: flushing it would free nothing, so the pacer leaves
    /// it, however long the journals wait on others.
    #[test]
    fn leaves_a_keyspace_written_after_the_oldest_seal() {
        let dir = tempfile::tempdir().unwrap();
        // `older` and `newer` keep the sealed journals; the pacer does not
        // watch them here.
        let (db, _older, _newer, later) = sealed_twice(dir.path());
        let mut pacing = Pacing::new(vec![later.clone()]);
        let start = Instant::now();
        assert_eq!(pacing.look(&db, start).unwrap(), None, "nothing held yet");
        later.insert("c", "3").unwrap();
        for step in 1..4 {
            assert_eq!(pacing.look(&db, start + SPACING * step).unwrap(), None);
        }
        assert!(
            db.journal_count() > PACE_FROM_SEALED,
            "the journals still wait"
        );
        assert!(
            !later.tree.active_memtable().is_empty(),
            "later was not flushed"
        );
    }

    /// Until journals are sealed, small keyspaces keep their writes in memory.
    #[test]
    fn leaves_small_keyspaces_alone_while_one_journal_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        let small = db
            .keyspace("small", KeyspaceCreateOptions::default)
            .unwrap();
        small.insert("a", "1").unwrap();
        let mut pacing = Pacing::new(vec![small.clone()]);
        let start = Instant::now();
        for step in 0..4 {
            assert_eq!(pacing.look(&db, start + SPACING * step).unwrap(), None);
        }
        assert!(!small.tree.active_memtable().is_empty());
    }

    /// Once the pacer has flushed every keyspace that kept them, fjall
    /// deletes the sealed journals.
    #[test]
    fn the_sealed_journals_are_freed_after_pacing() {
        let dir = tempfile::tempdir().unwrap();
        let (db, older, newer, idle) = sealed_twice(dir.path());
        let gps = db.keyspace("gps", KeyspaceCreateOptions::default).unwrap();
        let mut pacing = Pacing::new(vec![older, newer, idle]);
        let start = Instant::now();
        for step in 0..4 {
            pacing.look(&db, start + SPACING * step).unwrap();
        }
        for keyspace in &pacing.small {
            wait_until_flushed(keyspace);
        }
        // fjall deletes unneeded journals after a flush's last step, which
        // `wait_until_flushed` cannot see end; a rotation runs that step
        // itself before it returns.
        gps.insert("last", "fix").unwrap();
        gps.rotate_memtable_and_wait().unwrap();
        assert_eq!(db.journal_count(), 1, "only the written journal is left");
    }

    /// The pacer watches every keyspace but the busy one.
    #[test]
    fn watches_every_keyspace_but_the_busy_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        for name in ["gps_track", "loads", "events"] {
            db.keyspace(name, KeyspaceCreateOptions::default).unwrap();
        }
        let mut names: Vec<String> = small_keyspaces(&db, "gps_track")
            .unwrap()
            .iter()
            .map(|keyspace| keyspace.name().as_ref().to_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["events", "loads"]);
    }

    /// Waits for the flushes the pacer asked for (fjall runs them on its own
    /// threads and says nothing when they are done).
    fn wait_until_flushed(keyspace: &Keyspace) {
        let give_up = Instant::now() + Duration::from_secs(30);
        while keyspace.sealed_memtable_count() > 0 {
            assert!(Instant::now() < give_up, "a flush did not finish");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
