//! Response shapes of webhook subscriptions and their delivery log.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::event::EventType;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::timestamp::format;
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};

/// A subscription as clients see it: never its secret as sent.
#[derive(Serialize, ToSchema)]
#[schema(as = Webhook)]
pub struct WebhookView<'a> {
    #[schema(value_type = WebhookId)]
    pub id: &'a str,
    #[schema(value_type = String)]
    pub url: &'a str,
    #[schema(value_type = Vec<EventType>)]
    pub events: Vec<&'static str>,
    pub enabled: bool,
    /// Why the service disabled it (the receiver answered 410, or failed for
    /// about three days); null when enabled or disabled by the client.
    #[schema(required = true, value_type = Option<String>)]
    pub disabled_reason: Option<&'a str>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Only in the answer to the request that set the secret (creating the
    /// subscription, or a change of `secret`): the signing key in the
    /// `whsec_<base64>` form Standard Webhooks libraries take
    /// (`Webhook(signing_secret).verify(body, headers)`); for a plain secret,
    /// its UTF-8 bytes in base64. Never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub signing_secret: Option<String>,
}

impl<'a> WebhookView<'a> {
    /// The subscription with its signing secret, for the answer that set it.
    pub fn with_signing_secret(s: &'a Subscription) -> Self {
        WebhookView {
            signing_secret: Some(crate::webhooks::signing::signing_secret(&s.secret)),
            ..WebhookView::new(s)
        }
    }

    pub fn new(s: &'a Subscription) -> Self {
        WebhookView {
            id: s.id.as_str(),
            url: &s.url,
            events: s.events.iter().map(|e| e.as_str()).collect(),
            enabled: s.enabled,
            disabled_reason: s.disabled_reason.as_deref(),
            created_at: format(&s.created_at),
            updated_at: format(&s.updated_at),
            signing_secret: None,
        }
    }
}

/// One entry of the delivery log; its id is the event id.
#[derive(Serialize, ToSchema)]
#[schema(as = Delivery)]
pub struct DeliveryView<'a> {
    #[schema(value_type = EventId)]
    pub id: &'a str,
    #[schema(value_type = EventId)]
    pub event_id: &'a str,
    #[schema(value_type = EventType)]
    pub event_type: &'static str,
    pub status: DeliveryStatus,
    pub attempts: u32,
    /// The receiver's HTTP status on the last attempt; null if it did not answer.
    #[schema(required = true)]
    pub last_status_code: Option<u16>,
    #[schema(required = true, value_type = Option<String>)]
    pub last_error: Option<&'a str>,
    #[schema(required = true, format = DateTime)]
    pub next_attempt_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub delivered_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl<'a> DeliveryView<'a> {
    pub fn new(d: &'a Delivery) -> Self {
        DeliveryView {
            id: d.event_id.as_str(),
            event_id: d.event_id.as_str(),
            event_type: d.event_type.as_str(),
            status: d.status,
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error.as_deref(),
            next_attempt_at: d.next_attempt_at.as_ref().map(format),
            delivered_at: d.delivered_at.as_ref().map(format),
            created_at: format(&d.created_at),
        }
    }
}
