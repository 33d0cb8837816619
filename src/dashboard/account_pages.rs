//! The account's plan and quota, and Settings → API Keys.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::errors::PageError;
use super::errors::account_error;
use super::form::Form;
use super::page::{self, Section};
use super::session::Viewer;
use super::widgets::{Kind, Problems, checkboxes, field, when};
use crate::api::path::PathId;
use crate::domain::account::{Account, PlanKind};
use crate::domain::api_key::ApiKey;
use crate::domain::ids::KeyId;
use crate::domain::timestamp;
use crate::services::Services;
use crate::services::accounts::{AccountError, KeyRequest};

pub async fn plan_page(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let account = account_of(&services, &viewer).await?;
    let welcome = req.query_string().contains("welcome=1");
    Ok(page::ok(plan_view(&services, &viewer, &account, welcome)))
}

pub async fn change_plan(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    // Enterprise is the operator's to set: the form offers only these two.
    let plan = match form.text("plan").as_deref() {
        Some("standard") => PlanKind::Standard,
        Some("pro") => PlanKind::Pro,
        _ => return Err(PageError::BadForm),
    };
    let current = account_of(&services, &viewer).await?;
    if current.plan == PlanKind::Enterprise {
        return Err(PageError::BadForm);
    }
    services
        .accounts
        .change_plan(viewer.account_id(), plan, Default::default())
        .await
        .map_err(account_error)?;
    tracing::info!(request_id = %crate::telemetry::request_id(), account = %viewer.account_id(), plan = plan.as_str(), "plan changed in the dashboard");
    Ok(page::see_other("/dashboard/plan"))
}

fn plan_view(services: &Services, viewer: &Viewer, account: &Account, welcome: bool) -> Markup {
    let (used, resets) = services.rate_limits.usage(&account.id);
    let limit = account.requests_per_hour();
    let resets = resets.and_then(|at| DateTime::<Utc>::from_timestamp(at, 0));
    let choices = [
        (PlanKind::Standard, "Standard", "1,000 requests per hour"),
        (PlanKind::Pro, "Pro", "10,000 requests per hour"),
    ];
    page::page(
        "Plan",
        Some(viewer),
        Section::Plan,
        html! {
            @if welcome {
                p.notice { "Welcome! Your account " strong { (account.name) } " is ready. Choose a plan, then generate an API key under Settings → API Keys." }
            }
            h1 { "Plan" }
            section.card {
                h2 { "This hour" }
                p.quota {
                    strong { (used) } " of " (limit) " requests used in the last 60 minutes"
                }
                meter min="0" max=(limit) value=(used) aria-label="Quota used" {}
                p {
                    @match resets {
                        Some(at) => { "The oldest of them leave the window at " time datetime=(timestamp::format(&at)) { (clock_time(&at)) } " UTC." }
                        None => { "No requests counted in the window yet." }
                    }
                }
            }
            section.card {
                h2 { "Choose a plan" }
                p { "Current plan: " strong id="current-plan" { (account.plan.as_str()) } }
                @if account.plan == PlanKind::Enterprise {
                    p { "Enterprise quotas are set by your operator (" (limit) " requests per hour)." }
                } @else {
                    div.plans {
                        @for (plan, name, quota) in choices {
                            form.plan method="post" action="/dashboard/plan" {
                                (viewer.csrf_field())
                                input type="hidden" name="plan" value=(plan.as_str());
                                h3 { (name) }
                                p { (quota) }
                                @if plan == account.plan {
                                    p.current { "Your plan" }
                                } @else {
                                    button type="submit" { "Choose " (name) }
                                }
                            }
                        }
                    }
                    p.hint { "Enterprise (a quota agreed with us): ask your operator, who sets it with " code { "freight accounts set-plan" } "." }
                }
            }
        },
    )
}

pub async fn keys_page(
    viewer: Viewer,
    services: web::Data<Services>,
) -> Result<HttpResponse, PageError> {
    Ok(page::ok(
        keys_view(&services, &viewer, &Problems::default(), None).await?,
    ))
}

pub async fn generate_key(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    let expires_at = match form.text("expires_at") {
        None => None,
        Some(raw) => match parse_local_or_utc(&raw) {
            Some(at) => Some(at),
            None => {
                let problems = Problems::one("expires_at", "must be a date and time");
                return Ok(page::ok(
                    keys_view(&services, &viewer, &problems, None).await?,
                ));
            }
        },
    };
    let request = KeyRequest {
        account_id: viewer.account_id().to_string(),
        permissions: form.all("permissions"),
        expires_at,
        description: form.text("description"),
    };
    match services.accounts.create_key(request).await {
        Ok(issued) => {
            tracing::info!(request_id = %crate::telemetry::request_id(), account = %viewer.account_id(), key = %issued.record.id, "API key generated in the dashboard");
            Ok(page::ok(
                keys_view(
                    &services,
                    &viewer,
                    &Problems::default(),
                    Some(&issued.token),
                )
                .await?,
            ))
        }
        Err(AccountError::Invalid(errors)) => {
            let problems = Problems::from_validation(&errors);
            Ok(page::ok(
                keys_view(&services, &viewer, &problems, None).await?,
            ))
        }
        Err(error) => Err(account_error(error)),
    }
}

