//! One delivery attempt: where it may go, how it is signed and sent, and what
//! the delivery becomes after it (delivered, retried on the schedule, or failed
//! and its subscription disabled). Pure apart from the request itself, so the
//! retry rules are tested without a dispatcher.

use actix_web::web::Bytes;
use chrono::{DateTime, Utc};

use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};

use super::client::literal_forbidden;
use super::retry::RetryPolicy;
use super::signing::Signer;
use crate::clock::Clock;
use crate::domain::ids::EventId;
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription, UrlPolicy, parse_url};

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");
const WEBHOOK_TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
const WEBHOOK_SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");

/// Where and how one version of a subscription is called: its URL, checked
/// against the URL rules again at send time (an IP literal never reaches the
/// guarded resolver), or why it may not be called; and its prepared signing key.
/// Made once per subscription version, not per attempt.
pub struct Endpoint {
    /// The subscription's id, for log lines.
    webhook: crate::domain::ids::WebhookId,
    url: Result<reqwest::Url, String>,
    signer: Signer,
}

impl Endpoint {
    pub fn new(subscription: &Subscription, url_policy: UrlPolicy) -> Self {
        Endpoint {
            webhook: subscription.id.clone(),
            url: checked_url(subscription, url_policy),
            signer: Signer::new(&subscription.secret),
        }
    }
}

fn checked_url(subscription: &Subscription, url_policy: UrlPolicy) -> Result<reqwest::Url, String> {
    let url = parse_url(&subscription.url, url_policy).map_err(|m| format!("the URL {m}"))?;
    if literal_forbidden(&url.host, url_policy) {
        return Err("the URL points at an address webhooks may not reach".into());
    }
    reqwest::Url::parse(&url.url).map_err(|e| format!("the URL is invalid: {e}"))
}

/// Sends one signed attempt to `endpoint`. Never fails: every problem is the
/// attempt's outcome.
pub async fn attempt(
    client: &reqwest::Client,
    clock: &Clock,
    endpoint: &Endpoint,
    event_id: &EventId,
    body: Bytes,
) -> Attempt {
    let refused = |error: String| Attempt {
        status_code: None,
        error: Some(error),
    };
    let url = match &endpoint.url {
        Ok(url) => url.clone(),
        Err(error) => return refused(error.clone()),
    };
    let (Ok(id), timestamp) = (
        HeaderValue::from_str(event_id.as_str()),
        HeaderValue::from(clock.now().timestamp()),
    ) else {
        return refused(format!("the event id {event_id} cannot be a header"));
    };
    let signature = endpoint
        .signer
        .sign(event_id.as_str(), timestamp.as_bytes(), &body);
    let mut request = reqwest::Request::new(reqwest::Method::POST, url);
    let headers = request.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(WEBHOOK_ID, id);
    headers.insert(WEBHOOK_TIMESTAMP, timestamp);
    headers.insert(
        WEBHOOK_SIGNATURE,
        HeaderValue::try_from(signature).expect("base64 is a valid header value"),
    );
    *request.body_mut() = Some(body.into());
    let sent = client.execute(request).await;
    match sent {
        Ok(response) => {
            let status = response.status();
            discard_answer(response).await;
            Attempt {
                status_code: Some(status.as_u16()),
                error: (!status.is_success()).then(|| format!("the receiver answered {status}")),
            }
        }
        Err(error) => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            // A receiver's fault (refused connection, bad certificate, timeout),
            // not the service's: the delivery log shows it to its owner; the
            // operator sees it only at debug.
            tracing::debug!(webhook = %endpoint.webhook, event = %event_id, error = %message, "webhook attempt failed");
            refused(message)
        }
    }
}

/// The most of a receiver's answer that is read. An answer is read to its end
/// so that its connection goes back to the pool; but nothing bounds what a
/// receiver may send back, and up to `max_in_flight` answers are read at once,
/// so a receiver that answers with a large or endless body must not make the
/// dispatcher read (and hold) all of it until the request's timeout.
const ANSWER_READ_LIMIT: usize = 64 * 1024;

/// Reads the answer's body and throws it away, up to [`ANSWER_READ_LIMIT`]:
/// past it, the response is dropped unread, which closes its connection
/// instead of reusing it. The attempt's outcome is the status either way.
async fn discard_answer(mut response: reqwest::Response) {
    let mut read = 0;
    while let Ok(Some(chunk)) = response.chunk().await {
        read += chunk.len();
        if read > ANSWER_READ_LIMIT {
            return;
        }
    }
}

