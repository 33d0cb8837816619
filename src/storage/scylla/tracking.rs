//! The GPS time series: `(load, day)` partitions, newest point first (see
//! `cql/002_tracking.cql`).
//!
//! Cost per fix: one write to `gps_points`, plus one to `gps_point_days` for
//! the first fix of a load-day this process writes, plus the outbox rows when
//! the fix carries an event (someone subscribes to `tracking.updated`: then
//! all in one logged batch, for atomicity). A fix later than its load's newest stored point cannot be a
//! duplicate and is a plain insert; only a fix at or before it (a late or
//! repeated one) costs a lightweight transaction, `IF NOT EXISTS`, which keeps
//! the first value of a `(load, timestamp)` and reports the repeat as one.
//! Which write each point takes, and what this process remembers of each load
//! (safe because the load's lease makes this instance its only writer), is
//! decided in `point_series`; this file holds the statements.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::point_series::{self, IfNew, PointStatements, Row};
use super::statements::LoggedBatch;
use super::{ScyllaStore, keys};
use crate::domain::event::Event;
use crate::domain::ids::LoadId;
use crate::domain::stops::{StopKey, StopTimer, StopsProgress};
use crate::domain::tracking::{Appended, FixSource, GpsFix, TrackingPoint};
use crate::storage::{PointRange, StopTimerEntry, StorageError, StorageResult, TrackingStore};

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

/// The statements of [`point_series`]: it decides which run.
#[async_trait]
impl PointStatements for ScyllaStore {
    /// Its newest day, then the first row of that day's partition.
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

    async fn put_point(&self, point: &TrackingPoint) -> StorageResult<()> {
        self.exec(&self.st.put_point, point_row(point))
            .await
            .map(|_| ())
    }

    async fn put_point_if_new(&self, point: &TrackingPoint) -> StorageResult<IfNew> {
        let answer = match point.event.is_some() || point.stops.is_some() {
            true => {
                let (load, day, ts, lat, lng, speed, heading, source) = point_row(point);
                let marked = (load, day, ts, lat, lng, speed, heading, source, true);
                self.lwt(&self.st.put_point_if_new_pending, marked).await?
            }
            false => {
                self.lwt(&self.st.put_point_if_new, point_row(point))
                    .await?
            }
        };
        Ok(match answer.applied {
            true => IfNew::Inserted,
            // Both engines answer a refused IF NOT EXISTS with the stored row.
            false => IfNew::Stored {
                changes_pending: answer.boolean("changes_pending") == Some(true),
            },
        })
    }

    async fn put_point_day(&self, load: &LoadId, day: i32) -> StorageResult<()> {
        self.exec(&self.st.put_point_day, (load.as_str(), day))
            .await
            .map(|_| ())
    }

    async fn put_with_changes(&self, point: &TrackingPoint, how: Row) -> StorageResult<()> {
        let row = point_row(point);
        let (load, day, ts) = (row.0.clone(), row.1, row.2);
        let mut batch = LoggedBatch::new();
        match how {
            Row::Write => batch.add(&self.st.put_point, row),
            Row::Marked => batch.add(&self.st.clear_point_pending, (false, load.clone(), day, ts)),
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
            match &stops.timer {
                Some(StopTimer::Set { stop, due }) => batch.add(
                    &self.st.set_stop_timer,
                    (
                        load,
                        stop.as_str().to_owned(),
                        keys::micros(due),
                        ts_of(point),
                    ),
                ),
                Some(StopTimer::Clear) => {
                    batch.add(&self.st.clear_stop_timer, (ts_of(point), load))
                }
                None => {}
            }
        }
        self.logged(batch).await
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
                    .zip(StopKey::parse(&stop))
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
        point_series::append(self, &self.newest_points, points).await
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
