//! `/v1/webhooks`: subscriptions, a signed test ping, and the delivery log.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;

use crate::api::envelope::{self, PageInfo};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, QueryParams, page_request};
use crate::domain::timestamp::format;
use crate::domain::webhook::{
    Delivery, NewSubscriptionInput, Subscription, SubscriptionPatchInput,
};
use crate::services::Services;
use crate::services::auth::Principal;

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
    pub status: crate::domain::webhook::DeliveryStatus,
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

async fn create(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    JsonBody(input): JsonBody<NewSubscriptionInput>,
) -> Result<HttpResponse, ApiError> {
    let created = services
        .webhooks
        .create(principal.account_id(), input)
        .await?;
    Ok(envelope::created(WebhookView::new(&created)))
}

async fn list(
    principal: Principal,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let (page, limit) = query.pagination();
    query.finish()?;
    let found = services
        .webhooks
        .list(principal.account_id(), page_request(page, limit));
    let views: Vec<WebhookView> = found.items.iter().map(|s| WebhookView::new(s)).collect();
    Ok(envelope::list(
        "webhooks",
        views,
        PageInfo {
            page,
            limit,
            total: found.total,
        },
    ))
}

async fn get(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = services.webhooks.get(principal.account_id(), &id)?;
    Ok(envelope::ok(WebhookView::new(&found)))
}

async fn update(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: web::Path<String>,
    JsonBody(patch): JsonBody<SubscriptionPatchInput>,
) -> Result<HttpResponse, ApiError> {
    let updated = services
        .webhooks
        .update(principal.account_id(), &id, patch)
        .await?;
    Ok(envelope::ok(WebhookView::new(&updated)))
}

async fn delete(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    services
        .webhooks
        .delete(principal.account_id(), &id)
        .await?;
    Ok(envelope::ok(
        serde_json::json!({"id": id.as_str(), "deleted": true}),
    ))
}

async fn test(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (event_id, attempt) = services.webhooks.test(principal.account_id(), &id).await?;
    let delivered = attempt.status_code.is_some_and(|s| (200..300).contains(&s));
    Ok(envelope::ok(serde_json::json!({
        "event_id": event_id,
        "delivered": delivered,
        "status_code": attempt.status_code,
        "error": attempt.error,
    })))
}

async fn deliveries(
    principal: Principal,
    services: web::Data<Services>,
    id: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = QueryParams::parse(&req)?;
    let (page, limit) = query.pagination();
    query.finish()?;
    let found = services
        .webhooks
        .deliveries(principal.account_id(), &id, page_request(page, limit))
        .await?;
    let views: Vec<DeliveryView> = found.items.iter().map(DeliveryView::new).collect();
    Ok(envelope::list(
        "deliveries",
        views,
        PageInfo {
            page,
            limit,
            total: found.total,
        },
    ))
}

async fn redeliver(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, delivery) = path.into_inner();
    let scheduled = services
        .webhooks
        .redeliver(principal.account_id(), &id, &delivery)
        .await?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({
        "success": true,
        "data": DeliveryView::new(&scheduled),
    })))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/webhooks")
            .route(web::post().to(create))
            .route(web::get().to(list))
            .default_service(super::only("GET, POST")),
    )
    .service(
        web::resource("/webhooks/{id}")
            .route(web::get().to(get))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(super::only("GET, PATCH, DELETE")),
    )
    .service(
        web::resource("/webhooks/{id}/test")
            .route(web::post().to(test))
            .default_service(super::only("POST")),
    )
    .service(
        web::resource("/webhooks/{id}/deliveries")
            .route(web::get().to(deliveries))
            .default_service(super::only("GET")),
    )
    .service(
        web::resource("/webhooks/{id}/deliveries/{delivery_id}/redeliver")
            .route(web::post().to(redeliver))
            .default_service(super::only("POST")),
    );
}
