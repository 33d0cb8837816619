//! Devices (JSON records, listed under their account) and attachments: the
//! load's attachment under the load id, and `device ‖ load` listing a
//! device's loads.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{EmbeddedStore, encode, keys, unavailable};
use crate::domain::device::{Attachment, Device};
use crate::domain::ids::{AccountId, DeviceId, LoadId};
use crate::storage::{DeviceStore, StorageResult};

/// `device ‖ load`: a device's attachments, by prefix.
fn device_load(device: &DeviceId, load: &LoadId) -> Vec<u8> {
    let mut key = device.as_str().as_bytes().to_vec();
    key.extend_from_slice(load.as_str().as_bytes());
    key
}

#[async_trait]
impl DeviceStore for EmbeddedStore {
    async fn put_device(&self, device: &Device) -> StorageResult<()> {
        let value = encode(device)?;
        let id = device.id.as_str().as_bytes().to_vec();
        let listing = keys::owned(&device.account_id, device.id.as_str());
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.devices, id, value);
            batch.insert(&s.account_devices, listing, Vec::<u8>::new());
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_device(&self, id: &DeviceId) -> StorageResult<Option<Device>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.devices, &key)).await
    }

    async fn list_devices(&self, account: &AccountId) -> StorageResult<Vec<Device>> {
        let prefix = account.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.account_devices.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                if let Some(device) = s.get_json(&s.devices, &listing[prefix.len()..])? {
                    out.push(device);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn delete_device(&self, device: &Device) -> StorageResult<()> {
        let id = device.id.as_str().as_bytes().to_vec();
        let listing = keys::owned(&device.account_id, device.id.as_str());
        self.run(move |s| {
            let _serialised = s.attachments.lock().unwrap_or_else(|p| p.into_inner());
            let mut batch = s.durable_batch();
            for guard in s.device_loads.prefix(&id) {
                let entry = guard.key().map_err(unavailable)?;
                let load = entry[id.len()..].to_vec();
                let attached: Option<Attachment> = s.get_json(&s.load_devices, &load)?;
                if attached.is_some_and(|a| a.device_id.as_str().as_bytes() == &id[..]) {
                    batch.remove(&s.load_devices, load);
                }
                batch.remove(&s.device_loads, entry.to_vec());
            }
            batch.remove(&s.account_devices, listing);
            batch.remove(&s.devices, id);
            s.commit_durably(batch)
        })
        .await
    }

    /// Under the lock a removal takes: a removal cannot fall between the read
    /// and the write and be undone by it.
    async fn record_sighting(&self, id: &DeviceId, at: DateTime<Utc>) -> StorageResult<()> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let _serialised = s.attachments.lock().unwrap_or_else(|p| p.into_inner());
            let Some(device) = s.get_json::<Device>(&s.devices, &key)? else {
                return Ok(());
            };
            let seen = Device {
                last_seen_at: Some(at),
                ..device
            };
            let mut batch = s.durable_batch();
            batch.insert(&s.devices, key, encode(&seen)?);
            s.commit_durably(batch)
        })
        .await
    }

    async fn all_devices(&self) -> StorageResult<Vec<Device>> {
        self.all_of(|s| &s.devices).await
    }

    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
        let value = encode(attachment)?;
        let attachment = attachment.clone();
        self.run(move |s| {
            // The read of the load's current device and the writes that move
            // it happen under one lock: two attachments of one load at once
            // cannot leave the load listed under both devices.
            let _serialised = s.attachments.lock().unwrap_or_else(|p| p.into_inner());
            let load = attachment.load_id.as_str().as_bytes().to_vec();
            let mut batch = s.durable_batch();
            if let Some(before) = s.get_json::<Attachment>(&s.load_devices, &load)? {
                batch.remove(
                    &s.device_loads,
                    device_load(&before.device_id, &before.load_id),
                );
            }
            batch.insert(
                &s.device_loads,
                device_load(&attachment.device_id, &attachment.load_id),
                Vec::<u8>::new(),
            );
            batch.insert(&s.load_devices, load, value);
            s.commit_durably(batch)
        })
        .await
    }

    async fn delete_attachment(&self, load: &LoadId) -> StorageResult<()> {
        let key = load.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let _serialised = s.attachments.lock().unwrap_or_else(|p| p.into_inner());
            let Some(before) = s.get_json::<Attachment>(&s.load_devices, &key)? else {
                return Ok(());
            };
            let mut batch = s.durable_batch();
            batch.remove(
                &s.device_loads,
                device_load(&before.device_id, &before.load_id),
            );
            batch.remove(&s.load_devices, key);
            s.commit_durably(batch)
        })
        .await
    }

    async fn attachment_of_load(&self, load: &LoadId) -> StorageResult<Option<Attachment>> {
        let key = load.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.load_devices, &key)).await
    }

    async fn attachments_of_device(&self, device: &DeviceId) -> StorageResult<Vec<Attachment>> {
        let prefix = device.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.device_loads.prefix(&prefix) {
                let entry = guard.key().map_err(unavailable)?;
                if let Some(attachment) = s.get_json(&s.load_devices, &entry[prefix.len()..])? {
                    out.push(attachment);
                }
            }
            Ok(out)
        })
        .await
    }
}
