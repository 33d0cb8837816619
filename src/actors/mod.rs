//! The actors: one per active load (its state and latest position, the only
//! writer of that load) with what a status change and an edit do, the registry that
//! finds or starts them, and the group committer that makes GPS points durable
//! in batches. Below the services, which send them messages; above storage.

pub mod carrier_locks;
pub mod load_actor;
mod load_edit;
mod load_error;
pub mod load_state;
pub mod registry;
pub mod status_change;
mod writer;

pub use load_error::LoadError;
