//! Reading a request's body whole: capped in size (413 beyond the cap) and in
//! time (408 when it arrives too slowly), on every route that reads one.
//!
//! actix-web bounds the time a request's head may take, not its body. A client
//! that declares a large body and sends a byte now and then would otherwise
//! hold a connection (and its buffers) for as long as it likes, for free. So a
//! body must keep up a minimum rate once a grace period has passed: by time
//! `t` after the read began, at least `(t - BODY_GRACE) × BODY_MIN_RATE` bytes
//! must have arrived. A phone on a poor mobile link sends far faster than that
//! floor; a trickle is cut within seconds of the grace period.

use std::time::Duration;

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap};
use actix_web::web;
use futures_util::StreamExt;
use serde_json::json;

use super::error::ApiError;
use super::extract::{BATCH_BODY_LIMIT, BodyLimit, DEFAULT_BODY_LIMIT};

/// How long a body may take before the minimum rate applies (as long as the
/// request's head may take).
pub const BODY_GRACE: Duration = Duration::from_secs(10);
/// The slowest a body may arrive after the grace period, in bytes a second
/// (128 kbit/s): the largest body (1 MiB) then still has over a minute.
pub const BODY_MIN_RATE: u64 = 16 * 1024;

/// The `Content-Length` a request declares, if it is a number.
pub fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
}

/// Reads a request's whole body in a middleware and puts it back for the
/// handler: the request and its body, or the request and the refusal (413,
/// 408, unreadable). The cap is the largest any route allows; a route's own
/// cap applies when its handler reads the body again.
pub async fn buffer_body(
    req: ServiceRequest,
) -> Result<(ServiceRequest, web::Bytes), (ServiceRequest, ApiError)> {
    let limit = req
        .app_data::<web::Data<BodyLimit>>()
        .map_or(DEFAULT_BODY_LIMIT, |l| l.0)
        .max(BATCH_BODY_LIMIT);
    let declared = declared_length(req.headers());
    let (http, mut payload) = req.into_parts();
    match read_capped(&mut payload, declared, limit).await {
        Ok(body) => Ok((
            ServiceRequest::from_parts(http, Payload::from(body.clone())),
            body,
        )),
        Err(error) => Err((ServiceRequest::from_parts(http, payload), error)),
    }
}

/// Reads a whole body of at most `limit` bytes (413 beyond it), arriving at
/// no less than the minimum rate (408 otherwise).
pub async fn read_capped(
    payload: &mut Payload,
    declared_len: Option<usize>,
    limit: usize,
) -> Result<web::Bytes, ApiError> {
    // What is left unread of a refused body is read and dropped by the
    // outermost middleware (`server::unread_body`, itself bounded in bytes and
    // time) before the answer goes out.
    if declared_len.is_some_and(|len| len > limit) {
        return Err(too_large(limit));
    }
    let started = tokio::time::Instant::now();
    let mut body = web::BytesMut::with_capacity(declared_len.unwrap_or(1024).min(limit));
    loop {
        let due =
            started + BODY_GRACE + Duration::from_millis(body.len() as u64 * 1000 / BODY_MIN_RATE);
        let chunk = match tokio::time::timeout_at(due, payload.next()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(_) => return Err(too_slow(body.len())),
        };
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "MALFORMED_BODY",
                format!("the request body could not be read: {e}"),
            )
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
        format!("the request body exceeds the limit of {limit} bytes"),
    )
    .with_details(json!({"limit_bytes": limit}))
}

fn too_slow(received: usize) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "BODY_TOO_SLOW",
        format!(
            "the request body arrived too slowly: after the first {} s it must keep up {} KiB/s; send it whole",
            BODY_GRACE.as_secs(),
            BODY_MIN_RATE / 1024
        ),
    )
    .with_details(json!({
        "received_bytes": received,
        "grace_seconds": BODY_GRACE.as_secs(),
        "min_bytes_per_second": BODY_MIN_RATE,
    }))
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;

    use actix_web::error::PayloadError;
    use futures_util::Stream;
    use tokio::sync::mpsc;

    use super::*;

    /// A body whose chunks the test sends when it likes.
    fn trickle() -> (mpsc::UnboundedSender<&'static [u8]>, Payload) {
        let (tx, mut rx) = mpsc::unbounded_channel::<&'static [u8]>();
        let stream = async_stream(move |cx| rx.poll_recv(cx));
        (tx, Payload::from(stream))
    }

    fn async_stream(
        mut next: impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<&'static [u8]>>
        + 'static,
    ) -> Pin<Box<dyn Stream<Item = Result<web::Bytes, PayloadError>>>> {
        Box::pin(futures_util::stream::poll_fn(move |cx| {
            next(cx).map(|chunk| chunk.map(|c| Ok(web::Bytes::from_static(c))))
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_body_is_cut_once_the_grace_period_is_over() {
        let (tx, mut payload) = trickle();
        let reading = async move {
            let started = tokio::time::Instant::now();
            let result = read_capped(&mut payload, Some(1_000_000), BATCH_BODY_LIMIT).await;
            (result.map(|b| b.len()), started.elapsed())
        };
        // A byte every 9 s: each gap is within any per-chunk timeout, but the
        // body falls behind the minimum rate at once after the grace period.
        let sending = async move {
            for _ in 0..3 {
                let _ = tx.send(b"x");
                tokio::time::sleep(Duration::from_secs(9)).await;
            }
        };
        let ((result, took), ()) = tokio::join!(reading, sending);
        let error = result.expect_err("a trickle is refused");
        assert_eq!(error.status, StatusCode::REQUEST_TIMEOUT);
        assert_eq!(error.code, "BODY_TOO_SLOW");
        assert!(took <= BODY_GRACE + Duration::from_secs(1), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_at_the_minimum_rate_is_read_whole() {
        let (tx, mut payload) = trickle();
        let reading = async move {
            read_capped(&mut payload, None, BATCH_BODY_LIMIT)
                .await
                .map(|b| b.len())
        };
        // Nothing for most of the grace period, then 8 KiB every half second
        // (the minimum rate exactly) for 20 s.
        static CHUNK: [u8; 8 * 1024] = [b'a'; 8 * 1024];
        let sending = async move {
            tokio::time::sleep(BODY_GRACE - Duration::from_millis(100)).await;
            for _ in 0..40 {
                tx.send(&CHUNK).unwrap();
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        };
        let (read, ()) = tokio::join!(reading, sending);
        assert_eq!(read.unwrap(), 40 * 8 * 1024);
    }
}
