//! Every CQL statement the backend runs, prepared once when the store opens.
//!
//! Each is declared once, with its name and its text; [`ALL`] lists them so
//! that a unit test can check every statement against the schema in `cql/`
//! (tables and columns that exist) without a server.
//!
//! Consistency is the session's default, LOCAL_QUORUM, for every statement:
//! a write acknowledged by a majority of the local replicas is seen by any
//! later LOCAL_QUORUM read. Conditional statements (`IF ...`) run their Paxos
//! round at LOCAL_SERIAL. Statements that are safe to run twice are marked
//! idempotent, so the driver may retry them on another node after a timeout;
//! conditional ones and counter updates are not.

use scylla::client::session::Session;
use scylla::errors::PrepareError;
use scylla::serialize::row::{RowSerializationContext, SerializeRow};
use scylla::serialize::writers::RowWriter;
use scylla::statement::SerialConsistency;
use scylla::statement::batch::{Batch, BatchStatement, BatchType};
use scylla::statement::prepared::PreparedStatement;

use super::unavailable;
use crate::storage::StorageResult;

/// Declares a set of statements: a struct `$set` with one prepared statement
/// per name and a `prepare` that prepares them all, and `$all`, the `(name,
/// CQL)` pairs. Used here for most aggregates and in `webhooks.rs` for its own.
macro_rules! statements {
    (struct $set:ident; const $all:ident; $($name:ident = $cql:literal;)+) => {
        /// Prepared statements, by name.
        pub(super) struct $set {
            $(pub $name: scylla::statement::prepared::PreparedStatement,)+
        }

        /// `(name, CQL)` of every statement, for the schema test.
        #[cfg_attr(not(test), allow(dead_code))]
        pub(super) const $all: &[(&str, &str)] = &[$((stringify!($name), $cql),)+];

        impl $set {
            pub(super) async fn prepare(
                session: &scylla::client::session::Session,
            ) -> Result<Self, scylla::errors::PrepareError> {
                Ok(Self {
                    $($name: prepare(session, $cql).await?,)+
                })
            }
        }
    };
}

