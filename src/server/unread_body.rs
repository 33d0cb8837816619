//! A request body its handler left unread is read and dropped before the
//! answer goes out.
//!
//! Refusals come before the body is needed: a bad key (401), a missing
//! permission (403), an unknown route (404), a body too large (413), the wrong
//! media type (415), a used-up quota (429). Closing a connection with unread
//! data in its receive buffer sends a TCP reset, and a client still writing its
//! body (Python's `http.client`, schemathesis and most SDKs do not wait for
//! `100 Continue`) loses the answer: it sees a TLS EOF instead of the 401. With
//! the body read, the answer arrives and the connection can even be kept.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use actix_web::web::Bytes;
use futures_util::Stream;

/// Unread bytes beyond this are not read: the connection is closed instead.
/// Reading costs bandwidth a client chose to spend; a cap keeps it bounded.
pub const MAX_DRAINED_BYTES: usize = 8 * 1024 * 1024;
/// Nor is a body that takes longer than this to arrive (a client trickling it).
const MAX_DRAIN_TIME: Duration = Duration::from_secs(5);

/// The request's body, shared between its handler (which reads what it needs)
/// and the middleware that drains the rest.
pub struct UnreadBody(Rc<RefCell<Payload>>);

impl UnreadBody {
    /// Puts a handle to the request's body in its place, when it has one (a
    /// request without `Content-Length` or `Transfer-Encoding` has none).
    pub fn watch(req: &mut ServiceRequest) -> Option<Self> {
        let headers = req.headers();
        let declared = headers
            .get(CONTENT_LENGTH)
            .is_some_and(|len| len.as_bytes() != b"0");
        if !declared && !headers.contains_key(TRANSFER_ENCODING) {
            return None;
        }
        let (_, payload) = req.parts_mut();
        let shared = Rc::new(RefCell::new(std::mem::replace(payload, Payload::None)));
        *payload = Payload::from(Box::pin(Shared(shared.clone())) as Pin<Box<_>>);
        Some(UnreadBody(shared))
    }

    /// Reads what the handler left and drops it, within the byte and time caps.
    pub async fn drain(self) {
        let reading = async {
            let mut seen = 0;
            while let Some(Ok(chunk)) =
                futures_util::StreamExt::next(&mut Shared(self.0.clone())).await
            {
                seen += chunk.len();
                if seen > MAX_DRAINED_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(MAX_DRAIN_TIME, reading).await;
    }
}

/// The body as a stream, read through the shared handle.
struct Shared(Rc<RefCell<Payload>>);

impl Stream for Shared {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_next(cx)
    }
}
