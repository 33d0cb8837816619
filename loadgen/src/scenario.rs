//! What a run simulates: a scenario file (`benches/scenarios/*.toml`) with the
//! command line's flags over it. Every field has a default, so a file names
//! only what it changes.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;

/// A run's shape. Rates are open loop (requests are sent at their times
/// whatever the answers do) unless `closed_loop` is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// Trucks, each on a load of its own, each sending a fix every `fix_every_secs`.
    pub trucks: u32,
    pub fix_every_secs: f64,
    /// How long fixes, polls and lifecycles run (after set-up).
    pub duration_secs: u64,
    /// Share of fixes sent again (the same timestamp; a duplicate, answered 200).
    pub duplicate_share: f64,
    /// Share of fixes sent with a time a little before the truck's last one.
    pub out_of_order_share: f64,
    /// Share of fixes at which a truck loses its connection: it keeps
    /// `offline_fixes` fixes and uploads them in one batch when it is back.
    pub offline_share: f64,
    pub offline_fixes: u32,
    /// Dispatch dashboards, each polling a load's tracking and the in-transit
    /// list every `poll_every_secs`.
    pub dashboards: u32,
    pub poll_every_secs: f64,
    /// Dashboards holding the account's live tracking stream (server-sent
    /// events) for the whole run, as a dispatch board does. Each event is
    /// recorded as `stream_event`, its "latency" the position's age when it
    /// arrived (arrival minus the fix's timestamp): late and buffered fixes
    /// arrive old, and make the tail.
    pub streams: u32,
    /// API clients, each walking a new load through its life (create, assign,
    /// pick up, deliver) every `lifecycle_every_secs`.
    pub clients: u32,
    pub lifecycle_every_secs: f64,
    /// Connections to the service at most (as wrk's `-c`): requests beyond
    /// them wait for one, and the wait counts in their latency. Without a
    /// bound an open loop opens a connection (a TLS handshake) for every
    /// request in flight, and a slow moment snowballs.
    pub connections: u32,
    /// Closed loop instead: `concurrency` trucks send their next fix as soon
    /// as the last is answered (the shape wrk measures).
    pub closed_loop: bool,
    pub concurrency: u32,
    /// Ramp mode: fix rates from `ramp_start_per_sec`, `ramp_step_per_sec`
    /// higher each step of `ramp_step_secs`, at most `ramp_steps` steps,
    /// stopping once p99 passes `p99_bound_ms`.
    pub ramp: bool,
    pub ramp_start_per_sec: f64,
    pub ramp_step_per_sec: f64,
    pub ramp_steps: u32,
    pub ramp_step_secs: u64,
    pub p99_bound_ms: f64,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            trucks: 200,
            fix_every_secs: 1.0,
            duration_secs: 30,
            duplicate_share: 0.01,
            out_of_order_share: 0.01,
            offline_share: 0.001,
            offline_fixes: 20,
            dashboards: 5,
            poll_every_secs: 2.0,
            streams: 0,
            clients: 1,
            lifecycle_every_secs: 5.0,
            connections: 64,
            closed_loop: false,
            concurrency: 32,
            ramp: false,
            ramp_start_per_sec: 500.0,
            ramp_step_per_sec: 500.0,
            ramp_steps: 20,
            ramp_step_secs: 10,
            p99_bound_ms: 50.0,
        }
    }
}

impl Scenario {
    /// The rate a ramp offers at its step `step` (from 0).
    pub fn ramp_rate(&self, step: u32) -> f64 {
        self.ramp_start_per_sec + f64::from(step) * self.ramp_step_per_sec
    }

    /// `--scenario`: a scenario built into the binary by name
    /// ([`BUILT_IN`]), else a scenario file.
    pub fn named(given: &str) -> anyhow::Result<Self> {
        if let Some((name, text)) = BUILT_IN.iter().find(|(name, _)| *name == given) {
            return toml::from_str(text)
                .with_context(|| format!("in the built-in scenario {name}"));
        }
        let path = Path::new(given);
        if !path.exists() {
            let names: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
            anyhow::bail!(
                "no scenario {given}: name a file, or one built in: {}",
                names.join(", ")
            );
        }
        Self::from_file(path)
    }

    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the scenario {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("in the scenario {}", path.display()))
    }

    /// The offered fix rate, per second.
    pub fn fix_rate(&self) -> f64 {
        f64::from(self.trucks) / self.fix_every_secs
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs(self.duration_secs)
    }

    /// Refuses what cannot be run, with the setting's name.
    pub fn check(&self) -> anyhow::Result<()> {
        let share = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                bail!("{name} must be from 0 to 1, not {v}")
            }
        };
        share("duplicate_share", self.duplicate_share)?;
        share("out_of_order_share", self.out_of_order_share)?;
        share("offline_share", self.offline_share)?;
        let positive = |name: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                bail!("{name} must be a positive number of seconds, not {v}")
            }
        };
        positive("fix_every_secs", self.fix_every_secs)?;
        positive("poll_every_secs", self.poll_every_secs)?;
        positive("lifecycle_every_secs", self.lifecycle_every_secs)?;
        if self.trucks == 0 {
            bail!("trucks must be at least 1");
        }
        if !(1..=1000).contains(&self.offline_fixes) {
            bail!("offline_fixes must be from 1 to 1000 (one batch)");
        }
        if self.connections == 0 {
            bail!("connections must be at least 1");
        }
        if self.closed_loop && self.concurrency == 0 {
            bail!("concurrency must be at least 1 in closed loop");
        }
        if self.ramp && (self.ramp_start_per_sec <= 0.0 || self.ramp_step_per_sec < 0.0) {
            bail!("ramp_start_per_sec must be positive and ramp_step_per_sec not negative");
        }
        Ok(())
    }
}

/// The scenarios of `benches/scenarios/`, built in so that an installed
/// binary runs them by name (`--scenario mixed-realistic`).
pub const BUILT_IN: [(&str, &str); 5] = [
    (
        "dashboard-heavy",
        include_str!("../../benches/scenarios/dashboard-heavy.toml"),
    ),
    (
        "find-capacity",
        include_str!("../../benches/scenarios/find-capacity.toml"),
    ),
    (
        "ingest-heavy",
        include_str!("../../benches/scenarios/ingest-heavy.toml"),
    ),
    (
        "mixed-realistic",
        include_str!("../../benches/scenarios/mixed-realistic.toml"),
    ),
    (
        "wrk-shape",
        include_str!("../../benches/scenarios/wrk-shape.toml"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_scenarios_are_valid() {
        // The scenarios live with the benchmarks, in the workspace root.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/scenarios");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let scenario = Scenario::from_file(&path).unwrap();
            scenario
                .check()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            names.push(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
        names.sort();
        let built_in: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, built_in, "every file is built in, by its name");
        for (name, _) in BUILT_IN {
            let by_name = Scenario::named(name).unwrap();
            let by_file = Scenario::from_file(&dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(by_name.trucks, by_file.trucks, "{name}");
        }
        let unknown = Scenario::named("no-such-scenario").unwrap_err().to_string();
        assert!(unknown.contains("mixed-realistic"), "{unknown}");
    }

    #[test]
    fn a_mistake_is_named() {
        let refused = toml::from_str::<Scenario>("trucks = 5\ntrukcs = 6\n").unwrap_err();
        assert!(refused.to_string().contains("trukcs"), "{refused}");
        let bad = Scenario {
            duplicate_share: 1.5,
            ..Scenario::default()
        };
        assert!(
            bad.check()
                .unwrap_err()
                .to_string()
                .contains("duplicate_share")
        );
    }
}
