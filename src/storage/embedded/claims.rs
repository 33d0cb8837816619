//! Reference claims (`storage::references`): `account ‖ 0 ‖ reference` → the
//! holding load's id ‖ when it claimed (µs since 1970, big-endian).

use async_trait::async_trait;
use chrono::DateTime;

use super::{EmbeddedStore, unavailable};
use crate::domain::ids::{AccountId, LoadId};
use crate::storage::{ReferenceClaim, ReferenceStore, StorageError, StorageResult};

fn key(account: &AccountId, reference: &str) -> Vec<u8> {
    // Account ids never hold a NUL: the reference starts after the first one.
    [account.as_str().as_bytes(), &[0], reference.as_bytes()].concat()
}

fn encode(claim: &ReferenceClaim) -> Vec<u8> {
    let mut value = claim.load.as_str().as_bytes().to_vec();
    value.extend_from_slice(&claim.at.timestamp_micros().to_be_bytes());
    value
}

fn decode(value: &[u8]) -> StorageResult<ReferenceClaim> {
    let corrupt = || StorageError::corrupt("a reference claim is unreadable");
    let split = value.len().checked_sub(8).ok_or_else(corrupt)?;
    let load = std::str::from_utf8(&value[..split])
        .ok()
        .and_then(LoadId::parse)
        .ok_or_else(corrupt)?;
    let micros = i64::from_be_bytes(value[split..].try_into().map_err(|_| corrupt())?);
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(corrupt)?;
    Ok(ReferenceClaim { load, at })
}

#[async_trait]
impl ReferenceStore for EmbeddedStore {
    async fn reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> StorageResult<Option<ReferenceClaim>> {
        let key = key(account, reference);
        self.run(move |s| {
            s.load_references
                .get(&key)
                .map_err(unavailable)?
                .map(|value| decode(&value))
                .transpose()
        })
        .await
    }

    async fn swap_reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
        claim: &ReferenceClaim,
        replacing: Option<&LoadId>,
    ) -> StorageResult<bool> {
        let key = key(account, reference);
        let value = encode(claim);
        let replacing = replacing.cloned();
        self.run(move |s| {
            let _serialised = s.reference_claims.lock().unwrap_or_else(|p| p.into_inner());
            let holder = match s.load_references.get(&key).map_err(unavailable)? {
                Some(held) => Some(decode(&held)?.load),
                None => None,
            };
            if holder != replacing {
                return Ok(false);
            }
            let mut batch = s.durable_batch();
            batch.insert(&s.load_references, key, value);
            s.commit_durably(batch)?;
            Ok(true)
        })
        .await
    }

    async fn release_reference(
        &self,
        account: &AccountId,
        reference: &str,
        load: &LoadId,
    ) -> StorageResult<()> {
        let key = key(account, reference);
        let load = load.clone();
        self.run(move |s| {
            let _serialised = s.reference_claims.lock().unwrap_or_else(|p| p.into_inner());
            let held = s.load_references.get(&key).map_err(unavailable)?;
            if held.is_some_and(|held| decode(&held).is_ok_and(|c| c.load == load)) {
                let mut batch = s.durable_batch();
                batch.remove(&s.load_references, key);
                s.commit_durably(batch)?;
            }
            Ok(())
        })
        .await
    }
}
