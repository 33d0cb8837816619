//! Devices and the loads they are attached to.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::device::{Attachment, Device};
use crate::domain::ids::{AccountId, DeviceId, LoadId};

#[async_trait]
pub trait DeviceStore: Send + Sync {
    /// Creates or replaces a device's record (a new device, its last sighting).
    async fn put_device(&self, device: &Device) -> StorageResult<()>;
    /// A device by id, whatever its account.
    async fn get_device(&self, id: &DeviceId) -> StorageResult<Option<Device>>;
    /// An account's devices, oldest first.
    async fn list_devices(&self, account: &AccountId) -> StorageResult<Vec<Device>>;
    /// Removes a device and every attachment of it (its token stops working;
    /// the positions it posted stay with their loads).
    async fn delete_device(&self, device: &Device) -> StorageResult<()>;
    /// Notes when a device was last seen. A device removed meanwhile stays
    /// removed: a sighting never writes a device back.
    async fn record_sighting(&self, id: &DeviceId, at: DateTime<Utc>) -> StorageResult<()>;
    /// Every device of every account (read at start, and by other instances'
    /// refreshes).
    async fn all_devices(&self) -> StorageResult<Vec<Device>>;

    /// Attaches a device to a load, replacing the load's device if it had one.
    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()>;
    /// Detaches the load's device; detaching none is not an error.
    async fn delete_attachment(&self, load: &LoadId) -> StorageResult<()>;
    /// The load's attachment, if any.
    async fn attachment_of_load(&self, load: &LoadId) -> StorageResult<Option<Attachment>>;
    /// The loads a device is attached to.
    async fn attachments_of_device(&self, device: &DeviceId) -> StorageResult<Vec<Attachment>>;
}
