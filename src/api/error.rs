//! The one place where errors become HTTP responses.
//!
//! Every refusal uses the spec's envelope
//! `{"success": false, "error": {"code", "message", "details"}}` with a stable
//! upper-snake `code`. Matches have no wildcard arm: a new error variant does not
//! compile until someone decides its status and code.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use serde_json::{Value, json};

use crate::domain::api_key::KeyRejection;
use crate::domain::validation::ValidationErrors;
use crate::services::auth::AuthError;
use crate::storage::StorageError;
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Boxed: an error travels in every handler's `Result`, and a JSON map is
    /// large to carry on the success path.
    pub details: Box<Value>,
    /// Response headers that belong to this error (`Allow`, `Retry-After`, ...).
    pub headers: Vec<(&'static str, String)>,
    /// The instance acting for the load, when another one does: the answer
    /// carries it as a [`LeaseHolder`] extension, and `cluster::forward`
    /// sends the request there instead of answering it.
    pub holder: Option<std::sync::Arc<str>>,
}

/// A response extension: the request is for a load another instance acts
/// for, named here; never sent to a client.
#[derive(Debug, Clone)]
pub struct LeaseHolder(pub std::sync::Arc<str>);

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: Box::new(json!({})),
            headers: Vec::new(),
            holder: None,
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Box::new(details);
        self
    }

    /// One offending field, in the same shape as a full validation failure.
    pub fn field(
        status: StatusCode,
        code: &'static str,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        let message = message.into();
        Self::new(status, code, format!("{field} {message}")).with_details(json!({
            "field": field,
            "errors": [{"field": field, "message": message}],
        }))
    }

    pub fn not_found_route() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such endpoint; the API reference is at /v1/docs (the document itself at /v1/openapi.json)",
        )
    }

    /// `allow` lists the methods the endpoint does support, for the `Allow` header.
    pub fn method_not_allowed(allow: &'static str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            format!("this endpoint supports only {allow}"),
        )
        .with_details(json!({"allowed_methods": allow.split(", ").collect::<Vec<_>>()}))
        .with_header("allow", allow)
    }

    pub fn body(&self) -> Value {
        json!({
            "success": false,
            "error": {"code": self.code, "message": self.message, "details": self.details},
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        for (name, value) in &self.headers {
            if let Ok(value) = HeaderValue::from_str(value) {
                response.insert_header((*name, value));
            }
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"freight\""),
            ));
        }
        if let Some(holder) = &self.holder {
            response
                .extensions_mut()
                .insert(LeaseHolder(holder.clone()));
        }
        response.json(self.body())
    }
}

impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        let first = errors.errors().first().map(|e| e.field.clone());
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "VALIDATION_FAILED",
            format!("the request is invalid: {errors}"),
        )
        .with_details(json!({"field": first, "errors": errors.errors()}))
    }
}

impl From<serde_json::Error> for ApiError {
    /// An answer that could not be written: a bug, logged and answered 500.
    fn from(error: serde_json::Error) -> Self {
        tracing::error!(request_id = %crate::telemetry::request_id(), %error, "an answer could not be written");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "an internal error occurred; it has been logged",
        )
    }
}

/// When a client may retry a request the store could not take (a CQL
/// cluster without a quorum, a node restarting): a store comes back in
/// seconds or is down for longer, and a retry every few seconds serves both.
pub const STORAGE_RETRY_AFTER_SECONDS: u64 = 5;

impl From<StorageError> for ApiError {
    fn from(error: StorageError) -> Self {
        let chain = error_chain(&error);
        match error {
            StorageError::Unavailable(_) => {
                tracing::error!(request_id = %crate::telemetry::request_id(), error = %chain, "storage unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "STORAGE_UNAVAILABLE",
                    "storage is temporarily unavailable, so the request may or may not have \
                     taken effect; retry later (read a create back before sending it again)",
                )
                .with_details(json!({"retry_after_seconds": STORAGE_RETRY_AFTER_SECONDS}))
                .with_header("retry-after", STORAGE_RETRY_AFTER_SECONDS.to_string())
            }
            StorageError::Corrupt { .. } => {
                tracing::error!(request_id = %crate::telemetry::request_id(), error = %chain, "corrupt record in storage");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    "an internal error occurred; it has been logged",
                )
            }
        }
    }
}

