//! What can go wrong with a load: the answer of its actor, and of the
//! services that go through it.

use crate::domain::ids::{CarrierId, LoadId};
use crate::domain::load::{EditError, LoadStatus, TransitionError};
use crate::storage::StorageError;
use crate::unavailable::Unavailable;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error("load not found")]
    NotFound,
    #[error("carrier {0} does not exist in this account")]
    UnknownCarrier(CarrierId),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("a load in status {0} does not take GPS fixes")]
    NotTrackable(LoadStatus),
    /// Another load of the account has this `reference`.
    #[error("the reference is taken by load {0}")]
    ReferenceTaken(LoadId),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}
