//! The `/v1` API. Each module ends in `configure`; this one only chains them.

pub mod auth;
pub mod carriers;
pub mod loads;
pub mod tracking;
pub mod webhooks;

use actix_web::{HttpResponse, middleware::from_fn, web};

use crate::api::error::ApiError;

/// Mounts the whole authenticated API under `/v1`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/v1")
            // The last wrapped runs first: authenticate (and count), then idempotency.
            .wrap(from_fn(crate::api::idempotency::idempotent_posts))
            .wrap(from_fn(crate::api::auth::authenticate))
            // actix tries resources in registration order, matching each dynamic
            // path with a regex: the GPS routes, by far the busiest, go first.
            .configure(tracking::configure)
            .configure(loads::configure)
            .configure(carriers::configure)
            .configure(webhooks::configure)
            .configure(auth::configure),
    );
}

/// The default service of a resource: its path exists, the method does not.
/// `allow` is what the resource supports, e.g. `"GET, POST"`.
pub fn only(allow: &'static str) -> actix_web::Route {
    web::to(move || async move { Err::<HttpResponse, _>(ApiError::method_not_allowed(allow)) })
}

/// Answers an unknown path.
pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found_route())
}
