//! The GPS time series: `(load, day)` partitions, newest point first (see
//! `cql/002_tracking.cql`).
//!
//! Cost per fix: one write to `gps_points`, plus one to `gps_point_days` for
//! the first fix of a load-day this process writes, plus the outbox rows when
//! the fix carries an event (someone subscribes to `tracking.updated`: then
//! all in one logged batch, for atomicity). A fix later than its load's newest stored point cannot be a
//! duplicate and is a plain insert; only a fix at or before it (a late or
//! repeated one) costs a lightweight transaction, `IF NOT EXISTS`, which keeps
//! the first value of a `(load, timestamp)` and reports the repeat as one. The
//! newest point per load is remembered by this process, exact because the
//! load's lease makes this instance its only writer.

use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::{StreamExt, TryStreamExt, stream};

use super::statements::LoggedBatch;
use super::{ScyllaStore, keys};
use crate::domain::event::Event;
use crate::domain::ids::LoadId;
use crate::domain::stops::{StopKind, StopTimer, StopsProgress};
use crate::domain::tracking::{Appended, FixSource, GpsFix, TrackingPoint};
use crate::storage::{PointRange, StopTimerEntry, StorageError, StorageResult, TrackingStore};

/// Loads whose newest point time is remembered; past this the memory is
/// dropped and rebuilt (one read per load) as points arrive.
const NEWEST_POINTS_CAPACITY: usize = 262_144;
/// Writes of one batch in flight at once.
const CONCURRENT_WRITES: usize = 256;

/// How one point is written.
enum Write {
    /// Known to be new: a plain insert; `day_known` when the load's newest
    /// point is in the same day, so its `gps_point_days` row exists.
    New { day_known: bool },
    /// At or before the load's newest point: a conditional insert decides.
    IfNew,
}

/// A `gps_points` row: `(load_id, day, ts, lat, lng, speed, heading, source)`.
type PointRow = (
    String,
    i32,
    i64,
    f64,
    f64,
    Option<f64>,
    Option<f64>,
    &'static str,
);
/// What a read of `gps_points` selects: `(ts, lat, lng, speed, heading, source)`.
type FixRow = (i64, f64, f64, Option<f64>, Option<f64>, Option<String>);

/// The row a point is stored as: exactly the numbers the client sent, the
/// timestamp to the microsecond, unknown speed and heading as nulls.
fn point_row(point: &TrackingPoint) -> PointRow {
    let ts = keys::micros(&point.fix.timestamp);
    (
        point.load_id.as_str().to_owned(),
        keys::day(ts),
        ts,
        point.fix.lat,
        point.fix.lng,
        point.fix.speed_mph,
        point.fix.heading_deg,
        point.fix.source.as_str(),
    )
}

/// The fix a row holds. A row written before `source` existed (cql/008) has
/// none: those all came through the API.
fn fix_from_row((ts, lat, lng, speed, heading, source): FixRow) -> StorageResult<GpsFix> {
    let source = match source.as_deref() {
        None => FixSource::Api,
        Some(name) => FixSource::parse(name)
            .ok_or_else(|| StorageError::corrupt("GPS point of an unknown source"))?,
    };
    Ok(GpsFix {
        timestamp: keys::from_micros(ts)
            .ok_or_else(|| StorageError::corrupt("GPS point time out of range"))?,
        lat,
        lng,
        speed_mph: speed,
        heading_deg: heading,
        source,
    })
}

impl ScyllaStore {
    /// The time (µs) of the load's newest stored point: its newest day, then
    /// the first row of that day's partition.
    async fn newest_stored(&self, load: &LoadId) -> StorageResult<Option<i64>> {
        let Some((day,)) = self
            .first::<(i32,)>(&self.st.newest_point_day, (load.as_str(),))
            .await?
        else {
            return Ok(None);
        };
        Ok(self
            .first::<(i64,)>(&self.st.newest_point, (load.as_str(), day))
            .await?
            .map(|(ts,)| ts))
    }