/// The delivery after an attempt, and the reason to disable its subscription, if any.
pub fn after_attempt(
    delivery: &Delivery,
    attempt: &Attempt,
    retry: &RetryPolicy,
    now: DateTime<Utc>,
) -> (Delivery, Option<String>) {
    let attempts = delivery.attempts + 1;
    let mut next = Delivery {
        attempts,
        last_status_code: attempt.status_code,
        last_error: attempt.error.clone(),
        ..delivery.clone()
    };
    if attempt.status_code.is_some_and(|s| (200..300).contains(&s)) {
        next.status = DeliveryStatus::Delivered;
        next.delivered_at = Some(now);
        next.next_attempt_at = None;
        return (next, None);
    }
    if attempt.status_code == Some(410) {
        next.status = DeliveryStatus::Failed;
        next.next_attempt_at = None;
        return (
            next,
            Some(format!(
                "the receiver answered 410 Gone to {} at {}",
                delivery.event_id,
                crate::domain::timestamp::format(&now)
            )),
        );
    }
    match retry.delay_before(attempts + 1) {
        Some(delay) => {
            next.next_attempt_at =
                Some(now + chrono::Duration::from_std(delay).unwrap_or_default());
            (next, None)
        }
        None => {
            next.status = DeliveryStatus::Failed;
            next.next_attempt_at = None;
            let since = crate::domain::timestamp::format(&delivery.created_at);
            let reason = format!(
                "every one of {attempts} attempts to deliver {} since {since} failed; the last: {}",
                delivery.event_id,
                attempt.error.as_deref().unwrap_or("unknown error")
            );
            (next, Some(reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;
    use crate::domain::ids::WebhookId;

    fn delivery(now: DateTime<Utc>) -> Delivery {
        Delivery::new(
            WebhookId::generate(),
            EventId::generate(),
            EventType::LoadCreated,
            now,
        )
    }

    fn failed(code: Option<u16>) -> Attempt {
        Attempt {
            status_code: code,
            error: Some("down".into()),
        }
    }

    #[test]
    fn failures_follow_the_schedule_then_fail_and_disable() {
        let retry = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        let start = Utc::now();
        let mut current = delivery(start);
        let mut now = start;
        let mut waits = Vec::new();
        loop {
            let (next, disable) = after_attempt(&current, &failed(Some(500)), &retry, now);
            if next.status == DeliveryStatus::Failed {
                assert_eq!(next.attempts, 10);
                assert!(disable.unwrap().contains("every one of 10 attempts"));
                break;
            }
            assert!(disable.is_none());
            let at = next.next_attempt_at.unwrap();
            waits.push((at - now).num_seconds());
            now = at;
            current = next;
        }
        assert_eq!(
            waits,
            [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        );
    }

    /// A receiver that answers 200 with a body that never ends, writing until the
    /// client stops reading; it reports how many bytes it managed to write.
    async fn endless_receiver() -> (String, tokio::task::JoinHandle<usize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let writer = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            // The request: headers, then a short body; its end is not needed.
            let mut request = vec![0u8; 4096];
            let _ = socket.read(&mut request).await.unwrap();
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            let chunk = format!("{:x}\r\n{}\r\n", 8192, "x".repeat(8192));
            let mut written = 0;
            while socket.write_all(chunk.as_bytes()).await.is_ok() {
                written += chunk.len();
            }
            written
        });
        (url, writer)
    }

    #[tokio::test]
    async fn an_endless_answer_is_read_only_up_to_the_limit() {
        let (url, writer) = endless_receiver().await;
        let now = Utc::now();
        let subscription = Subscription {
            id: WebhookId::generate(),
            account_id: crate::domain::ids::AccountId::generate(),
            url,
            events: vec![EventType::LoadCreated],
            secret: "whsec_test".into(),
            enabled: true,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
        };
        let policy = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let endpoint = Endpoint::new(&subscription, policy);
        let sent = attempt(
            &crate::webhooks::client::build(policy, None),
            &Clock::system(),
            &endpoint,
            &EventId::generate(),
            Bytes::from_static(b"{}"),
        )
        .await;
        assert_eq!(
            sent,
            Attempt {
                status_code: Some(200),
                error: None
            }
        );
        // Read to its end, the body would have flowed until the request's
        // 10 s timeout; dropped at the limit, the connection closes and the
        // receiver's writes fail once the socket buffers between the two are
        // full (a few MiB on loopback). A connection left open unread would
        // block the receiver for good: the bound turns that into a failure.
        let written = tokio::time::timeout(std::time::Duration::from_secs(60), writer)
            .await
            .expect("the client closed the connection it stopped reading")
            .unwrap();
        assert!(
            written < 64 * 1024 * 1024,
            "the receiver wrote {written} bytes before the client stopped reading"
        );
    }

    #[test]
    fn success_and_gone() {
        let now = Utc::now();
        let ok = Attempt {
            status_code: Some(204),
            error: None,
        };
        let (delivered, disable) = after_attempt(&delivery(now), &ok, &RetryPolicy::default(), now);
        assert_eq!(delivered.status, DeliveryStatus::Delivered);
        assert_eq!(delivered.delivered_at, Some(now));
        assert!(disable.is_none());
        let (gone, disable) = after_attempt(
            &delivery(now),
            &failed(Some(410)),
            &RetryPolicy::default(),
            now,
        );
        assert_eq!(gone.status, DeliveryStatus::Failed);
        assert!(disable.unwrap().contains("410"));
        let (retrying, _) =
            after_attempt(&delivery(now), &failed(None), &RetryPolicy::default(), now);
        assert_eq!(retrying.status, DeliveryStatus::Pending);
        assert_eq!(retrying.attempts, 1);
    }
}
