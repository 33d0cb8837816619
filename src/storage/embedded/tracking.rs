//! GPS points: a load's time series, one key per (load, timestamp).

use std::time::Instant;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fjall::{Keyspace, PersistMode};

use super::recent_points::{Answer, RecentPoints};
use super::store_metrics::GPS_WRITE_SECONDS_METRIC;
use super::webhooks::encode_events;
use super::{EmbeddedStore, Inner, keys, unavailable};
use crate::domain::event::Event;
use crate::domain::ids::LoadId;
use crate::domain::ids::StopId;
use crate::domain::stops::{StopKey, StopKind, StopTimer, StopsProgress};
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::storage::{PointRange, StopTimerEntry, StorageError, StorageResult, TrackingStore};

/// GPS fixes whose duplicate check had to read the store.
pub const LOOKUPS_METRIC: &str = "freight_point_lookups_total";

/// One load's points in one keyspace: every key is `prefix ‖ time`.
struct LoadPoints<'a> {
    keyspace: &'a Keyspace,
    prefix: Vec<u8>,
}

impl LoadPoints<'_> {
    fn key(&self, at: &DateTime<Utc>) -> Vec<u8> {
        keys::point_key(&self.prefix, at)
    }
}

/// Where a load's points may be: the current keyspace and, in an older data
/// directory, the keyspaces of older layouts, each with its key layout.
fn layouts<'a>(s: &'a Inner, load: &LoadId) -> impl Iterator<Item = LoadPoints<'a>> {
    let current = LoadPoints {
        keyspace: &s.points,
        prefix: keys::point_load_key(load).to_vec(),
    };
    let older = s.older_points.iter().map(|(keyspace, layout)| LoadPoints {
        keyspace,
        prefix: layout.load_part(load),
    });
    std::iter::once(current).chain(older)
}

/// The time of the load's newest stored point, if it has any.
fn newest_stored(s: &Inner, load: &LoadId) -> StorageResult<Option<u64>> {
    Ok(newest_times(s, load, 1)?.pop())
}

/// The times of the load's newest `n` stored points, ascending: one reverse
/// seek per layout, and the keys behind it.
fn newest_times(s: &Inner, load: &LoadId, n: usize) -> StorageResult<Vec<u64>> {
    let mut times = Vec::with_capacity(n);
    for points in layouts(s, load) {
        for guard in points.keyspace.prefix(&points.prefix).rev().take(n) {
            let key = guard.key().map_err(unavailable)?;
            times.extend(keys::point_micros(&key));
        }
    }
    // With older layouts, the newest `n` of all of them.
    times.sort_unstable();
    times.dedup();
    let older = times.len().saturating_sub(n);
    times.drain(..older);
    Ok(times)
}

