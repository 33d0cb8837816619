//! Webhooks: subscriptions; each one's page (test, disable or enable, edit,
//! delete) with its delivery log and a redeliver button.

use actix_web::{HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::form::Form;
use super::page::{self, Section};
use super::session::Viewer;
use super::widgets::when;
use super::widgets::{Kind, Problems, checkboxes, field};
use crate::api::input::webhook::{NewSubscriptionInput, SubscriptionPatchInput};
use crate::api::path::{PathId, SecondPathId};
use crate::domain::event::EventType;
use crate::domain::ids::{EventId, WebhookId};
use crate::domain::webhook::{Delivery, Subscription, SubscriptionPatch};
use crate::services::Services;
use crate::services::webhooks::WebhookError;
use crate::storage::PageRequest;

/// Deliveries shown on a subscription's page, newest event first.
const LOG_SIZE: u32 = 50;
/// Of those, listed before "Show more" (a phone's screen or two).
const LOG_FIRST: usize = 10;

pub async fn list(viewer: Viewer, services: web::Data<Services>) -> HttpResponse {
    page::ok(list_view(
        &services,
        &viewer,
        &Form::empty(),
        &Problems::default(),
    ))
}

pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let input = NewSubscriptionInput {
        url: form.text("url"),
        events: Some(form.all("events")),
        secret: form.raw("secret").filter(|s| !s.is_empty()),
    };
    let bad_request = |problems: Problems| {
        page::respond(
            actix_web::http::StatusCode::BAD_REQUEST,
            list_view(&services, &viewer, &form, &problems),
        )
    };
    let new = match input.validate(services.webhooks.url_policy()).await {
        Ok(new) => new,
        Err(errors) => return Ok(bad_request(Problems::from_validation(&errors))),
    };
    match services.webhooks.create(viewer.account_id(), new).await {
        // The webhook's page, with its signing secret this once (a redirect
        // would have to carry the secret in a URL).
        Ok(created) => {
            let secret = crate::webhooks::signing::signing_secret(&created.secret);
            let shown = Shown {
                signing_secret: Some(&secret),
                ..Shown::default()
            };
            webhook_page(&viewer, &services, &created.id, shown).await
        }
        Err(WebhookError::TooMany) => Ok(bad_request(Problems::one(
            "",
            "This account has as many webhooks as it may have; delete one first.",
        ))),
        Err(error) => Err(webhook_error(error)),
    }
}

pub async fn show(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
) -> Result<HttpResponse, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    webhook_page(&viewer, &services, &id, Shown::default()).await
}

/// What a webhook's page shows beside the webhook: its signing secret just
/// after it was made, a test's outcome, or a refused change (with the form
/// as sent).
#[derive(Default)]
struct Shown<'a> {
    signing_secret: Option<&'a str>,
    notice: Option<String>,
    edit: Option<(&'a Form, Problems)>,
}

