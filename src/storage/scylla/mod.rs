//! The ScyllaDB backend, for deployments that outgrow one machine.
//!
//! Tables are those of `cql/` (applied by `freight migrate`, see [`schema`]);
//! every statement is prepared once when the store opens ([`statements`]), so
//! each request is one round trip routed by the driver to a replica that owns
//! its partition (token- and shard-aware: every partition key is a bound value).
//!
//! Consistency: everything a 2xx promises is written and read at LOCAL_QUORUM
//! (a majority of the local datacenter's replicas), so a read after an
//! acknowledged write sees it whichever coordinator answers; uniqueness checks
//! (MC numbers, emails, the status of a load) are lightweight transactions at
//! LOCAL_SERIAL. Records are the JSON the service serialises (one `record`
//! column), as in the embedded store, so a new field never needs a schema
//! change; the other columns are keys.
//!
//! This file connects and holds what every aggregate shares; each aggregate's
//! trait is implemented in the file named for it.

mod accounts;
mod carrier_holds;
mod carriers;
pub mod clock_skew;
mod coordination;
mod dashboard;
mod devices;
pub mod engine;
#[cfg(test)]
mod faults;
mod idempotency;
mod identifiers;
pub mod keys;
pub mod keyspace_check;
mod leases;
mod load_rows;
mod loads;
mod point_series;
mod references;
pub mod schema;
mod share_links;
mod statements;
mod tracking;
mod webhooks;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::response::query_result::QueryResult;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::secret_box::{SecretBox, SecretSealing};
use super::{Page, PageRequest, Storage, StorageError, StorageResult};
use crate::domain::ids::LoadId;
use statements::Statements;

/// Where the cluster is and how to reach it (from `--scylla-*` / `FREIGHT_SCYLLA_*`).
#[derive(Debug, Clone)]
pub struct ScyllaConfig {
    /// Contact points, `host:port`; the driver discovers the rest of the cluster.
    pub nodes: Vec<String>,
    pub keyspace: String,
    /// The datacenter whose replicas LOCAL_QUORUM counts (the driver prefers
    /// its nodes); `None`: any, which suits a single-datacenter cluster.
    pub local_dc: Option<String>,
    pub credentials: Option<(String, String)>,
}

impl ScyllaConfig {
    /// Contact points from a comma-separated list (`FREIGHT_SCYLLA_URI`, `--scylla-nodes`).
    pub fn parse_nodes(list: &str) -> Vec<String> {
        list.split(',')
            .map(str::trim)
            .filter(|node| !node.is_empty())
            .map(|node| node.strip_prefix("scylla://").unwrap_or(node).to_owned())
            .collect()
    }

    /// A session to the cluster, without a keyspace (for `migrate`) or in ours.
    pub async fn connect(&self, in_keyspace: bool) -> anyhow::Result<Session> {
        use anyhow::Context as _;
        use scylla::client::execution_profile::ExecutionProfile;
        use scylla::policies::load_balancing::DefaultPolicy;
        use scylla::statement::Consistency;

        anyhow::ensure!(
            !self.nodes.is_empty(),
            "no ScyllaDB node given (--scylla-nodes)"
        );
        let mut policy = DefaultPolicy::builder().token_aware(true);
        if let Some(dc) = &self.local_dc {
            policy = policy
                .prefer_datacenter(dc.clone())
                .permit_dc_failover(false);
        }
        let profile = ExecutionProfile::builder()
            .consistency(Consistency::LocalQuorum)
            .load_balancing_policy(policy.build())
            .build();
        // Client-side timestamps, never going back: every write this instance
        // makes is ordered by its clock, which `clock_skew` keeps an eye on.
        let timestamps = std::sync::Arc::new(
            scylla::policies::timestamp_generator::MonotonicTimestampGenerator::new(),
        );
        let mut builder = SessionBuilder::new()
            .known_nodes(&self.nodes)
            .timestamp_generator(timestamps)
            .default_execution_profile_handle(profile.into_handle());
        if let Some((user, password)) = &self.credentials {
            builder = builder.user(user, password);
        }
        if in_keyspace {
            builder = builder.use_keyspace(&self.keyspace, true);
        }
        builder
            .build()
            .await
            .with_context(|| format!("connecting to ScyllaDB at {}", self.nodes.join(",")))
    }
}