impl From<Unavailable> for ApiError {
    fn from(error: Unavailable) -> Self {
        // Transient (an actor restarts on the next message) or shutdown: worth a
        // warning, not an error page for someone to chase.
        // Shedding GPS under overload is counted (`freight_gps_shed_total`), not
        // logged per request: at thousands a second the log would be the next
        // thing to overflow.
        match error {
            Unavailable::GpsOverloaded => {
                tracing::debug!(request_id = %crate::telemetry::request_id(), "GPS ingest shed: the commit queue is full")
            }
            // Forwarded to the holder, not refused (`cluster::forward`).
            Unavailable::LeasedElsewhere {
                holder: Some(_), ..
            } => {}
            _ => {
                tracing::warn!(request_id = %crate::telemetry::request_id(), error = %error_chain(&error), "service part unavailable")
            }
        }
        // Another instance's lease ends within its TTL if that instance died;
        // the rest come back at once (an actor restarts on the next message).
        let retry_after = match error {
            Unavailable::LeasedElsewhere { .. } | Unavailable::HolderUnreachable { .. } => {
                crate::actors::load_actor::LEASE_RETRY_AFTER_SECS
            }
            _ => "1",
        };
        let mut refusal = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            "the service cannot take this request right now; nothing was changed, retry shortly",
        )
        .with_header("retry-after", retry_after);
        if let Unavailable::LeasedElsewhere { holder, .. } = error {
            refusal.holder = holder;
        }
        refusal
    }
}

impl From<KeyRejection> for ApiError {
    fn from(rejection: KeyRejection) -> Self {
        let (code, message) = match rejection {
            KeyRejection::Missing => (
                "MISSING_API_KEY",
                "send your API key as 'Authorization: Bearer <key>'",
            ),
            KeyRejection::Malformed => (
                "MALFORMED_API_KEY",
                "the Authorization header must be 'Bearer frk_...' with a key issued by this service",
            ),
            KeyRejection::Unknown => ("INVALID_API_KEY", "the API key is not recognised"),
            KeyRejection::Revoked => ("REVOKED_API_KEY", "the API key has been revoked"),
            KeyRejection::Expired { at } => {
                return ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "EXPIRED_API_KEY",
                    "the API key has expired; make a new one in the dashboard (Settings → API \
                     keys) or with `freight keys create`",
                )
                .with_details(json!({
                    "expired_at": crate::domain::timestamp::format(&at),
                    "new_key_at": "/dashboard/settings/api-keys",
                }));
            }
            KeyRejection::DeviceToken => (
                "DEVICE_TOKEN_NOT_ACCEPTED",
                "this is a device token: it only posts positions to /v1/ingest/...; use an \
                 account API key (frk_...) here",
            ),
        };
        ApiError::new(StatusCode::UNAUTHORIZED, code, message)
    }
}

impl From<AuthError> for ApiError {
    fn from(error: AuthError) -> Self {
        match error {
            AuthError::Rejected(rejection) => rejection.into(),
            AuthError::Forbidden(permission) => ApiError::new(
                StatusCode::FORBIDDEN,
                "INSUFFICIENT_PERMISSIONS",
                format!(
                    "this API key lacks the '{}' permission this request needs",
                    permission.as_str()
                ),
            )
            .with_details(json!({"required_permission": permission.as_str()})),
            AuthError::AccountDisabled => ApiError::new(
                StatusCode::FORBIDDEN,
                "ACCOUNT_DISABLED",
                "this API key's account is disabled by the operator; its data is kept, \
                 and its keys work again once the account is enabled",
            ),
            AuthError::Storage(e) => e.into(),
        }
    }
}

mod services;
pub use services::STREAMS_RETRY_AFTER_SECONDS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unavailable_store_says_when_to_retry() {
        let error = ApiError::from(StorageError::unavailable(std::io::Error::other(
            "no quorum",
        )));
        assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.code, "STORAGE_UNAVAILABLE");
        assert!(
            error.headers.contains(&("retry-after", "5".to_owned())),
            "{:?}",
            error.headers
        );
    }
}
