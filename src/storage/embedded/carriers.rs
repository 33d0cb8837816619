//! Carriers, keyed under their account, with an index of MC numbers that keeps
//! them unique within it.

use async_trait::async_trait;
use fjall::Readable;

use super::{EmbeddedStore, decode, encode, keys, unavailable};
use crate::domain::carrier::Carrier;
use crate::domain::ids::{AccountId, CarrierId};
use crate::storage::{CarrierInsert, CarrierStore, Page, PageRequest, StorageError, StorageResult};

#[async_trait]
impl CarrierStore for EmbeddedStore {
    async fn insert_carrier(&self, carrier: &Carrier) -> StorageResult<CarrierInsert> {
        let value = encode(carrier)?;
        let key = keys::carrier(&carrier.account_id, &carrier.id);
        let mc_key = keys::carrier_mc(&carrier.account_id, &carrier.mc_number);
        let id = carrier.id.as_str().as_bytes().to_vec();
        let count_key = keys::carrier_count(&carrier.account_id);
        self.run(move |s| {
            let _serialised = s.carrier_insert.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(existing) = s.carrier_mc.get(&mc_key).map_err(unavailable)? {
                let existing = std::str::from_utf8(&existing)
                    .ok()
                    .and_then(CarrierId::parse)
                    .ok_or_else(|| StorageError::corrupt("bad carrier id in MC index"))?;
                return Ok(CarrierInsert::DuplicateMcNumber(existing));
            }
            let mut batch = s.durable_batch();
            batch.insert(&s.carriers, key, value);
            batch.insert(&s.carrier_mc, mc_key, id);
            s.adjust_counts(&mut batch, &[(count_key, 1)])?;
            s.commit_durably(batch)?;
            Ok(CarrierInsert::Inserted)
        })
        .await
    }

    async fn update_carrier(&self, carrier: &Carrier) -> StorageResult<()> {
        let value = encode(carrier)?;
        let key = keys::carrier(&carrier.account_id, &carrier.id);
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.carriers, key, value);
            s.commit_durably(batch)
        })
        .await
    }

    async fn delete_carrier(&self, account: &AccountId, id: &CarrierId) -> StorageResult<bool> {
        let key = keys::carrier(account, id);
        let count_key = keys::carrier_count(account);
        let account = account.clone();
        self.run(move |s| {
            // Under the insert lock: a carrier taking the number meanwhile
            // must not have its index entry removed.
            let _serialised = s.carrier_insert.lock().unwrap_or_else(|p| p.into_inner());
            let Some(carrier) = s.get_json::<Carrier>(&s.carriers, &key)? else {
                return Ok(false);
            };
            let mut batch = s.durable_batch();
            batch.remove(&s.carriers, key);
            batch.remove(
                &s.carrier_mc,
                keys::carrier_mc(&account, &carrier.mc_number),
            );
            s.adjust_counts(&mut batch, &[(count_key, -1)])?;
            s.commit_durably(batch)?;
            Ok(true)
        })
        .await
    }

    async fn get_carrier(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> StorageResult<Option<Carrier>> {
        let key = keys::carrier(account, id);
        self.run(move |s| s.get_json(&s.carriers, &key)).await
    }

    async fn list_carriers(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> StorageResult<Page<Carrier>> {
        let prefix = account.as_str().as_bytes().to_vec();
        let count_key = keys::carrier_count(account);
        self.run(move |s| {
            s.page_newest_first(
                &s.carriers,
                &prefix,
                &count_key,
                page,
                |snap, key| match snap.get(&s.carriers, key).map_err(unavailable)? {
                    Some(bytes) => decode(&bytes).map(Some),
                    None => Ok(None),
                },
            )
        })
        .await
    }
}
