//! Valid domain records for unit tests (compiled only for them). Test and bench
//! crates have their own, built from the public API (`tests/storage/fixtures.rs`).

use chrono::{DateTime, Utc};

use super::equipment::EquipmentType;
use super::ids::{AccountId, LoadId};
use super::load::{Load, NewLoad};
use super::location::{Location, UsState};
use super::webhook::{Delivery, DeliveryStatus};

/// A valid posted load of `account` on the lane `origin` → `destination` (state
/// codes).
pub(crate) fn sample_load(account: &AccountId, origin: &str, destination: &str) -> Load {
    let place = |state: &str| Location {
        city: "Somewhere".into(),
        state: UsState::parse(state).expect("a state code"),
        zip: "12345".into(),
        address: None,
    };
    let new = NewLoad {
        origin: place(origin),
        destination: place(destination),
        weight: 1000.0,
        equipment_type: EquipmentType::Flatbed,
        pickup_date: None,
        delivery_date: None,
        rate_cents: None,
        notes: None,
    };
    Load::create(LoadId::generate(), account.clone(), new, Utc::now())
}

/// `delivery` after its first attempt was answered 200 at `at`.
pub(crate) fn delivered_at(delivery: &Delivery, at: DateTime<Utc>) -> Delivery {
    Delivery {
        status: DeliveryStatus::Delivered,
        attempts: 1,
        last_status_code: Some(200),
        next_attempt_at: None,
        delivered_at: Some(at),
        ..delivery.clone()
    }
}
