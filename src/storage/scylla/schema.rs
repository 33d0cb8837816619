//! Schema management: the files of `cql/` are the source of truth, compiled
//! into the binary and applied in order by `freight migrate`.
//!
//! Applying is idempotent: each file's SHA-256 is recorded in
//! `schema_migrations` once its statements have all run (each is `IF NOT
//! EXISTS`, so a run cut short is simply run again). A file that changed after
//! it was applied is refused: an applied file is history, and a change goes in
//! a new file. A store opens only on a keyspace where every file of its build
//! is applied, unchanged.

use anyhow::{Context, bail, ensure};
use scylla::client::session::Session;

use super::keyspace_check::{Retention, parse_cql_map};
use sha2::{Digest, Sha256};

use super::ScyllaConfig;
use super::engine::Engine;

/// The schema files, in the order they are applied.
pub const FILES: &[(&str, &str)] = &[
    ("001_core.cql", include_str!("../../../cql/001_core.cql")),
    (
        "002_tracking.cql",
        include_str!("../../../cql/002_tracking.cql"),
    ),
    (
        "003_idempotency_dashboard.cql",
        include_str!("../../../cql/003_idempotency_dashboard.cql"),
    ),
    (
        "004_webhooks.cql",
        include_str!("../../../cql/004_webhooks.cql"),
    ),
    (
        "005_role_leases.cql",
        include_str!("../../../cql/005_role_leases.cql"),
    ),
    (
        "006_password_links.cql",
        include_str!("../../../cql/006_password_links.cql"),
    ),
    (
        "007_devices.cql",
        include_str!("../../../cql/007_devices.cql"),
    ),
    (
        "008_point_sources.cql",
        include_str!("../../../cql/008_point_sources.cql"),
    ),
    (
        "009_load_stops.cql",
        include_str!("../../../cql/009_load_stops.cql"),
    ),
    (
        "010_stop_timers.cql",
        include_str!("../../../cql/010_stop_timers.cql"),
    ),
    (
        "011_share_links.cql",
        include_str!("../../../cql/011_share_links.cql"),
    ),
    (
        "012_load_references.cql",
        include_str!("../../../cql/012_load_references.cql"),
    ),
    (
        "013_idempotency_by_key.cql",
        include_str!("../../../cql/013_idempotency_by_key.cql"),
    ),
    (
        "014_list_totals.cql",
        include_str!("../../../cql/014_list_totals.cql"),
    ),
    (
        "015_instances.cql",
        include_str!("../../../cql/015_instances.cql"),
    ),
    (
        "016_delivery_totals.cql",
        include_str!("../../../cql/016_delivery_totals.cql"),
    ),
    (
        "017_carrier_holds.cql",
        include_str!("../../../cql/017_carrier_holds.cql"),
    ),
    (
        "018_point_changes.cql",
        include_str!("../../../cql/018_point_changes.cql"),
    ),
    (
        "019_device_identifiers.cql",
        include_str!("../../../cql/019_device_identifiers.cql"),
    ),
];

/// Earlier texts of schema files that a keyspace may have applied, taken as
/// applied: the file was corrected where its applied text did harm, and what
/// differs is set on such keyspaces by `migrate` itself. (file, SHA-256.)
const SUPERSEDED: &[(&str, &str)] = &[(
    // TWCS without a TTL: `gps_table_options` sets the compaction.
    "002_tracking.cql",
    "481f1b0a9ee896ecd9e52f12e47f6269e7d4e65588bf61545fad5b293b11e3fb",
)];

/// Whether `recorded` is the applied text of `file`, now or superseded.
fn is_applied_text(file: &str, text: &str, recorded: &str) -> bool {
    recorded == sha256(text) || SUPERSEDED.contains(&(file, recorded))
}

/// The bookkeeping table, created before any file is applied.
pub const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
  file        text PRIMARY KEY,
  sha256      text,
  applied_at  timestamp
)";

/// Replication of a new keyspace when `--replication` is not given: three
/// replicas in each datacenter the cluster has.
pub const DEFAULT_REPLICATION: &str =
    "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}";

