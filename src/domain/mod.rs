//! Domain types: everything past the HTTP boundary sees these, never raw strings
//! or unchecked numbers. The bottom layer: it imports nothing of the crate but
//! itself and `geo`. What clients send is turned into these types by the inputs
//! at the boundary (`api::input`), with the parsing rules defined here.

pub mod account;
pub mod api_key;
pub mod carrier;
pub mod device;
pub mod equipment;
pub mod eta;
pub mod event;
pub mod fix;
#[cfg(test)]
#[path = "../../tests/storage/fixtures.rs"]
pub(crate) mod fixtures;
pub mod hos;
pub mod idempotency;
pub mod ids;
pub mod load;
pub mod local_time;
pub mod location;
pub mod password_link;
pub mod route_eta;
pub mod share_link;
pub mod speed_history;
pub mod stop_etas;
pub mod stop_plan;
pub mod stops;
pub mod timestamp;
pub mod tracking;
pub mod user;
pub mod validation;
pub mod webhook;
