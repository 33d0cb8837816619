//! Why a dashboard request could not be served, as a page a person can act
//! on: every error page, and how each service's errors become one.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use maud::{Markup, html};

use super::page::{Section, encode_query, page, respond, see_other};
use crate::actors::LoadError;
use crate::services::accounts::AccountError;
use crate::services::devices::DeviceError;
use crate::services::users::UserError;

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

pub fn load_error(error: LoadError) -> PageError {
    match error {
        LoadError::NotFound => PageError::NotFound,
        LoadError::UnknownCarrier(_)
        | LoadError::Transition(_)
        | LoadError::NotTrackable(_)
        | LoadError::ReferenceTaken(_)
        | LoadError::Edit(_) => PageError::BadForm,
        LoadError::Storage(e) => PageError::Unavailable(e.to_string()),
        LoadError::Unavailable(crate::unavailable::Unavailable::LeasedElsewhere {
            holder: Some(holder),
            ..
        }) => PageError::LeasedElsewhere(holder),
        LoadError::Unavailable(e) => PageError::Unavailable(e.to_string()),
    }
}

pub fn account_error(error: AccountError) -> PageError {
    match error {
        AccountError::AccountNotFound(_) | AccountError::KeyNotFound(_) => PageError::NotFound,
        AccountError::Invalid(_) => PageError::BadForm,
        AccountError::Storage(e) => PageError::Unavailable(e.to_string()),
    }
}

pub fn device_error(error: DeviceError) -> PageError {
    match error {
        DeviceError::NotFound | DeviceError::LoadNotFound => PageError::NotFound,
        // Another account's device is no device here: a 404 page, as its id
        // in a path would be.
        DeviceError::UnknownDevice(_) => PageError::NotFound,
        DeviceError::UnknownCarrier(_) => PageError::BadForm,
        DeviceError::IdentifierTaken => PageError::Conflict(
            "Another device already has this identifier: a tracker names itself by it, so it \
             belongs to one device across the service."
                .into(),
        ),
        DeviceError::TooManyLoads { limit, .. } => PageError::Conflict(format!(
            "This device already feeds {limit} loads that are not delivered or cancelled, the most \
             one device may feed at once. Detach it from one of them first (on that load's page)."
        )),
        DeviceError::Storage(e) => PageError::Unavailable(e.to_string()),
    }
}

pub fn user_error(error: UserError) -> PageError {
    match error {
        UserError::Throttled { retry_after } => PageError::Throttled { retry_after },
        UserError::EmailTaken
        | UserError::BadCredentials
        | UserError::WrongPassword
        | UserError::LastUser => PageError::BadForm,
        UserError::LastOwner => PageError::Conflict(
            "An account keeps at least one owner: make another user an owner first.".to_owned(),
        ),
        UserError::OwnersOnly => PageError::OwnersOnly,
        UserError::UnknownUser | UserError::LinkUnusable => PageError::NotFound,
        UserError::Storage(e) => PageError::Unavailable(e.to_string()),
        UserError::Unavailable(e) => PageError::Unavailable(e.to_string()),
    }
}
