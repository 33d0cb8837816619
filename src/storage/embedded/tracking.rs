//! GPS points: a load's time series, one key per (load, timestamp).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fjall::{Keyspace, PersistMode};

use super::recent_points::{Answer, RecentPoints};
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
            let (outcomes, written) = write_points(s, points)?;
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
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;
    use crate::domain::tracking::FixSource;
    use crate::storage::embedded::keys::OlderPointLayout;

    fn fix(at: DateTime<Utc>, lat: f64) -> GpsFix {
        GpsFix {
            timestamp: at,
            lat,
            lng: -96.8,
            speed_mph: Some(55.0),
            heading_deg: None,
            source: FixSource::Api,
        }
    }

    fn point(load: &LoadId, fix: GpsFix) -> TrackingPoint {
        TrackingPoint {
            load_id: load.clone(),
            fix,
            event: None,
            stops: None,
        }
    }

    async fn append_one(store: &EmbeddedStore, load: &LoadId, fix: GpsFix) -> Appended {
        let mut outcomes = store.append_points(vec![point(load, fix)]).await.unwrap();
        assert_eq!(outcomes.len(), 1);
        outcomes.remove(0)
    }

    /// The times of the load's newest `n` points, newest first.
    async fn latest(store: &EmbeddedStore, load: &LoadId, n: usize) -> Vec<DateTime<Utc>> {
        let fixes = store
            .load_points(load, PointRange::latest(n))
            .await
            .unwrap();
        fixes.iter().map(|f| f.timestamp).collect()
    }

    /// A data directory with points in older layouts' keyspaces, as the store
    /// wrote them before `gps_track`.
    fn write_older(path: &std::path::Path, points: &[(OlderPointLayout, LoadId, GpsFix)]) {
        let db = fjall::Database::builder(path).open().unwrap();
        for (layout, load, fix) in points {
            db.keyspace(layout.keyspace(), fjall::KeyspaceCreateOptions::default)
                .unwrap()
                .insert(
                    keys::point_key(&layout.load_part(load), &fix.timestamp),
                    keys::encode_point(fix),
                )
                .unwrap();
        }
        db.persist(PersistMode::SyncAll).unwrap();
    }

    #[tokio::test]
    async fn points_of_older_layouts_are_read_merged_and_still_count_as_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
        let at = |minutes: i64| base + Duration::minutes(minutes);
        let (load, other) = (LoadId::generate(), LoadId::generate());
        // Older points at minutes 0 and 10 in the first layout, 20 in the
        // second, and one of another load.
        let (first, second) = (OlderPointLayout::LoadId, OlderPointLayout::UlidText);
        write_older(
            dir.path(),
            &[
                (first, load.clone(), fix(at(0), 1.0)),
                (first, load.clone(), fix(at(10), 2.0)),
                (second, load.clone(), fix(at(20), 3.0)),
                (second, other.clone(), fix(at(30), 9.0)),
            ],
        );

        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        let times = |fixes: Vec<GpsFix>| fixes.iter().map(|f| f.timestamp).collect::<Vec<_>>();
        assert_eq!(latest(&store, &load, 10).await, [at(20), at(10), at(0)]);

        // An older layout's timestamp again is a duplicate, whether it is the newest or not;
        // a later fix and one between older ones are stored in the new layout.
        let outcomes = store
            .append_points(vec![
                point(&load, fix(at(20), 7.0)),
                point(&load, fix(at(10), 7.0)),
                point(&load, fix(at(25), 4.0)),
                point(&load, fix(at(5), 5.0)),
            ])
            .await
            .unwrap();
        assert_eq!(
            outcomes,
            [
                Appended::Duplicate,
                Appended::Duplicate,
                Appended::Stored,
                Appended::Stored
            ]
        );
        // After a restart (no remembered newest point) the older ones still count.
        drop(store);
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        assert_eq!(
            append_one(&store, &load, fix(at(0), 7.0)).await,
            Appended::Duplicate
        );

        // Reads merge both layouts newest first, within the range and the limit.
        let all = store
            .load_points(&load, PointRange::latest(10))
            .await
            .unwrap();
        assert_eq!(times(all.clone()), [at(25), at(20), at(10), at(5), at(0)]);
        assert_eq!(
            all.iter().map(|f| f.lat).collect::<Vec<_>>(),
            [4.0, 3.0, 2.0, 5.0, 1.0],
            "the first stored value of each timestamp is kept"
        );
        assert_eq!(latest(&store, &load, 3).await, [at(25), at(20), at(10)]);
        let page = PointRange {
            from: at(5),
            to: at(25),
            before: Some(at(20)),
            limit: 2,
        };
        assert_eq!(
            times(store.load_points(&load, page).await.unwrap()),
            [at(10), at(5)]
        );
        assert_eq!(store.count_points(&load, at(0), at(20)).await.unwrap(), 4);
        assert_eq!(store.count_points(&load, at(1), at(24)).await.unwrap(), 3);
        // The other load's older point stays its own.
        assert_eq!(latest(&store, &other, 10).await, [at(30)]);
        assert_eq!(
            append_one(&store, &other, fix(at(30), 1.0)).await,
            Appended::Duplicate
        );
    }

    /// The window a late fix reads holds the newest times of every layout
    /// together: each layout's newest, merged, the newest of those kept.
    #[tokio::test]
    async fn a_window_read_across_layouts_holds_the_newest_of_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
        let at = |seconds: i64| base + Duration::seconds(seconds);
        let micros = |seconds: i64| at(seconds).timestamp_micros() as u64;
        let (load, other) = (LoadId::generate(), LoadId::generate());
        // Seconds 0 to 99 in two older layouts, even and odd; another load's
        // points among them.
        let (first, second) = (OlderPointLayout::LoadId, OlderPointLayout::UlidText);
        let mut older: Vec<_> = (0..100)
            .map(|n| {
                let layout = if n % 2 == 0 { first } else { second };
                (layout, load.clone(), fix(at(n), 1.0))
            })
            .collect();
        older.push((first, other.clone(), fix(at(500), 1.0)));
        write_older(dir.path(), &older);
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        // And 100 to 109 in the current one.
        let current: Vec<_> = (100..110).map(|n| point(&load, fix(at(n), 1.0))).collect();
        store.append_points(current).await.unwrap();

        let inner = store.shared.current().unwrap();
        let window = newest_times(&inner, &load, 64).unwrap();
        assert_eq!(window, (46..110).map(micros).collect::<Vec<_>>());
        // Fewer stored than asked for: all of them.
        let all = newest_times(&inner, &load, 200).unwrap();
        assert_eq!(all, (0..110).map(micros).collect::<Vec<_>>());
        assert_eq!(newest_times(&inner, &other, 64).unwrap(), [micros(500)]);
    }

    /// A batch sent again (a device retrying after a lost answer) is all
    /// duplicates, told apart exactly; the load's newest times are then read
    /// into memory once, so the resent fixes within them need no lookup.
    #[tokio::test]
    async fn a_batch_sent_again_is_told_apart_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
        let at = |seconds: i64| base + Duration::seconds(seconds);
        let load = LoadId::generate();
        let batch: Vec<TrackingPoint> = (0..100)
            .map(|n| point(&load, fix(at(2 * n), 1.0)))
            .collect();
        let first = store.append_points(batch.clone()).await.unwrap();
        assert!(first.iter().all(|o| *o == Appended::Stored));

        // Sent again, with two fixes it had missed among them.
        let mut again = batch.clone();
        again.insert(50, point(&load, fix(at(101), 2.0)));
        again.insert(90, point(&load, fix(at(179), 2.0)));
        let outcomes = store.append_points(again.clone()).await.unwrap();
        for (n, (outcome, sent)) in outcomes.iter().zip(&again).enumerate() {
            let new = sent.fix.lat == 2.0;
            let expected = if new {
                Appended::Stored
            } else {
                Appended::Duplicate
            };
            assert_eq!(*outcome, expected, "fix {n} at {}", sent.fix.timestamp);
        }

        {
            let inner = store.shared.current().unwrap();
            let recent = inner.recent_points.lock().unwrap();
            let micros = |seconds: i64| at(seconds).timestamp_micros() as u64;
            // The newest times are known, the two late fixes among them...
            for seconds in [198, 180, 179] {
                assert_eq!(recent.answer(&load, micros(seconds)), Answer::Stored);
            }
            assert_eq!(recent.answer(&load, micros(181)), Answer::New);
            // ...and below the window read from the store, the store decides.
            assert_eq!(recent.answer(&load, micros(0)), Answer::LookUp);
        }

        // After a restart, memory starts over from the store.
        drop(store);
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        let outcomes = store.append_points(again).await.unwrap();
        assert!(outcomes.iter().all(|o| *o == Appended::Duplicate));
        assert_eq!(latest(&store, &load, 200).await.len(), 102);
    }

    #[tokio::test]
    async fn a_new_data_directory_has_no_older_points_keyspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        let load = LoadId::generate();
        append_one(&store, &load, fix(Utc::now(), 1.0)).await;
        let inner = store.shared.current().unwrap();
        assert!(inner.older_points.is_empty());
        for layout in OlderPointLayout::ALL {
            assert!(!inner.db.keyspace_exists(layout.keyspace()), "{layout:?}");
        }
    }
}
