//! Response shapes of webhook subscriptions and their delivery log.

use serde::Serialize;

use crate::domain::timestamp::format;
use crate::domain::webhook::{Delivery, DeliveryStatus, Subscription};

/// A subscription as clients see it: never its secret.
#[derive(Serialize)]
pub struct WebhookView<'a> {
    pub id: &'a str,
    pub url: &'a str,
    pub events: Vec<&'static str>,
    pub enabled: bool,
    pub disabled_reason: Option<&'a str>,
    pub created_at: String,
    pub updated_at: String,
}

impl<'a> WebhookView<'a> {
    pub fn new(s: &'a Subscription) -> Self {
        WebhookView {
            id: s.id.as_str(),
            url: &s.url,
            events: s.events.iter().map(|e| e.as_str()).collect(),
            enabled: s.enabled,
            disabled_reason: s.disabled_reason.as_deref(),
            created_at: format(&s.created_at),
            updated_at: format(&s.updated_at),
        }
    }
}

/// One entry of the delivery log; its id is the event id.
#[derive(Serialize)]
pub struct DeliveryView<'a> {
    pub id: &'a str,
    pub event_id: &'a str,
    pub event_type: &'static str,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub last_status_code: Option<u16>,
    pub last_error: Option<&'a str>,
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
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
