//! "The service cannot do this right now": a part of the running service that a
//! request needs (a load's actor, the GPS committer, the webhook dispatcher, a
//! worker task) has stopped or is going away. Not a storage failure: nothing
//! was read or written because of it, so clients see `503 SERVICE_UNAVAILABLE`
//! with `Retry-After` rather than `STORAGE_UNAVAILABLE`, and a retry usually
//! succeeds (a load's actor starts again on the next message; the others are
//! only gone during shutdown).

use std::sync::Arc;

use crate::domain::ids::LoadId;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    /// The load's actor stopped every time a message was sent to it.
    #[error("the actor of load {load} stopped {attempts} times in a row")]
    LoadActor { load: LoadId, attempts: usize },
    /// Another instance holds the load's lease (it acts for the load; see
    /// `Coordination::lease_load`): the request is forwarded to `holder` (an
    /// instance name) when it is known (`cluster::forward`), and answered 503
    /// only when it is not, or cannot be reached (it died and its lease has
    /// not expired yet).
    #[error("load {load} is served by another instance")]
    LeasedElsewhere {
        load: LoadId,
        holder: Option<Arc<str>>,
    },
    /// The instance holding a load's lease could not be reached, or did not
    /// answer, when a request was forwarded to it.
    #[error("instance {instance} acting for the load could not be reached")]
    HolderUnreachable { instance: Arc<str> },
    /// GPS ingest is more than storage absorbs right now: the committer's queue
    /// is full, and the fixes were refused rather than queued without bound.
    #[error("GPS ingest is over what storage absorbs; the fixes were not taken")]
    GpsOverloaded,
    /// The GPS group committer is gone (the service is shutting down).
    #[error("the GPS committer has stopped")]
    GpsCommitter,
    /// The webhook dispatcher is not running or did not answer.
    #[error("the webhook dispatcher is not running")]
    WebhookDispatcher(#[source] Option<Arc<actix::MailboxError>>),
    /// A task doing part of the request ended without an answer (it panicked or
    /// its runtime is shutting down).
    #[error("a worker task ended without answering")]
    Task(#[source] Arc<tokio::task::JoinError>),
}

impl Unavailable {
    pub fn dispatcher(error: actix::MailboxError) -> Self {
        Unavailable::WebhookDispatcher(Some(Arc::new(error)))
    }

    pub fn task(error: tokio::task::JoinError) -> Self {
        Unavailable::Task(Arc::new(error))
    }
}