    /// Writes one point (and its event), answering whether it was stored.
    async fn write_point(&self, point: &TrackingPoint, how: Write) -> StorageResult<Appended> {
        let row = point_row(point);
        let (load, day) = (row.0.clone(), row.1);
        let day_known = match how {
            Write::New { day_known } => day_known,
            Write::IfNew => {
                if !self.applied(&self.st.put_point_if_new, row.clone()).await? {
                    return Ok(Appended::Duplicate);
                }
                false
            }
        };
        if point.event.is_some() || point.stops.is_some() {
            // The point, its event and its stops change: all or none.
            let mut batch = LoggedBatch::new();
            if matches!(how, Write::New { .. }) {
                batch.add(&self.st.put_point, row);
            }
            batch.add(&self.st.put_point_day, (load.clone(), day));
            if let Some(event) = &point.event {
                self.add_events(&mut batch, std::slice::from_ref(event))?;
            }
            if let Some(stops) = &point.stops {
                self.add_events(&mut batch, &stops.events)?;
                let progress = serde_json::to_string(&stops.progress).expect("progress serialises");
                // Timestamped by the fix: of concurrent writes, the newest fix's wins.
                batch.add(
                    &self.st.put_load_stops,
                    (load.clone(), progress, ts_of(point)),
                );
                match stops.timer {
                    Some(StopTimer::Set { stop, due }) => batch.add(
                        &self.st.set_stop_timer,
                        (load, stop.as_str(), keys::micros(&due), ts_of(point)),
                    ),
                    Some(StopTimer::Clear) => {
                        batch.add(&self.st.clear_stop_timer, (ts_of(point), load))
                    }
                    None => {}
                }
            }
            self.logged(batch).await?;
        } else {
            // No batch needed: a point whose day row failed is not acknowledged,
            // and its retry writes both again (same cells, same values).
            let point_row = async {
                if matches!(how, Write::New { .. }) {
                    self.exec(&self.st.put_point, row).await?;
                }
                Ok::<_, StorageError>(())
            };
            let day_row = async {
                if !day_known {
                    self.exec(&self.st.put_point_day, (load.as_str(), day))
                        .await?;
                }
                Ok(())
            };
            futures_util::try_join!(point_row, day_row)?;
        }
        Ok(Appended::Stored)
    }

    /// The load's day buckets from `to` back to `from`, newest first.
    async fn days(&self, load: &LoadId, from: i64, to: i64) -> StorageResult<Vec<i32>> {
        self.rows(
            &self.st.point_days,
            (load.as_str(), keys::day(from), keys::day(to)),
            |(day,): (i32,)| Ok(day),
        )
        .await
    }
}

/// The write timestamp of a point's stops change: the fix's time in µs.
fn ts_of(point: &TrackingPoint) -> i64 {
    keys::micros(&point.fix.timestamp)
}

#[async_trait]
impl TrackingStore for ScyllaStore {
    async fn stop_timers(&self) -> StorageResult<Vec<StopTimerEntry>> {
        self.rows(
            &self.st.all_stop_timers,
            (),
            |(load, stop, due): (String, String, i64)| {
                let entry = LoadId::parse(&load)
                    .zip(StopKind::parse(&stop))
                    .zip(keys::from_micros(due));
                entry
                    .map(|((load, stop), due)| StopTimerEntry { load, stop, due })
                    .ok_or_else(|| StorageError::corrupt("unreadable stop timer"))
            },
        )
        .await
    }

    async fn end_stop_timer(&self, load: &LoadId, fired: Option<&Event>) -> StorageResult<()> {
        let mut batch = LoggedBatch::new();
        batch.add(&self.st.end_stop_timer, (load.as_str().to_owned(),));
        if let Some(event) = fired {
            self.add_events(&mut batch, std::slice::from_ref(event))?;
        }
        self.logged(batch).await
    }

    async fn load_stops(&self, load: &LoadId) -> StorageResult<Option<StopsProgress>> {
        let Some((progress,)) = self
            .first::<(String,)>(&self.st.get_load_stops, (load.as_str(),))
            .await?
        else {
            return Ok(None);
        };
        serde_json::from_str(&progress)
            .map(Some)
            .map_err(|_| StorageError::corrupt("unreadable stop progress"))
    }

    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
        // The newest point of every load not remembered, read first (no lock
        // is held across a read).
        let unknown: Vec<LoadId> = {
            let newest = self.newest_points.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = HashSet::new();
            points
                .iter()
                .map(|p| &p.load_id)
                .filter(|load| !newest.contains_key(*load) && seen.insert(*load))
                .cloned()
                .collect()
        };
        let read: Vec<(LoadId, Option<i64>)> = stream::iter(unknown)
            .map(|load| async move {
                let newest = self.newest_stored(&load).await?;
                Ok::<_, StorageError>((load, newest))
            })
            .buffer_unordered(CONCURRENT_WRITES)
            .try_collect()
            .await?;

