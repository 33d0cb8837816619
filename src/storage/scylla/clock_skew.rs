//! How far this instance's clock is from the cluster's (issue 38, finding 13).
//!
//! Writes carry client-side timestamps (the driver's monotonic generator, set
//! in `ScyllaConfig::connect`), and the outbox's directory rows are unlisted
//! with a timestamp `SLACK` (5 minutes) in the past of this clock: both assume
//! the instances' clocks agree with each other and with the cluster's to well
//! within that slack. This module checks it instead of assuming it: at start
//! and every [`CHECK_EVERY`], it reads a coordinator's clock
//! (`system.local`), exports the difference as `freight_scylla_clock_skew_seconds`,
//! warns past [`WARN_PAST`], and past [`REFUSE_PAST`] makes the store refuse
//! writes (and fail its readiness probe) until the clocks agree again.

use std::sync::Weak;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use scylla::client::session::Session;

/// Gauge: this clock minus the cluster's, in seconds (positive: ahead).
pub const SKEW_METRIC: &str = "freight_scylla_clock_skew_seconds";
/// How often the clocks are compared.
pub const CHECK_EVERY: Duration = Duration::from_secs(30);
/// A difference worth a warning: NTP keeps healthy clocks within milliseconds.
const WARN_PAST: chrono::TimeDelta = chrono::TimeDelta::seconds(1);
/// A difference past which writes are refused: the slack the outbox's
/// directory rows allow for (see `webhooks::SLACK`), less a margin.
const REFUSE_PAST: chrono::TimeDelta = chrono::TimeDelta::minutes(4);

/// The last measured skew, shared by the store and the task that measures it.
#[derive(Debug, Default)]
pub struct SkewGuard {
    /// Milliseconds, this clock minus the cluster's.
    skew_ms: AtomicI64,
}

/// What a measured skew calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    Warn,
    RefuseWrites,
}

impl SkewGuard {
    pub fn record(&self, skew: chrono::TimeDelta) -> Verdict {
        self.skew_ms
            .store(skew.num_milliseconds(), Ordering::Relaxed);
        metrics::gauge!(SKEW_METRIC).set(skew.num_milliseconds() as f64 / 1000.0);
        judge(skew)
    }

    /// Whether writes are refused now; the skew when they are.
    pub fn refusing(&self) -> Option<chrono::TimeDelta> {
        let skew = chrono::TimeDelta::milliseconds(self.skew_ms.load(Ordering::Relaxed));
        (judge(skew) == Verdict::RefuseWrites).then_some(skew)
    }
}

pub fn judge(skew: chrono::TimeDelta) -> Verdict {
    let size = skew.abs();
    if size > REFUSE_PAST {
        Verdict::RefuseWrites
    } else if size > WARN_PAST {
        Verdict::Warn
    } else {
        Verdict::Fine
    }
}

/// This clock minus the cluster's, from a read of the cluster's clock sent at
/// `sent` and answered at `answered` (this clock): the cluster read its clock
/// somewhere in between, taken as the middle.
pub fn skew_of(
    sent: DateTime<Utc>,
    answered: DateTime<Utc>,
    cluster: DateTime<Utc>,
) -> chrono::TimeDelta {
    let middle = sent + (answered - sent) / 2;
    middle - cluster
}

/// Whether a statement writes (its text starts with a write's verb).
pub fn is_write(cql: &str) -> bool {
    let verb = cql.split_whitespace().next().unwrap_or("");
    ["INSERT", "UPDATE", "DELETE", "BATCH"]
        .iter()
        .any(|w| verb.eq_ignore_ascii_case(w))
}

/// Reads a coordinator's clock and records the difference.
pub async fn measure(session: &Session, guard: &SkewGuard) -> anyhow::Result<Verdict> {
    let sent = Utc::now();
    let result = session
        .query_unpaged("SELECT toUnixTimestamp(now()) FROM system.local", ())
        .await?;
    let answered = Utc::now();
    let (millis,) = result.into_rows_result()?.first_row::<(i64,)>()?;
    let cluster = DateTime::<Utc>::from_timestamp_millis(millis)
        .ok_or_else(|| anyhow::anyhow!("the cluster's clock reads {millis} ms"))?;
    let skew = skew_of(sent, answered, cluster);
    let verdict = guard.record(skew);
    match verdict {
        Verdict::Fine => {}
        Verdict::Warn => tracing::warn!(
            skew_ms = skew.num_milliseconds(),
            "this instance's clock differs from ScyllaDB's by more than a second; check NTP"
        ),
        Verdict::RefuseWrites => tracing::error!(
            skew_ms = skew.num_milliseconds(),
            "this instance's clock differs from ScyllaDB's by more than the outbox's slack; \
             writes are refused until NTP brings it back"
        ),
    }
    Ok(verdict)
}

/// Measures every [`CHECK_EVERY`] until the store (its session) is dropped.
pub fn keep_measuring(session: Weak<Session>, guard: std::sync::Arc<SkewGuard>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.tick().await; // the start's measure was just taken
        loop {
            tick.tick().await;
            let Some(session) = session.upgrade() else {
                return;
            };
            if let Err(error) = measure(&session, &guard).await {
                tracing::warn!(%error, "could not read ScyllaDB's clock");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn the_skew_is_taken_at_the_middle_of_the_round_trip() {
        let skew = skew_of(
            at("2026-11-27T12:00:00.000Z"),
            at("2026-11-27T12:00:00.100Z"),
            at("2026-11-27T12:00:00.030Z"),
        );
        assert_eq!(skew.num_milliseconds(), 20, "this clock is 20 ms ahead");
        let behind = skew_of(
            at("2026-11-27T12:00:00Z"),
            at("2026-11-27T12:00:00Z"),
            at("2026-11-27T12:00:03Z"),
        );
        assert_eq!(behind.num_seconds(), -3);
    }

    #[test]
    fn writes_are_refused_past_the_slack_and_served_again_when_it_recovers() {
        let guard = SkewGuard::default();
        assert_eq!(
            guard.record(chrono::TimeDelta::milliseconds(40)),
            Verdict::Fine
        );
        assert_eq!(guard.refusing(), None);
        assert_eq!(guard.record(chrono::TimeDelta::seconds(-2)), Verdict::Warn);
        assert_eq!(guard.refusing(), None);
        let far = chrono::TimeDelta::minutes(-6);
        assert_eq!(guard.record(far), Verdict::RefuseWrites);
        assert_eq!(guard.refusing(), Some(far));
        guard.record(chrono::TimeDelta::milliseconds(3));
        assert_eq!(guard.refusing(), None);
    }

    #[test]
    fn writes_are_told_from_reads_by_their_verb() {
        assert!(is_write("INSERT INTO gps_points (a) VALUES (?)"));
        assert!(is_write("  update loads SET x = ? WHERE y = ?"));
        assert!(is_write("DELETE FROM loads WHERE load_id = ?"));
        assert!(!is_write("SELECT record FROM loads WHERE load_id = ?"));
        assert!(!is_write(""));
    }
}
