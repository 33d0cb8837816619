//! Coordination between the instances sharing the keyspace: load and role
//! leases, the instance registry, idempotency-key claims and request counts.

use super::*;

#[async_trait]
impl crate::storage::Coordination for ScyllaStore {
    fn needs_leases(&self) -> bool {
        true
    }

    /// Renewed `IF owner = <owner>`, else taken (see `leases`); either sets
    /// the TTL again, so a lease lives `ttl` past its last renewal.
    async fn lease_load(
        &self,
        load: &LoadId,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        let table = LeaseTable {
            store: self,
            take: &self.st.take_lease,
            update: &self.st.renew_lease,
        };
        let lease = leases::lease(&table, load.as_str(), owner, ttl_secs(ttl)).await?;
        if lease == leases::Lease::Taken {
            // Whoever held the load before may have stored points since this
            // process last did: what it remembers of the load is stale.
            self.newest_points
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(load);
        }
        Ok(lease.held())
    }

    async fn add_request_counts(
        &self,
        account: &crate::domain::ids::AccountId,
        counts: &[(i64, u32)],
    ) -> StorageResult<()> {
        for &(minute, count) in counts {
            let values = (
                scylla::value::Counter(i64::from(count)),
                account.as_str(),
                minute.div_euclid(60),
                minute,
            );
            self.exec(&self.st.add_request_count, values).await?;
        }
        Ok(())
    }

    /// The two account-hour partitions a rolling hour from `since` spans.
    async fn request_counts(
        &self,
        account: &crate::domain::ids::AccountId,
        since: i64,
    ) -> StorageResult<Vec<(i64, u64)>> {
        let mut out = Vec::new();
        let first_hour = since.div_euclid(60);
        for hour in first_hour..=first_hour + 1 {
            let rows = self
                .rows(
                    &self.st.request_counts,
                    (account.as_str(), hour, since),
                    |(minute, requests): (i64, Option<scylla::value::Counter>)| {
                        Ok((minute, requests.map_or(0, |c| c.0.max(0) as u64)))
                    },
                )
                .await?;
            out.extend(rows);
        }
        Ok(out)
    }

    async fn release_load(&self, load: &LoadId, owner: &str) -> StorageResult<()> {
        self.applied(&self.st.release_lease, (load.as_str(), owner))
            .await
            .map(|_| ())
    }

    async fn load_lease_holder(&self, load: &LoadId) -> StorageResult<Option<String>> {
        let owners = self
            .rows(
                &self.st.lease_holder,
                (load.as_str(),),
                |(owner,): (Option<String>,)| Ok(owner),
            )
            .await?;
        Ok(owners.into_iter().flatten().next())
    }

    async fn register_instance(
        &self,
        instance: &str,
        address: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<()> {
        self.exec(
            &self.st.register_instance,
            (instance, address, ttl_secs(ttl)),
        )
        .await
        .map(|_| ())
    }

    /// The whole (small) table: one row per live instance.
    async fn instances(&self) -> StorageResult<Vec<(String, String)>> {
        self.rows(
            &self.st.all_instances,
            (),
            |(instance, address): (String, Option<String>)| {
                Ok((instance, address.unwrap_or_default()))
            },
        )
        .await
        .map(|rows| rows.into_iter().filter(|(_, a)| !a.is_empty()).collect())
    }

    /// As [`Self::lease_load`].
    async fn lease_role(
        &self,
        role: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        let table = LeaseTable {
            store: self,
            take: &self.st.take_role_lease,
            update: &self.st.renew_role_lease,
        };
        let lease = leases::lease(&table, role, owner, ttl_secs(ttl)).await?;
        Ok(lease.held())
    }

    async fn release_role(&self, role: &str, owner: &str) -> StorageResult<()> {
        self.applied(&self.st.release_role_lease, (role, owner))
            .await
            .map(|_| ())
    }
}
