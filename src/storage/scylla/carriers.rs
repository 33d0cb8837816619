//! Carriers, unique by MC number within an account (see `carriers_by_mc` in
//! `cql/001_core.cql` for how the claim and the row are written).

use async_trait::async_trait;

use super::{ScyllaStore, carrier_holds, decode, encode};
use crate::domain::carrier::Carrier;
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::storage::{
    CarrierInsert, CarrierStore, DeletingMark, Page, PageRequest, StorageError, StorageResult,
};

/// The carrier list's name in `list_totals`.
pub(super) const CARRIER_LIST: &str = "carriers";

impl ScyllaStore {
    /// Moves the account's carrier total; a failure is logged, not retried
    /// (a counter add may have applied): the total is then off by one until
    /// `freight migrate --recount-list-totals`.
    async fn count_carriers(&self, account: &str, delta: i64) {
        let values = (scylla::value::Counter(delta), account, CARRIER_LIST);
        if let Err(error) = self.exec(&self.st.add_list_total, values).await {
            tracing::warn!(%error, "the carrier list's total could not be updated; it is off by one until recounted");
        }
    }
}

#[async_trait]
impl CarrierStore for ScyllaStore {
    async fn insert_carrier(&self, carrier: &Carrier) -> StorageResult<CarrierInsert> {
        let record = encode(carrier)?;
        let account = carrier.account_id.as_str();
        let claimed = self
            .applied(
                &self.st.claim_mc_number,
                (
                    account,
                    carrier.mc_number.as_str(),
                    carrier.id.as_str(),
                    &record,
                ),
            )
            .await?;
        if claimed {
            // Not applied: a racing repair (below) wrote it from the claim, and counted it.
            let written = self
                .applied(&self.st.put_carrier, (account, carrier.id.as_str(), record))
                .await?;
            if written {
                self.count_carriers(account, 1).await;
            }
            return Ok(CarrierInsert::Inserted);
        }
        // The number is taken: by a carrier whose row exists, or whose row its
        // writer did not get to write (then written now, from the claim).
        let (holder, held_record) = self
            .first::<(Option<String>, Option<String>)>(
                &self.st.mc_number_claim,
                (account, carrier.mc_number.as_str()),
            )
            .await?
            .and_then(|(id, record)| Some((id?, record?)))
            .ok_or_else(|| StorageError::corrupt("an MC number claim without its carrier"))?;
        let holder_id = CarrierId::parse(&holder)
            .ok_or_else(|| StorageError::corrupt("bad carrier id in an MC number claim"))?;
        if self
            .get_carrier(&carrier.account_id, &holder_id)
            .await?
            .is_none()
        {
            let _: Carrier = decode(&held_record)?;
            let written = self
                .applied(
                    &self.st.put_carrier,
                    (account, holder.as_str(), held_record),
                )
                .await?;
            // Its writer had not written the row, hence not counted it; of a
            // repair and that writer (or two repairs), only one applies.
            if written {
                self.count_carriers(account, 1).await;
            }
        }
        Ok(CarrierInsert::DuplicateMcNumber(holder_id))
    }

    /// The claim carries the record too (it rewrites a lost row), so it is
    /// updated first; then the row.
    async fn update_carrier(&self, carrier: &Carrier) -> StorageResult<()> {
        let record = encode(carrier)?;
        let account = carrier.account_id.as_str();
        self.applied(
            &self.st.update_mc_number_claim,
            (
                &record,
                account,
                carrier.mc_number.as_str(),
                carrier.id.as_str(),
            ),
        )
        .await?;
        // Not applied: the carrier was deleted meanwhile, and stays deleted.
        self.applied(
            &self.st.update_carrier_row,
            (record, account, carrier.id.as_str()),
        )
        .await
        .map(|_| ())
    }

    /// The claim goes first, then the row: a claim is never left behind to
    /// write a deleted carrier back. A crash between the two leaves the row
    /// with its number free; deleting again removes it.
    async fn delete_carrier(&self, account: &AccountId, id: &CarrierId) -> StorageResult<bool> {
        let Some(carrier) = self.get_carrier(account, id).await? else {
            return Ok(false);
        };
        self.applied(
            &self.st.release_mc_number,
            (account.as_str(), carrier.mc_number.as_str(), id.as_str()),
        )
        .await?;
        // Of two racing deletions, one applies, and only it counts.
        let deleted = self
            .applied(&self.st.delete_carrier, (account.as_str(), id.as_str()))
            .await?;
        if deleted {
            self.count_carriers(account.as_str(), -1).await;
        }
        Ok(true)
    }

    async fn get_carrier(
        &self,
        account: &AccountId,
        id: &CarrierId,
    ) -> StorageResult<Option<Carrier>> {
        self.record(&self.st.get_carrier, (account.as_str(), id.as_str()))
            .await
    }

    /// Newest first (clustered by id descending); the page is the rows up to
    /// its end with the first `offset` skipped, and `total` the account's
    /// maintained total (`list_totals`).
    async fn list_carriers(
        &self,
        account: &AccountId,
        page: PageRequest,
    ) -> StorageResult<Page<Carrier>> {
        let counted = self.list_total(account.as_str(), CARRIER_LIST).await?;
        self.page(
            &self.st.list_carriers,
            |end| (account.as_str(), end),
            page,
            counted,
        )
        .await
    }

    async fn hold_carrier(
        &self,
        account: &AccountId,
        carrier: &CarrierId,
        load: &LoadId,
    ) -> StorageResult<bool> {
        carrier_holds::hold(self, account, carrier, load).await
    }

    async fn release_carrier(
        &self,
        account: &AccountId,
        carrier: &CarrierId,
        load: &LoadId,
    ) -> StorageResult<()> {
        carrier_holds::release(self, account, carrier, load).await
    }

    async fn mark_carrier_deleting(
        &self,
        account: &AccountId,
        carrier: &CarrierId,
    ) -> StorageResult<DeletingMark> {
        carrier_holds::mark(self, account, carrier, &self.deleting_token).await
    }

    async fn unmark_carrier_deleting(
        &self,
        account: &AccountId,
        carrier: &CarrierId,
    ) -> StorageResult<()> {
        carrier_holds::unmark(self, account, carrier, &self.deleting_token).await
    }
}
