//! Which CQL engine the backend talks to: ScyllaDB, which it is written for,
//! or Apache Cassandra, which speaks the same protocol and CQL and is what the
//! backend is tested against (`deploy/cql-test-cluster`). Learnt once at
//! connect, from ScyllaDB's own system table; every difference in what the
//! backend sends is decided here, not by editing statements elsewhere.

use scylla::client::session::Session;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Scylla,
    Cassandra,
}

impl Engine {
    /// ScyllaDB has `system_schema.scylla_keyspaces`; Cassandra has not.
    pub async fn detect(session: &Session) -> anyhow::Result<Engine> {
        use anyhow::Context as _;
        let rows = session
            .query_unpaged(
                "SELECT table_name FROM system_schema.tables \
                 WHERE keyspace_name = 'system_schema' AND table_name = 'scylla_keyspaces'",
                (),
            )
            .await
            .context("reading which CQL engine this is")?
            .into_rows_result()
            .context("reading which CQL engine this is")?;
        Ok(match rows.rows_num() {
            0 => Engine::Cassandra,
            _ => Engine::Scylla,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Scylla => "ScyllaDB",
            Engine::Cassandra => "Apache Cassandra",
        }
    }

    /// What `CREATE KEYSPACE` adds after its replication. Tablets (the
    /// default for new keyspaces since ScyllaDB 6.0) do not take lightweight
    /// transactions or counters, which leases, uniqueness claims, status
    /// changes and shared rate limits need, so a ScyllaDB keyspace is made
    /// with vnodes; Cassandra has no tablets and refuses the option.
    pub fn keyspace_options(self) -> &'static str {
        match self {
            Engine::Scylla => " AND tablets = {'enabled': false}",
            Engine::Cassandra => "",
        }
    }

    /// The most bytes of bound values one multi-partition logged batch holds,
    /// under the engine's default refusal threshold with room to spare:
    /// ScyllaDB warns past 128 KiB and refuses past 1 MiB; Cassandra refuses
    /// past 50 KiB (`batch_size_fail_threshold`), and judges a batch by its
    /// mutations' size, a little more than the values.
    pub fn max_batch_bytes(self) -> usize {
        match self {
            Engine::Scylla => 96 * 1024,
            Engine::Cassandra => 32 * 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_gets_what_it_takes() {
        assert!(Engine::Scylla.keyspace_options().contains("tablets"));
        assert_eq!(Engine::Cassandra.keyspace_options(), "");
        assert!(Engine::Cassandra.max_batch_bytes() < 50 * 1024);
        assert!(Engine::Scylla.max_batch_bytes() < 128 * 1024);
    }
}
