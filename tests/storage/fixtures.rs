//! Valid records built from the public API, for the conformance suite and for
//! the benches (`benches/load_index.rs` and `benches/gps_ingest.rs` include this
//! file). Unit tests inside the crate have theirs in `src/domain/fixtures.rs`.

use chrono::Utc;
use freight::domain::equipment::EquipmentType;
use freight::domain::ids::{AccountId, LoadId};
use freight::domain::load::{Load, NewLoad};
use freight::domain::location::{Location, UsState};

/// A valid posted load of `account` on the lane `origin` → `destination` (state
/// codes).
pub fn sample_load(account: &AccountId, origin: &str, destination: &str) -> Load {
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
