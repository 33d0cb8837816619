//! How a batch of GPS points is written to the `(load, day)` series: which
//! points are plainly new and which need a conditional insert, when a load's
//! day row (`gps_point_days`, through which history finds its days) is
//! written, and what this process remembers afterwards. Generic over the
//! statements ([`PointStatements`]) so tests can fail any one of them.
//!
//! Two things are remembered per load, with different rules:
//! - `newest`, the latest point time that may be stored. It is raised when a
//!   write is *planned*: an upper bound is what duplicate detection needs (a
//!   fix at or before it takes the conditional insert, so a retry of a point
//!   that landed before its batch failed is still found).
//! - `day_written`, the newest day whose day row is known to exist. It moves
//!   only after a day row was written, or read back: a point is written
//!   without its day row only when that day is known, so a failed day row is
//!   written again by the next fix of that day, and a retry that finds its
//!   point already stored writes the day row again too.
//!
//! A late point that carries changes (an event, a stops change) is inserted
//! marked (`changes_pending`), and the logged batch of its changes clears the
//! mark: a retry that finds the point stored and still marked writes the
//! changes, which its failed try did not (cql/018_point_changes.cql).

use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt, stream};

use super::keys;
use crate::domain::ids::LoadId;
use crate::domain::tracking::{Appended, TrackingPoint};
use crate::shared_map::FastHashMap;
use crate::storage::{StorageError, StorageResult};

/// Loads remembered at most; past this the memory is dropped and rebuilt (one
/// read per load) as points arrive.
const REMEMBERED_LOADS: usize = 262_144;
/// Writes of one batch in flight at once.
const CONCURRENT_WRITES: usize = 256;

/// What this process knows of a load's stored series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Known {
    /// µs; no point of the load is stored after it (`None`: none stored).
    newest: Option<i64>,
    /// The newest day whose `gps_point_days` row is known to exist.
    day_written: Option<i32>,
}

impl Known {
    /// What the store says: its newest point, found through that point's day row.
    pub(super) fn read(newest: Option<i64>) -> Known {
        Known {
            newest,
            day_written: newest.map(keys::day),
        }
    }
}

pub(super) type Remembered = Mutex<FastHashMap<LoadId, Known>>;

/// The statements a point's write uses.
#[async_trait]
pub(super) trait PointStatements: Sync {
    /// The time (µs) of the load's newest stored point.
    async fn newest_stored(&self, load: &LoadId) -> StorageResult<Option<i64>>;
    /// A plain insert of the point's row.
    async fn put_point(&self, point: &TrackingPoint) -> StorageResult<()>;
    /// `IF NOT EXISTS`: whether it was inserted, or what is stored. A point
    /// with changes is inserted marked as waiting for them.
    async fn put_point_if_new(&self, point: &TrackingPoint) -> StorageResult<IfNew>;
    /// The load's row for `day` in `gps_point_days`.
    async fn put_point_day(&self, load: &LoadId, day: i32) -> StorageResult<()>;
    /// One logged batch: the day row, the point's event and stops change, and
    /// the point's row itself (`Row::Write`) or the clearing of its mark
    /// (`Row::Marked`).
    async fn put_with_changes(&self, point: &TrackingPoint, row: Row) -> StorageResult<()>;
}

/// What a conditional insert of a point found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IfNew {
    Inserted,
    /// A row was there; `changes_pending` when the try that inserted it did not
    /// get its changes written (its client was answered with an error).
    Stored {
        changes_pending: bool,
    },
}

/// What the batch of a point's changes does with the point's own row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Row {
    /// Writes it (a point later than any stored: no condition needed).
    Write,
    /// Clears the mark its conditional insert left.
    Marked,
}

/// How one point is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// Later than any stored point of its load: a plain insert; `day_known`
    /// when its day row is known to exist.
    New { day_known: bool },
    /// At or before the load's newest point: a conditional insert decides.
    IfNew,
}

