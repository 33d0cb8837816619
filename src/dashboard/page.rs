//! The page frame every dashboard page shares, and the page for errors: plain
//! server-rendered HTML (maud), one stylesheet, no script needed to read it.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use maud::{DOCTYPE, Markup, html};

use super::session::Viewer;

/// Where a signed-in page sits in the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Board,
    Loads,
    Carriers,
    Devices,
    Webhooks,
    Plan,
    Settings,
    None,
}

const NAV: [(Section, &str, &str); 7] = [
    (Section::Board, "/dashboard/board", "Board"),
    (Section::Loads, "/dashboard/loads", "Loads"),
    (Section::Carriers, "/dashboard/carriers", "Carriers"),
    (Section::Devices, "/dashboard/devices", "Devices"),
    (Section::Webhooks, "/dashboard/webhooks", "Webhooks"),
    (Section::Plan, "/dashboard/plan", "Plan"),
    (
        Section::Settings,
        "/dashboard/settings/api-keys",
        "Settings",
    ),
];

/// A whole page: the frame, the navigation for a signed-in viewer, the body.
pub fn page(title: &str, viewer: Option<&Viewer>, section: Section, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · freight" }
                link rel="stylesheet" href="/dashboard/assets/dashboard.css";
                link rel="icon" type="image/svg+xml" href="/dashboard/assets/favicon.svg";
            }
            body {
                header.top {
                    a.brand href="/dashboard" { "freight" }
                    @if let Some(viewer) = viewer {
                        // Narrow screens fold the links behind a Menu button
                        // (a checkbox and its label: no script needed).
                        input #menu-toggle.menu-toggle type="checkbox" aria-label="Menu";
                        label.menu-button for="menu-toggle" aria-hidden="true" { "Menu" }
                        nav aria-label="Main" {
                            @for (s, href, label) in NAV {
                                a href=(href) aria-current=[(s == section).then_some("page")] { (label) }
                            }
                        }
                        form.signout method="post" action="/dashboard/logout" {
                            (viewer.csrf_field())
                            span.who { (viewer.user.email) }
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// An HTML answer with `status`.
pub fn respond(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        // Pages show account data: never kept by shared caches, nor framed.
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("x-frame-options", "DENY"))
        .insert_header(("content-security-policy", CSP))
        .insert_header(("referrer-policy", "same-origin"))
        .body(markup.into_string())
}

pub fn ok(markup: Markup) -> HttpResponse {
    respond(StatusCode::OK, markup)
}

/// Scripts and styles only from this origin; no inline script.
pub(super) const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                   script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
                   form-action 'self'; base-uri 'none'";

/// After a form: see the result with a GET (so a reload does not post again).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((
            header::LOCATION,
            HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/dashboard")),
        ))
        .finish()
}

/// Why a dashboard request could not be served, as a page a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("not signed in")]
    SignedOut { next: String },
    #[error("the form was stale or came from elsewhere")]
    Csrf,
    #[error("the form could not be read")]
    BadForm,
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("too many attempts")]
    Throttled { retry_after: u64 },
    #[error("the account is disabled")]
    AccountDisabled,
    /// Managing users, API keys, the plan and settings is for owners.
    #[error("owners only")]
    OwnersOnly,
    /// The change conflicts with what is stored; the text says why and what to do.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unavailable(String),
    /// The load is acted for by this other instance: the request is
    /// forwarded there (`api::forward`), never shown.
    #[error("the load is served by instance {0}")]
    LeasedElsewhere(std::sync::Arc<str>),
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        match self {
            PageError::SignedOut { .. } => StatusCode::SEE_OTHER,
            PageError::Csrf => StatusCode::FORBIDDEN,
            PageError::BadForm => StatusCode::BAD_REQUEST,
            PageError::NotFound => StatusCode::NOT_FOUND,
            PageError::AccountDisabled => StatusCode::FORBIDDEN,
            PageError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            PageError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
            PageError::Conflict(_) => StatusCode::CONFLICT,
            PageError::OwnersOnly => StatusCode::FORBIDDEN,
            PageError::Unavailable(_) | PageError::LeasedElsewhere(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    fn error_response(&self) -> HttpResponse {
        let (title, text) = match self {
            PageError::SignedOut { next } => {
                let target = format!("/dashboard/login?next={}", encode_query(next));
                return see_other(&target);
            }
            PageError::Csrf => (
                "This form has expired",
                "The page you sent it from was too old, or it did not come from this site. \
                 Go back, reload the page and try again."
                    .to_owned(),
            ),
            PageError::BadForm => (
                "The form could not be read",
                "It was too large or not sent as a web form. Go back and try again.".to_owned(),
            ),
            PageError::AccountDisabled => (
                "Account disabled",
                "The operator of this service has disabled this account. Its data is kept; \
                 ask them to enable it again."
                    .to_owned(),
            ),
            PageError::NotFound => (
                "Not found",
                "There is nothing here, or it belongs to another account.".to_owned(),
            ),
            PageError::MethodNotAllowed => (
                "Not available this way",
                "This page cannot be used like that. Follow the links and buttons of the dashboard."
                    .to_owned(),
            ),
            PageError::Throttled { retry_after } => (
                "Too many attempts",
                format!("Wait {retry_after} seconds, then try again."),
            ),
            PageError::Conflict(why) => ("This cannot be done", why.clone()),
            PageError::OwnersOnly => (
                "For the account's owners",
                "Managing users, API keys, the plan and settings is for the account's owners. \
                 Ask one of them (Settings → Users lists who they are)."
                    .to_owned(),
            ),
            PageError::LeasedElsewhere(holder) => {
                let mut response = respond(
                    self.status_code(),
                    error_page(
                        "Try again in a moment",
                        "The service could not do this right now. Nothing was changed.",
                    ),
                );
                response
                    .extensions_mut()
                    .insert(crate::api::error::LeaseHolder(holder.clone()));
                return response;
            }
            PageError::Unavailable(why) => {
                // The cause is for the operator's log, not the page.
                tracing::error!(request_id = %crate::telemetry::request_id(), error = %why, "dashboard request failed");
                (
                    "Try again in a moment",
                    "The service could not do this right now. Nothing was changed.".to_owned(),
                )
            }
        };
        let mut response = respond(self.status_code(), error_page(title, &text));
        if let PageError::Throttled { retry_after } = self {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
        }
        response
    }
}

pub fn error_page(title: &str, text: &str) -> Markup {
    page(
        title,
        None,
        Section::None,
        html! {
            section.card.error {
                h1 { (title) }
                p { (text) }
                p { a href="/dashboard" { "Back to the dashboard" } }
            }
        },
    )
}

/// Percent-encodes a value for a query string.
pub fn encode_query(value: &str) -> String {
    serde_urlencoded::to_string([("", value)])
        .map(|pair| pair.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}
