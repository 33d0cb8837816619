//! What `freight migrate` checks and sets beyond the schema files: that an
//! existing keyspace has the replication asked for and no tablets (issue 38,
//! finding 14), and the GPS tables' compaction and TTL for the retention the
//! operator chose (finding 12). Pure functions over the maps the cluster's
//! `system_schema` holds, so they are tested without a cluster.

use std::collections::BTreeMap;

use anyhow::{bail, ensure};

/// Days of GPS history kept, per `--gps-retention-days`; `None`: forever.
pub type Retention = Option<u32>;

/// Time windows a time-window-compacted table may have: ScyllaDB refuses (or
/// warns about, per `twcs_max_window_count`) more than 50.
const MAX_WINDOWS: u32 = 50;

/// A CQL map literal (`{'class': 'NetworkTopologyStrategy', 'dc1': 3}`) as
/// text keys and values, quotes removed.
pub fn parse_cql_map(text: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let text = text.trim();
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .filter(|_| !text.contains(';'));
    let Some(inner) = inner else {
        bail!(
            "{text:?} is not a CQL map such as {{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}}"
        );
    };
    let unquote = |s: &str| s.trim().trim_matches('\'').trim_matches('"').to_owned();
    let mut map = BTreeMap::new();
    for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((key, value)) = pair.split_once(':') else {
            bail!("{pair:?} in {text:?} is not 'key': value");
        };
        map.insert(unquote(key), unquote(value));
    }
    ensure!(map.contains_key("class"), "{text:?} names no 'class'");
    Ok(map)
}

/// `org.apache.cassandra.locator.NetworkTopologyStrategy` → `NetworkTopologyStrategy`.
fn short_class(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

/// How the keyspace's replication (`existing`, as `system_schema.keyspaces`
/// holds it) differs from `requested`; empty when they agree. A requested
/// `replication_factor` under NetworkTopologyStrategy stands for every
/// datacenter the keyspace replicates to.
pub fn replication_differences(
    requested: &BTreeMap<String, String>,
    existing: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut differences = Vec::new();
    let (want, have) = (
        short_class(&requested["class"]),
        existing.get("class").map_or("", |c| short_class(c)),
    );
    if want != have {
        differences.push(format!("class is {have}, not {want}"));
        return differences;
    }
    let factors = |map: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        map.iter()
            .filter(|(k, _)| k.as_str() != "class")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (want, have) = (factors(requested), factors(existing));
    let everywhere = want
        .get("replication_factor")
        .filter(|_| short_class(&requested["class"]) == "NetworkTopologyStrategy");
    match everywhere {
        Some(factor) => {
            for (dc, n) in &have {
                if n != factor {
                    differences.push(format!("{dc} has {n} replicas, not {factor}"));
                }
            }
        }
        None => {
            for (key, value) in &want {
                match have.get(key) {
                    Some(v) if v == value => {}
                    Some(v) => differences.push(format!("{key} is {v}, not {value}")),
                    None => differences.push(format!("{key} is not set (asked {value})")),
                }
            }
            for key in have.keys().filter(|k| !want.contains_key(*k)) {
                differences.push(format!("{key} is set to {}, not asked for", have[key]));
            }
        }
    }
    differences
}

/// The compaction and default TTL of `gps_points` for a retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpsTableOptions {
    pub compaction: BTreeMap<String, String>,
    /// Seconds; 0: rows never expire.
    pub default_ttl: u64,
}

impl GpsTableOptions {
    /// With a retention, time windows of whole days, few enough that the
    /// retention spans at most 50 of them, and that TTL: whole windows expire
    /// and are dropped without compacting. Without one, size-tiered: time
    /// windows without a TTL only pile up (ScyllaDB's
    /// `restrict_twcs_without_default_ttl` refuses them).
    pub fn for_retention(retention: Retention) -> GpsTableOptions {
        let mut compaction = BTreeMap::new();
        match retention {
            Some(days) => {
                let window = days.div_ceil(MAX_WINDOWS).max(1);
                compaction.insert("class".into(), "TimeWindowCompactionStrategy".into());
                compaction.insert("compaction_window_unit".into(), "DAYS".into());
                compaction.insert("compaction_window_size".into(), window.to_string());
                GpsTableOptions {
                    compaction,
                    default_ttl: u64::from(days) * 86_400,
                }
            }
            None => {
                compaction.insert("class".into(), "SizeTieredCompactionStrategy".into());
                GpsTableOptions {
                    compaction,
                    default_ttl: 0,
                }
            }
        }
    }

