//! A keyspace of its own for one test on the CQL cluster named by
//! `FREIGHT_SCYLLA_URI` (`host:9042[,host:9042...]`), migrated from `cql/`
//! and dropped when the test ends. Shared by the storage suite and the API
//! suite on the CQL backend (included with `#[path]`).

use freight::storage::scylla::{self, ScyllaConfig};

/// A keyspace made for one test, dropped when the test ends.
pub struct ScratchKeyspace(pub ScyllaConfig);

impl Drop for ScratchKeyspace {
    fn drop(&mut self) {
        let config = self.0.clone();
        // Drop runs outside any runtime the test still drives: a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let session = config.connect(false).await?;
                let statement = format!("DROP KEYSPACE IF EXISTS {}", config.keyspace);
                session.query_unpaged(statement, ()).await?;
                anyhow::Ok(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!(
                "could not drop test keyspace {}; drop it by hand",
                self.0.keyspace
            );
        }
    }
}

/// Why there is no cluster to test on: `None` when `FREIGHT_SCYLLA_URI` is
/// set. Under `CI=true` a missing cluster fails the test (`what` says which
/// tests needed it) rather than letting it skip.
pub fn missing_cluster(what: &str) -> Option<String> {
    if std::env::var("FREIGHT_SCYLLA_URI").is_ok() {
        return None;
    }
    let why = "FREIGHT_SCYLLA_URI is not set; start a CQL cluster \
               (deploy/cql-test-cluster/cluster.sh start) and set it to what that prints";
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI must run {what} on a CQL cluster, but {why}"
    );
    Some(why.to_owned())
}

/// The cluster and a fresh keyspace's name on it; `None`, having said why,
/// without a cluster (see [`missing_cluster`]).
pub fn cql_cluster(what: &str) -> Option<ScyllaConfig> {
    if let Some(why) = missing_cluster(what) {
        eprintln!("skipped: {why}");
        return None;
    }
    let uri = std::env::var("FREIGHT_SCYLLA_URI").unwrap();
    Some(ScyllaConfig {
        nodes: ScyllaConfig::parse_nodes(&uri),
        keyspace: format!("freight_test_{}", uuid_like()),
        local_dc: None,
        credentials: None,
    })
}

/// Replication is one replica unless `FREIGHT_SCYLLA_REPLICATION` says
/// otherwise (three on a three-node cluster, so that LOCAL_QUORUM means a majority).
pub fn test_replication() -> String {
    std::env::var("FREIGHT_SCYLLA_REPLICATION").unwrap_or_else(|_| {
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}".to_owned()
    })
}

/// A fresh keyspace migrated as `freight migrate` would, with a GPS
/// retention so that the time-window options are set as a cluster with one
/// would have them; `None` without a cluster.
pub async fn migrated(what: &str) -> Option<ScratchKeyspace> {
    let config = cql_cluster(what)?;
    scylla::schema::migrate(&config, Some(&test_replication()), Some(Some(30)), false)
        .await
        .expect("migrating a fresh keyspace");
    Some(ScratchKeyspace(config))
}

/// 16 random hex digits, for a keyspace name.
fn uuid_like() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    format!("{:016x}", hasher.finish())
}