/// A webhook, what can be done with it, and its delivery log.
async fn webhook_page(
    viewer: &Viewer,
    services: &Services,
    id: &WebhookId,
    shown: Shown<'_>,
) -> Result<HttpResponse, PageError> {
    let status = match shown.edit {
        Some(_) => actix_web::http::StatusCode::BAD_REQUEST,
        None => actix_web::http::StatusCode::OK,
    };
    let id = id.clone();
    let subscription = services
        .webhooks
        .get(viewer.account_id(), &id)
        .map_err(webhook_error)?;
    let log = services
        .webhooks
        .deliveries(
            viewer.account_id(),
            &id,
            PageRequest {
                offset: 0,
                limit: LOG_SIZE,
            },
        )
        .await
        .map_err(webhook_error)?;
    let redeliver =
        |event: &EventId| format!("/dashboard/webhooks/{id}/deliveries/{event}/redeliver");
    let action = |what: &str| format!("/dashboard/webhooks/{id}/{what}");
    let signing_secret = shown.signing_secret;
    let stored = Form::from_pairs(
        std::iter::once(("url".to_owned(), subscription.url.clone()))
            .chain(
                subscription
                    .events
                    .iter()
                    .map(|e| ("events".to_owned(), e.as_str().to_owned())),
            )
            .collect(),
    );
    let (form, problems) = match &shown.edit {
        Some((form, problems)) => (*form, problems),
        None => (&stored, &Problems::default()),
    };
    let events: Vec<(&str, &str)> = EventType::ALL
        .iter()
        .map(|e| (e.as_str(), e.as_str()))
        .collect();
    Ok(page::respond(
        status,
        page::page(
            "Webhook",
            Some(viewer),
            Section::Webhooks,
            html! {
                p { a href="/dashboard/webhooks" { "← Webhooks" } }
                h1 { "Webhook " code { (subscription.id) } }
                @if let Some(secret) = signing_secret {
                    section.card.new-key role="status" {
                        h2 { "Its signing secret" }
                        p { "Copy it now: it is shown only this once. Verify deliveries with it and any Standard Webhooks library, e.g. " code { "Webhook(secret).verify(body, headers)" } "." }
                        div.copy {
                            input id="new-secret" readonly value=(secret) aria-label="Signing secret";
                            button type="button" data-copy="#new-secret" { "Copy" }
                        }
                    }
                }
                section.card {
                    dl.facts {
                        dt { "URL" } dd { code { (subscription.url) } }
                        dt { "Events" } dd { (events_text(&subscription)) }
                        dt { "State" } dd {
                            @if subscription.enabled { "enabled" }
                            @else { "disabled" @if let Some(reason) = &subscription.disabled_reason { ": " (reason) } }
                        }
                        dt { "Created" } dd { (when(Some(subscription.created_at))) }
                    }
                    @if let Some(notice) = &shown.notice { p.notice role="status" { (notice) } }
                    div.actions {
                        form method="post" action=(action("test")) {
                            (viewer.csrf_field())
                            button type="submit" { "Send a test event" }
                        }
                        form method="post" action=(action("enabled")) {
                            (viewer.csrf_field())
                            @if subscription.enabled {
                                input type="hidden" name="enabled" value="false";
                                button type="submit" { "Disable" }
                            } @else {
                                input type="hidden" name="enabled" value="true";
                                button type="submit" { "Enable" }
                            }
                        }
                        form method="post" action=(action("delete")) {
                            (viewer.csrf_field())
                            button.danger type="submit" { "Delete webhook" }
                        }
                    }
                }
                section.card {
                    h2 { "Edit" }
                    (problems.summary())
                    form method="post" action=(action("edit")) {
                        (viewer.csrf_field())
                        (field("url", "URL (https://…)", Kind::Url, form.text("url").as_deref(), true, problems))
                        (checkboxes("events", "Events", &events, &form.all("events"), problems))
                        button.primary type="submit" { "Save changes" }
                    }
                }
                section.card {
                    h2 { "Deliveries" }
                    @if log.items.is_empty() {
                        p.hint { "No deliveries yet: send a test event, or wait for the first event it subscribes to." }
                    } @else {
                        p.hint {
                            (log.total) @if log.total == 1 { " delivery" } @else { " deliveries" }
                            @if (log.items.len() as u64) < log.total { "; the latest " (log.items.len()) " listed" }
                            ", newest first."
                        }
                        @let (first, more) = log.items.split_at(log.items.len().min(LOG_FIRST));
                        (delivery_rows(viewer, first, &redeliver))
                        @if !more.is_empty() {
                            details.more {
                                summary { "Show " (more.len()) " more" }
                                (delivery_rows(viewer, more, &redeliver))
                            }
                        }
                    }
                }
            },
        ),
    ))
}

pub async fn redeliver(
    viewer: Viewer,
    services: web::Data<Services>,
    webhook: PathId<WebhookId>,
    event: SecondPathId<EventId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let webhook = webhook.valid().ok_or(PageError::NotFound)?;
    let event = event.valid().ok_or(PageError::NotFound)?;
    services
        .webhooks
        .redeliver(viewer.account_id(), &webhook, &event)
        .await
        .map_err(webhook_error)?;
    Ok(page::see_other(&format!("/dashboard/webhooks/{webhook}")))
}

/// Sends a signed test event now and shows how the receiver answered.
pub async fn test(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let (event, attempt) = services
        .webhooks
        .test(viewer.account_id(), &id)
        .await
        .map_err(webhook_error)?;
    let notice = match (attempt.status_code, attempt.error) {
        (Some(code), _) if (200..300).contains(&code) => {
            format!("Test event {event} delivered: the receiver answered HTTP {code}.")
        }
        (Some(code), _) => {
            format!("Test event {event} refused: the receiver answered HTTP {code}.")
        }
        (None, Some(error)) => format!("Test event {event} not delivered: {error}."),
        (None, None) => format!("Test event {event} not delivered."),
    };
    let shown = Shown {
        notice: Some(notice),
        ..Shown::default()
    };
    webhook_page(&viewer, &services, &id, shown).await
}

/// Enables or disables the webhook (`enabled` = `true` or `false`).
pub async fn set_enabled(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let enabled = match form.text("enabled").as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => return Err(PageError::BadForm),
    };
    let patch = SubscriptionPatchInput {
        enabled: Some(enabled),
        ..SubscriptionPatchInput::default()
    }
    .validate(services.webhooks.url_policy())
    .await
    .map_err(|_| PageError::BadForm)?;
    saved(&services, &viewer, &id, patch).await
}