        // Decide each point's write; raise the remembered newest as we go (if
        // a write then fails, the bound is only too high, which costs
        // conditional inserts, never a missed duplicate).
        let mut plan = Vec::with_capacity(points.len());
        {
            let mut newest = self.newest_points.lock().unwrap_or_else(|p| p.into_inner());
            if newest.len() > NEWEST_POINTS_CAPACITY {
                newest.clear();
            }
            newest.extend(read);
            let mut in_batch = HashSet::with_capacity(points.len());
            for point in &points {
                let ts = keys::micros(&point.fix.timestamp);
                if !in_batch.insert((point.load_id.clone(), ts)) {
                    plan.push(None);
                    continue;
                }
                let known = newest.get(&point.load_id).copied().flatten();
                let later = known.is_none_or(|known| ts > known);
                if later {
                    newest.insert(point.load_id.clone(), Some(ts));
                }
                plan.push(Some(if later {
                    Write::New {
                        day_known: known.is_some_and(|known| keys::day(known) == keys::day(ts)),
                    }
                } else {
                    Write::IfNew
                }));
            }
        }

        let count = points.len();
        let outcomes: Vec<(usize, Appended)> =
            stream::iter(points.into_iter().zip(plan).enumerate())
                .map(|(i, (point, how))| async move {
                    let outcome = match how {
                        None => Appended::Duplicate,
                        Some(how) => self.write_point(&point, how).await?,
                    };
                    Ok::<_, StorageError>((i, outcome))
                })
                .buffer_unordered(CONCURRENT_WRITES)
                .try_collect()
                .await?;
        let mut ordered = vec![Appended::Duplicate; count];
        for (i, outcome) in outcomes {
            ordered[i] = outcome;
        }
        Ok(ordered)
    }

    /// Day by day from the newest, each day's partition read newest first,
    /// until `limit` points are found.
    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>> {
        let from = keys::micros(&range.from);
        let mut to = keys::micros(&range.to);
        if let Some(before) = range.before {
            to = to.min(keys::micros(&before).saturating_sub(1));
        }
        let mut out = Vec::with_capacity(range.limit.min(1024));
        if from > to || range.limit == 0 {
            return Ok(out);
        }
        for day in self.days(load, from, to).await? {
            let wanted = i32::try_from(range.limit - out.len()).unwrap_or(i32::MAX);
            let fixes = self
                .rows(
                    &self.st.points_in_day,
                    (load.as_str(), day, from, to, wanted),
                    fix_from_row,
                )
                .await?;
            out.extend(fixes);
            if out.len() >= range.limit {
                out.truncate(range.limit);
                break;
            }
        }
        Ok(out)
    }

    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64> {
        let (from, to) = (keys::micros(&from), keys::micros(&to));
        if from > to {
            return Ok(0);
        }
        let mut total = 0;
        for day in self.days(load, from, to).await? {
            total += self
                .count(&self.st.count_points_in_day, (load.as_str(), day, from, to))
                .await?;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: &str, speed: Option<f64>) -> TrackingPoint {
        TrackingPoint {
            load_id: LoadId::generate(),
            fix: GpsFix {
                timestamp: at.parse().unwrap(),
                lat: 32.776_65,
                lng: -96.796_99,
                speed_mph: speed,
                heading_deg: None,
                source: FixSource::Api,
            },
            event: None,
            stops: None,
        }
    }

    #[test]
    fn a_point_comes_back_from_its_row_exactly() {
        for (at, speed) in [
            ("2026-11-24T07:08:09.123456Z", Some(55.5)),
            ("2026-11-23T23:59:59.999999Z", None),
            ("2000-01-01T00:00:00Z", Some(0.0)),
        ] {
            let point = point(at, speed);
            let row = point_row(&point);
            assert_eq!(row.0, point.load_id.as_str());
            assert_eq!(row.1, keys::day(row.2), "the bucket is the fix's UTC day");
            let (_, _, ts, lat, lng, speed, heading, source) = row;
            assert_eq!(source, "api");
            assert_eq!(
                fix_from_row((ts, lat, lng, speed, heading, Some(source.to_owned()))).unwrap(),
                point.fix
            );
            // A row from before cql/008 has no source: it came through the API.
            assert_eq!(
                fix_from_row((ts, lat, lng, speed, heading, None)).unwrap(),
                point.fix
            );
        }
    }

    #[test]
    fn a_row_outside_the_time_range_is_corrupt_not_a_panic() {
        assert!(fix_from_row((i64::MAX, 0.0, 0.0, None, None, None)).is_err());
        let unknown = Some("carrier_pigeon".to_owned());
        assert!(fix_from_row((0, 0.0, 0.0, None, None, unknown)).is_err());
    }
}