    /// Whether the table's current options (as `system_schema.tables` holds
    /// them) are these, ignoring options freight does not set.
    pub fn matches(&self, compaction: &BTreeMap<String, String>, default_ttl: u64) -> bool {
        let same_class = compaction
            .get("class")
            .is_some_and(|c| short_class(c) == self.compaction["class"]);
        same_class
            && default_ttl == self.default_ttl
            && self
                .compaction
                .iter()
                .filter(|(k, _)| k.as_str() != "class")
                .all(|(k, v)| compaction.get(k) == Some(v))
    }

    /// The statements that set these options: `gps_points`, and
    /// `gps_point_days` expiring a day after the points it names.
    pub fn alter_statements(&self) -> Vec<String> {
        let compaction = self
            .compaction
            .iter()
            .map(|(k, v)| format!("'{k}': '{v}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let days_ttl = match self.default_ttl {
            0 => 0,
            ttl => ttl + 86_400,
        };
        vec![
            format!(
                "ALTER TABLE gps_points WITH compaction = {{{compaction}}} AND default_time_to_live = {}",
                self.default_ttl
            ),
            format!("ALTER TABLE gps_point_days WITH default_time_to_live = {days_ttl}"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> BTreeMap<String, String> {
        parse_cql_map(text).unwrap()
    }

    #[test]
    fn a_replication_factor_stands_for_every_datacenter() {
        let asked = map("{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}");
        let existing = map(
            "{'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '3', 'dc2': '3'}",
        );
        assert!(replication_differences(&asked, &existing).is_empty());
        let thin =
            map("{'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '1'}");
        assert_eq!(
            replication_differences(&asked, &thin),
            ["dc1 has 1 replicas, not 3"]
        );
    }

    #[test]
    fn every_difference_is_named() {
        let asked = map("{'class': 'NetworkTopologyStrategy', 'dc1': 3}");
        let simple = map(
            "{'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '1'}",
        );
        assert_eq!(
            replication_differences(&asked, &simple),
            ["class is SimpleStrategy, not NetworkTopologyStrategy"]
        );
        let other_dc = map("{'class': 'NetworkTopologyStrategy', 'dc2': '3'}");
        assert_eq!(
            replication_differences(&asked, &other_dc),
            ["dc1 is not set (asked 3)", "dc2 is set to 3, not asked for"]
        );
    }

    #[test]
    fn maps_that_are_not_maps_are_refused() {
        for bad in [
            "",
            "{}",
            "3",
            "{'class': 'X'}; DROP KEYSPACE k",
            "{'dc1' 3}",
        ] {
            assert!(parse_cql_map(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_retention_keeps_at_most_fifty_windows_and_none_is_size_tiered() {
        for (days, window) in [(1, 1), (30, 1), (50, 1), (51, 2), (365, 8), (3650, 73)] {
            let options = GpsTableOptions::for_retention(Some(days));
            assert_eq!(
                options.compaction["compaction_window_size"],
                window.to_string()
            );
            assert!(days.div_ceil(window) <= MAX_WINDOWS, "{days} days");
            assert_eq!(options.default_ttl, u64::from(days) * 86_400);
        }
        let forever = GpsTableOptions::for_retention(None);
        assert_eq!(forever.compaction["class"], "SizeTieredCompactionStrategy");
        assert_eq!(forever.default_ttl, 0);
        let statements = forever.alter_statements();
        assert!(
            statements[0].contains("default_time_to_live = 0"),
            "{statements:?}"
        );
    }

    #[test]
    fn current_options_are_compared_by_what_freight_sets() {
        let options = GpsTableOptions::for_retention(Some(90));
        let mut current = options.compaction.clone();
        current.insert(
            "class".into(),
            "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy".into(),
        );
        current.insert("max_threshold".into(), "32".into());
        assert!(options.matches(&current, 90 * 86_400));
        assert!(!options.matches(&current, 0));
        current.insert("compaction_window_size".into(), "1".into());
        assert!(!options.matches(&current, 90 * 86_400));
    }
}
