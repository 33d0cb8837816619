//! Devices: created, listed and revoked by an account's keys, attached to
//! loads, and authenticated by their own tokens when they post positions.
//!
//! A device's post is as hot as the API's fixes, so what it needs (the device,
//! its account, the loads it feeds) is cached in memory per device, as keys
//! are (`services::auth`): this process's changes update the cache at once;
//! the expiry bounds what another instance sharing the store may have changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::device_meter::{DeviceLimits, DeviceMeter};
use super::device_sightings::Sightings;
use super::ignored_positions::IgnoredPositions;
use crate::clock::Clock;
use crate::domain::account::Account;
use crate::domain::device::{
    Attachment, Device, DeviceEdit, IssuedDevice, NewDevice, Standing, parse_device_token,
};
use crate::domain::ids::{AccountId, CarrierId, DeviceId, LoadId};
use crate::ingest::Protocol;
use crate::shared_map::SharedMap;
use crate::storage::{Storage, StorageError, identifiers};

/// How long a device, its account and its loads are trusted from memory.
const CACHE_TTL: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("device not found")]
    NotFound,
    #[error("load not found")]
    LoadNotFound,
    #[error("names no carrier of this account ({0})")]
    UnknownCarrier(CarrierId),
    /// A device named in a body (not the path) that is not the account's.
    #[error("names no device of this account ({0})")]
    UnknownDevice(DeviceId),
    /// Another device (of any account) has the identifier; which one is not
    /// said, as it may be another account's.
    #[error("another device has this identifier")]
    IdentifierTaken,
    /// The device already feeds as many loads (not delivered or cancelled)
    /// as it may.
    #[error("the device already feeds {} loads, the most one device may feed at once", .limit)]
    TooManyLoads { limit: usize, loads: Vec<LoadId> },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Why a device's post is not taken.
#[derive(Debug, thiserror::Error)]
pub enum DeviceRefusal {
    #[error("no device token was sent")]
    Missing,
    #[error("an account API key cannot post device positions; use the device's token (frd_…)")]
    AccountKey,
    #[error("the device token is not recognised (wrong, or the device was removed)")]
    Unknown,
    #[error("the device's account is disabled")]
    AccountDisabled,
    /// No device has the identifier a tracker named itself by.
    #[error("no device has this identifier")]
    UnknownIdentifier,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl DeviceRefusal {
    /// For the refusals metric (a bounded set).
    pub fn reason(&self) -> &'static str {
        match self {
            DeviceRefusal::Missing => "missing_token",
            DeviceRefusal::AccountKey => "account_key",
            DeviceRefusal::Unknown => "unknown_token",
            DeviceRefusal::AccountDisabled => "account_disabled",
            DeviceRefusal::UnknownIdentifier => "unknown_identifier",
            DeviceRefusal::Storage(_) => "storage",
        }
    }
}

/// An authenticated device, as cached: cloning it copies pointers.
#[derive(Debug, Clone)]
pub struct DeviceContext {
    pub device: Arc<Device>,
    pub account: Arc<Account>,
    /// The loads it is attached to.
    pub loads: Arc<[LoadId]>,
}

struct Cached {
    context: DeviceContext,
    fetched: Instant,
}

pub struct DeviceService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    cache: SharedMap<DeviceId, Arc<Cached>>,
    /// Bumped on every change of a device or an attachment: a record read
    /// while one happened is not cached (it may predate the change).
    changes: AtomicU64,
    /// When each device was last seen, and by which protocol.
    sightings: Sightings,
    /// Each device's allowance of positions.
    pub meter: DeviceMeter,
    /// Positions taken but not stored, by reason.
    pub ignored: IgnoredPositions,
}