/// Whether the load has a point stored at exactly `at`, in any layout.
fn stored_at(s: &Inner, load: &LoadId, at: &DateTime<Utc>) -> StorageResult<bool> {
    for points in layouts(s, load) {
        if points
            .keyspace
            .contains_key(points.key(at))
            .map_err(unavailable)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Writes the points into the journal and the memtable (not yet synced):
/// their outcomes, and the write's place for `wait_durable`.
fn write_points(s: &Inner, points: Vec<TrackingPoint>) -> StorageResult<(Vec<Appended>, u64)> {
    // The points go into the batch, and so into the memtable's skiplist,
    // in key order: each insert then walks the path the one before it
    // warmed in the cache, instead of a random one (the inserts were half
    // the committer's time under bulk ingest). The sort is stable, so of
    // two equal keys the first sent is stored and the second is its
    // duplicate; and a load's fixes come in time order, so a batch that
    // holds two requests out of order needs no lookups for the later one.
    let mut order: Vec<(Vec<u8>, usize)> = points
        .iter()
        .enumerate()
        .map(|(n, point)| (keys::point(&point.load_id, &point.fix.timestamp), n))
        .collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut outcomes = vec![Appended::Stored; points.len()];
    let mut batch = fjall::OwnedWriteBatch::with_capacity(s.db.clone(), points.len())
        .durability(Some(PersistMode::Buffer));
    // Held until the batch is written: nothing can store a key between
    // its check and the write.
    let mut recent = s.recent_points.lock().unwrap_or_else(|p| p.into_inner());
    // The key before this one in the order, to find equal keys: within the
    // batch, `recent` still speaks of the store before it.
    let mut previous: Vec<u8> = Vec::new();
    let mut lookups = 0u64;
    // (load, time) of the points going in, recorded in `recent` once written.
    let mut going_in: Vec<(&LoadId, u64)> = Vec::with_capacity(points.len());
    for (key, n) in order {
        let point = &points[n];
        let at = keys::point_micros(&key).unwrap_or(0);
        let mut answer = recent.answer(&point.load_id, at);
        if answer == Answer::Unknown {
            recent.learn(&point.load_id, newest_stored(s, &point.load_id)?);
            answer = recent.answer(&point.load_id, at);
        }
        if answer == Answer::Widen {
            let window = RecentPoints::window();
            recent.widen(&point.load_id, newest_times(s, &point.load_id, window)?);
            answer = recent.answer(&point.load_id, at);
        }
        let duplicate = previous == key
            || match answer {
                Answer::Stored => true,
                Answer::New => false,
                // What memory could not tell after it read the store.
                Answer::Unknown | Answer::Widen | Answer::LookUp => {
                    lookups += 1;
                    stored_at(s, &point.load_id, &point.fix.timestamp)?
                }
            };
        previous.clear();
        previous.extend_from_slice(&key);
        if duplicate {
            outcomes[n] = Appended::Duplicate;
            continue;
        }
        if let Some(event) = &point.event {
            s.add_events(&mut batch, encode_events(std::slice::from_ref(event))?);
        }
        if let Some(stops) = &point.stops {
            // Points go in key order, so of one load's changes in a batch the
            // newest fix's is inserted last and kept.
            s.add_events(&mut batch, encode_events(&stops.events)?);
            batch.insert(
                &s.load_stops,
                point.load_id.as_str().as_bytes(),
                serde_json::to_vec(&stops.progress).expect("progress serialises"),
            );
            match &stops.timer {
                Some(StopTimer::Set { stop, due }) => batch.insert(
                    &s.stop_timers,
                    point.load_id.as_str().as_bytes(),
                    encode_timer(stop, due),
                ),
                Some(StopTimer::Clear) => {
                    batch.remove(&s.stop_timers, point.load_id.as_str().as_bytes())
                }
                None => {}
            }
        }
        batch.insert(&s.points, key, keys::encode_point(&point.fix));
        going_in.push((&point.load_id, at));
    }
    if lookups > 0 {
        metrics::counter!(LOOKUPS_METRIC).increment(lookups);
    }
    let written = s.write_batch(batch);
    if written.is_ok() {
        for (load, at) in going_in {
            recent.stored(load, at);
        }
    } else {
        // Part of the batch may have landed: read the truth again.
        recent.forget_all();
    }
    drop(recent);
    Ok((outcomes, written?))
}

/// A timer's value: a tag ‖ due (µs, big-endian) ‖ the stop. The tag is 2
/// and the stop its id; timers stored before stops had ids are tagged 0
/// (the pickup) or 1 (the delivery) and end with the due time.
fn encode_timer(stop: &StopKey, due: &DateTime<Utc>) -> Vec<u8> {
    let (tag, id) = match stop {
        StopKey::Legacy(StopKind::Pickup) => (0, ""),
        StopKey::Legacy(StopKind::Delivery) => (1, ""),
        StopKey::Id(id) => (2, id.as_str()),
    };
    let mut value = vec![tag];
    value.extend_from_slice(&due.timestamp_micros().to_be_bytes());
    value.extend_from_slice(id.as_bytes());
    value
}

fn decode_timer(key: &[u8], value: &[u8]) -> Option<StopTimerEntry> {
    let load = LoadId::parse(std::str::from_utf8(key).ok()?)?;
    let stop = match value.first()? {
        0 => StopKey::Legacy(StopKind::Pickup),
        1 => StopKey::Legacy(StopKind::Delivery),
        2 => StopKey::Id(StopId::from_stored(
            std::str::from_utf8(value.get(9..)?).ok()?,
        )?),
        _ => return None,
    };
    let micros = i64::from_be_bytes(value.get(1..9)?.try_into().ok()?);
    Some(StopTimerEntry {
        load,
        stop,
        due: DateTime::from_timestamp_micros(micros)?,
    })
}

#[async_trait]
impl TrackingStore for EmbeddedStore {
    async fn stop_timers(&self) -> StorageResult<Vec<StopTimerEntry>> {
        self.run(|s| {
            let mut timers = Vec::new();
            for guard in s.stop_timers.iter() {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                timers.push(
                    decode_timer(&key, &value)
                        .ok_or_else(|| StorageError::corrupt("unreadable stop timer"))?,
                );
            }
            Ok(timers)
        })
        .await
    }

    async fn end_stop_timer(&self, load: &LoadId, fired: Option<&Event>) -> StorageResult<()> {
        let load = load.clone();
        let fired = fired.cloned();
        self.run(move |s| {
            let mut batch = fjall::OwnedWriteBatch::with_capacity(s.db.clone(), 4)
                .durability(Some(PersistMode::Buffer));
            batch.remove(&s.stop_timers, load.as_str().as_bytes());
            if let Some(event) = &fired {
                s.add_events(&mut batch, encode_events(std::slice::from_ref(event))?);
            }
            let written = s.write_batch(batch)?;
            s.wait_durable(written)
        })
        .await
    }

    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
        self.run(move |s| {
            let started = Instant::now();
            let (outcomes, written) = write_points(s, points)?;
            metrics::histogram!(GPS_WRITE_SECONDS_METRIC).record(started.elapsed().as_secs_f64());
            s.wait_durable(written)?;
            Ok(outcomes)
        })
        .await
    }

    async fn load_stops(&self, load: &LoadId) -> StorageResult<Option<StopsProgress>> {
        let load = load.clone();
        self.run(move |s| {
            let Some(raw) = s
                .load_stops
                .get(load.as_str().as_bytes())
                .map_err(unavailable)?
            else {
                return Ok(None);
            };
            serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|_| StorageError::corrupt("unreadable stop progress"))
        })
        .await
    }

    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>> {
        let load = load.clone();
        self.run(move |s| {
            let mut out = Vec::with_capacity(range.limit.min(1024));
            let exclusive_end = range.before.is_some_and(|b| b <= range.to);
            for points in layouts(s, &load) {
                let start = points.key(&range.from);
                let mut end = points.key(&range.to);
                if let Some(before) = range.before {
                    end = end.min(points.key(&before));
                }
                if start > end {
                    continue;
                }
                let scan = if exclusive_end {
                    points.keyspace.range(start..end)
                } else {
                    points.keyspace.range(start..=end)
                };
                for guard in scan.rev().take(range.limit) {
                    let (key, value) = guard.into_inner().map_err(unavailable)?;
                    let fix = keys::decode_point(&key, &value)
                        .ok_or_else(|| StorageError::corrupt("unreadable GPS point"))?;
                    out.push(fix);
                }
            }
            if !s.older_points.is_empty() {
                // Newest first across the layouts; a timestamp is stored in one
                // of them only (appends check all), so nothing merges.
                out.sort_by_key(|fix| std::cmp::Reverse(fix.timestamp));
                out.truncate(range.limit);
            }
            Ok(out)
        })
        .await
    }

    async fn count_points(
        &self,
        load: &LoadId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StorageResult<u64> {
        let load = load.clone();
        self.run(move |s| {
            let mut count = 0u64;
            for points in layouts(s, &load) {
                let (start, end) = (points.key(&from), points.key(&to));
                if start > end {
                    continue;
                }
                for guard in points.keyspace.range(start..=end) {
                    guard.key().map_err(unavailable)?;
                    count += 1;
                }
            }
            Ok(count)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
