//! The `/v1` API. Each module declares its resources with [`resources!`], which
//! makes both its `configure` and its `ROUTES`; this one only chains them.

/// Declares a module's resources once and generates from that one list:
///
/// - `configure`, registering each resource in the order given (actix tries them
///   in that order), each method's handler, and a default service answering
///   405 with an `Allow` header that lists the methods, in the order written;
/// - `ROUTES`, the `(method, path)` pairs, which [`all_routes`] collects so the
///   OpenAPI test can check the document lists exactly the routes served.
///
/// ```text
/// resources! {
///     "/tracking/batch" (web::Data::new(BodyLimit(BATCH))) => [POST => batch],
///     "/loads/{load_id}" => [GET => get],
/// }
/// ```
///
/// The parenthesised expressions are app data of that resource.
macro_rules! resources {
    ($(
        $path:literal $(($($data:expr),+ $(,)?))? => [
            $first:ident => $first_handler:path $(, $method:ident => $handler:path)* $(,)?
        ]
    ),+ $(,)?) => {
        /// `(method, path)` of every route this module registers, relative to its scope.
        pub const ROUTES: &[(&str, &str)] = &[
            $( (stringify!($first), $path), $( (stringify!($method), $path), )* )+
        ];

        pub fn configure(cfg: &mut ::actix_web::web::ServiceConfig) {
            $(
                cfg.service(
                    ::actix_web::web::resource($path)
                        .app_data($crate::telemetry::RouteId($path))
                        $($( .app_data($data) )+)?
                        .route(
                            ::actix_web::web::route()
                                .method(::actix_web::http::Method::$first)
                                .to($first_handler),
                        )
                        $(
                            .route(
                                ::actix_web::web::route()
                                    .method(::actix_web::http::Method::$method)
                                    .to($handler),
                            )
                        )*
                        .default_service($crate::routes::only(concat!(
                            stringify!($first) $(, ", ", stringify!($method))*
                        ))),
                );
            )+
        }
    };
}

pub mod account;
pub mod auth;
pub mod carriers;
pub mod devices;
pub mod docs;
pub mod ingest;
pub mod loads;
pub mod share_links;
pub mod streams;
pub mod tracking;
pub mod webhooks;

use actix_web::{HttpResponse, middleware::from_fn, web};

use crate::api::error::ApiError;

/// The scope every authenticated route lives under.
pub const API_SCOPE: &str = "/v1";

/// Mounts the public documentation, then the whole authenticated API under `/v1`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // First, and outside the scope: the scope's middlewares would demand a key.
    docs::configure(cfg);
    // Devices authenticate with their own tokens, never an account key.
    ingest::configure(cfg);
    cfg.service(
        web::scope(API_SCOPE)
            // Authenticates and counts the request, then applies its idempotency key.
            .wrap(from_fn(crate::api::auth::authenticate))
            // actix tries resources in registration order, matching each dynamic
            // path with a regex: the GPS routes, by far the busiest, go first.
            .configure(tracking::configure)
            .configure(streams::configure)
            .configure(loads::configure)
            .configure(carriers::configure)
            .configure(webhooks::configure)
            .configure(devices::configure)
            .configure(share_links::configure)
            .configure(account::configure)
            .configure(auth::configure),
    );
}

/// Every `(method, full path)` the API listener routes, as registered by
/// [`configure`]; the OpenAPI test compares it with the document.
pub fn all_routes() -> Vec<(&'static str, String)> {
    let scoped = [
        tracking::ROUTES,
        streams::ROUTES,
        loads::ROUTES,
        carriers::ROUTES,
        webhooks::ROUTES,
        devices::ROUTES,
        share_links::ROUTES,
        account::ROUTES,
        auth::ROUTES,
    ];
    let public = docs::ROUTES
        .iter()
        .chain(ingest::ROUTES)
        .map(|&(method, path)| (method, path.to_owned()));
    public
        .chain(
            scoped
                .into_iter()
                .flatten()
                .map(|&(method, path)| (method, format!("{API_SCOPE}{path}"))),
        )
        .collect()
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
