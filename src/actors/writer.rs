//! What a change of a load (its status, its fields) is run with, and what
//! it produces: shared by the actor that runs it and the modules that plan
//! and write it, so that neither imports the other.

use crate::clock::Clock;
use crate::domain::event::Event;
use crate::domain::load::Load;
use crate::storage::Storage;

use super::carrier_locks::CarrierLocks;

/// What a change reads and writes through.
pub struct LoadWriter<'a> {
    pub storage: &'a dyn Storage,
    pub clock: &'a Clock,
    /// Held by an assignment from reading its carrier to writing the load.
    pub carriers: &'a CarrierLocks,
}

/// What a change produced: the load as it stands, and how many event
/// sequence numbers (from the one given) its events took.
pub struct Changed {
    pub load: Load,
    /// Committed with the change, numbered from the sequence given.
    pub events: Vec<Event>,
}
