//! Which store `spawn_app` starts each server over. The suite's modules are
//! compiled into two binaries: `tests/api` over the embedded store in the
//! test's temporary directory, and `tests/api_cql` over a fresh keyspace on
//! the CQL cluster named by `FREIGHT_SCYLLA_URI`, each server joined to it as
//! `freight serve --storage scylla` joins (its own internal listener and the
//! cluster secret). One test body; the binary's `BACKEND` chooses.

use std::io::Write as _;
use std::sync::Arc;

use freight::server::cluster::ClusterSettings;
use freight::server::cluster::signing::ClusterSecret;
use freight::server::settings::Settings;

use crate::cql_keyspace::{self, ScratchKeyspace};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Cql,
}

/// The store behind one test's server, kept across its restarts.
#[derive(Clone)]
pub enum TestStore {
    Embedded,
    Cql(Arc<ScratchKeyspace>),
}

impl TestStore {
    /// A store for a new test on `crate::BACKEND`. Without a CQL cluster
    /// (outside CI, where that fails instead) the CQL binary has nothing to
    /// run: it says so and ends, passing, at its first test.
    pub async fn new() -> TestStore {
        match crate::BACKEND {
            Backend::Embedded => TestStore::Embedded,
            Backend::Cql => match cql_keyspace::migrated(SUITE).await {
                Some(keyspace) => TestStore::Cql(Arc::new(keyspace)),
                None => {
                    // Past libtest's capture, which a process exit never prints.
                    let _ = writeln!(
                        std::io::stderr(),
                        "skipped: the API suite on the CQL backend ({})",
                        cql_keyspace::missing_cluster(SUITE).unwrap_or_default()
                    );
                    std::process::exit(0);
                }
            },
        }
    }

    /// Points `settings` at this store.
    pub fn apply(&self, settings: &mut Settings) {
        let TestStore::Cql(keyspace) = self else {
            return;
        };
        settings.scylla = Some(keyspace.0.clone());
        let internal = std::net::SocketAddr::from(([127, 0, 0, 1], port_below_ephemeral()));
        settings.cluster = Some(ClusterSettings {
            internal_listen: internal,
            internal_address: internal.to_string(),
            secret: ClusterSecret::parse("the-api-suite's-cluster-secret-of-32+-bytes").unwrap(),
        });
    }
}

/// A free loopback port below Linux's ephemeral range (32768 and up): a
/// port the kernel handed out and took back, as `free_port` finds one, can
/// go to the next outgoing connection (a client's, the CQL driver's) before
/// the server binds it, which happens with the many connections of this
/// suite; the ports below are only ever taken by a listener asking for one.
fn port_below_ephemeral() -> u16 {
    loop {
        let port = 20_000 + (rand::random::<u16>() % 12_000);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

const SUITE: &str = "the API suite on the CQL backend";