pub struct ScyllaStore {
    session: std::sync::Arc<Session>,
    /// How far this clock is from the cluster's; writes stop past the slack.
    skew: std::sync::Arc<clock_skew::SkewGuard>,
    st: Statements,
    /// The webhook pipeline's statements (declared in `webhooks.rs`).
    wh: statements::WebhookStatements,
    /// Per load, what this process knows of its stored GPS series (see
    /// `point_series`): a later fix needs no conditional insert to know it is
    /// not a duplicate, nor a day row for a day already written.
    newest_points: point_series::Remembered,
    /// How subscription secrets are kept (see `secret_box`).
    secrets: SecretSealing,
    /// Until when idempotency answers stored before cql/013 are still read.
    idempotency_before_013_until: Option<chrono::DateTime<chrono::Utc>>,
    /// ScyllaDB or Cassandra: what the backend may send (see `engine`).
    engine: engine::Engine,
    /// This process's name on the carrier deletions it marks (see
    /// `carrier_holds`); one at a time per carrier here (`carrier_locks`).
    deleting_token: String,
}

impl ScyllaStore {
    /// Connects and prepares every statement; fails if the schema is missing or
    /// older than this build (run `freight migrate` first).
    pub async fn open(config: &ScyllaConfig) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let session = config.connect(true).await?;
        let engine = engine::Engine::detect(&session).await?;
        schema::check_applied(&session).await?;
        let mut st = Statements::prepare(&session)
            .await
            .context("preparing statements (is the schema applied? run `freight migrate`)")?;
        st.get_load_serial
            .set_consistency(scylla::statement::Consistency::LocalSerial);
        let wh = statements::WebhookStatements::prepare(&session)
            .await
            .context("preparing statements (is the schema applied? run `freight migrate`)")?;
        let idempotency_before_013_until =
            idempotency::read_before_013_until(&session, &st).await?;
        let skew = std::sync::Arc::new(clock_skew::SkewGuard::default());
        clock_skew::measure(&session, &skew)
            .await
            .context("reading ScyllaDB's clock")?;
        let session = std::sync::Arc::new(session);
        clock_skew::keep_measuring(std::sync::Arc::downgrade(&session), skew.clone());
        Ok(Self {
            session,
            skew,
            st,
            wh,
            newest_points: point_series::Remembered::default(),
            secrets: SecretSealing::default(),
            idempotency_before_013_until,
            engine,
            deleting_token: format!("{:032x}", rand::random::<u128>()),
        })
    }

    /// The store, sealing webhook secrets with `secrets` from now on (and
    /// opening those it reads with it). Every instance sharing the keyspace
    /// needs the same key.
    pub fn sealing_secrets_with(mut self, secrets: std::sync::Arc<SecretBox>) -> Self {
        self.secrets = SecretSealing::with(secrets);
        self
    }

    /// Refuses writes while this clock is too far from the cluster's.
    fn check_clock(&self) -> StorageResult<()> {
        match self.skew.refusing() {
            Some(skew) => Err(StorageError::refused_before_sending(ClockSkew(skew))),
            None => Ok(()),
        }
    }

    /// One prepared statement, unpaged (writes, and reads of one row or a bounded few).
    async fn exec(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<QueryResult> {
        if clock_skew::is_write(statement.get_statement()) {
            self.check_clock()?;
        }
        self.session
            .execute_unpaged(statement, values)
            .await
            .map_err(unavailable)
    }

    /// The rows of a read, every page of them, each mapped by `row`.
    async fn rows<R, T>(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
        mut row: impl FnMut(R) -> StorageResult<T>,
    ) -> StorageResult<Vec<T>>
    where
        R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
    {
        let pager = self
            .session
            .execute_iter(statement.clone(), values)
            .await
            .map_err(unavailable)?;
        let mut stream = pager.rows_stream::<R>().map_err(unavailable)?;
        let mut out = Vec::new();
        while let Some(raw) = stream.try_next().await.map_err(unavailable)? {
            out.push(row(raw)?);
        }
        Ok(out)
    }

    /// The first row of a read, if any.
    async fn first<R>(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<Option<R>>
    where
        R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
    {
        let result = self.exec(statement, values).await?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        rows.maybe_first_row::<R>().map_err(unavailable)
    }

    /// The JSON record in the first row of a read, if any.
    async fn record<T: DeserializeOwned>(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<Option<T>> {
        match self.first::<(String,)>(statement, values).await? {
            Some((record,)) => decode(&record).map(Some),
            None => Ok(None),
        }
    }

    /// The JSON records of every row of a read.
    async fn records<T: DeserializeOwned>(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<Vec<T>> {
        self.rows(statement, values, |(record,): (String,)| decode(&record))
            .await
    }

    /// A list's maintained total (`list_totals`, cql/014); 0 before any.
    async fn list_total(&self, account: &str, list: &str) -> StorageResult<u64> {
        Ok(self
            .first::<(Option<scylla::value::Counter>,)>(&self.st.list_total, (account, list))
            .await?
            .and_then(|(n,)| n)
            .map_or(0, |n| n.0.max(0) as u64))
    }

    /// The number a `SELECT COUNT(*)` answers.
    async fn count(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<u64> {
        let (count,) = self
            .first::<(i64,)>(statement, values)
            .await?
            .ok_or_else(|| StorageError::corrupt("COUNT answered no row"))?;
        Ok(count.max(0) as u64)
    }

    /// One page of a newest-first list, and its total: the JSON records of
    /// the rows up to the page's end (`values` binds that end as the
    /// statement's LIMIT), the first `offset` skipped. Rows before the page are
    /// read and dropped, as offset paging must; the API bounds offsets.
    /// `counted` is the list's maintained total, which may be off (see
    /// `load_rows::finish`): the rows are read whatever it says, and the total
    /// answered is never less than the rows the page proves exist.
    async fn page<T: DeserializeOwned, V: SerializeRow>(
        &self,
        statement: &PreparedStatement,
        values: impl FnOnce(i32) -> V,
        page: PageRequest,
        counted: u64,
    ) -> StorageResult<Page<T>> {
        if page.limit == 0 {
            return Ok(Page {
                items: Vec::new(),
                total: counted,
            });
        }
        let end = page.offset.saturating_add(u64::from(page.limit));
        let end = i32::try_from(end).unwrap_or(i32::MAX);
        let records: Vec<T> = self.records(statement, values(end)).await?;
        let read = records.len() as u64;
        let items: Vec<T> = records
            .into_iter()
            .skip(page.offset as usize)
            .take(page.limit as usize)
            .collect();
        // A short read is the list's end: then its length is the total.
        let total = match read < end as u64 {
            true => read,
            false => counted.max(read),
        };
        Ok(Page { items, total })
    }

    /// Whether a lightweight transaction applied (its first column, `[applied]`).
    async fn applied(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<bool> {
        let result = self.exec(statement, values).await?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        let row = rows
            .first_row::<scylla::value::Row>()
            .map_err(unavailable)?;
        match row.columns.first() {
            Some(Some(scylla::value::CqlValue::Boolean(applied))) => Ok(*applied),
            _ => Err(StorageError::corrupt(
                "a conditional statement answered without [applied]",
            )),
        }
    }

    /// A lightweight transaction's answer: whether it applied, and the
    /// columns it returned (the row's values of the condition's columns when
    /// it did not; ScyllaDB may return them when it did, Cassandra does not).
    async fn lwt(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<LwtAnswer> {
        let result = self.exec(statement, values).await?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        let names: Vec<String> = rows
            .column_specs()
            .iter()
            .map(|spec| spec.name().to_owned())
            .collect();
        let row = rows
            .first_row::<scylla::value::Row>()
            .map_err(unavailable)?;
        let applied = match row.columns.first() {
            Some(Some(scylla::value::CqlValue::Boolean(applied))) => *applied,
            _ => {
                return Err(StorageError::corrupt(
                    "a conditional statement answered without [applied]",
                ));
            }
        };
        Ok(LwtAnswer {
            applied,
            columns: names.into_iter().zip(row.columns).collect(),
        })
    }

    /// A conditional write on a lease: applied, or who holds it (null when
    /// there is no row).
    async fn claim(
        &self,
        statement: &PreparedStatement,
        values: impl SerializeRow,
    ) -> StorageResult<leases::Claim> {
        let answer = self.lwt(statement, values).await?;
        Ok(match answer.applied {
            true => leases::Claim::Applied,
            false => leases::Claim::Held(answer.text("owner")),
        })
    }

    /// A logged batch of prepared statements: all of them or none.
    async fn logged(&self, batch: statements::LoggedBatch) -> StorageResult<()> {
        self.check_clock()?;
        batch.run(&self.session).await
    }

    /// Logged batches of bounded size, in order (see `BoundedBatches`).
    async fn bounded(&self, batches: statements::BoundedBatches) -> StorageResult<()> {
        self.check_clock()?;
        batches.run(&self.session).await
    }
}

#[async_trait]
impl Storage for ScyllaStore {
    /// Fails while writes are refused for clock skew: not ready.
    async fn ping(&self) -> StorageResult<()> {
        self.check_clock()?;
        self.exec(&self.st.ping, ()).await.map(|_| ())
    }
}

/// What a lightweight transaction answered (see [`ScyllaStore::lwt`]).
struct LwtAnswer {
    applied: bool,
    columns: Vec<(String, Option<scylla::value::CqlValue>)>,
}

impl LwtAnswer {
    fn value(&self, name: &str) -> Option<&scylla::value::CqlValue> {
        self.columns
            .iter()
            .find(|(column, _)| column == name)
            .and_then(|(_, value)| value.as_ref())
    }

    fn text(&self, name: &str) -> Option<String> {
        match self.value(name) {
            Some(scylla::value::CqlValue::Text(text)) => Some(text.clone()),
            _ => None,
        }
    }

    fn boolean(&self, name: &str) -> Option<bool> {
        match self.value(name) {
            Some(scylla::value::CqlValue::Boolean(b)) => Some(*b),
            _ => None,
        }
    }

    fn bigint(&self, name: &str) -> Option<i64> {
        match self.value(name) {
            Some(scylla::value::CqlValue::BigInt(n)) => Some(*n),
            _ => None,
        }
    }
}

/// Writes refused: this clock is too far from the cluster's (`clock_skew`).
#[derive(Debug, thiserror::Error)]
#[error(
    "this instance's clock is {} ms off ScyllaDB's, past the slack writes allow; fix its NTP",
    .0.num_milliseconds()
)]
struct ClockSkew(chrono::TimeDelta);

fn ttl_secs(ttl: std::time::Duration) -> i32 {
    i32::try_from(ttl.as_secs().max(1)).unwrap_or(i32::MAX)
}

/// A lease table's two conditional writes (`load_leases` or `role_leases`).
struct LeaseTable<'a> {
    store: &'a ScyllaStore,
    /// `(name, owner, ttl)`, `IF NOT EXISTS`.
    take: &'a PreparedStatement,
    /// `(ttl, owner, name, holder)`, `IF owner = holder`.
    update: &'a PreparedStatement,
}

#[async_trait]
impl leases::LeaseStatements for LeaseTable<'_> {
    async fn take(&self, name: &str, owner: &str, ttl: i32) -> StorageResult<leases::Claim> {
        self.store.claim(self.take, (name, owner, ttl)).await
    }

    async fn update(
        &self,
        name: &str,
        holder: &str,
        owner: &str,
        ttl: i32,
    ) -> StorageResult<leases::Claim> {
        self.store
            .claim(self.update, (ttl, owner, name, holder))
            .await
    }
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::unavailable(error)
}

fn encode<T: Serialize>(value: &T) -> StorageResult<String> {
    serde_json::to_string(value).map_err(|e| StorageError::undecodable("unencodable record", e))
}

fn decode<T: DeserializeOwned>(record: &str) -> StorageResult<T> {
    serde_json::from_str(record).map_err(|e| StorageError::undecodable("unreadable record", e))
}
