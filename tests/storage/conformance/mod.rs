//! The storage conformance suite: what every backend must do, written once, a
//! file per aggregate like the storage traits.
//!
//! Each check creates its own accounts, so all of them can share one store.
//! `main.rs` instantiates the suite per backend; a check panics on failure.

mod accounts;
pub mod carriers;
mod dashboard;
mod devices;
mod idempotency;
mod identifiers;
mod instances;
mod loads;
mod references;
mod share_links;
mod tracking;
mod webhooks;

pub use accounts::accounts_and_keys;
pub use carriers::{
    carrier, carriers_are_changed_and_deleted_freeing_their_number,
    carriers_are_unique_by_mc_number_per_account,
};
pub use dashboard::{
    password_links_are_taken_once, sessions_end_and_expire,
    users_are_changed_and_removed_with_their_sessions,
    users_are_unique_by_email_and_bring_their_account,
};
pub use devices::devices_and_their_loads;
pub use idempotency::idempotency_answers_are_kept_and_purged;
pub use identifiers::{
    a_device_carrying_its_identifier_keeps_it_and_a_stale_claim_is_taken_over,
    identifier_claims_are_one_per_identifier_across_accounts,
};
pub use instances::{
    idempotency_keys_are_claimed_by_one_instance, instances_register_and_leases_name_their_holder,
    leases_give_a_load_one_owner_at_a_time, request_counts_add_up_across_instances,
};
pub use loads::{load_lists_filter_order_and_paginate, loads_round_trip_and_move_between_indexes};
pub use references::{
    a_stale_reference_claim_is_taken_over_and_a_live_one_is_not,
    reference_claims_are_swapped_only_from_the_holder_seen,
};
pub use share_links::share_links_are_found_by_token_and_listed_by_load;
pub use tracking::{
    late_fixes_over_many_batches_are_told_apart_exactly,
    points_are_ordered_deduplicated_and_ranged, stop_progress_is_written_with_its_point,
    stop_timers_follow_their_points,
};
pub use webhooks::{
    delivery_log_pages_across_hours_and_keeps_its_total, outbox_fan_out_and_delivery_schedule,
    outbox_reads_waiting_events_near_and_far_apart, webhook_history_is_pruned_but_nothing_pending,
    webhook_secrets_come_back_as_put,
};

use freight::domain::account::{Account, PlanKind, StopSettings};
use freight::domain::ids::AccountId;
use freight::storage::{PageRequest, Storage};

/// A new account, not stored yet.
fn account() -> Account {
    Account {
        id: AccountId::generate(),
        name: "Conformance".into(),
        plan: PlanKind::Standard,
        custom_requests_per_hour: None,
        custom_max_streams: None,
        disabled: false,
        created_at: crate::fixtures::now(),
        // Not the defaults, so a store that dropped them would show.
        stop_settings: StopSettings {
            late_after_minutes: 30,
            early_before_minutes: 45,
            detention_free_minutes: 90,
            auto_in_transit: false,
            auto_delivered: true,
            driving_mph: 47.5,
            road_circuity: 1.3,
        },
    }
}

/// A page holding everything a check lists.
const ALL: PageRequest = PageRequest {
    offset: 0,
    limit: 100,
};

/// A backend answers a ping.
pub async fn answers_ping(store: &dyn Storage) {
    store.ping().await.expect("store answers");
}
