//! Schema management: the files of `cql/` are the source of truth, compiled
//! into the binary and applied in order by `freight migrate`.
//!
//! Applying is idempotent: each file's SHA-256 is recorded in
//! `schema_migrations` once its statements have all run (each is `IF NOT
//! EXISTS`, so a run cut short is simply run again). A file that changed after
//! it was applied is refused: an applied file is history, and a change goes in
//! a new file. A store opens only on a keyspace where every file of its build
//! is applied, unchanged.

use std::collections::BTreeMap;

use anyhow::{Context, bail, ensure};
use scylla::client::session::Session;

use super::carriers::CARRIER_LIST;
use super::keyspace_check::{GpsTableOptions, Retention, parse_cql_map, replication_differences};
use super::load_rows::LOAD_LISTS;
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

/// Every row a query answers, read a page at a time (`what` names them in an
/// error).
async fn all_rows<R>(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
    what: &str,
) -> anyhow::Result<Vec<R>>
where
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm> + 'static,
{
    use futures_util::TryStreamExt;
    let rows = session
        .query_iter(cql, values)
        .await
        .with_context(|| format!("reading {what}"))?
        .rows_stream::<R>()?;
    Ok(rows.try_collect().await?)
}

/// How many rows a query answers, counted a page at a time: a `COUNT(*)` of
/// a long partition in one request is what the maintained totals replace,
/// and it times out.
async fn count_rows(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
    what: &str,
) -> anyhow::Result<i64> {
    use futures_util::TryStreamExt;
    let mut rows = session
        .query_iter(cql, values)
        .await
        .with_context(|| format!("reading {what}"))?
        .rows_stream::<(String,)>()?;
    let mut count = 0;
    while rows.try_next().await?.is_some() {
        count += 1;
    }
    Ok(count)
}

