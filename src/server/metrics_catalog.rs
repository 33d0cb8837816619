//! Every metric the service reports, described once (the `# HELP` line of the
//! Prometheus page) and registered at zero when the service starts, so that a
//! dashboard or an alert on a counter works before the first event (a
//! `freight_rate_limited_total` that appears only with the first 429 cannot be
//! graphed as 0, nor alerted on by `rate()`).
//!
//! Request counts and latencies are labelled by route, method and status, so
//! they appear with each combination's first request.

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::api::auth::RATE_LIMITED_METRIC;
use crate::ingest::Protocol;
use crate::server::admin::RESIDENT_ACTORS_METRIC;
use crate::server::observe::{LATENCY_METRIC, REQUESTS_METRIC};
use crate::services::device_ingest::{POSITIONS_METRIC, REFUSALS_METRIC};
use crate::services::live::{DROPPED_METRIC, STREAMS_METRIC};
use crate::services::tracking::POINTS_METRIC;
use crate::services::tracking::group_commit::{
    BATCH_POINTS_METRIC, COMMIT_SECONDS_METRIC, SHED_METRIC,
};
use crate::storage::embedded::LOOKUPS_METRIC;
use crate::storage::embedded::store_metrics::{
    COMPACTIONS_METRIC, FLUSHES_METRIC, GPS_WRITE_SECONDS_METRIC, JOURNAL_BYTES_METRIC,
    MEMTABLE_BYTES_METRIC, WRITE_STALL_METRIC,
};
use crate::storage::scylla::clock_skew::SKEW_METRIC;
use crate::telemetry::LOG_LINES_LOST_METRIC;
use crate::webhooks::dispatcher::{BACKLOG_METRIC, DELIVERIES_METRIC};

