//! What a run measured: per operation, latencies in an HDR histogram (from the
//! intended send time in open loop, so a stall shows instead of hiding), the
//! answers by status, and errors by status and error code.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are kept from 1 µs to 10 minutes at 3 significant digits.
const HIGHEST_MICROS: u64 = 600_000_000;

/// Everything recorded, by operation name.
#[derive(Default)]
pub struct Recorder {
    operations: Mutex<BTreeMap<&'static str, Operation>>,
}

struct Operation {
    latency: Histogram<u64>,
    ok: u64,
    /// Non-2xx answers and failed requests, by "status CODE" ("0 connect"
    /// when there was no answer).
    errors: BTreeMap<String, u64>,
}

impl Operation {
    fn new() -> Self {
        Operation {
            latency: Histogram::new_with_bounds(1, HIGHEST_MICROS, 3).expect("valid bounds"),
            ok: 0,
            errors: BTreeMap::new(),
        }
    }
}

/// How one request ended.
pub enum Outcome {
    Ok,
    /// An answer other than 2xx: its status and the envelope's error code.
    Refused(u16, String),
    /// No answer (connect, TLS, timeout).
    Failed(String),
}

impl Recorder {
    pub fn record(&self, operation: &'static str, latency: Duration, outcome: Outcome) {
        let micros = (latency.as_micros() as u64).clamp(1, HIGHEST_MICROS);
        let mut all = self.operations.lock().unwrap_or_else(|p| p.into_inner());
        let entry = all.entry(operation).or_insert_with(Operation::new);
        entry.latency.saturating_record(micros);
        match outcome {
            Outcome::Ok => entry.ok += 1,
            Outcome::Refused(status, code) => {
                *entry.errors.entry(format!("{status} {code}")).or_default() += 1
            }
            Outcome::Failed(kind) => *entry.errors.entry(format!("0 {kind}")).or_default() += 1,
        }
    }

    /// Requests so far, by operation (for the progress line).
    pub fn counts(&self) -> Vec<(&'static str, u64, u64)> {
        let all = self.operations.lock().unwrap_or_else(|p| p.into_inner());
        all.iter()
            .map(|(name, op)| (*name, op.latency.len(), op.errors.values().sum()))
            .collect()
    }

    /// The summary of everything recorded over `elapsed`; `reset` starts over
    /// (the ramp reads one step at a time).
    pub fn summary(&self, elapsed: Duration, reset: bool) -> Summary {
        let mut all = self.operations.lock().unwrap_or_else(|p| p.into_inner());
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let operations = all
            .iter()
            .map(|(name, op)| {
                let ms = |q: f64| op.latency.value_at_quantile(q) as f64 / 1000.0;
                OperationSummary {
                    operation: name,
                    requests: op.latency.len(),
                    ok: op.ok,
                    per_second: op.latency.len() as f64 / seconds,
                    p50_ms: ms(0.50),
                    p90_ms: ms(0.90),
                    p99_ms: ms(0.99),
                    p999_ms: ms(0.999),
                    max_ms: op.latency.max() as f64 / 1000.0,
                    errors: op.errors.clone(),
                }
            })
            .collect();
        if reset {
            all.clear();
        }
        Summary {
            seconds,
            operations,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub seconds: f64,
    pub operations: Vec<OperationSummary>,
}

#[derive(Debug, Serialize)]
pub struct OperationSummary {
    pub operation: &'static str,
    pub requests: u64,
    pub ok: u64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// "status CODE" → count; status 0 when there was no answer.
    pub errors: BTreeMap<String, u64>,
}

impl Summary {
    #[cfg(test)]
    pub fn operation(&self, name: &str) -> Option<&OperationSummary> {
        self.operations.iter().find(|o| o.operation == name)
    }

    /// The report for people: one line per operation, then the errors.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<16} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "operation", "requests", "per sec", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"
        );
        for o in &self.operations {
            out.push_str(&format!(
                "{:<16} {:>9} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
                o.operation,
                o.requests,
                o.per_second,
                o.p50_ms,
                o.p90_ms,
                o.p99_ms,
                o.p999_ms,
                o.max_ms
            ));
        }
        let errors: Vec<String> = self
            .operations
            .iter()
            .flat_map(|o| {
                o.errors
                    .iter()
                    .map(move |(what, n)| format!("  {:<16} {what}: {n}", o.operation))
            })
            .collect();
        match errors.is_empty() {
            true => out.push_str("errors: none\n"),
            false => {
                out.push_str("errors (operation, status and code: count):\n");
                out.push_str(&errors.join("\n"));
                out.push('\n');
            }
        }
        out
    }
}

/// `n` things, in the singular for one ("1 stream", "2 streams").
pub fn counted(n: impl Into<u64>, thing: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_errors_are_kept_per_operation() {
        let recorder = Recorder::default();
        for ms in 1..=100u64 {
            recorder.record("fix", Duration::from_millis(ms), Outcome::Ok);
        }
        recorder.record(
            "fix",
            Duration::from_secs(2),
            Outcome::Refused(503, "STORAGE_UNAVAILABLE".into()),
        );
        recorder.record(
            "poll",
            Duration::from_millis(3),
            Outcome::Failed("timeout".into()),
        );
        let summary = recorder.summary(Duration::from_secs(10), true);
        let fix = summary.operation("fix").unwrap();
        assert_eq!((fix.requests, fix.ok), (101, 100));
        assert!((fix.p50_ms - 51.0).abs() < 1.0, "{}", fix.p50_ms);
        assert!(fix.max_ms >= 1999.0, "a stall shows in max");
        assert_eq!(fix.errors["503 STORAGE_UNAVAILABLE"], 1);
        assert_eq!(summary.operation("poll").unwrap().errors["0 timeout"], 1);
        assert!((fix.per_second - 10.1).abs() < 1e-9);
        assert!(recorder.counts().is_empty(), "reset");
        assert!(summary.table().contains("503 STORAGE_UNAVAILABLE: 1"));
    }
}