impl DeviceService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock, limits: DeviceLimits) -> Self {
        DeviceService {
            storage,
            meter: DeviceMeter::new(limits, clock.clone()),
            clock,
            cache: SharedMap::default(),
            changes: AtomicU64::new(0),
            sightings: Sightings::default(),
            ignored: IgnoredPositions::default(),
        }
    }

    /// A new device of the account (the carrier, if named, must be the
    /// account's; the identifier, if given, nobody else's); the token is in
    /// the answer only.
    pub async fn create(
        &self,
        account: &AccountId,
        new: NewDevice,
    ) -> Result<IssuedDevice, DeviceError> {
        if let Some(carrier) = &new.carrier_id {
            self.check_carrier(account, carrier).await?;
        }
        let now = self.clock.now();
        let mut issued = Device::issue(
            account.clone(),
            new.name,
            new.carrier_id,
            new.identifier,
            now,
        );
        issued.device.time_zone = new.time_zone;
        if let Some(identifier) = &issued.device.identifier {
            self.claim(identifier, &issued.device.id).await?;
        }
        if let Err(error) = self.storage.put_device(&issued.device).await {
            if let Some(identifier) = &issued.device.identifier {
                identifiers::release(&*self.storage, identifier, &issued.device.id).await;
            }
            return Err(error.into());
        }
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %account, device = %issued.device.id, "device created");
        Ok(issued)
    }

    /// A device of the account, with the loads it feeds; another account's is
    /// not found.
    pub async fn get(
        &self,
        account: &AccountId,
        id: &DeviceId,
    ) -> Result<(Device, Vec<LoadId>), DeviceError> {
        let device = self.owned(account, id).await?;
        let loads = self.loads_of(&device.id).await?;
        Ok((self.with_last_seen(device), loads))
    }

    /// The account's devices, oldest first, each with its loads.
    pub async fn list(
        &self,
        account: &AccountId,
    ) -> Result<Vec<(Device, Vec<LoadId>)>, DeviceError> {
        let mut devices = self.storage.list_devices(account).await?;
        // Newest first, as every list of the API (ids break a tie).
        devices.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        let mut out = Vec::new();
        for device in devices {
            let loads = self.loads_of(&device.id).await?;
            out.push((self.with_last_seen(device), loads));
        }
        Ok(out)
    }

    /// Changes a device's name, carrier or identifier (a new identifier is
    /// claimed before the device is written, the old one released after).
    pub async fn edit(
        &self,
        account: &AccountId,
        id: &DeviceId,
        edit: DeviceEdit,
    ) -> Result<(Device, Vec<LoadId>), DeviceError> {
        let before = self.owned(account, id).await?;
        if let Some(Some(carrier)) = &edit.carrier_id {
            self.check_carrier(account, carrier).await?;
        }
        let mut device = before.clone();
        if let Some(name) = edit.name {
            device.name = name;
        }
        if let Some(carrier) = edit.carrier_id {
            device.carrier_id = carrier;
        }
        if let Some(identifier) = edit.identifier {
            device.identifier = identifier;
        }
        if let Some(time_zone) = edit.time_zone {
            device.time_zone = time_zone;
        }
        let gained = device
            .identifier
            .as_ref()
            .filter(|new| before.identifier.as_ref() != Some(*new));
        if let Some(identifier) = gained {
            self.claim(identifier, id).await?;
        }
        if let Err(error) = self.storage.put_device(&device).await {
            if let Some(identifier) = gained {
                identifiers::release(&*self.storage, identifier, id).await;
            }
            return Err(error.into());
        }
        if let Some(old) = &before.identifier
            && device.identifier.as_ref() != Some(old)
        {
            identifiers::release(&*self.storage, old, id).await;
        }
        self.changed(id);
        let loads = self.loads_of(id).await?;
        Ok((self.with_last_seen(device), loads))
    }

    async fn check_carrier(
        &self,
        account: &AccountId,
        carrier: &CarrierId,
    ) -> Result<(), DeviceError> {
        match self.storage.get_carrier(account, carrier).await? {
            Some(_) => Ok(()),
            None => Err(DeviceError::UnknownCarrier(carrier.clone())),
        }
    }

    async fn claim(&self, identifier: &str, device: &DeviceId) -> Result<(), DeviceError> {
        identifiers::claim(&*self.storage, identifier, device, self.clock.now())
            .await?
            .map_err(|_| DeviceError::IdentifierTaken)
    }

    /// Removes a device: its token stops working at once on this instance
    /// (within the cache's 30 s on others), its identifier is free again; the
    /// positions it posted stay.
    pub async fn delete(&self, account: &AccountId, id: &DeviceId) -> Result<(), DeviceError> {
        let device = self.owned(account, id).await?;
        self.storage.delete_device(&device).await?;
        if let Some(identifier) = &device.identifier {
            identifiers::release(&*self.storage, identifier, id).await;
        }
        self.changed(id);
        self.sightings.forget(id);
        self.meter.forget(id);
        self.ignored.forget(id);
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %account, device = %id, "device removed");
        Ok(())
    }

    /// Attaches a device of the account to a load of the account (any
    /// status), replacing the load's device if it had one. A device feeds at
    /// most `max_loads` loads that are not delivered or cancelled: one
    /// position becomes a fix of each, so without a cap one post could
    /// become any number of writes.
    pub async fn attach(
        &self,
        account: &AccountId,
        load: &LoadId,
        device: &DeviceId,
    ) -> Result<Device, DeviceError> {
        self.owned_load(account, load).await?;
        let attached = match self.owned(account, device).await {
            Err(DeviceError::NotFound) => return Err(DeviceError::UnknownDevice(device.clone())),
            found => found?,
        };
        self.check_room(device, load).await?;
        let before = self.storage.attachment_of_load(load).await?;
        self.storage
            .put_attachment(&Attachment {
                load_id: load.clone(),
                device_id: device.clone(),
                account_id: account.clone(),
            })
            .await?;
        if let Some(before) = before {
            self.changed(&before.device_id);
        }
        self.changed(device);
        Ok(self.with_last_seen(attached))
    }

    /// The device's allowance now and the positions it ignored.
    pub fn standing(&self, id: &DeviceId) -> Standing {
        Standing {
            limits: self.meter.limits(),
            available: self.meter.available(id),
            ignored: self.ignored.of(id),
        }
    }

    /// Refuses a further load for a device that feeds `max_loads` active
    /// ones already (re-attaching one of them is not a further load).
    async fn check_room(&self, device: &DeviceId, load: &LoadId) -> Result<(), DeviceError> {
        let limit = self.meter.limits().max_loads;
        let mut active = Vec::new();
        for attached in self.loads_of(device).await? {
            if &attached == load {
                return Ok(());
            }
            let status = self.storage.get_load(&attached).await?.map(|l| l.status);
            if status.is_some_and(|s| !s.is_final()) {
                active.push(attached);
            }
        }
        if active.len() >= limit {
            return Err(DeviceError::TooManyLoads {
                limit,
                loads: active,
            });
        }
        Ok(())
    }

    /// Detaches the load's device (none attached: nothing to do).
    pub async fn detach(&self, account: &AccountId, load: &LoadId) -> Result<(), DeviceError> {
        self.owned_load(account, load).await?;
        if let Some(before) = self.storage.attachment_of_load(load).await? {
            self.storage.delete_attachment(load).await?;
            self.changed(&before.device_id);
        }
        Ok(())
    }

    /// The device attached to a load of the account, if any.
    pub async fn device_of_load(
        &self,
        account: &AccountId,
        load: &LoadId,
    ) -> Result<Option<Device>, DeviceError> {
        let Some(attachment) = self.storage.attachment_of_load(load).await? else {
            return Ok(None);
        };
        if &attachment.account_id != account {
            return Ok(None);
        }
        let device = self.storage.get_device(&attachment.device_id).await?;
        Ok(device.map(|d| self.with_last_seen(d)))
    }

    /// The device a token belongs to, with its account and loads.
    pub async fn authenticate(&self, token: Option<&str>) -> Result<DeviceContext, DeviceRefusal> {
        let token = token.map(str::trim).filter(|t| !t.is_empty());
        let token = token.ok_or(DeviceRefusal::Missing)?;
        if token.starts_with(crate::domain::api_key::TOKEN_PREFIX) {
            return Err(DeviceRefusal::AccountKey);
        }
        let presented = parse_device_token(token).ok_or(DeviceRefusal::Unknown)?;
        let context = self
            .context(&presented.device_id)
            .await?
            .ok_or(DeviceRefusal::Unknown)?;
        if !context.device.token_matches(&presented) {
            return Err(DeviceRefusal::Unknown);
        }
        if context.account.disabled {
            return Err(DeviceRefusal::AccountDisabled);
        }
        Ok(context)
    }

    /// The device a tracker named itself by `identifier` (its IMEI), with its
    /// account and loads.
    pub async fn identify(&self, identifier: &str) -> Result<DeviceContext, DeviceRefusal> {
        let device = identifiers::find(&*self.storage, identifier)
            .await?
            .ok_or(DeviceRefusal::UnknownIdentifier)?;
        self.identified(&device.id, identifier).await
    }

    /// The device a connection identified as `identifier` earlier, as it is
    /// now (its loads change; it may be removed, or given another identifier).
    pub async fn identified(
        &self,
        id: &DeviceId,
        identifier: &str,
    ) -> Result<DeviceContext, DeviceRefusal> {
        let context = self
            .context(id)
            .await?
            .filter(|c| c.device.identifier.as_deref() == Some(identifier))
            .ok_or(DeviceRefusal::UnknownIdentifier)?;
        if context.account.disabled {
            return Err(DeviceRefusal::AccountDisabled);
        }
        Ok(context)
    }

    /// Notes that the device posted now, by `protocol` (see
    /// [`Sightings`]).
    pub async fn seen(&self, device: &Device, protocol: Protocol) -> Result<(), StorageError> {
        let now = self.clock.now();
        self.sightings
            .note(&*self.storage, device, protocol, now)
            .await
    }

    /// The protocol of the device's latest post to this process, since it
    /// started.
    pub fn last_protocol(&self, id: &DeviceId) -> Option<Protocol> {
        self.sightings.protocol(id)
    }

    /// The device with the latest sighting this process knows of.
    fn with_last_seen(&self, device: Device) -> Device {
        self.sightings.latest(device)
    }

    async fn context(&self, id: &DeviceId) -> Result<Option<DeviceContext>, StorageError> {
        if let Some(hit) = self.cache.get(id)
            && hit.fetched.elapsed() < CACHE_TTL
        {
            return Ok(Some(hit.context.clone()));
        }
        let generation = self.changes.load(Ordering::SeqCst);
        let Some(device) = self.storage.get_device(id).await? else {
            self.cache.remove(id);
            return Ok(None);
        };
        let Some(account) = self.storage.get_account(&device.account_id).await? else {
            return Err(StorageError::corrupt(format!(
                "device {} names missing account {}",
                device.id, device.account_id
            )));
        };
        let loads = self.loads_of(id).await?;
        let context = DeviceContext {
            device: Arc::new(device),
            account: Arc::new(account),
            loads: loads.into(),
        };
        if self.changes.load(Ordering::SeqCst) == generation {
            let cached = Cached {
                context: context.clone(),
                fetched: Instant::now(),
            };
            self.cache.insert(id.clone(), Arc::new(cached));
        }
        Ok(Some(context))
    }

    async fn loads_of(&self, device: &DeviceId) -> Result<Vec<LoadId>, StorageError> {
        Ok(self
            .storage
            .attachments_of_device(device)
            .await?
            .into_iter()
            .map(|a| a.load_id)
            .collect())
    }

    /// Called after an account was written (disabled, plan changed) so its
    /// devices' next posts see it.
    pub fn account_changed(&self, account: &AccountId) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.cache
            .retain(|_, cached| &cached.context.account.id != account);
    }

    fn changed(&self, device: &DeviceId) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.cache.remove(device);
    }

    async fn owned(&self, account: &AccountId, id: &DeviceId) -> Result<Device, DeviceError> {
        self.storage
            .get_device(id)
            .await?
            .filter(|d| &d.account_id == account)
            .ok_or(DeviceError::NotFound)
    }

    async fn owned_load(&self, account: &AccountId, id: &LoadId) -> Result<(), DeviceError> {
        self.storage
            .get_load(id)
            .await?
            .filter(|l| &l.account_id == account)
            .map(|_| ())
            .ok_or(DeviceError::LoadNotFound)
    }
}
