//! Claims on names (`storage::claims`), in one keyspace: a load's reference
//! at `account ‖ 0 ‖ reference`, a device's identifier at `0 ‖ identifier`
//! (account ids are never empty, so the two never meet), each → the holder's
//! id ‖ when it claimed (µs since 1970, big-endian).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{EmbeddedStore, Inner, unavailable};
use crate::domain::ids::{AccountId, DeviceId, LoadId};
use crate::storage::identifiers::{IdentifierClaim, IdentifierStore};
use crate::storage::{ReferenceClaim, ReferenceStore, StorageError, StorageResult};

fn reference_key(account: &AccountId, reference: &str) -> Vec<u8> {
    // Account ids never hold a NUL: the reference starts after the first one.
    [account.as_str().as_bytes(), &[0], reference.as_bytes()].concat()
}

fn identifier_key(identifier: &str) -> Vec<u8> {
    [&[0], identifier.as_bytes()].concat()
}

fn encode(holder: &str, at: DateTime<Utc>) -> Vec<u8> {
    let mut value = holder.as_bytes().to_vec();
    value.extend_from_slice(&at.timestamp_micros().to_be_bytes());
    value
}

/// The holder's id (parsed by `parse`) and when it claimed.
fn decode<H>(value: &[u8], parse: impl Fn(&str) -> Option<H>) -> StorageResult<(H, DateTime<Utc>)> {
    let corrupt = || StorageError::corrupt("a claim is unreadable");
    let split = value.len().checked_sub(8).ok_or_else(corrupt)?;
    let holder = std::str::from_utf8(&value[..split])
        .ok()
        .and_then(parse)
        .ok_or_else(corrupt)?;
    let micros = i64::from_be_bytes(value[split..].try_into().map_err(|_| corrupt())?);
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(corrupt)?;
    Ok((holder, at))
}

/// The claim at `key`, its holder parsed by `parse`.
fn read<H>(
    s: &Inner,
    key: &[u8],
    parse: impl Fn(&str) -> Option<H>,
) -> StorageResult<Option<(H, DateTime<Utc>)>> {
    s.load_references
        .get(key)
        .map_err(unavailable)?
        .map(|value| decode(&value, parse))
        .transpose()
}

/// Writes `value` at `key` if the holder there now is `replacing`.
fn swap(s: &Inner, key: Vec<u8>, value: Vec<u8>, replacing: Option<&str>) -> StorageResult<bool> {
    let _serialised = s.reference_claims.lock().unwrap_or_else(|p| p.into_inner());
    let holder = read(s, &key, |id| Some(id.to_owned()))?.map(|(id, _)| id);
    if holder.as_deref() != replacing {
        return Ok(false);
    }
    let mut batch = s.durable_batch();
    batch.insert(&s.load_references, key, value);
    s.commit_durably(batch)?;
    Ok(true)
}

/// Removes the claim at `key` if `holder` holds it.
fn release(s: &Inner, key: Vec<u8>, holder: &str) -> StorageResult<()> {
    let _serialised = s.reference_claims.lock().unwrap_or_else(|p| p.into_inner());
    let held = read(s, &key, |id| Some(id.to_owned()))?;
    if held.is_some_and(|(id, _)| id == holder) {
        let mut batch = s.durable_batch();
        batch.remove(&s.load_references, key);
        s.commit_durably(batch)?;
    }
    Ok(())
}

#[async_trait]
impl ReferenceStore for EmbeddedStore {
    async fn reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> StorageResult<Option<ReferenceClaim>> {
        let key = reference_key(account, reference);
        let held = self.run(move |s| read(s, &key, LoadId::parse)).await?;
        Ok(held.map(|(load, at)| ReferenceClaim { load, at }))
    }

    async fn swap_reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
        claim: &ReferenceClaim,
        replacing: Option<&LoadId>,
    ) -> StorageResult<bool> {
        let key = reference_key(account, reference);
        let value = encode(claim.load.as_str(), claim.at);
        let replacing = replacing.map(|load| load.as_str().to_owned());
        self.run(move |s| swap(s, key, value, replacing.as_deref()))
            .await
    }

    async fn release_reference(
        &self,
        account: &AccountId,
        reference: &str,
        load: &LoadId,
    ) -> StorageResult<()> {
        let key = reference_key(account, reference);
        let load = load.as_str().to_owned();
        self.run(move |s| release(s, key, &load)).await
    }
}

#[async_trait]
impl IdentifierStore for EmbeddedStore {
    async fn identifier_claim(&self, identifier: &str) -> StorageResult<Option<IdentifierClaim>> {
        let key = identifier_key(identifier);
        let held = self.run(move |s| read(s, &key, DeviceId::parse)).await?;
        Ok(held.map(|(device, at)| IdentifierClaim { device, at }))
    }

    async fn swap_identifier_claim(
        &self,
        identifier: &str,
        claim: &IdentifierClaim,
        replacing: Option<&DeviceId>,
    ) -> StorageResult<bool> {
        let key = identifier_key(identifier);
        let value = encode(claim.device.as_str(), claim.at);
        let replacing = replacing.map(|device| device.as_str().to_owned());
        self.run(move |s| swap(s, key, value, replacing.as_deref()))
            .await
    }

    async fn release_identifier(&self, identifier: &str, device: &DeviceId) -> StorageResult<()> {
        let key = identifier_key(identifier);
        let device = device.as_str().to_owned();
        self.run(move |s| release(s, key, &device)).await
    }
}
