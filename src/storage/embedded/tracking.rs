//! GPS points: a load's time series, one key per (load, timestamp).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fjall::PersistMode;

use super::webhooks::encode_events;
use super::{EmbeddedStore, Inner, keys, unavailable};
use crate::domain::ids::LoadId;
use crate::domain::tracking::{Appended, GpsFix, TrackingPoint};
use crate::storage::{PointRange, StorageError, StorageResult, TrackingStore};

/// Loads whose newest stored point time is remembered (about 64 bytes each);
/// past this the memory is dropped and rebuilt as points arrive.
const NEWEST_POINTS_CAPACITY: usize = 262_144;

/// The time of the load's newest stored point, if it has any (one reverse seek).
fn newest_stored(s: &Inner, load: &LoadId) -> StorageResult<Option<u64>> {
    match s.points.prefix(load.as_str()).next_back() {
        Some(guard) => {
            let key = guard.key().map_err(unavailable)?;
            Ok(keys::point_micros(&key))
        }
        None => Ok(None),
    }
}

#[async_trait]
impl TrackingStore for EmbeddedStore {
    async fn append_points(&self, points: Vec<TrackingPoint>) -> StorageResult<Vec<Appended>> {
        self.run(move |s| {
            let mut outcomes = Vec::with_capacity(points.len());
            let mut batch = fjall::OwnedWriteBatch::with_capacity(s.db.clone(), points.len())
                .durability(Some(PersistMode::Buffer));
            let mut in_batch = std::collections::HashSet::with_capacity(points.len());
            // Held until the batch is written: nothing can store a key between
            // its check and the write.
            let mut newest = s.newest_points.lock().unwrap_or_else(|p| p.into_inner());
            if newest.len() > NEWEST_POINTS_CAPACITY {
                newest.clear();
            }
            for point in &points {
                let key = keys::point(&point.load_id, &point.fix.timestamp);
                let at = keys::point_micros(&key).unwrap_or(0);
                let known = match newest.get(&point.load_id) {
                    Some(known) => *known,
                    None => {
                        let stored = newest_stored(s, &point.load_id)?;
                        newest.insert(point.load_id.clone(), stored);
                        stored
                    }
                };
                // A fix later than the load's newest stored point (the usual GPS
                // stream) cannot be a duplicate: no lookup needed.
                let later = known.is_none_or(|known| at > known);
                let duplicate = in_batch.contains(&key)
                    || (!later && s.points.contains_key(&key).map_err(unavailable)?);
                if duplicate {
                    outcomes.push(Appended::Duplicate);
                } else {
                    if let Some(event) = &point.event {
                        s.add_events(&mut batch, encode_events(std::slice::from_ref(event))?);
                    }
                    batch.insert(&s.points, key.clone(), keys::encode_point(&point.fix));
                    in_batch.insert(key);
                    outcomes.push(Appended::Stored);
                    // Raised before the write is durable: if it fails, the bound
                    // is only too high, which costs lookups, never a missed duplicate.
                    if later {
                        newest.insert(point.load_id.clone(), Some(at));
                    }
                }
            }
            let written = s.write_batch(batch);
            drop(newest);
            s.wait_durable(written?)?;
            Ok(outcomes)
        })
        .await
    }

    async fn load_points(&self, load: &LoadId, range: PointRange) -> StorageResult<Vec<GpsFix>> {
        let start = keys::point(load, &range.from);
        let mut end = keys::point(load, &range.to);
        if let Some(before) = range.before {
            end = end.min(keys::point(load, &before));
        }
        let exclusive_end = range.before.is_some_and(|b| b <= range.to);
        self.run(move |s| {
            let mut out = Vec::with_capacity(range.limit.min(1024));
            if start > end {
                return Ok(out);
            }
            let scan = if exclusive_end {
                s.points.range(start..end)
            } else {
                s.points.range(start..=end)
            };
            for guard in scan.rev().take(range.limit) {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let fix = keys::decode_point(&key, &value)
                    .ok_or_else(|| StorageError::corrupt("unreadable GPS point"))?;
                out.push(fix);
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
        let start = keys::point(load, &from);
        let end = keys::point(load, &to);
        self.run(move |s| {
            if start > end {
                return Ok(0);
            }
            let mut count = 0u64;
            for guard in s.points.range(start..=end) {
                guard.key().map_err(unavailable)?;
                count += 1;
            }
            Ok(count)
        })
        .await
    }
}
