//! The actors: one per active load (its state and latest position, the only
//! writer of that load), the registry that finds or starts them, and the group
//! committer that makes GPS points durable in batches.

pub mod group_commit;
pub mod load_actor;
mod load_error;
pub mod registry;
pub mod status_change;

pub use load_error::LoadError;
