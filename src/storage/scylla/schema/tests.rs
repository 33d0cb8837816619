//! The schema files against the statements the backend prepares, and the
//! rules of applying them.

use std::collections::{BTreeMap, BTreeSet};

use super::keyspace::no_such_table;
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