/// Describes every metric and registers the unlabelled ones, and each label
/// value of the labelled ones that is known in advance, at zero. Call after
/// the recorder is installed; calling again changes nothing.
pub fn register() {
    describe_counter!(
        REQUESTS_METRIC,
        "HTTP requests answered by the API listener, by route (as written in the API \
         reference), method and status"
    );
    describe_histogram!(
        LATENCY_METRIC,
        Unit::Seconds,
        "Time from a request's arrival to its answer, by route, method and status"
    );
    describe_counter!(
        POINTS_METRIC,
        "GPS fixes received, by outcome: stored, duplicate (the same load and timestamp \
         was stored before) or refused (invalid, or its load cannot take fixes)"
    );
    describe_counter!(
        LOOKUPS_METRIC,
        "GPS fixes (embedded store) older than the newest 64 point times kept in memory for \
         their load, whose duplicate check read the store: a steady rise means fixes arrive far \
         out of order or long batches are sent again, and costs ingest throughput"
    );
    describe_counter!(
        FLUSHES_METRIC,
        "Embedded store: memtables flushed to tables, by keyspace (read at scrape time)"
    );
    describe_counter!(
        COMPACTIONS_METRIC,
        "Embedded store: compactions run (tables merged, moved or dropped), by keyspace"
    );
    describe_gauge!(
        WRITE_STALL_METRIC,
        Unit::Seconds,
        "Embedded store: time writers were held back by its write stalls (too many level-0 \
         runs or sealed memtables in a keyspace), since start; only grows"
    );
    describe_gauge!(
        JOURNAL_BYTES_METRIC,
        Unit::Bytes,
        "Embedded store: bytes of its write-ahead journal on disk"
    );
    describe_gauge!(
        MEMTABLE_BYTES_METRIC,
        Unit::Bytes,
        "Embedded store: bytes held in memtables, not yet flushed to tables"
    );
    describe_histogram!(
        GPS_WRITE_SECONDS_METRIC,
        Unit::Seconds,
        "Embedded store: time one GPS batch took to go into the store before its sync (its \
         inserts, and any wait on the store's locks or in a write stall)"
    );
    describe_counter!(
        SHED_METRIC,
        "GPS fixes answered 503 because storage could not keep up (the commit queue was full)"
    );
    describe_histogram!(
        BATCH_POINTS_METRIC,
        "GPS fixes made durable together by one group commit"
    );
    describe_histogram!(
        COMMIT_SECONDS_METRIC,
        Unit::Seconds,
        "Time from writing one group commit of GPS fixes to its being durable (its sync, and any wait for the sync before it)"
    );
    describe_counter!(
        RATE_LIMITED_METRIC,
        "Requests refused with 429 because their account's hourly quota was used up"
    );
    describe_gauge!(
        RESIDENT_ACTORS_METRIC,
        "Load actors in memory (a load's actor stops after it has been idle for a while)"
    );
    describe_gauge!(
        STREAMS_METRIC,
        "Open live tracking streams (server-sent events)"
    );
    describe_counter!(
        DROPPED_METRIC,
        "Tracking updates a slow live-stream client missed (it was told to resync)"
    );
    describe_gauge!(
        BACKLOG_METRIC,
        "Webhook deliveries waiting for an attempt (reported by the instance that dispatches)"
    );
    describe_counter!(
        DELIVERIES_METRIC,
        "Webhook delivery attempts, by outcome: delivered, retrying (failed, another \
         attempt is scheduled) or failed (no attempt left)"
    );

    describe_gauge!(
        SKEW_METRIC,
        "With ScyllaDB: this instance's clock minus the cluster's, in seconds, measured \
         every 30 s (past 1 s a warning is logged; past 4 minutes writes are refused)"
    );

    describe_counter!(
        LOG_LINES_LOST_METRIC,
        "Log lines that could not be written to stderr (its file's disk full, a closed \
         pipe) and were dropped; the service goes on answering"
    );

    describe_counter!(
        POSITIONS_METRIC,
        "Positions devices posted (/v1/ingest/...), by protocol and outcome: stored and \
         duplicate (fixes, one per attached load), unattached (reaching no load taking \
         fixes: taken, not stored), invalid (refused by the API's rules, skipped), heartbeat"
    );
    describe_counter!(
        REFUSALS_METRIC,
        "Device posts and positions refused, by protocol and reason (bad token, malformed, \
         rate limited, ...): apps such as Traccar Client retry a refused post forever"
    );
    describe_counter!(
        crate::server::cluster::internal::REFUSALS_METRIC,
        "Requests the internal listener refused for their signature (unsigned, another \
         secret, too old, replayed, altered): another instance's secret or clock, or a stranger"
    );

    describe_gauge!(
        crate::server::trackers::CONNECTIONS_METRIC,
        "Hardware tracker connections open, by protocol (each configured one is present at 0)"
    );
    describe_counter!(
        crate::server::trackers::FRAMES_METRIC,
        "Frames read from hardware trackers, by protocol and outcome (positions, status, login, \
         skipped; login_refused, bad_checksum, malformed, too_long, not_identified, \
         unacknowledged)"
    );
    describe_counter!(
        crate::server::trackers::CLOSED_METRIC,
        "Tracker connections the service closed, by protocol and reason (idle, refused, \
         capacity, address_capacity, throttled, error)"
    );
    describe_counter!(
        crate::server::mqtt::MESSAGES_METRIC,
        "OwnTracks messages taken from the MQTT broker, by outcome (stored; no_position, \
         unknown_device, malformed: acknowledged and dropped; unacknowledged: left to the \
         broker, delivered again on the next connection)"
    );
    describe_gauge!(
        crate::server::mqtt::CONNECTED_METRIC,
        "1 while subscribed at the MQTT broker (--mqtt-broker), else 0"
    );

    // Incrementing by zero registers a counter without changing it (a restart
    // of the service starts counters from zero, as Prometheus expects).
    for outcome in ["stored", "duplicate", "refused"] {
        counter!(POINTS_METRIC, "outcome" => outcome).increment(0);
    }
    for outcome in ["delivered", "retrying", "failed"] {
        counter!(DELIVERIES_METRIC, "outcome" => outcome).increment(0);
    }
    for protocol in Protocol::ALL {
        for outcome in ["stored", "duplicate", "unattached", "invalid"] {
            counter!(POSITIONS_METRIC, "protocol" => protocol.as_str(), "outcome" => outcome)
                .increment(0);
        }
    }
    for name in [
        LOOKUPS_METRIC,
        SHED_METRIC,
        RATE_LIMITED_METRIC,
        DROPPED_METRIC,
        LOG_LINES_LOST_METRIC,
    ] {
        counter!(name).increment(0);
    }
    for name in [RESIDENT_ACTORS_METRIC, STREAMS_METRIC, BACKLOG_METRIC] {
        gauge!(name).increment(0.0);
    }
    // A histogram with no samples yet: its buckets at zero.
    for name in [
        BATCH_POINTS_METRIC,
        COMMIT_SECONDS_METRIC,
        GPS_WRITE_SECONDS_METRIC,
    ] {
        let _registered = histogram!(name);
    }
}