/// The statements of a schema file: `;`-terminated, `--` comments dropped.
pub fn statements(file: &str) -> Vec<String> {
    let mut text = String::with_capacity(file.len());
    for line in file.lines() {
        let code = match line.find("--") {
            Some(comment) => &line[..comment],
            None => line,
        };
        text.push_str(code);
        text.push('\n');
    }
    text.split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .map(str::to_owned)
        .collect()
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A keyspace name CQL takes unquoted as it is (unquoted names are folded to
/// lower case, so only lower case is accepted), and that cannot smuggle a statement.
pub fn check_keyspace(name: &str) -> anyhow::Result<()> {
    ensure!(
        !name.is_empty()
            && name.len() <= 48
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        "keyspace name {name:?} must be 1-48 lower-case letters, digits or underscores, starting with a letter"
    );
    Ok(())
}

/// What `migrate` did: the files it applied, and what else it set or found.
#[derive(Debug, Default)]
pub struct Migrated {
    pub applied: Vec<String>,
    pub notes: Vec<String>,
}

/// Creates the keyspace if needed (with `replication`, else the default),
/// checks an existing one has the replication asked for and no tablets,
/// applies every file not yet applied, and sets the GPS tables' compaction and
/// TTL for `retention` (see `keyspace_check`; `None`: as they are, unless they
/// are time windows without a TTL).
pub async fn migrate(
    config: &ScyllaConfig,
    replication: Option<&str>,
    retention: Option<Retention>,
    recount_list_totals: bool,
) -> anyhow::Result<Migrated> {
    check_keyspace(&config.keyspace)?;
    let asked = replication.unwrap_or(DEFAULT_REPLICATION);
    let requested = parse_cql_map(asked).context("--replication")?;
    let session = config.connect(false).await?;
    let engine = Engine::detect(&session).await?;
    let mut done = Migrated::default();
    done.notes.push(format!("engine: {}", engine.name()));
    run_ddl(
        &session,
        &format!(
            "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {} \
             AND durable_writes = true{}",
            config.keyspace,
            asked.trim(),
            engine.keyspace_options()
        ),
    )
    .await?;
    check_existing_keyspace(
        &session,
        &config.keyspace,
        &requested,
        replication.is_some(),
        &mut done,
    )
    .await?;
    session
        .use_keyspace(&config.keyspace, true)
        .await
        .context("switching to the keyspace")?;
    run_ddl(&session, MIGRATIONS_TABLE).await?;
    for (name, text) in FILES {
        match applied_sha(&session, name).await? {
            Some(recorded) if is_applied_text(name, text, &recorded) => continue,
            Some(recorded) => bail!(
                "cql/{name} changed after it was applied (applied {recorded}, now {}); \
                 put the change in a new file instead",
                sha256(text)
            ),
            None => {}
        }
        for statement in statements(text) {
            run_ddl(&session, &statement)
                .await
                .with_context(|| format!("applying cql/{name}"))?;
        }
        session
            .query_unpaged(
                "INSERT INTO schema_migrations (file, sha256, applied_at) VALUES (?, ?, toTimestamp(now()))",
                (name, &sha256(text)),
            )
            .await
            .with_context(|| format!("recording cql/{name}"))?;
        done.applied.push((*name).to_owned());
    }
    set_gps_table_options(&session, &config.keyspace, retention, &mut done).await?;
    let totals_new = done.applied.iter().any(|f| f == "014_list_totals.cql");
    if totals_new || recount_list_totals {
        let moved = recount_load_totals(&session).await?;
        done.notes.push(format!(
            "load list totals: {moved} set to their lists' counts"
        ));
    }
    let delivery_totals_new = done.applied.iter().any(|f| f == "016_delivery_totals.cql");
    if delivery_totals_new || recount_list_totals {
        let moved = recount_delivery_totals(&session).await?;
        done.notes.push(format!(
            "delivery log totals: {moved} set to their logs' counts"
        ));
    }
    Ok(done)
}

/// Fails unless every schema file of this build is applied, unchanged.
pub async fn check_applied(session: &Session) -> anyhow::Result<()> {
    for (name, text) in FILES {
        match applied_sha(session, name).await {
            Ok(Some(recorded)) if is_applied_text(name, text, &recorded) => {}
            Ok(Some(_)) => bail!(
                "cql/{name} was applied as a different text; the schema and this build disagree"
            ),
            Ok(None) | Err(_) => bail!(
                "the schema is not up to date (cql/{name} is not applied): run `freight migrate`"
            ),
        }
    }
    Ok(())
}

async fn applied_sha(session: &Session, file: &str) -> anyhow::Result<Option<String>> {
    let result = session
        .query_unpaged(
            "SELECT sha256 FROM schema_migrations WHERE file = ?",
            (file,),
        )
        .await
        .context("reading schema_migrations")?;
    let rows = result.into_rows_result()?;
    Ok(rows.maybe_first_row::<(String,)>()?.map(|(sha,)| sha))
}

/// Runs a schema change and waits until every node agrees on the schema, so
/// the next statement (or an instance starting) sees it.
async fn run_ddl(session: &Session, statement: &str) -> anyhow::Result<()> {
    if let Err(error) = session.query_unpaged(statement, ()).await {
        // CQL has no `ADD IF NOT EXISTS`: a column already there means an
        // earlier run applied this statement and stopped before recording
        // the file.
        if !(adds_a_column(statement)
            && error
                .to_string()
                .contains("conflicts with an existing column"))
        {
            return Err(error).with_context(|| format!("running: {statement}"));
        }
    }
    session
        .await_schema_agreement()
        .await
        .context("waiting for schema agreement")?;
    Ok(())
}

/// `ALTER TABLE … ADD …`: the one schema change that cannot say `IF NOT EXISTS`.
fn adds_a_column(statement: &str) -> bool {
    let words: Vec<&str> = statement.split_whitespace().take(4).collect();
    matches!(words.as_slice(), ["ALTER", "TABLE", _, "ADD"])
}

mod keyspace;
mod totals;
use keyspace::{check_existing_keyspace, set_gps_table_options};
use totals::{recount_delivery_totals, recount_load_totals};

#[cfg(test)]
mod tests;