/// Sets every subscription's delivery total (`delivery_totals`) to its log's
/// record count by adding the difference, as `recount_load_totals` does for
/// lists: idempotent, so it fills the totals in when cql/016 is applied and
/// repairs them later. Totals of deleted subscriptions are left alone (they
/// are never read). The number of totals it changed.
async fn recount_delivery_totals(session: &Session) -> anyhow::Result<u64> {
    let kept: Vec<(String, Option<scylla::value::Counter>)> = all_rows(
        session,
        "SELECT webhook_id, n FROM delivery_totals",
        (),
        "delivery_totals",
    )
    .await?;
    let current: BTreeMap<String, i64> = kept
        .into_iter()
        .map(|(webhook, n)| (webhook, n.map_or(0, |n| n.0)))
        .collect();
    let webhooks: Vec<(String,)> = all_rows(
        session,
        "SELECT webhook_id FROM webhooks",
        (),
        "the subscriptions",
    )
    .await?;
    let mut changed = 0;
    for (webhook,) in webhooks {
        let hours: Vec<(i64,)> = all_rows(
            session,
            "SELECT hour FROM delivery_hours WHERE webhook_id = ?",
            (webhook.as_str(),),
            &format!("{webhook}'s delivery hours"),
        )
        .await?;
        let mut count = 0;
        for (hour,) in hours {
            count += count_rows(
                session,
                "SELECT event_id FROM deliveries WHERE webhook_id = ? AND hour = ?",
                (webhook.as_str(), hour),
                &format!("{webhook}'s deliveries"),
            )
            .await?;
        }
        let delta = count - current.get(&webhook).copied().unwrap_or(0);
        if delta != 0 {
            session
                .query_unpaged(
                    "UPDATE delivery_totals SET n = n + ? WHERE webhook_id = ?",
                    (scylla::value::Counter(delta), webhook.as_str()),
                )
                .await
                .with_context(|| format!("setting {webhook}'s delivery total"))?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Sets every list's total (`list_totals`: load lists, carrier lists) to its
/// list's row count, by
/// adding the difference: run again, it changes nothing (idempotent), so it
/// fills the totals in when cql/014 is applied and repairs them later. The
/// number of totals it changed.
async fn recount_load_totals(session: &Session) -> anyhow::Result<u64> {
    use futures_util::TryStreamExt;
    let mut lists: BTreeMap<(String, String), i64> = BTreeMap::new();
    // The totals kept, zero or not (a list emptied since still has one)...
    let mut kept = session
        .query_iter("SELECT account_id, list, n FROM list_totals", ())
        .await
        .context("reading list_totals")?
        .rows_stream::<(String, String, Option<scylla::value::Counter>)>()?;
    let mut current: BTreeMap<(String, String), i64> = BTreeMap::new();
    while let Some((account, list, n)) = kept.try_next().await? {
        current.insert((account.clone(), list.clone()), n.map_or(0, |n| n.0));
        lists.entry((account, list)).or_default();
    }
    // ...and every list that has rows.
    let mut partitions = session
        .query_iter(
            "SELECT DISTINCT account_id, filter FROM loads_by_account",
            (),
        )
        .await
        .context("reading the load lists")?
        .rows_stream::<(String, String)>()?;
    while let Some((account, filter)) = partitions.try_next().await? {
        lists
            .entry((account, format!("{LOAD_LISTS}{filter}")))
            .or_default();
    }
    let mut accounts = session
        .query_iter("SELECT DISTINCT account_id FROM carriers", ())
        .await
        .context("reading the carrier lists")?
        .rows_stream::<(String,)>()?;
    while let Some((account,)) = accounts.try_next().await? {
        lists.entry((account, CARRIER_LIST.to_owned())).or_default();
    }
    let mut changed = 0;
    for ((account, list), _) in lists {
        let what = format!("{account}'s list {list}");
        let count = match list.strip_prefix(LOAD_LISTS) {
            Some(filter) => {
                count_rows(
                    session,
                    "SELECT load_id FROM loads_by_account WHERE account_id = ? AND filter = ?",
                    (account.as_str(), filter),
                    &what,
                )
                .await?
            }
            None if list == CARRIER_LIST => {
                count_rows(
                    session,
                    "SELECT carrier_id FROM carriers WHERE account_id = ?",
                    (account.as_str(),),
                    &what,
                )
                .await?
            }
            None => continue,
        };
        let delta = count
            - current
                .get(&(account.clone(), list.clone()))
                .copied()
                .unwrap_or(0);
        if delta != 0 {
            session
                .query_unpaged(
                    "UPDATE list_totals SET n = n + ? WHERE account_id = ? AND list = ?",
                    (scylla::value::Counter(delta), &account, &list),
                )
                .await
                .with_context(|| format!("setting {account}'s total of {list}"))?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Refuses a keyspace with tablets, or (when `--replication` was given) with
/// another replication, saying what differs; notes the replication otherwise.
async fn check_existing_keyspace(
    session: &Session,
    keyspace: &str,
    requested: &BTreeMap<String, String>,
    replication_given: bool,
    done: &mut Migrated,
) -> anyhow::Result<()> {
    let rows = session
        .query_unpaged(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await
        .context("reading the keyspace's replication")?
        .into_rows_result()?;
    let existing: BTreeMap<String, String> = rows
        .maybe_first_row::<(BTreeMap<String, String>,)>()?
        .map(|(map,)| map)
        .unwrap_or_default();
    let differences = replication_differences(requested, &existing);
    if !differences.is_empty() {
        let existing_text = format!("{existing:?}");
        if replication_given {
            bail!(
                "keyspace {keyspace} exists with replication {existing_text}, which is not what \
                 --replication asks: {}. Change it with ALTER KEYSPACE {keyspace} WITH replication = … \
                 (then run a repair), or pass the map it has",
                differences.join("; ")
            );
        }
        done.notes.push(format!(
            "keyspace {keyspace} keeps its replication {existing_text} ({})",
            differences.join("; ")
        ));
    }
    // `system_schema.scylla_keyspaces` is ScyllaDB's (5.4 on); a cluster
    // without it has no tablets. Any other error stops migrate: a keyspace
    // with tablets must not pass for want of a readable answer.
    let answer = session
        .query_unpaged(
            "SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await;
    let tablets = match answer {
        Ok(result) => result
            .into_rows_result()?
            .maybe_first_row::<(Option<i32>,)>()
            .context("reading the keyspace's tablets")?
            .and_then(|(tablets,)| tablets),
        Err(error) if no_such_table(&error.to_string()) => None,
        Err(error) => return Err(error).context("reading whether the keyspace uses tablets"),
    };
    if tablets.is_some() {
        bail!(
            "keyspace {keyspace} uses tablets, which do not take the lightweight transactions \
             and counters freight needs; create it anew with tablets = {{'enabled': false}} \
             (freight migrate does, for a keyspace that does not exist)"
        );
    }
    Ok(())
}

/// Whether a query failed because its table does not exist (ScyllaDB and
/// Cassandra say "unconfigured table").
fn no_such_table(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    error.contains("unconfigured table") || error.contains("does not exist")
}

/// Sets `gps_points`' compaction and TTL for `retention` where they differ.
async fn set_gps_table_options(
    session: &Session,
    keyspace: &str,
    retention: Option<Retention>,
    done: &mut Migrated,
) -> anyhow::Result<()> {
    let rows = session
        .query_unpaged(
            "SELECT compaction, default_time_to_live FROM system_schema.tables \
             WHERE keyspace_name = ? AND table_name = 'gps_points'",
            (keyspace,),
        )
        .await
        .context("reading gps_points' options")?
        .into_rows_result()?;
    let (compaction, ttl) = rows
        .maybe_first_row::<(BTreeMap<String, String>, i32)>()?
        .unwrap_or_default();
    let ttl = u64::try_from(ttl).unwrap_or(0);
    let wanted = match retention {
        Some(retention) => GpsTableOptions::for_retention(retention),
        // Not asked: left as it is, unless it is the time windows without a
        // TTL that cql/002 first made.
        None if time_windows_without_ttl(&compaction, ttl) => GpsTableOptions::for_retention(None),
        None => return Ok(()),
    };
    if wanted.matches(&compaction, ttl) {
        return Ok(());
    }
    for statement in wanted.alter_statements() {
        run_ddl(session, &statement).await?;
    }
    done.notes.push(match wanted.default_ttl {
        0 => "gps_points: kept forever, size-tiered compaction".to_owned(),
        ttl => format!(
            "gps_points: kept {} days, time windows of {} day(s) (rows written before keep their TTL)",
            ttl / 86_400,
            wanted.compaction["compaction_window_size"]
        ),
    });
    Ok(())
}

fn time_windows_without_ttl(compaction: &BTreeMap<String, String>, ttl: u64) -> bool {
    ttl == 0
        && compaction
            .get("class")
            .is_some_and(|c| c.ends_with("TimeWindowCompactionStrategy"))
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::storage::scylla::statements::ALL;
    use crate::storage::scylla::statements::WEBHOOK_STATEMENTS;

    /// Lower-case identifiers of a CQL text (the statements write keywords in
    /// upper case and names in lower case).
    fn names(text: &str) -> Vec<&str> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with(|c: char| c.is_ascii_lowercase()))
            .filter(|word| word.chars().all(|c| !c.is_ascii_uppercase()))
            .collect()
    }

    /// Table → columns, from every `CREATE TABLE` of the schema files.
    fn tables() -> BTreeMap<String, BTreeSet<String>> {
        let mut tables = BTreeMap::new();
        let all = std::iter::once(MIGRATIONS_TABLE.to_owned())
            .chain(FILES.iter().flat_map(|(_, text)| statements(text)));
        for statement in all {
            if adds_a_column(&statement) {
                let words: Vec<&str> = statement.split_whitespace().collect();
                let columns: &mut BTreeSet<String> = tables
                    .get_mut(words[2])
                    .unwrap_or_else(|| panic!("{statement} alters a table not created before"));
                columns.insert(words[4].to_owned());
                continue;
            }
            let Some(rest) = statement.strip_prefix("CREATE TABLE IF NOT EXISTS ") else {
                continue;
            };
            let (name, body) = rest.split_once('(').expect("a table has columns");
            let body = body.split(") WITH").next().unwrap();
            let mut columns = BTreeSet::new();
            for line in body.split(',') {
                let line = line.trim();
                if line.starts_with("PRIMARY KEY") || line.starts_with('(') {
                    continue;
                }
                if let Some(column) = line.split_whitespace().next()
                    && column.starts_with(|c: char| c.is_ascii_lowercase())
                {
                    columns.insert(column.to_owned());
                }
            }
            tables.insert(name.trim().to_owned(), columns);
        }
        tables
    }

    #[test]
    fn statements_split_on_semicolons_and_drop_comments() {
        let file = "-- a; comment\nCREATE TABLE a (x int PRIMARY KEY); -- trailing; note\n\nCREATE TABLE b (y int PRIMARY KEY);\n";
        assert_eq!(
            statements(file),
            [
                "CREATE TABLE a (x int PRIMARY KEY)",
                "CREATE TABLE b (y int PRIMARY KEY)"
            ]
        );
    }

    #[test]
    fn the_schema_defines_the_tables_the_backend_uses() {
        let tables = tables();
        assert!(tables["gps_points"].contains("heading"), "{tables:?}");
        assert!(tables["gps_points"].contains("source"), "{tables:?}");
        assert!(tables["loads_by_account"].contains("filter"), "{tables:?}");
        assert!(tables["schema_migrations"].contains("sha256"), "{tables:?}");
    }

    #[test]
    fn every_statement_names_only_tables_and_columns_the_schema_defines() {
        let tables = tables();
        for (name, cql) in ALL.iter().chain(WEBHOOK_STATEMENTS) {
            assert!(!cql.contains("ALLOW FILTERING"), "{name} filters: {cql}");
            let words: Vec<&str> = cql.split_whitespace().collect();
            let table = words
                .windows(2)
                .find(|pair| matches!(pair[0], "FROM" | "INTO" | "UPDATE"))
                .map(|pair| pair[1])
                .unwrap_or_else(|| panic!("{name} names no table: {cql}"));
            let columns = tables
                .get(table)
                .unwrap_or_else(|| panic!("{name} uses table {table}, which cql/ does not define"));
            for word in names(cql) {
                if word == table || matches!(word, "now" | "totimestamp" | "writetime") {
                    continue;
                }
                assert!(
                    columns.contains(word),
                    "{name} uses column {table}.{word}, which cql/ does not define: {cql}"
                );
            }
        }
    }

    /// Table → (partition key columns, clustering columns), from every
    /// `CREATE TABLE` of the schema files.
    fn primary_keys() -> BTreeMap<String, (Vec<String>, Vec<String>)> {
        let list = |text: &str| -> Vec<String> {
            text.split(',')
                .map(|c| c.trim().trim_matches(|c| c == '(' || c == ')').to_owned())
                .filter(|c| !c.is_empty())
                .collect()
        };
        let mut keys = BTreeMap::new();
        let all = std::iter::once(MIGRATIONS_TABLE.to_owned())
            .chain(FILES.iter().flat_map(|(_, text)| statements(text)));
        for statement in all {
            let Some(rest) = statement.strip_prefix("CREATE TABLE IF NOT EXISTS ") else {
                continue;
            };
            let (name, body) = rest.split_once('(').expect("a table has columns");
            let body = body.split(") WITH").next().unwrap();
            let key = if let Some((_, key)) = body.split_once("PRIMARY KEY (") {
                // `((a, b), c)` or `(a, c)`: up to the parenthesis closing it.
                let mut depth = 1;
                let end = key
                    .char_indices()
                    .find(|(_, c)| {
                        depth += match c {
                            '(' => 1,
                            ')' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(key.len(), |(i, _)| i);
                let key = &key[..end];
                match key.strip_prefix('(') {
                    Some(rest) => {
                        let (partition, clustering) = rest.split_once(')').unwrap();
                        (list(partition), list(clustering))
                    }
                    None => {
                        let mut columns = list(key);
                        let partition = vec![columns.remove(0)];
                        (partition, columns)
                    }
                }
            } else {
                // `id text PRIMARY KEY`
                let column = body
                    .split(',')
                    .find(|line| line.contains("PRIMARY KEY"))
                    .and_then(|line| line.split_whitespace().next())
                    .expect("a table has a primary key");
                (vec![column.to_owned()], Vec::new())
            };
            keys.insert(name.trim().to_owned(), key);
        }
        keys
    }

    /// The columns a statement's WHERE clause restricts with `=` or `IN`.
    fn restricted(cql: &str) -> Vec<String> {
        let Some((_, clause)) = cql.split_once(" WHERE ") else {
            return Vec::new();
        };
        let clause = [" IF ", " LIMIT ", " ORDER BY "]
            .iter()
            .fold(clause, |c, end| c.split(end).next().unwrap());
        clause
            .split(" AND ")
            .filter_map(|part| {
                let words: Vec<&str> = part.split_whitespace().collect();
                match words.as_slice() {
                    [column, "=" | "IN", ..] => Some((*column).to_owned()),
                    _ => None,
                }
            })
            .collect()
    }

    /// Reads that scan a whole table on purpose, paged: the periodic purges of
    /// tables kept small by TTL (idempotency answers, stop timers, sessions),
    /// the start-up loads of what every instance keeps in memory (accounts,
    /// devices, webhook subscriptions and, for sealing secrets, when they were
    /// written: one row per customer or device, not per
    /// load or fix), the instance registry (one row per running instance),
    /// and the health probe.
    const WHOLE_TABLE_SCANS: &[&str] = &[
        "all_instances",
        "all_idempotent",
        "all_stop_timers",
        "all_sessions",
        "all_accounts",
        "all_devices",
        "all_webhooks",
        "all_webhooks_written",
        "ping",
    ];

    #[test]
    fn every_statement_restricts_the_keys_its_table_needs() {
        let keys = primary_keys();
        assert_eq!(
            keys["idempotency_by_key"].0,
            ["account_id", "key"],
            "one partition per (account, key)"
        );
        assert_eq!(keys["loads"].0, ["load_id"]);
        for (name, cql) in ALL.iter().chain(WEBHOOK_STATEMENTS) {
            let words: Vec<&str> = cql.split_whitespace().collect();
            let table = words
                .windows(2)
                .find(|pair| matches!(pair[0], "FROM" | "INTO" | "UPDATE"))
                .map(|pair| pair[1])
                .unwrap();
            if table == "schema_migrations" && !cql.contains(" WHERE ") {
                continue;
            }
            let (partition, clustering) = &keys[table];
            if cql.starts_with("INSERT") {
                let listed = cql.split_once('(').unwrap().1.split(')').next().unwrap();
                let listed: Vec<&str> = listed.split(',').map(str::trim).collect();
                for column in partition.iter().chain(clustering) {
                    assert!(
                        listed.contains(&column.as_str()),
                        "{name} inserts no {column}: {cql}"
                    );
                }
                continue;
            }
            let restricted = restricted(cql);
            if cql.starts_with("SELECT") && restricted.is_empty() {
                assert!(
                    WHOLE_TABLE_SCANS.contains(name),
                    "{name} scans {table}: {cql}"
                );
                continue;
            }
            for column in partition {
                assert!(
                    restricted.contains(column),
                    "{name} does not restrict the partition key {table}.{column}: {cql}"
                );
            }
            if cql.starts_with("UPDATE") {
                for column in clustering {
                    assert!(
                        restricted.contains(column),
                        "{name} updates without {column}: {cql}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_superseded_text_counts_as_applied_for_its_own_file_only() {
        let (_, tracking) = FILES
            .iter()
            .find(|(f, _)| *f == "002_tracking.cql")
            .unwrap();
        let first_text = SUPERSEDED[0].1;
        assert!(is_applied_text("002_tracking.cql", tracking, first_text));
        assert!(is_applied_text(
            "002_tracking.cql",
            tracking,
            &sha256(tracking)
        ));
        assert!(!is_applied_text("001_core.cql", tracking, first_text));
        assert!(!is_applied_text(
            "002_tracking.cql",
            tracking,
            &sha256("other")
        ));
        // The file as it is now makes no time windows without a TTL.
        assert!(!tracking.contains("'TimeWindowCompactionStrategy'"));
    }

    #[test]
    fn only_a_missing_table_means_no_tablets() {
        assert!(no_such_table(
            "Database returned an error: Invalid request: unconfigured table scylla_keyspaces"
        ));
        assert!(!no_such_table("Timeout: operation timed out"));
        assert!(!no_such_table("Unauthorized: no SELECT permission"));
    }

    #[test]
    fn only_a_column_addition_may_find_its_work_already_done() {
        assert!(adds_a_column("ALTER TABLE gps_points ADD source text"));
        assert!(!adds_a_column("ALTER TABLE gps_points DROP source"));
        assert!(!adds_a_column(
            "CREATE TABLE IF NOT EXISTS a (x int PRIMARY KEY)"
        ));
        assert!(!adds_a_column(
            "ALTER KEYSPACE k WITH durable_writes = true"
        ));
    }

    #[test]
    fn keyspace_names_cannot_carry_cql() {
        assert!(check_keyspace("freight_test_1").is_ok());
        for bad in [
            "",
            "1abc",
            "a b",
            "Freight",
            "freight; DROP TABLE x",
            "x\"y",
            &"a".repeat(49),
        ] {
            assert!(check_keyspace(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_hashes_are_stable_hex() {
        let sha = sha256("CREATE TABLE a (x int PRIMARY KEY)");
        assert_eq!(sha.len(), 64);
        assert_eq!(sha, sha256("CREATE TABLE a (x int PRIMARY KEY)"));
        assert_ne!(sha, sha256("CREATE TABLE a (x bigint PRIMARY KEY)"));
    }
}