statements! {
    struct Statements;
    const ALL;

    ping = "SELECT file FROM schema_migrations LIMIT 1";

    // Accounts and keys.
    put_account = "INSERT INTO accounts (id, record) VALUES (?, ?)";
    get_account = "SELECT record FROM accounts WHERE id = ?";
    all_accounts = "SELECT record FROM accounts";
    put_api_key = "INSERT INTO api_keys (id, record) VALUES (?, ?)";
    put_api_key_by_account = "INSERT INTO api_keys_by_account (account_id, key_id, record) VALUES (?, ?, ?)";
    get_api_key = "SELECT record FROM api_keys WHERE id = ?";
    api_keys_of_account = "SELECT record FROM api_keys_by_account WHERE account_id = ?";

    // Loads.
    // Every write to `loads` is a lightweight transaction (see `load_rows`).
    insert_load = "INSERT INTO loads (load_id, version, record, pending) VALUES (?, ?, ?, ?) IF NOT EXISTS";
    update_load = "UPDATE loads SET version = ?, record = ?, pending = ? WHERE load_id = ? IF version = ? AND pending = NULL";
    clear_load_pending = "UPDATE loads SET pending = NULL WHERE load_id = ? IF version = ?";
    get_load = "SELECT record, pending FROM loads WHERE load_id = ?";
    // The same read for the load's writer, at LOCAL_SERIAL (set at open): it
    // completes a Paxos proposal a dead writer left accepted, not committed.
    get_load_serial = "SELECT record, pending FROM loads WHERE load_id = ?";
    put_load_listed = "INSERT INTO loads_by_account (account_id, filter, load_id, record) VALUES (?, ?, ?, ?)";
    delete_load_listed = "DELETE FROM loads_by_account WHERE account_id = ? AND filter = ? AND load_id = ?";
    list_loads = "SELECT record FROM loads_by_account WHERE account_id = ? AND filter = ? LIMIT ?";
    // Maintained totals of the lists (cql/014).
    add_list_total = "UPDATE list_totals SET n = n + ? WHERE account_id = ? AND list = ?";
    list_total = "SELECT n FROM list_totals WHERE account_id = ? AND list = ?";

    // Leases: which instance acts for a load.
    take_lease = "INSERT INTO load_leases (load_id, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?";
    renew_lease = "UPDATE load_leases USING TTL ? SET owner = ? WHERE load_id = ? IF owner = ?";
    release_lease = "DELETE FROM load_leases WHERE load_id = ? IF owner = ?";
    lease_holder = "SELECT owner FROM load_leases WHERE load_id = ?";

    // The instances and their internal listeners (cql/015).
    register_instance = "INSERT INTO instances (instance, address) VALUES (?, ?) USING TTL ?";
    all_instances = "SELECT instance, address FROM instances";

    // Leases: which instance plays a role for all (the webhook dispatcher).
    take_role_lease = "INSERT INTO role_leases (role_id, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?";
    renew_role_lease = "UPDATE role_leases USING TTL ? SET owner = ? WHERE role_id = ? IF owner = ?";
    release_role_lease = "DELETE FROM role_leases WHERE role_id = ? IF owner = ?";

    // Requests per account-minute, all instances together.
    add_request_count = "UPDATE rate_counts SET requests = requests + ? WHERE account_id = ? AND hour = ? AND minute = ?";
    request_counts = "SELECT minute, requests FROM rate_counts WHERE account_id = ? AND hour = ? AND minute >= ?";

    // Carriers.
    claim_mc_number = "INSERT INTO carriers_by_mc (account_id, mc_number, carrier_id, record) VALUES (?, ?, ?, ?) IF NOT EXISTS";
    mc_number_claim = "SELECT carrier_id, record FROM carriers_by_mc WHERE account_id = ? AND mc_number = ?";
    // Every write to a carrier's row is conditional: it applies once, so the
    // carrier list's total moves once, and a change never writes back a
    // carrier deleted meanwhile.
    put_carrier = "INSERT INTO carriers (account_id, carrier_id, record) VALUES (?, ?, ?) IF NOT EXISTS";
    update_carrier_row = "UPDATE carriers SET record = ? WHERE account_id = ? AND carrier_id = ? IF EXISTS";
    get_carrier = "SELECT record FROM carriers WHERE account_id = ? AND carrier_id = ?";
    update_mc_number_claim = "UPDATE carriers_by_mc SET record = ? WHERE account_id = ? AND mc_number = ? IF carrier_id = ?";
    release_mc_number = "DELETE FROM carriers_by_mc WHERE account_id = ? AND mc_number = ? IF carrier_id = ?";
    delete_carrier = "DELETE FROM carriers WHERE account_id = ? AND carrier_id = ? IF EXISTS";
    list_carriers = "SELECT record FROM carriers WHERE account_id = ? LIMIT ?";
    // Holds and deletion marks (cql/017): `record != NULL` is false for a
    // carrier that does not exist, so neither writes a row for one.
    hold_carrier = "UPDATE carriers USING TTL ? SET assigning = assigning + ? WHERE account_id = ? AND carrier_id = ? IF deleting = NULL AND record != NULL";
    release_carrier = "UPDATE carriers SET assigning = assigning - ? WHERE account_id = ? AND carrier_id = ? IF EXISTS";
    mark_carrier_deleting = "UPDATE carriers USING TTL ? SET deleting = ? WHERE account_id = ? AND carrier_id = ? IF assigning = NULL AND record != NULL";
    unmark_carrier_deleting = "UPDATE carriers SET deleting = NULL WHERE account_id = ? AND carrier_id = ? IF deleting = ?";


    // GPS points.
    put_point = "INSERT INTO gps_points (load_id, day, ts, lat, lng, speed, heading, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    put_point_if_new = "INSERT INTO gps_points (load_id, day, ts, lat, lng, speed, heading, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS";
    // A late point with changes: marked until the batch with its changes clears
    // the mark (cql/018_point_changes.cql). Not applied, it answers the stored row.
    put_point_if_new_pending = "INSERT INTO gps_points (load_id, day, ts, lat, lng, speed, heading, source, changes_pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS";
    clear_point_pending = "UPDATE gps_points SET changes_pending = ? WHERE load_id = ? AND day = ? AND ts = ?";
    put_point_day = "INSERT INTO gps_point_days (load_id, day) VALUES (?, ?)";
    put_load_stops = "INSERT INTO load_stops (load_id, progress) VALUES (?, ?) USING TIMESTAMP ?";
    get_load_stops = "SELECT progress FROM load_stops WHERE load_id = ?";
    set_stop_timer = "INSERT INTO stop_timers (load_id, stop, due) VALUES (?, ?, ?) USING TIMESTAMP ?";
    clear_stop_timer = "DELETE FROM stop_timers USING TIMESTAMP ? WHERE load_id = ?";
    end_stop_timer = "DELETE FROM stop_timers WHERE load_id = ?";
    all_stop_timers = "SELECT load_id, stop, due FROM stop_timers";
    point_days = "SELECT day FROM gps_point_days WHERE load_id = ? AND day >= ? AND day <= ?";
    newest_point_day = "SELECT day FROM gps_point_days WHERE load_id = ? LIMIT 1";
    newest_point = "SELECT ts FROM gps_points WHERE load_id = ? AND day = ? LIMIT 1";
    points_in_day = "SELECT ts, lat, lng, speed, heading, source FROM gps_points WHERE load_id = ? AND day = ? AND ts >= ? AND ts <= ? LIMIT ?";
    count_points_in_day = "SELECT COUNT(*) FROM gps_points WHERE load_id = ? AND day = ? AND ts >= ? AND ts <= ?";

    // Idempotency answers.
    // One partition per (account, key): cql/013.
    put_idempotent = "INSERT INTO idempotency_by_key (account_id, key, created_at, record) VALUES (?, ?, ?, ?)";
    get_idempotent = "SELECT record FROM idempotency_by_key WHERE account_id = ? AND key = ?";
    all_idempotent = "SELECT account_id, key, created_at FROM idempotency_by_key";
    delete_idempotent = "DELETE FROM idempotency_by_key WHERE account_id = ? AND key = ?";
    claim_idempotency_key = "INSERT INTO idempotency_claims_by_key (account_id, key, owner) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?";
    release_idempotency_key = "DELETE FROM idempotency_claims_by_key WHERE account_id = ? AND key = ? IF owner = ?";
    // Answers stored before cql/013, read for two days after it was applied.
    get_idempotent_before_013 = "SELECT record FROM idempotency WHERE account_id = ? AND key = ?";
    migration_applied_at = "SELECT applied_at FROM schema_migrations WHERE file = ?";

    // Dashboard users and sessions.
    claim_email = "INSERT INTO users_by_email (email, user_id, record, account_record) VALUES (?, ?, ?, ?) IF NOT EXISTS";
    put_user = "INSERT INTO users (id, record) VALUES (?, ?)";
    put_user_by_account = "INSERT INTO users_by_account (account_id, user_id, record) VALUES (?, ?, ?)";
    get_user = "SELECT record FROM users WHERE id = ?";
    email_claim = "SELECT record, account_record FROM users_by_email WHERE email = ?";
    users_of_account = "SELECT record FROM users_by_account WHERE account_id = ?";
    put_session = "INSERT INTO sessions (token_sha256, user_id, expires_at, record) VALUES (?, ?, ?, ?)";
    put_session_of_user = "INSERT INTO sessions_by_user (user_id, token_sha256) VALUES (?, ?)";
    get_session = "SELECT record FROM sessions WHERE token_sha256 = ?";
    get_session_user = "SELECT user_id FROM sessions WHERE token_sha256 = ?";
    delete_session = "DELETE FROM sessions WHERE token_sha256 = ?";
    delete_session_of_user = "DELETE FROM sessions_by_user WHERE user_id = ? AND token_sha256 = ?";
    sessions_of_user = "SELECT token_sha256 FROM sessions_by_user WHERE user_id = ?";
    all_sessions = "SELECT token_sha256, user_id, expires_at FROM sessions";
    release_email = "DELETE FROM users_by_email WHERE email = ? IF user_id = ?";
    delete_user = "DELETE FROM users WHERE id = ?";
    delete_user_of_account = "DELETE FROM users_by_account WHERE account_id = ? AND user_id = ?";

    // Password links (invitations, resets).
    put_password_link = "INSERT INTO password_links (token_sha256, record) VALUES (?, ?) IF NOT EXISTS";
    put_invitation_of_account = "INSERT INTO invitations_by_account (account_id, token_sha256, record) VALUES (?, ?, ?)";
    get_password_link = "SELECT record FROM password_links WHERE token_sha256 = ?";
    take_password_link = "DELETE FROM password_links WHERE token_sha256 = ? IF EXISTS";
    delete_invitation_of_account = "DELETE FROM invitations_by_account WHERE account_id = ? AND token_sha256 = ?";
    invitations_of_account = "SELECT record FROM invitations_by_account WHERE account_id = ?";

    // Load references (`storage::references`).
    reference_claim = "SELECT load_id, claimed_at FROM load_references WHERE account_id = ? AND reference = ?";
    insert_reference_claim = "INSERT INTO load_references (account_id, reference, load_id, claimed_at) VALUES (?, ?, ?, ?) IF NOT EXISTS";
    move_reference_claim = "UPDATE load_references SET load_id = ?, claimed_at = ? WHERE account_id = ? AND reference = ? IF load_id = ?";
    release_reference_claim = "DELETE FROM load_references WHERE account_id = ? AND reference = ? IF load_id = ?";

    // Device identifiers (`storage::identifiers`).
    identifier_claim = "SELECT device_id, claimed_at FROM device_identifiers WHERE identifier = ?";
    insert_identifier_claim = "INSERT INTO device_identifiers (identifier, device_id, claimed_at) VALUES (?, ?, ?) IF NOT EXISTS";
    move_identifier_claim = "UPDATE device_identifiers SET device_id = ?, claimed_at = ? WHERE identifier = ? IF device_id = ?";
    release_identifier_claim = "DELETE FROM device_identifiers WHERE identifier = ? IF device_id = ?";

    // Devices and attachments.
    put_share_link = "INSERT INTO share_links (token_sha256, record) VALUES (?, ?)";
    put_share_link_of_load = "INSERT INTO share_links_by_load (load_id, link_id, token_sha256) VALUES (?, ?, ?)";
    get_share_link = "SELECT record FROM share_links WHERE token_sha256 = ?";
    share_links_of_load = "SELECT token_sha256 FROM share_links_by_load WHERE load_id = ?";
    put_device = "INSERT INTO devices (id, record) VALUES (?, ?)";
    put_device_of_account = "INSERT INTO devices_by_account (account_id, device_id) VALUES (?, ?)";
    get_device = "SELECT record, last_seen FROM devices WHERE id = ?";
    record_sighting = "UPDATE devices SET last_seen = ? WHERE id = ?";
    devices_of_account = "SELECT device_id FROM devices_by_account WHERE account_id = ?";
    all_devices = "SELECT record, last_seen FROM devices";
    delete_device = "DELETE FROM devices WHERE id = ?";
    delete_device_of_account = "DELETE FROM devices_by_account WHERE account_id = ? AND device_id = ?";
    put_load_device = "INSERT INTO load_devices (load_id, device_id, record) VALUES (?, ?, ?)";
    get_load_device = "SELECT record FROM load_devices WHERE load_id = ?";
    delete_load_device = "DELETE FROM load_devices WHERE load_id = ?";
    put_device_load = "INSERT INTO loads_by_device (device_id, load_id) VALUES (?, ?)";
    loads_of_device = "SELECT load_id FROM loads_by_device WHERE device_id = ?";
    delete_device_load = "DELETE FROM loads_by_device WHERE device_id = ? AND load_id = ?";
}

// The webhook pipeline's tables (cql/004): the outbox, subscriptions,
// delivery records and their schedule.
statements! {
    struct WebhookStatements;
    const WEBHOOK_STATEMENTS;

    // Outbox events, by id (the partition follows from the id).
    put_event = "INSERT INTO outbox_events (minute, shard, event_id, record) VALUES (?, ?, ?, ?)";
    get_event = "SELECT record FROM outbox_events WHERE minute = ? AND shard = ? AND event_id = ?";
    events_in = "SELECT event_id, record FROM outbox_events WHERE minute = ? AND shard = ? AND event_id IN ?";
    event_ids_before = "SELECT event_id FROM outbox_events WHERE minute = ? AND shard = ? AND event_id < ?";
    delete_event = "DELETE FROM outbox_events WHERE minute = ? AND shard = ? AND event_id = ?";
    list_outbox_minute = "INSERT INTO outbox_minutes (shard, minute) VALUES (?, ?)";
    outbox_minutes_until = "SELECT minute FROM outbox_minutes WHERE shard = ? AND minute <= ?";
    unlist_outbox_minute = "DELETE FROM outbox_minutes USING TIMESTAMP ? WHERE shard = ? AND minute = ?";

    // The outbox proper: events not fanned out yet.
    put_unfanned = "INSERT INTO unfanned_events (minute, shard, event_id) VALUES (?, ?, ?)";
    unfanned_after = "SELECT event_id FROM unfanned_events WHERE minute = ? AND shard = ? AND event_id > ? LIMIT ?";
    unfanned_before = "SELECT event_id FROM unfanned_events WHERE minute = ? AND shard = ? AND event_id < ?";
    delete_unfanned = "DELETE FROM unfanned_events WHERE minute = ? AND shard = ? AND event_id = ?";
    list_unfanned_minute = "INSERT INTO unfanned_minutes (shard, minute) VALUES (?, ?)";
    unfanned_minutes_from = "SELECT minute FROM unfanned_minutes WHERE shard = ? AND minute >= ?";
    unlist_unfanned_minute = "DELETE FROM unfanned_minutes USING TIMESTAMP ? WHERE shard = ? AND minute = ?";

    // A load's event numbering: the highest sequence's write timestamp wins.
    put_sequence = "INSERT INTO load_event_sequences (load_id, sequence) VALUES (?, ?) USING TIMESTAMP ?";
    last_sequence = "SELECT sequence FROM load_event_sequences WHERE load_id = ?";

    // Subscriptions.
    put_webhook = "INSERT INTO webhooks (webhook_id, record) VALUES (?, ?)";
    get_webhook = "SELECT record FROM webhooks WHERE webhook_id = ?";
    webhook_exists = "SELECT webhook_id FROM webhooks WHERE webhook_id = ?";
    all_webhooks = "SELECT record FROM webhooks";
    all_webhooks_written = "SELECT record, WRITETIME(record) FROM webhooks";
    // Seals a secret stored plain, timestamped a microsecond after the write
    // it read: any later write of the subscription (a change, a delete) wins
    // over it. Not `IF record = ?`: every other write of this row is plain,
    // and a lightweight transaction must not mix with those (issue 38, 2).
    reseal_webhook = "UPDATE webhooks USING TIMESTAMP ? SET record = ? WHERE webhook_id = ?";
    delete_webhook = "DELETE FROM webhooks WHERE webhook_id = ?";

    // Delivery records, per subscription and hour of their event.
    put_delivery = "INSERT INTO deliveries (webhook_id, hour, event_id, record) VALUES (?, ?, ?, ?)";
    get_delivery = "SELECT record FROM deliveries WHERE webhook_id = ? AND hour = ? AND event_id = ?";
    deliveries_in = "SELECT record FROM deliveries WHERE webhook_id = ? AND hour = ? AND event_id IN ?";
    recorded_in = "SELECT event_id FROM deliveries WHERE webhook_id = ? AND hour = ? AND event_id IN ?";
    deliveries_of_hour = "SELECT record FROM deliveries WHERE webhook_id = ? AND hour = ? LIMIT ?";
    any_delivery_of_hour = "SELECT event_id FROM deliveries WHERE webhook_id = ? AND hour = ? LIMIT 1";
    delete_delivery = "DELETE FROM deliveries WHERE webhook_id = ? AND hour = ? AND event_id = ?";
    delete_deliveries_of_hour = "DELETE FROM deliveries WHERE webhook_id = ? AND hour = ?";
    list_delivery_hour = "INSERT INTO delivery_hours (webhook_id, hour) VALUES (?, ?)";
    delivery_hours = "SELECT hour FROM delivery_hours WHERE webhook_id = ?";
    unlist_delivery_hour = "DELETE FROM delivery_hours USING TIMESTAMP ? WHERE webhook_id = ? AND hour = ?";
    delete_delivery_hours = "DELETE FROM delivery_hours WHERE webhook_id = ?";
    // A subscription's maintained delivery total (cql/016).
    add_delivery_total = "UPDATE delivery_totals SET n = n + ? WHERE webhook_id = ?";
    delivery_total = "SELECT n FROM delivery_totals WHERE webhook_id = ?";
    delete_delivery_total = "DELETE FROM delivery_totals WHERE webhook_id = ?";

    // Deliveries by event (for pruning).
    put_delivery_by_event = "INSERT INTO deliveries_by_event (minute, shard, event_id, webhook_id, pending) VALUES (?, ?, ?, ?, ?)";
    deliveries_by_event_before = "SELECT event_id, webhook_id, pending FROM deliveries_by_event WHERE minute = ? AND shard = ? AND event_id < ?";
    delete_delivery_by_event = "DELETE FROM deliveries_by_event WHERE minute = ? AND shard = ? AND event_id = ? AND webhook_id = ?";

    // The schedule of due deliveries.
    put_due = "INSERT INTO due_deliveries (minute, shard, due_at, webhook_id, event_id) VALUES (?, ?, ?, ?, ?)";
    delete_due = "DELETE FROM due_deliveries WHERE minute = ? AND shard = ? AND due_at = ? AND webhook_id = ? AND event_id = ?";
    due_until = "SELECT due_at, webhook_id, event_id FROM due_deliveries WHERE minute = ? AND shard = ? AND due_at <= ? LIMIT ?";
    count_due = "SELECT COUNT(*) FROM due_deliveries WHERE minute = ? AND shard = ?";
    list_due_minute = "INSERT INTO due_minutes (shard, minute) VALUES (?, ?)";
    due_minutes_until = "SELECT minute FROM due_minutes WHERE shard = ? AND minute <= ?";
    unlist_due_minute = "DELETE FROM due_minutes USING TIMESTAMP ? WHERE shard = ? AND minute = ?";

    // Pending deliveries without a next attempt, per subscription.
    put_parked = "INSERT INTO parked_deliveries (webhook_id, event_id) VALUES (?, ?)";
    delete_parked = "DELETE FROM parked_deliveries WHERE webhook_id = ? AND event_id = ?";
    parked_of = "SELECT event_id FROM parked_deliveries WHERE webhook_id = ?";
    delete_parked_of = "DELETE FROM parked_deliveries WHERE webhook_id = ?";
}

/// Prepares one statement with the backend's settings (see the module doc).
pub(super) async fn prepare(
    session: &Session,
    cql: &str,
) -> Result<PreparedStatement, PrepareError> {
    let mut statement = session.prepare(cql).await?;
    let conditional = cql.contains(" IF ");
    // `SET c = c + ?`: a counter update, which adds again if run again.
    let counter = cql.contains(" + ?");
    statement.set_serial_consistency(Some(SerialConsistency::LocalSerial));
    statement.set_is_idempotent(!conditional && !counter);
    Ok(statement)
}

/// Statements written together: all of them or none (a LOGGED batch, which the
/// coordinator replays from its batch log if it fails half-way).
pub(super) struct LoggedBatch {
    batch: Batch,
    values: Vec<Box<dyn SerializeRow + Send + Sync>>,
}

impl LoggedBatch {
    pub(super) fn new() -> Self {
        let mut batch = Batch::new(BatchType::Logged);
        // Replaying a logged batch writes the same cells again: safe to retry.
        batch.set_is_idempotent(true);
        Self {
            batch,
            values: Vec::new(),
        }
    }

    pub(super) fn add(
        &mut self,
        statement: &PreparedStatement,
        values: impl SerializeRow + Send + Sync + 'static,
    ) {
        self.batch.append_statement(statement.clone());
        self.values.push(Box::new(values));
    }

    /// The bound values' serialized size, as ScyllaDB judges a batch's size.
    /// Serialises them (once more than sending does): asked only of the
    /// groups `BoundedBatches` packs, never on the GPS path.
    fn bytes(&self) -> usize {
        let statements = self.batch.statements.iter().zip(&self.values);
        statements
            .map(|(statement, values)| match statement {
                BatchStatement::PreparedStatement(prepared) => {
                    let specs = prepared.get_variable_col_specs();
                    let context = RowSerializationContext::from_specs(specs.as_slice());
                    let mut serialized = Vec::new();
                    let written = values.serialize(&context, &mut RowWriter::new(&mut serialized));
                    written.map_or(0, |_| serialized.len())
                }
                // Only prepared statements are added (`add`).
                _ => 0,
            })
            .sum()
    }

    fn append(&mut self, other: LoggedBatch) {
        for statement in other.batch.statements {
            self.batch.append_statement(statement);
        }
        self.values.extend(other.values);
    }

    pub(super) async fn run(self, session: &Session) -> StorageResult<()> {
        if self.values.is_empty() {
            return Ok(());
        }
        session
            .batch(&self.batch, &self.values)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }
}

/// Groups of statements, each all or none, packed into logged batches of at
/// most the engine's batch size (`Engine::max_batch_bytes`; a group larger
/// than that is a batch of its own)
/// and written one after the other, in order: a group is written only after
/// every group before it. For writes whose atomicity is per group (one
/// webhook delivery's record, index rows and schedule move), not across them.
pub(super) struct BoundedBatches {
    batches: Packed<LoggedBatch>,
}

impl BoundedBatches {
    pub(super) fn new(max_bytes: usize) -> Self {
        BoundedBatches {
            batches: Packed::new(max_bytes),
        }
    }

    pub(super) fn push(&mut self, group: LoggedBatch) {
        if group.values.is_empty() {
            return;
        }
        let bytes = group.bytes();
        if bytes > self.batches.max_bytes {
            // One group that must stay whole: written, but worth knowing of.
            tracing::warn!(
                bytes,
                statements = group.values.len(),
                "a logged batch over the size freight keeps batches under"
            );
        }
        self.batches.push(bytes, group, LoggedBatch::append);
    }

    pub(super) async fn run(self, session: &Session) -> StorageResult<()> {
        for (_, batch) in self.batches.batches {
            batch.run(session).await?;
        }
        Ok(())
    }
}

/// Groups packed in order into batches of at most `max_bytes`: each batch
/// with its size.
struct Packed<G> {
    max_bytes: usize,
    batches: Vec<(usize, G)>,
}

impl<G> Packed<G> {
    fn new(max_bytes: usize) -> Self {
        Packed {
            max_bytes,
            batches: Vec::new(),
        }
    }

    /// Adds a group of `bytes` to the last batch if it fits, else starts one.
    fn push(&mut self, bytes: usize, group: G, merge: impl FnOnce(&mut G, G)) {
        match self.batches.last_mut() {
            Some((size, last)) if *size + bytes <= self.max_bytes => {
                *size += bytes;
                merge(last, group);
            }
            _ => self.batches.push((bytes, group)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::storage::scylla::engine::Engine;

    /// The batches groups of `sizes` are packed into under `max`, as group counts.
    fn packed(max: usize, sizes: &[usize]) -> Vec<usize> {
        let mut packed = Packed::new(max);
        for &size in sizes {
            packed.push(size, 1, |groups, one| *groups += one);
        }
        packed
            .batches
            .into_iter()
            .map(|(_, groups)| groups)
            .collect()
    }

    #[test]
    fn groups_are_packed_under_the_bound_in_order_and_never_split() {
        // 512 delivery outcomes of ~1.5 KB: one batch was ~770 KB, near
        // ScyllaDB's 1 MiB refusal; now batches under each engine's bound.
        for engine in [Engine::Scylla, Engine::Cassandra] {
            let max = engine.max_batch_bytes();
            let outcomes = packed(max, &[1_500; 512]);
            assert_eq!(outcomes.iter().sum::<usize>(), 512);
            assert!(outcomes.len() >= 8, "{outcomes:?}");
            assert!(outcomes.iter().all(|&n| n * 1_500 <= max));
            // A group over the bound is a batch of its own.
            assert_eq!(packed(max, &[10, max + 1, 10]), [1, 1, 1]);
        }
    }
}
