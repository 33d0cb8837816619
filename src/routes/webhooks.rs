//! `/v1/webhooks`: subscriptions, a signed test ping, and the delivery log.

use actix_web::{HttpResponse, web};

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery, Paging};
use crate::api::input::webhook::{NewSubscriptionInput, SubscriptionPatchInput};
use crate::api::path::{PathId, SecondPathId};
use crate::api::webhook_views::{DeliveryView, WebhookView};
use crate::domain::ids::{EventId, WebhookId};
use crate::openapi::params;
use crate::openapi::schemas::{
    DeletedWebhook, DeliveryList, Error, WebhookList, WebhookTestResult,
};
use crate::services::Services;
use crate::services::auth::Principal;

/// Subscribe a URL to events.
///
/// Each event is POSTed to the URL signed as Standard Webhooks does
/// (`webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once,
/// retried for about three days. Send a `secret`, or leave it out and the
/// service makes one; either way the answer carries `signing_secret` once, the
/// key in the `whsec_…` form that Standard Webhooks libraries verify with.
#[utoipa::path(
    post,
    path = "/v1/webhooks",
    operation_id = "create_webhook",
    tag = "webhooks",
    request_body(content = NewSubscriptionInput, example = json!({
        "url": "https://hooks.example.com/freight",
        "events": ["load.assigned", "delivery.completed"],
        "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    })),
    responses(
        (status = 201, description = "The subscription, with its signing secret (shown only \
         here).", body = Envelope<WebhookView>),
        (status = 409, description = "`TOO_MANY_WEBHOOKS`: an account may have at most 50; \
         delete one first.", body = Error),
    ),
)]
pub(crate) async fn create(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    JsonBody(input): JsonBody<NewSubscriptionInput>,
) -> Result<HttpResponse, ApiError> {
    let new = input.validate(services.webhooks.url_policy()).await?;
    let created = services
        .webhooks
        .create(principal.account_id(), new)
        .await?;
    Ok(envelope::created(WebhookView::with_signing_secret(
        &created,
    )))
}

/// List webhook subscriptions, newest first.
#[utoipa::path(
    get,
    path = "/v1/webhooks",
    operation_id = "list_webhooks",
    tag = "webhooks",
    params(params::Paging),
    responses((status = 200, description = "A page of subscriptions.", body = WebhookList)),
)]
pub(crate) async fn list(
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

/// Get a webhook subscription.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}",
    operation_id = "get_webhook",
    tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The subscription.")),
    responses((status = 200, description = "The subscription.", body = Envelope<WebhookView>)),
)]
pub(crate) async fn get(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: PathId<WebhookId>,
) -> Result<HttpResponse, ApiError> {
    let found = services
        .webhooks
        .get(principal.account_id(), &id.found()?)?;
    Ok(envelope::ok(WebhookView::new(&found)))
}

/// Change a webhook subscription; fields left out are kept.
#[utoipa::path(
    patch,
    path = "/v1/webhooks/{id}",
    operation_id = "update_webhook",
    tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The subscription.")),
    request_body(content = SubscriptionPatchInput, example = json!({"enabled": true})),
    responses((status = 200, description = "The subscription after the change; when the \
        change set a secret, with its `signing_secret` (shown only here).", body = Envelope<WebhookView>)),
)]
pub(crate) async fn update(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: PathId<WebhookId>,
    JsonBody(patch): JsonBody<SubscriptionPatchInput>,
) -> Result<HttpResponse, ApiError> {
    let patch = patch.validate(services.webhooks.url_policy()).await?;
    let new_secret = patch.secret.is_some();
    let updated = services
        .webhooks
        .update(principal.account_id(), &id.found()?, patch)
        .await?;
    Ok(match new_secret {
        true => envelope::ok(WebhookView::with_signing_secret(&updated)),
        false => envelope::ok(WebhookView::new(&updated)),
    })
}

/// Delete a webhook subscription and its pending deliveries.
#[utoipa::path(
    delete,
    path = "/v1/webhooks/{id}",
    operation_id = "delete_webhook",
    tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The subscription.")),
    responses((status = 200, description = "Deleted.", body = Envelope<DeletedWebhook>)),
)]
pub(crate) async fn delete(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: PathId<WebhookId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.found()?;
    services
        .webhooks
        .delete(principal.account_id(), &id)
        .await?;
    Ok(envelope::ok(
        serde_json::json!({"id": id.as_str(), "deleted": true}),
    ))
}

/// Send a signed `webhook.test` event now and report how the receiver answered.
///
/// The answer is 200 whether or not the receiver accepted the event.
#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/test",
    operation_id = "test_webhook",
    tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The subscription.")),
    responses((status = 200, description = "The attempt was made.", body = Envelope<WebhookTestResult>)),
)]
pub(crate) async fn test(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: PathId<WebhookId>,
) -> Result<HttpResponse, ApiError> {
    let (event_id, attempt) = services
        .webhooks
        .test(principal.account_id(), &id.found()?)
        .await?;
    let delivered = attempt.status_code.is_some_and(|s| (200..300).contains(&s));
    Ok(envelope::ok(serde_json::json!({
        "event_id": event_id,
        "delivered": delivered,
        "status_code": attempt.status_code,
        "error": attempt.error,
    })))
}

/// The delivery log of a subscription, newest event first.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}/deliveries",
    operation_id = "list_webhook_deliveries",
    tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The subscription."), params::Paging),
    responses((status = 200, description = "A page of deliveries.", body = DeliveryList)),
)]
pub(crate) async fn deliveries(
    principal: Principal,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
    paging: Paging,
) -> Result<HttpResponse, ApiError> {
    let found = services
        .webhooks
        .deliveries(principal.account_id(), &id.found()?, paging.request())
        .await?;
    let views: Vec<DeliveryView> = found.items.iter().map(DeliveryView::new).collect();
    Ok(envelope::list(
        "deliveries",
        views,
        paging.info(found.total),
    ))
}

/// Send a delivery again now, under the same event id.
#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver",
    operation_id = "redeliver_webhook_delivery",
    tag = "webhooks",
    params(
        ("id" = WebhookId, Path, description = "The subscription."),
        ("delivery_id" = EventId, Path, description = "The delivery: its event id."),
    ),
    responses(
        (status = 202, description = "Another attempt is scheduled now.", body = Envelope<DeliveryView>),
        (status = 404, description = "`WEBHOOK_NOT_FOUND`, or `DELIVERY_NOT_FOUND` when this \
         subscription has no delivery of that event.", body = Error),
    ),
)]
pub(crate) async fn redeliver(
    principal: Principal,
    services: web::Data<Services>,
    _: NoQuery,
    id: PathId<WebhookId>,
    delivery: SecondPathId<EventId>,
) -> Result<HttpResponse, ApiError> {
    // The webhook first: another account's (or a missing) webhook is not found,
    // whatever delivery the path names.
    let id = id.found()?;
    services.webhooks.get(principal.account_id(), &id)?;
    let scheduled = services
        .webhooks
        .redeliver(principal.account_id(), &id, &delivery.found()?)
        .await?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({
        "success": true,
        "data": DeliveryView::new(&scheduled),
    })))
}

resources! {
    "/webhooks" => [GET => list, POST => create],
    "/webhooks/{id}" => [GET => get, PATCH => update, DELETE => delete],
    "/webhooks/{id}/test" => [POST => test],
    "/webhooks/{id}/deliveries" => [GET => deliveries],
    "/webhooks/{id}/deliveries/{delivery_id}/redeliver" => [POST => redeliver],
}
