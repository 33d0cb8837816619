//! `/v1/webhooks`: subscriptions, a signed test ping, and the delivery log.

use actix_web::{HttpResponse, web};

use crate::api::envelope;
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::webhook_views::{DeliveryView, WebhookView};
use crate::domain::webhook::{NewSubscriptionInput, SubscriptionPatchInput};
use crate::services::Services;
use crate::services::auth::Principal;

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
    paging: Paging,
) -> Result<HttpResponse, ApiError> {
    let found = services
        .webhooks
        .list(principal.account_id(), paging.request());
    let views: Vec<WebhookView> = found.items.iter().map(|s| WebhookView::new(s)).collect();
    Ok(envelope::list("webhooks", views, paging.info(found.total)))
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
    paging: Paging,
) -> Result<HttpResponse, ApiError> {
    let found = services
        .webhooks
        .deliveries(principal.account_id(), &id, paging.request())
        .await?;
    let views: Vec<DeliveryView> = found.items.iter().map(DeliveryView::new).collect();
    Ok(envelope::list(
        "deliveries",
        views,
        paging.info(found.total),
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
