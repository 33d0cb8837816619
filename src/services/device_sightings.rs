//! When each device was last seen, and by which protocol: in memory at once,
//! `last_seen_at` in storage at most once a minute (a write per post would
//! double the device path's cost for a timestamp). The protocol is this
//! process's alone, since it started: storage keeps only the time.

use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};

use chrono::{DateTime, Utc};

use crate::domain::device::Device;
use crate::domain::ids::DeviceId;
use crate::domain::tracking::FixSource;
use crate::ingest::Protocol;
use crate::shared_map::SharedMap;
use crate::storage::{Storage, StorageError};

/// A device's `last_seen_at` is written to storage at most this often; in
/// between, this process keeps it in memory (shown by its reads).
const WRITE_SECONDS: i64 = 60;

struct Sighting {
    /// Unix seconds.
    at: AtomicI64,
    /// When `at` was last written to storage.
    written: AtomicI64,
    /// The protocol's fix source code.
    protocol: AtomicU8,
}

#[derive(Default)]
pub struct Sightings {
    seen: SharedMap<DeviceId, Sighting>,
}

impl Sightings {
    /// Notes that `device` posted at `now` by `protocol`.
    pub async fn note(
        &self,
        storage: &dyn Storage,
        device: &Device,
        protocol: Protocol,
        now: DateTime<Utc>,
    ) -> Result<(), StorageError> {
        let at = now.timestamp();
        let code = protocol.source().code();
        let write = match self.seen.get(&device.id) {
            Some(entry) => {
                entry.at.store(at, Ordering::Relaxed);
                entry.protocol.store(code, Ordering::Relaxed);
                let written = entry.written.load(Ordering::Relaxed);
                at - written >= WRITE_SECONDS
                    && entry
                        .written
                        .compare_exchange(written, at, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
            }
            None => {
                let stored = device.last_seen_at.map_or(i64::MIN / 2, |s| s.timestamp());
                let write = at - stored >= WRITE_SECONDS;
                let written = if write { at } else { stored };
                let sighting = Sighting {
                    at: AtomicI64::new(at),
                    written: AtomicI64::new(written),
                    protocol: AtomicU8::new(code),
                };
                self.seen.insert(device.id.clone(), sighting);
                write
            }
        };
        if write {
            // Never a read-then-put: a removal in between would be undone.
            storage.record_sighting(&device.id, now).await?;
        }
        Ok(())
    }

    /// The device with the latest sighting this process knows of.
    pub fn latest(&self, device: Device) -> Device {
        let Some(entry) = self.seen.get(&device.id) else {
            return device;
        };
        let seen = DateTime::from_timestamp(entry.at.load(Ordering::Relaxed), 0);
        let last_seen_at = device.last_seen_at.max(seen);
        Device {
            last_seen_at,
            ..device
        }
    }

    /// The protocol of the device's latest post to this process.
    pub fn protocol(&self, id: &DeviceId) -> Option<Protocol> {
        let code = self.seen.get(id)?.protocol.load(Ordering::Relaxed);
        let source = FixSource::from_code(code)?;
        Protocol::ALL.into_iter().find(|p| p.source() == source)
    }

    pub fn forget(&self, id: &DeviceId) {
        self.seen.remove(id);
    }
}
