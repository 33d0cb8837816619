//! An existing keyspace checked against what `migrate` asks (replication, no
//! tablets), and the GPS tables' compaction and TTL set for the retention.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use scylla::client::session::Session;

use super::super::keyspace_check::{GpsTableOptions, Retention, replication_differences};
use super::{Migrated, run_ddl};

/// Refuses a keyspace with tablets, or (when `--replication` was given) with
/// another replication, saying what differs; notes the replication otherwise.
pub(super) async fn check_existing_keyspace(
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
pub(super) fn no_such_table(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    error.contains("unconfigured table") || error.contains("does not exist")
}

/// Sets `gps_points`' compaction and TTL for `retention` where they differ.
pub(super) async fn set_gps_table_options(
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

pub(super) fn time_windows_without_ttl(compaction: &BTreeMap<String, String>, ttl: u64) -> bool {
    ttl == 0
        && compaction
            .get("class")
            .is_some_and(|c| c.ends_with("TimeWindowCompactionStrategy"))
}
