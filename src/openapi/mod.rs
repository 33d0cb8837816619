//! The OpenAPI 3.1 document of the API, generated from the code: the handlers'
//! `#[utoipa::path]` attributes, the views and inputs that derive `ToSchema`, and
//! [`responses::Layers`] for what the middlewares answer. Served at
//! `GET /v1/openapi.json` with a reference page at `GET /v1/docs`
//! (`routes::docs`); `tests/api/openapi.rs` checks that it lists every route and
//! that real answers match it.

pub mod examples;
pub mod params;
pub mod responses;
pub mod schemas;
pub mod ui;

use std::sync::OnceLock;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use self::examples::Examples;
use self::responses::Layers;
use crate::routes;

const DESCRIPTION: &str = "\
Freight loads, carriers, GPS tracking and signed webhooks over HTTPS. JSON in and out.

**Authentication.** Every `/v1` request except this document and its reference page \
carries `Authorization: Bearer frk_<key id>_<secret>`. `GET` needs the key's `read` \
permission, every other method `write`; `GET /v1/auth/verify` needs only a working key. \
Authentication comes before anything else about a request, routing included.

**Rate limits.** Each account may make a number of requests per rolling hour set by its \
plan (standard 1,000, pro 10,000, enterprise as agreed). Every authenticated answer \
carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` and the IETF \
draft's `RateLimit-Policy` and `RateLimit`; past the quota the answer is \
`429 RATE_LIMITED` with `Retry-After`.

**Idempotency.** Any write (POST, PATCH, PUT, DELETE) may carry an `Idempotency-Key` (1–255 visible ASCII \
characters). The first answer is kept 24 hours per account; a repeat of the same request \
with the same key gets that answer again (`Idempotent-Replayed: true`) without the work \
being done twice. The same key on a different request is `422 IDEMPOTENCY_KEY_REUSED`, \
and while the first is still running, `409 IDEMPOTENCY_KEY_IN_USE`.

**Envelopes.** Success: `{\"success\": true, \"data\": ...}`; lists add `pagination`. \
Errors: `{\"success\": false, \"error\": {\"code\", \"message\", \"details\"}}` with a \
stable upper-snake `code`. Unknown body fields and query parameters are refused, never \
ignored; `null` is the same as leaving an optional field out. Timestamps are RFC 3339 \
in UTC. Ids are opaque strings with a type prefix (`load_`, `carrier_`, `wh_`, `evt_`).";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "freight API",
        description = DESCRIPTION,
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    servers((url = "/", description = "This server")),
    security(("bearerAuth" = [])),
    paths(
        routes::docs::openapi_json,
        routes::docs::docs_page,
        routes::tracking::record,
        routes::tracking::live,
        routes::tracking::history,
        routes::tracking::batch,
        routes::streams::account_stream,
        routes::streams::load_stream,
        routes::loads::create,
        routes::loads::list,
        routes::loads::get,
        routes::loads::update,
        routes::loads::change_status,
        routes::loads::skip_stop,
        routes::carriers::create,
        routes::carriers::list,
        routes::carriers::get,
        routes::carriers::update,
        routes::carriers::delete,
        routes::webhooks::create,
        routes::webhooks::list,
        routes::webhooks::get,
        routes::webhooks::update,
        routes::webhooks::delete,
        routes::webhooks::test,
        routes::webhooks::deliveries,
        routes::webhooks::redeliver,
        routes::auth::verify,
        routes::account::get,
        routes::account::change,
        routes::devices::create,
        routes::devices::list,
        routes::devices::get,
        routes::devices::update,
        routes::devices::delete,
        routes::devices::attach,
        routes::devices::detach,
        routes::share_links::create,
        routes::share_links::list,
        routes::share_links::revoke,
        routes::ingest::osmand_get,
        routes::ingest::osmand_post,
        routes::ingest::owntracks,
        routes::ingest::overland,
    ),
    components(schemas(schemas::Error, schemas::BatchPoint, crate::views::tracking::TrackingUpdate)),
    modifiers(&BearerAuth, &Layers, &Examples),
    tags(
        (name = "loads", description = "Loads and their status lifecycle."),
        (name = "tracking", description = "GPS fixes, live position, ETA and history. Speeds \
            in miles per hour, headings in degrees clockwise from true north."),
        (name = "carriers", description = "The carriers loads are assigned to."),
        (name = "webhooks", description = "Signed event notifications and their delivery log."),
        (name = "auth", description = "Checking an API key."),
        (name = "account", description = "The account's settings."),
        (name = "devices", description = "Trackers and phone apps that post positions with a \
            token of their own, and the loads they feed."),
        (name = "documentation", description = "This document and its reference page; no key needed."),
    ),
)]
pub struct ApiDoc;

/// The `bearerAuth` scheme the document-wide `security` requirement names.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearerAuth",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .bearer_format("frk_<key id>_<secret>")
                        .description(Some(
                            "An API key issued by the operator (`freight keys create`).",
                        ))
                        .build(),
                ),
            );
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "deviceToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("frd_<device id>_<secret>")
                    .description(Some(
                        "A device's token (`POST /v1/devices`); OsmAnd and Traccar Client send it \
                         as the `id` parameter, Overland also as `?token=`.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "deviceBasic",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Basic)
                    .description(Some(
                        "OwnTracks: any user name, the device token as the password.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document as served (compact: `/v1/docs` is the readable form), with its
/// examples' times moved to the present (`examples::to_the_present`): built
/// again when the hour changes, so that a server running for months still
/// shows request examples it accepts.
pub fn json() -> std::sync::Arc<str> {
    use std::sync::{Arc, Mutex};
    static SERVED: OnceLock<Mutex<(i64, Arc<str>)>> = OnceLock::new();
    let now = chrono::Utc::now();
    let hour = now.timestamp().div_euclid(3600);
    let served = SERVED.get_or_init(|| Mutex::new((i64::MIN, Arc::from(""))));
    let mut served = served.lock().unwrap_or_else(|p| p.into_inner());
    if served.0 != hour {
        let mut doc = serde_json::to_value(document()).expect("the OpenAPI document serialises");
        examples::to_the_present(&mut doc, now);
        *served = (hour, Arc::from(doc.to_string()));
    }
    served.1.clone()
}
