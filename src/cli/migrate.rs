//! `freight migrate`: applies the ScyllaDB schema (see `storage::scylla::schema`).

use super::MigrateArgs;
use crate::storage::scylla::schema;

pub async fn run(args: MigrateArgs) -> anyhow::Result<()> {
    let config = args.scylla.config()?;
    let retention = args
        .gps_retention_days
        .map(|days| (days > 0).then_some(days));
    let done = schema::migrate(
        &config,
        args.replication.as_deref(),
        retention,
        args.recount_list_totals,
    )
    .await?;
    if done.applied.is_empty() {
        println!("keyspace {}: the schema is up to date", config.keyspace);
    }
    for file in &done.applied {
        println!("keyspace {}: applied cql/{file}", config.keyspace);
    }
    for note in &done.notes {
        println!("keyspace {}: {note}", config.keyspace);
    }
    Ok(())
}
