//! What the embedded store itself does, for `/metrics`: flushes and
//! compactions per keyspace, the time writers were held back by the store's
//! write stalls, the journal's size and the memtables' bytes. Read from fjall
//! at scrape time, so the write path pays nothing for them.
//!
//! An operator tells a stall from a slow request path with them: a latency
//! spike beside a step in `freight_store_compactions_total{keyspace="gps_track"}`
//! or in `freight_store_write_stall_seconds_total` is the store's.

use std::collections::HashMap;
use std::sync::Mutex;

use fjall::Database;

pub const FLUSHES_METRIC: &str = "freight_store_flushes_total";
pub const COMPACTIONS_METRIC: &str = "freight_store_compactions_total";
pub const WRITE_STALL_METRIC: &str = "freight_store_write_stall_seconds_total";
pub const JOURNAL_BYTES_METRIC: &str = "freight_store_journal_bytes";
pub const MEMTABLE_BYTES_METRIC: &str = "freight_store_memtable_bytes";
/// How long each GPS batch took to go into the store, before its sync: the
/// memtable inserts, and any wait on the store's locks (a compaction's version
/// swap, the duplicate check's map) or in a write stall. One sample a batch,
/// on the write path, which is where such a wait is felt.
pub const GPS_WRITE_SECONDS_METRIC: &str = "freight_store_gps_write_seconds";

/// fjall counts from zero each time the store is opened, and the store is
/// opened again after a write failure (see `Shared`): what was counted before
/// is kept here, so the exported counters only grow, as Prometheus expects of
/// a counter within one process.
#[derive(Default)]
pub(super) struct Totals {
    series: Mutex<HashMap<String, Monotonic>>,
}

/// One counter read from a source that may restart at zero.
#[derive(Default, Clone, Copy)]
struct Monotonic {
    /// Counted by the sources before their last restart.
    before: u64,
    /// The source's last reading.
    last: u64,
}

impl Monotonic {
    fn read(&mut self, now: u64) -> u64 {
        if now < self.last {
            self.before += self.last;
        }
        self.last = now;
        self.before + now
    }
}

impl Totals {
    /// Sets every store metric from `db`'s counters now.
    pub(super) fn report(&self, db: &Database) {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut total = |key: String, now: u64| series.entry(key).or_default().read(now);
        for (keyspace, flushes, compactions) in db.keyspace_activity() {
            let name: &str = &keyspace;
            let flushes = total(format!("f{name}"), flushes);
            let compactions = total(format!("c{name}"), compactions);
            metrics::counter!(FLUSHES_METRIC, "keyspace" => name.to_owned()).absolute(flushes);
            metrics::counter!(COMPACTIONS_METRIC, "keyspace" => name.to_owned())
                .absolute(compactions);
        }
        let stalled_us = total("stall".to_owned(), db.write_stall_time().as_micros() as u64);
        // A gauge that only grows: the metrics crate's counters are whole
        // numbers, and the stalls that matter are milliseconds long.
        metrics::gauge!(WRITE_STALL_METRIC).set(stalled_us as f64 / 1e6);
        if let Ok(bytes) = db.journal_disk_space() {
            metrics::gauge!(JOURNAL_BYTES_METRIC).set(bytes as f64);
        }
        metrics::gauge!(MEMTABLE_BYTES_METRIC).set(db.write_buffer_size() as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::Monotonic;

    #[test]
    fn a_source_that_restarts_keeps_the_total_growing() {
        let mut counter = Monotonic::default();
        assert_eq!(counter.read(3), 3);
        assert_eq!(counter.read(5), 5);
        // Reopened: the source counts from zero again.
        assert_eq!(counter.read(1), 6);
        assert_eq!(counter.read(4), 9);
        assert_eq!(counter.read(4), 9);
    }

    /// The counters the vendored fjall and lsm-tree keep for these metrics.
    #[test]
    fn flushes_and_compactions_are_counted_by_keyspace() {
        let dir = tempfile::tempdir().unwrap();
        let db = fjall::Database::builder(dir.path()).open().unwrap();
        let busy = db
            .keyspace("busy", fjall::KeyspaceCreateOptions::default)
            .unwrap();
        let idle = db
            .keyspace("idle", fjall::KeyspaceCreateOptions::default)
            .unwrap();
        idle.insert("k", "v").unwrap();
        for round in 0..2u8 {
            busy.insert([round], "v").unwrap();
            busy.rotate_memtable_and_wait().unwrap();
        }
        busy.major_compact().unwrap();
        let activity = |name: &str| {
            db.keyspace_activity()
                .into_iter()
                .find(|(keyspace, ..)| &**keyspace == name)
                .map(|(_, flushes, compactions)| (flushes, compactions))
        };
        // Background compactions may run beside the major one.
        let (flushes, compactions) = activity("busy").expect("busy is listed");
        assert_eq!(flushes, 2);
        assert!(compactions >= 1, "{compactions}");
        assert_eq!(activity("idle"), Some((0, 0)));
        assert_eq!(db.write_stall_time(), std::time::Duration::ZERO);
    }
}
