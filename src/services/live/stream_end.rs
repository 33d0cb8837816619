//! Why a stream ends on the server's side, and the refusal of one stream too many.

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::json;

/// Why a stream ended on the server's side: its credential no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The API key was revoked or deleted.
    KeyRevoked,
    /// The API key passed its expiry.
    KeyExpired,
    /// The operator disabled the account.
    AccountDisabled,
    /// The session was signed out (here, or "everywhere else"), or its user
    /// was removed or changed their password.
    SessionEnded,
    /// The session passed its lifetime.
    SessionExpired,
}

impl StreamEnd {
    /// The `event:` of the last frame: `expired` or `revoked`.
    pub fn event(self) -> &'static str {
        match self {
            StreamEnd::KeyExpired | StreamEnd::SessionExpired => "expired",
            StreamEnd::KeyRevoked | StreamEnd::AccountDisabled | StreamEnd::SessionEnded => {
                "revoked"
            }
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            StreamEnd::KeyRevoked => "key_revoked",
            StreamEnd::KeyExpired => "key_expired",
            StreamEnd::AccountDisabled => "account_disabled",
            StreamEnd::SessionEnded => "session_ended",
            StreamEnd::SessionExpired => "session_expired",
        }
    }

    fn message(self) -> &'static str {
        match self {
            StreamEnd::KeyRevoked => "the API key this stream was opened with has been revoked",
            StreamEnd::KeyExpired => "the API key this stream was opened with has expired",
            StreamEnd::AccountDisabled => "the account has been disabled",
            StreamEnd::SessionEnded => "this dashboard session has been signed out",
            StreamEnd::SessionExpired => "this dashboard session has expired; log in again",
        }
    }
}

/// Resolves when the stream's credential no longer holds, saying why.
pub type Ending = BoxFuture<'static, StreamEnd>;

/// The account holds as many streams open as its plan allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this account already has {limit} live streams open, the most its plan allows")]
pub struct TooManyStreams {
    pub limit: u32,
}

/// The last frame of a stream whose credential ended.
pub(super) fn ending_frame(end: StreamEnd) -> Bytes {
    let data = json!({"reason": end.reason(), "message": end.message()});
    Bytes::from(format!("event: {}\ndata: {data}\n\n", end.event()))
}
