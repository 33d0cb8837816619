//! `freight migrate`: applies the ScyllaDB schema (see `storage::scylla::schema`).

use super::MigrateArgs;
use crate::storage::scylla::schema;

pub async fn run(args: MigrateArgs) -> anyhow::Result<()> {
    let config = args.scylla.config()?;
    let applied = schema::migrate(&config, &args.replication).await?;
    if applied.is_empty() {
        println!("keyspace {}: the schema is up to date", config.keyspace);
    } else {
        for file in &applied {
            println!("keyspace {}: applied cql/{file}", config.keyspace);
        }
    }
    Ok(())
}