/// Writes `points`, answering for each whether it was stored or repeated a
/// stored one. On an error some points may have landed: the batch is failed
/// whole, and its retry stores what is missing (the rows are idempotent).
pub(super) async fn append<S: PointStatements>(
    st: &S,
    remembered: &Remembered,
    points: Vec<TrackingPoint>,
) -> StorageResult<Vec<Appended>> {
    // The series of loads not remembered, read first (no lock across a read).
    let unknown: Vec<LoadId> = {
        let known = remembered.lock().unwrap_or_else(|p| p.into_inner());
        let mut seen = HashSet::new();
        points
            .iter()
            .map(|p| &p.load_id)
            .filter(|load| !known.contains_key(*load) && seen.insert(*load))
            .cloned()
            .collect()
    };
    let read: Vec<(LoadId, Known)> = stream::iter(unknown)
        .map(|load| async move {
            let newest = st.newest_stored(&load).await?;
            Ok::<_, StorageError>((load, Known::read(newest)))
        })
        .buffer_unordered(CONCURRENT_WRITES)
        .try_collect()
        .await?;

    let plan = {
        let mut known = remembered.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() > REMEMBERED_LOADS {
            known.clear();
        }
        known.extend(read);
        plan(&mut known, &points)
    };

    let count = points.len();
    let results: Vec<(usize, StorageResult<Written>)> = stream::iter(plan.into_iter().enumerate())
        .map(|(i, how)| {
            let point = &points[i];
            async move {
                let written = match how {
                    None => Ok(Written {
                        outcome: Appended::Duplicate,
                        day_row: None,
                    }),
                    Some(how) => write_point(st, point, how).await,
                };
                (i, written)
            }
        })
        .buffer_unordered(CONCURRENT_WRITES)
        .collect()
        .await;

    // Day rows written are remembered even when another write of the batch failed.
    let mut outcomes = vec![Appended::Duplicate; count];
    let mut first_error = None;
    {
        let mut known = remembered.lock().unwrap_or_else(|p| p.into_inner());
        for (i, result) in results {
            match result {
                Ok(written) => {
                    outcomes[i] = written.outcome;
                    if let (Some(day), Some(k)) =
                        (written.day_row, known.get_mut(&points[i].load_id))
                    {
                        k.day_written = k.day_written.max(Some(day));
                    }
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(outcomes),
    }
}

/// Each point's write (`None`: it repeats an earlier point of the batch),
/// raising each load's `newest` as it goes.
fn plan(known: &mut FastHashMap<LoadId, Known>, points: &[TrackingPoint]) -> Vec<Option<Write>> {
    let mut in_batch = HashSet::with_capacity(points.len());
    points
        .iter()
        .map(|point| {
            let ts = keys::micros(&point.fix.timestamp);
            if !in_batch.insert((&point.load_id, ts)) {
                return None;
            }
            let k = known.entry(point.load_id.clone()).or_default();
            if k.newest.is_some_and(|newest| ts <= newest) {
                return Some(Write::IfNew);
            }
            k.newest = Some(ts);
            Some(Write::New {
                day_known: k.day_written == Some(keys::day(ts)),
            })
        })
        .collect()
}

/// A point's outcome, and the day whose row is known to exist after it.
struct Written {
    outcome: Appended,
    day_row: Option<i32>,
}

async fn write_point<S: PointStatements>(
    st: &S,
    point: &TrackingPoint,
    how: Write,
) -> StorageResult<Written> {
    let day = keys::day(keys::micros(&point.fix.timestamp));
    let has_changes = point.event.is_some() || point.stops.is_some();
    let day_known = match how {
        Write::New { day_known } => day_known,
        Write::IfNew => match st.put_point_if_new(point).await? {
            IfNew::Inserted => false,
            // Inserted by a try whose changes then failed, so that try was
            // answered with an error: this one writes them (with events of its
            // own ids; the failed try's never landed) and stores the point.
            IfNew::Stored {
                changes_pending: true,
            } if has_changes => {
                st.put_with_changes(point, Row::Marked).await?;
                return Ok(Written {
                    outcome: Appended::Stored,
                    day_row: Some(day),
                });
            }
            IfNew::Stored { .. } => {
                // Stored before, perhaps by a try whose day row then failed:
                // the day row again (the same cell), so the retry repairs it.
                st.put_point_day(&point.load_id, day).await?;
                return Ok(Written {
                    outcome: Appended::Duplicate,
                    day_row: Some(day),
                });
            }
        },
    };
    if has_changes {
        // The point, its event and its stops change: all or none.
        let row = match how {
            Write::New { .. } => Row::Write,
            Write::IfNew => Row::Marked,
        };
        st.put_with_changes(point, row).await?;
    } else {
        // Not batched: a point whose day row failed is not acknowledged, and
        // its retry writes both again.
        let point_row = async {
            if matches!(how, Write::New { .. }) {
                st.put_point(point).await?;
            }
            Ok::<_, StorageError>(())
        };
        let day_row = async {
            if !day_known {
                st.put_point_day(&point.load_id, day).await?;
            }
            Ok(())
        };
        futures_util::try_join!(point_row, day_row)?;
    }
    Ok(Written {
        outcome: Appended::Stored,
        day_row: Some(day),
    })
}

#[cfg(test)]
mod tests;
