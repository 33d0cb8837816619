//! Devices and attachments (`cql/007_devices.cql`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::statements::LoggedBatch;
use super::{ScyllaStore, decode, encode, keys};
use crate::domain::device::{Attachment, Device};
use crate::domain::ids::{AccountId, DeviceId, LoadId};
use crate::storage::{DeviceStore, StorageError, StorageResult};

/// `(record, last_seen)` of a `devices` row.
type DeviceRow = (Option<String>, Option<i64>);

/// The device of a row: none without a record (a sighting of a removed
/// device), its sighting merged in.
fn device_of((record, last_seen): DeviceRow) -> StorageResult<Option<Device>> {
    let Some(record) = record else {
        return Ok(None);
    };
    let device: Device = decode(&record)?;
    let seen = last_seen.and_then(DateTime::from_timestamp_micros);
    Ok(Some(Device {
        last_seen_at: device.last_seen_at.max(seen),
        ..device
    }))
}

#[async_trait]
impl DeviceStore for ScyllaStore {
    async fn put_device(&self, device: &Device) -> StorageResult<()> {
        let record = encode(device)?;
        let mut batch = LoggedBatch::new();
        batch.add(&self.st.put_device, (device.id.as_str().to_owned(), record));
        batch.add(
            &self.st.put_device_of_account,
            (
                device.account_id.as_str().to_owned(),
                device.id.as_str().to_owned(),
            ),
        );
        self.logged(batch).await
    }

    async fn get_device(&self, id: &DeviceId) -> StorageResult<Option<Device>> {
        match self
            .first::<DeviceRow>(&self.st.get_device, (id.as_str(),))
            .await?
        {
            Some(row) => device_of(row),
            None => Ok(None),
        }
    }

    /// Clustered by device id ascending (ULIDs): oldest first.
    async fn list_devices(&self, account: &AccountId) -> StorageResult<Vec<Device>> {
        let ids = self
            .rows(
                &self.st.devices_of_account,
                (account.as_str(),),
                |(id,): (String,)| Ok(id),
            )
            .await?;
        let mut devices = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(device) = self
                .get_device(&DeviceId::parse(&id).ok_or_else(|| {
                    StorageError::corrupt(format!("devices_by_account lists {id}, not a device id"))
                })?)
                .await?
            {
                devices.push(device);
            }
        }
        Ok(devices)
    }

    /// The attachments first, then the device: a removal cut short leaves a
    /// device with fewer loads, never a load pointing at a missing device
    /// that still takes its positions.
    async fn delete_device(&self, device: &Device) -> StorageResult<()> {
        for attachment in self.attachments_of_device(&device.id).await? {
            let mut batch = LoggedBatch::new();
            batch.add(
                &self.st.delete_load_device,
                (attachment.load_id.as_str().to_owned(),),
            );
            batch.add(
                &self.st.delete_device_load,
                (
                    device.id.as_str().to_owned(),
                    attachment.load_id.as_str().to_owned(),
                ),
            );
            self.logged(batch).await?;
        }
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.delete_device_of_account,
            (
                device.account_id.as_str().to_owned(),
                device.id.as_str().to_owned(),
            ),
        );
        batch.add(&self.st.delete_device, (device.id.as_str().to_owned(),));
        self.logged(batch).await
    }

    /// A paged scan of the devices table.
    async fn all_devices(&self) -> StorageResult<Vec<Device>> {
        let devices = self.rows(&self.st.all_devices, (), device_of).await?;
        Ok(devices.into_iter().flatten().collect())
    }

    /// A plain update of its own column: on a removed device it leaves a row
    /// without a record, which reads as no device.
    async fn record_sighting(&self, id: &DeviceId, at: DateTime<Utc>) -> StorageResult<()> {
        self.exec(&self.st.record_sighting, (keys::micros(&at), id.as_str()))
            .await
            .map(|_| ())
    }

    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
        let record = encode(attachment)?;
        let load = attachment.load_id.as_str().to_owned();
        let before = self.attachment_of_load(&attachment.load_id).await?;
        let mut batch = LoggedBatch::new();
        if let Some(before) = before.filter(|b| b.device_id != attachment.device_id) {
            batch.add(
                &self.st.delete_device_load,
                (before.device_id.as_str().to_owned(), load.clone()),
            );
        }
        batch.add(
            &self.st.put_device_load,
            (attachment.device_id.as_str().to_owned(), load.clone()),
        );
        batch.add(
            &self.st.put_load_device,
            (load, attachment.device_id.as_str().to_owned(), record),
        );
        self.logged(batch).await
    }

    async fn delete_attachment(&self, load: &LoadId) -> StorageResult<()> {
        let Some(before) = self.attachment_of_load(load).await? else {
            return Ok(());
        };
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.delete_device_load,
            (
                before.device_id.as_str().to_owned(),
                load.as_str().to_owned(),
            ),
        );
        batch.add(&self.st.delete_load_device, (load.as_str().to_owned(),));
        self.logged(batch).await
    }

    async fn attachment_of_load(&self, load: &LoadId) -> StorageResult<Option<Attachment>> {
        self.record(&self.st.get_load_device, (load.as_str(),))
            .await
    }

    /// The device's listing, each checked against the load's own row (the
    /// truth of which device a load has).
    async fn attachments_of_device(&self, device: &DeviceId) -> StorageResult<Vec<Attachment>> {
        let loads = self
            .rows(
                &self.st.loads_of_device,
                (device.as_str(),),
                |(load,): (String,)| Ok(load),
            )
            .await?;
        let mut out = Vec::with_capacity(loads.len());
        for load in loads {
            let attachment: Option<Attachment> = self
                .record(&self.st.get_load_device, (load.as_str(),))
                .await?;
            if let Some(attachment) = attachment.filter(|a| &a.device_id == device) {
                out.push(attachment);
            }
        }
        Ok(out)
    }
}