/// Changes the webhook's URL and events.
pub async fn edit(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let input = SubscriptionPatchInput {
        url: form.text("url").or(Some(String::new())),
        events: Some(form.all("events")),
        ..SubscriptionPatchInput::default()
    };
    let patch = match input.validate(services.webhooks.url_policy()).await {
        Ok(patch) => patch,
        Err(errors) => {
            let shown = Shown {
                edit: Some((&form, Problems::from_validation(&errors))),
                ..Shown::default()
            };
            return webhook_page(&viewer, &services, &id, shown).await;
        }
    };
    saved(&services, &viewer, &id, patch).await
}

/// Applies a checked change to the webhook and goes back to its page.
async fn saved(
    services: &Services,
    viewer: &Viewer,
    id: &WebhookId,
    patch: SubscriptionPatch,
) -> Result<HttpResponse, PageError> {
    services
        .webhooks
        .update(viewer.account_id(), id, patch)
        .await
        .map_err(webhook_error)?;
    Ok(page::see_other(&format!("/dashboard/webhooks/{id}")))
}

/// Deletes the webhook: nothing more is sent to it.
pub async fn delete(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<WebhookId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    services
        .webhooks
        .delete(viewer.account_id(), &id)
        .await
        .map_err(webhook_error)?;
    Ok(page::see_other("/dashboard/webhooks"))
}

fn list_view(services: &Services, viewer: &Viewer, form: &Form, problems: &Problems) -> Markup {
    let all = services.webhooks.list(
        viewer.account_id(),
        PageRequest {
            offset: 0,
            limit: 100,
        },
    );
    let events: Vec<(&str, &str)> = EventType::ALL
        .iter()
        .map(|e| (e.as_str(), e.as_str()))
        .collect();
    page::page(
        "Webhooks",
        Some(viewer),
        Section::Webhooks,
        html! {
            h1 { "Webhooks" }
            section.card {
                @if all.items.is_empty() { p { "No webhooks yet." } }
                div.table-wrap {
                    table.webhooks.stack {
                        thead { tr { th { "URL" } th { "Events" } th { "State" } } }
                        tbody {
                            @for subscription in &all.items {
                                tr {
                                    td.url data-label="URL" { a href=(format!("/dashboard/webhooks/{}", subscription.id)) { (subscription.url) } }
                                    td data-label="Events" { (events_text(subscription)) }
                                    td data-label="State" { @if subscription.enabled { "enabled" } @else { "disabled" } }
                                }
                            }
                        }
                    }
                }
            }
            section.card {
                h2 { "Add webhook" }
                (problems.summary())
                form method="post" action="/dashboard/webhooks" {
                    (viewer.csrf_field())
                    (field("url", "URL (https://…)", Kind::Url, form.text("url").as_deref(), true, problems))
                    (checkboxes("events", "Events", &events, &form.all("events"), problems))
                    (field("secret", "Signing secret (16–256 characters, or whsec_…; leave empty and one is made for you)", Kind::Password { new: true }, None, false, problems))
                    button.primary type="submit" { "Add webhook" }
                }
            }
        },
    )
}

fn events_text(subscription: &Subscription) -> String {
    subscription
        .events
        .iter()
        .map(|e| e.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn webhook_error(error: WebhookError) -> PageError {
    match error {
        WebhookError::NotFound | WebhookError::DeliveryNotFound => PageError::NotFound,
        WebhookError::TooMany => PageError::BadForm,
        WebhookError::Storage(e) => PageError::Unavailable(e.to_string()),
        WebhookError::Unavailable(e) => PageError::Unavailable(e.to_string()),
    }
}

/// Delivery log rows, each with its redeliver button.
fn delivery_rows(
    viewer: &Viewer,
    deliveries: &[Delivery],
    redeliver: &dyn Fn(&EventId) -> String,
) -> Markup {
    html! {
        div.table-wrap {
            table.deliveries.stack {
                thead { tr { th { "Event" } th { "Type" } th { "Status" } th { "Attempts" } th { "Last answer" } th { span.visually-hidden { "Actions" } } } }
                tbody {
                    @for delivery in deliveries {
                        tr data-event-id=(delivery.event_id) {
                            td data-label="Event" { code.id { (delivery.event_id) } }
                            td data-label="Type" { (delivery.event_type.as_str()) }
                            td data-label="Status" { (format!("{:?}", delivery.status).to_lowercase()) }
                            td data-label="Attempts" { (delivery.attempts) }
                            td data-label="Last answer" {
                                @if let Some(code) = delivery.last_status_code { "HTTP " (code) }
                                @else if let Some(error) = &delivery.last_error { (error) }
                                @else { "—" }
                            }
                            td.action {
                                form method="post" action=(redeliver(&delivery.event_id)) {
                                    (viewer.csrf_field())
                                    button type="submit" { "Redeliver" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