pub async fn confirm_revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    key: PathId<KeyId>,
) -> Result<HttpResponse, PageError> {
    let key = own_key(&services, &viewer, key).await?;
    Ok(page::ok(page::page(
        "Revoke key",
        Some(&viewer),
        Section::Settings,
        html! {
            section.card.narrow {
                h1 { "Revoke key " code { (key.id) } "?" }
                p { "Requests with this key will be refused at once (401 REVOKED_API_KEY). This cannot be undone." }
                form method="post" action=(format!("/dashboard/settings/api-keys/{}/revoke", key.id)) {
                    (viewer.csrf_field())
                    button.danger type="submit" { "Revoke key" }
                    " " a href="/dashboard/settings/api-keys" { "Cancel" }
                }
            }
        },
    )))
}

pub async fn revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    key: PathId<KeyId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    let key = own_key(&services, &viewer, key).await?;
    services
        .accounts
        .revoke_key(&key.id)
        .await
        .map_err(account_error)?;
    tracing::info!(request_id = %crate::telemetry::request_id(), account = %viewer.account_id(), key = %key.id, "API key revoked in the dashboard");
    Ok(page::see_other("/dashboard/settings/api-keys"))
}

async fn keys_view(
    services: &Services,
    viewer: &Viewer,
    problems: &Problems,
    new_token: Option<&str>,
) -> Result<Markup, PageError> {
    let mut keys = services
        .accounts
        .list_keys(viewer.account_id())
        .await
        .map_err(account_error)?;
    keys.reverse();
    let now = services.clock.now();
    Ok(page::page(
        "API Keys",
        Some(viewer),
        Section::Settings,
        html! {
            h1 { "Settings → API Keys" }
            (super::widgets::settings_tabs("API Keys"))
            @if let Some(token) = new_token {
                section.card.new-key role="status" {
                    h2 { "Your new API key" }
                    p { "Copy it now: it is shown only this once and cannot be recovered." }
                    div.copy {
                        input id="new-key" readonly value=(token) aria-label="New API key";
                        button type="button" data-copy="#new-key" { "Copy" }
                    }
                    p.hint { "Send it as " code { "Authorization: Bearer <key>" } " to " code { "/v1/…" } "." }
                }
            }
            section.card {
                h2 { "Generate New Key" }
                (problems.summary())
                form method="post" action="/dashboard/settings/api-keys" {
                    (viewer.csrf_field())
                    (checkboxes("permissions", "Permissions", &[("read", "read"), ("write", "write")], &["read".to_owned()], problems))
                    (field("expires_at", "Expires at (UTC)", Kind::DateTime, None, false, problems))
                    (field("description", "Description", Kind::Text, None, false, problems))
                    button.primary type="submit" { "Generate New Key" }
                }
            }
            section.card {
                h2 { "Keys" }
                @if keys.is_empty() { p { "No keys yet." } }
                @else {
                    table.keys.stack {
                        thead { tr { th { "Key" } th { "Permissions" } th { "Description" } th { "Created" } th { "Expires" } th { "Last used" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for key in &keys {
                                tr data-key-id=(key.id) {
                                    td data-label="Key" { code { "frk_" (key.id.as_str().trim_start_matches("key_").get(..8).unwrap_or("")) "…" } }
                                    td data-label="Permissions" { (key.permissions.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")) }
                                    td data-label="Description" { (key.description.as_deref().unwrap_or("—")) }
                                    td data-label="Created" { (when(Some(key.created_at))) }
                                    td data-label="Expires" { (when(key.expires_at)) }
                                    td data-label="Last used" { (when(services.auth.last_used(&key.id))) }
                                    td.action {
                                        @if key.revoked_at.is_some() { span.badge.revoked { "revoked" } }
                                        @else if key.expires_at.is_some_and(|at| at <= now) { span.badge { "expired" } }
                                        @else { a.danger href=(format!("/dashboard/settings/api-keys/{}/revoke", key.id)) { "Revoke" } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            script src="/dashboard/assets/dashboard.js" defer {}
        },
    ))
}

async fn account_of(services: &Services, viewer: &Viewer) -> Result<Account, PageError> {
    services
        .accounts
        .get_account(viewer.account_id())
        .await
        .map_err(account_error)
}

/// A key of the viewer's account; another account's is not found.
async fn own_key(
    services: &Services,
    viewer: &Viewer,
    id: PathId<KeyId>,
) -> Result<ApiKey, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    services
        .accounts
        .list_keys(viewer.account_id())
        .await
        .map_err(account_error)?
        .into_iter()
        .find(|key| key.id == id)
        .ok_or(PageError::NotFound)
}

/// A `datetime-local` value (taken as UTC, as the label says) or RFC 3339.
fn parse_local_or_utc(raw: &str) -> Option<DateTime<Utc>> {
    timestamp::parse_utc(raw).ok().or_else(|| {
        chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M")
            .ok()
            .map(|naive| naive.and_utc())
    })
}

fn clock_time(at: &DateTime<Utc>) -> String {
    at.format("%H:%M").to_string()
}
