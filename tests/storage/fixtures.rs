//! Valid records built from the public API, shared by every test that needs
//! one: the conformance suite, the crate's unit tests (`domain::fixtures`
//! includes this file) and the benches (`benches/load_index.rs`,
//! `benches/gps_ingest.rs`).

// Each includer uses some of these, none all of them.
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use freight::domain::equipment::EquipmentType;
use freight::domain::ids::{AccountId, LoadId};
use freight::domain::load::{Load, NewLoad};
use freight::domain::location::{Location, UsState};
use freight::domain::webhook::{Delivery, DeliveryStatus};

/// Now, in whole milliseconds, as the service's clock makes times (and the
/// API shows them): what a record holds round-trips exactly.
pub fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).expect("now is representable")
}

/// A valid posted load of `account` on the lane `origin` → `destination` (state
/// codes).
pub fn sample_load(account: &AccountId, origin: &str, destination: &str) -> Load {
    let place = |state: &str| Location {
        city: "Somewhere".into(),
        state: UsState::parse(state).expect("a state code"),
        zip: "12345".into(),
        address: None,
        lat: None,
        lng: None,
        radius_m: None,
    };
    let new = NewLoad {
        reference: None,
        origin: place(origin),
        destination: place(destination),
        weight: 1000.0,
        equipment_type: EquipmentType::Flatbed,
        pickup_date: None,
        delivery_date: None,
        rate_cents: None,
        notes: None,
        detention_free_minutes: None,
        stops: None,
        team: false,
    };
    Load::create(LoadId::generate(), account.clone(), new, now())
}

/// `delivery` after its first attempt was answered 200 at `at`.
pub fn delivered_at(delivery: &Delivery, at: DateTime<Utc>) -> Delivery {
    Delivery {
        status: DeliveryStatus::Delivered,
        attempts: 1,
        last_status_code: Some(200),
        next_attempt_at: None,
        delivered_at: Some(at),
        ..delivery.clone()
    }
}
