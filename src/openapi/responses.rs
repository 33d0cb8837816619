//! Responses that do not come from a handler but from the layers every request
//! passes through, added to each operation by [`Layers`] so that no operation
//! can forget one. The rules mirror the code:
//!
//! | layer | answers | applies to |
//! |---|---|---|
//! | `api::auth::authenticate` | 401, 403, 429, 503 (its storage) | every `/v1` operation (403: not `/v1/auth/verify`) |
//! | `api::extract::QueryParams` | 400 `INVALID_QUERY_PARAMETER` | every `/v1` operation |
//! | `api::extract::JsonBody` | 400, 413, 415 | operations with a request body |
//! | `api::idempotency` | 400, 409, 413, 422 | every write (POST, PATCH, PUT, DELETE) |
//! | services, for the id in the path | 404 (unknown or malformed id) | operations with a path parameter |
//! | storage, and parts of the running service | 500, 503 | every `/v1` operation |
//! | `api::auth::plain_http_refusal` | 400 `HTTPS_REQUIRED` (behind a TLS proxy) | every operation |
//! | `api::auth::header_refusal` | 400 `DUPLICATE_HEADER`, 431 `HEADERS_TOO_LARGE` | every operation |
//!
//! It also adds the headers the layers put on answers: `X-Request-Id`
//! (`server::observe`, every answer), the quota headers (every answer after
//! authentication) and `Idempotent-Replayed` (POST). An operation may document
//! one of these statuses itself (a 409 of its own, say); its description is then
//! completed with the layer's causes.

use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required};
use utoipa::{Modify, ToSchema};

use super::schemas::Error;

/// Paths under which devices post with their own tokens (`routes::ingest`),
/// outside the API key's middlewares.
pub const DEVICE_PATHS: &str = "/v1/ingest/";

/// Paths served without a key (the documentation itself).
pub const PUBLIC_PATHS: &[&str] = &["/v1/openapi.json", "/v1/docs"];

/// Paths that need a working key but no particular permission (mirrors
/// `PERMISSION_FREE_PATHS` in `api/auth.rs`): they never answer 403.
const PERMISSION_FREE_PATHS: &[&str] = &["/v1/auth/verify"];

/// One refusal every operation of some kind can get.
struct Common {
    status: &'static str,
    /// Name under `components/responses`.
    name: &'static str,
    description: &'static str,
    /// Sent after the request was counted against the quota.
    quota_headers: bool,
}

const BAD_REQUEST: Common = Common {
    status: "400",
    name: "BadRequest",
    description: "The request is invalid; nothing was changed. `INVALID_QUERY_PARAMETER`: an \
        unknown, repeated or invalid query parameter (every endpoint refuses parameters it does \
        not take). With a body: `VALIDATION_FAILED` (every refused field in \
        `details.errors`), `MALFORMED_JSON` or `MALFORMED_BODY`. On POST: \
        `INVALID_IDEMPOTENCY_KEY`. `DUPLICATE_HEADER`: `Authorization` or `Idempotency-Key` \
        sent more than once (`details.header`). Behind a TLS proxy: `HTTPS_REQUIRED`.",
    quota_headers: true,
};

/// The only refusal of the public documentation routes.
const HTTPS_REQUIRED: Common = Common {
    status: "400",
    name: "HttpsRequired",
    description: "`HTTPS_REQUIRED`: behind a TLS-terminating proxy, the request did not come \
        over HTTPS (`X-Forwarded-Proto`). `DUPLICATE_HEADER`: `Authorization` or \
        `Idempotency-Key` sent more than once (`details.header`).",
    quota_headers: false,
};

const HEADERS_TOO_LARGE: Common = Common {
    status: "431",
    name: "HeadersTooLarge",
    description: "`HEADERS_TOO_LARGE`: the request headers (names and values) exceed 16 KiB; \
        `details.limit_bytes`. Over 128 KiB, or more than 96 headers, the HTTP layer answers 431 \
        without a body and closes the connection.",
    quota_headers: false,
};

const UNAUTHORIZED: Common = Common {
    status: "401",
    name: "Unauthorized",
    description: "No working API key: `MISSING_API_KEY`, `MALFORMED_API_KEY`, \
        `INVALID_API_KEY`, `REVOKED_API_KEY` or `EXPIRED_API_KEY`; \
        `DEVICE_TOKEN_NOT_ACCEPTED` for a device's token, which only posts positions.",
    quota_headers: false,
};

const FORBIDDEN: Common = Common {
    status: "403",
    name: "Forbidden",
    description: "`INSUFFICIENT_PERMISSIONS`: the key lacks the permission the method needs \
        (`read` for GET, `write` otherwise); `details.required_permission`.",
    quota_headers: false,
};

const NOT_FOUND: Common = Common {
    status: "404",
    name: "NotFound",
    description: "No such resource in this account (`INVALID_LOAD`, `INVALID_CARRIER`, \
        `WEBHOOK_NOT_FOUND`): another account's resource and a malformed id answer the same.",
    quota_headers: true,
};

const IDEMPOTENCY_KEY_IN_USE: Common = Common {
    status: "409",
    name: "IdempotencyKeyInUse",
    description: "`IDEMPOTENCY_KEY_IN_USE`: a request with this `Idempotency-Key` is still \
        being processed; retry shortly.",
    quota_headers: true,
};

const PAYLOAD_TOO_LARGE: Common = Common {
    status: "413",
    name: "PayloadTooLarge",
    description: "`PAYLOAD_TOO_LARGE`: the body exceeds the limit (64 KiB by default, 1 MiB \
        for a GPS batch); `details.limit_bytes`.",
    quota_headers: true,
};

const UNSUPPORTED_MEDIA_TYPE: Common = Common {
    status: "415",
    name: "UnsupportedMediaType",
    description: "`UNSUPPORTED_MEDIA_TYPE`: the body was not sent as \
        `Content-Type: application/json`.",
    quota_headers: true,
};

const IDEMPOTENCY_KEY_REUSED: Common = Common {
    status: "422",
    name: "IdempotencyKeyReused",
    description: "`IDEMPOTENCY_KEY_REUSED`: this `Idempotency-Key` was used in the last 24 \
        hours for a different request (method, path, query or body); use a new key.",
    quota_headers: true,
};

const RATE_LIMITED: Common = Common {
    status: "429",
    name: "RateLimited",
    description: "`RATE_LIMITED`: the account has used its requests for the rolling hour; \
        retry after `Retry-After` seconds (`details.retry_after_seconds`).",
    quota_headers: true,
};

const INTERNAL_ERROR: Common = Common {
    status: "500",
    name: "InternalError",
    description: "`INTERNAL_ERROR`: a fault in the service; it has been logged.",
    quota_headers: false,
};

const SERVICE_UNAVAILABLE: Common = Common {
    status: "503",
    name: "ServiceUnavailable",
    description: "`STORAGE_UNAVAILABLE` (with `Retry-After: 5`): storage failed, so the \
                  request may or may not have taken effect (a write the store timed out on can \
                  still land); retry later, and read a create back before sending it again. \
                  `SERVICE_UNAVAILABLE` (with `Retry-After`): a part of the service the request \
                  needs (a load's actor, the GPS committer, the webhook dispatcher) has stopped \
                  or is shutting down, or (several instances) another instance serves the load; \
                  nothing was changed, retry shortly.",
    quota_headers: false,
};

const ALL: [&Common; 13] = [
    &BAD_REQUEST,
    &HTTPS_REQUIRED,
    &HEADERS_TOO_LARGE,
    &UNAUTHORIZED,
    &FORBIDDEN,
    &NOT_FOUND,
    &IDEMPOTENCY_KEY_IN_USE,
    &PAYLOAD_TOO_LARGE,
    &UNSUPPORTED_MEDIA_TYPE,
    &IDEMPOTENCY_KEY_REUSED,
    &RATE_LIMITED,
    &INTERNAL_ERROR,
    &SERVICE_UNAVAILABLE,
];

fn integer_header(description: &str) -> Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0)),
        )
        .description(Some(description))
        .build()
}

fn string_header(description: &str) -> Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

/// The quota headers `api::auth` puts on every answer to an authenticated request.
fn quota_headers() -> [(&'static str, Header); 5] {
    [
        (
            "X-RateLimit-Limit",
            integer_header("Requests the account may make per rolling hour."),
        ),
        (
            "X-RateLimit-Remaining",
            integer_header("Requests left in the current window."),
        ),
        (
            "X-RateLimit-Reset",
            integer_header("Unix time (seconds) when the window has room again."),
        ),
        (
            "RateLimit-Policy",
            string_header("The quota, IETF draft syntax: `\"hourly\";q=<limit>;w=3600`."),
        ),
        (
            "RateLimit",
            string_header(
                "The quota's state, IETF draft syntax: `\"hourly\";r=<remaining>;t=<seconds to reset>`.",
            ),
        ),
    ]
}

/// `server::observe` puts this on every answer of the API listener.
fn request_id_header() -> Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[!-~]{1,128}$")),
        )
        .description(Some(
            "Identifies the request in the service's logs: the client's own `X-Request-Id` if \
             it is 1–128 visible ASCII characters, else a new one.",
        ))
        .build()
}

fn replayed_header() -> Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["true", "false"])),
        )
        .description(Some(
            "`true` on the stored answer replayed for a repeated `Idempotency-Key`, `false` on \
             a first answer; absent without a key.",
        ))
        .build()
}

fn error_response(common: &Common) -> Response {
    let mut response = ResponseBuilder::new()
        .description(common.description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(Error::name())))
                .build(),
        )
        .header("X-Request-Id", request_id_header());
    if common.quota_headers {
        for (name, header) in quota_headers() {
            response = response.header(name, header);
        }
    }
    if common.status == "401" {
        response = response.header(
            "WWW-Authenticate",
            string_header("`Bearer realm=\"freight\"`."),
        );
    }
    if common.status == "429" {
        response = response.header(
            "Retry-After",
            integer_header("Seconds until the account may send again."),
        );
    }
    response.build()
}

/// Adds the layers' responses to every authenticated operation, the shared
/// refusals to `components/responses`, and opens the public paths to anyone.
pub struct Layers;

impl Modify for Layers {
    fn modify(&self, doc: &mut OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        for common in ALL {
            components
                .responses
                .insert(common.name.into(), RefOr::T(error_response(common)));
        }
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations = [
                ("GET", &mut item.get),
                ("PUT", &mut item.put),
                ("POST", &mut item.post),
                ("DELETE", &mut item.delete),
                ("OPTIONS", &mut item.options),
                ("HEAD", &mut item.head),
                ("PATCH", &mut item.patch),
                ("TRACE", &mut item.trace),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                for response in operation.responses.responses.values_mut() {
                    if let RefOr::T(response) = response {
                        response
                            .headers
                            .insert("X-Request-Id".into(), request_id_header());
                    }
                }
                if PUBLIC_PATHS.contains(&path.as_str()) {
                    // No key needed: overrides the document-wide bearer requirement.
                    operation.security = Some(Vec::new());
                    add_common(operation, &[&HTTPS_REQUIRED, &HEADERS_TOO_LARGE]);
                } else if path.starts_with(DEVICE_PATHS) {
                    // A device token (its own security, set by the operation);
                    // the operation documents its refusals itself.
                    add_common(
                        operation,
                        &[
                            &HTTPS_REQUIRED,
                            &HEADERS_TOO_LARGE,
                            &PAYLOAD_TOO_LARGE,
                            &INTERNAL_ERROR,
                            &SERVICE_UNAVAILABLE,
                        ],
                    );
                } else {
                    add_layers(path, method, operation);
                }
            }
        }
    }
}

fn add_layers(path: &str, method: &str, operation: &mut Operation) {
    let mut common = vec![
        &BAD_REQUEST,
        &HEADERS_TOO_LARGE,
        &UNAUTHORIZED,
        &RATE_LIMITED,
        &INTERNAL_ERROR,
        &SERVICE_UNAVAILABLE,
    ];
    if !PERMISSION_FREE_PATHS.contains(&path) {
        common.push(&FORBIDDEN);
    }
    if path.contains('{') {
        common.push(&NOT_FOUND);
    }
    // Every write takes an `Idempotency-Key` (`api::idempotency`).
    let post = matches!(method, "POST" | "PATCH" | "PUT" | "DELETE");
    if operation.request_body.is_some() || post {
        // The idempotency layer reads a write's body (up to 1 MiB) even when
        // the handler takes none.
        common.push(&PAYLOAD_TOO_LARGE);
    }
    if operation.request_body.is_some() {
        common.push(&UNSUPPORTED_MEDIA_TYPE);
    }
    if post {
        common.extend([&IDEMPOTENCY_KEY_IN_USE, &IDEMPOTENCY_KEY_REUSED]);
        add_idempotency_key(operation);
    }
    if let Some(body) = &mut operation.request_body {
        require_json(body);
    }

    // The handler's own responses: quota headers on all, the replay header on POSTs.
    for response in operation.responses.responses.values_mut() {
        if let RefOr::T(response) = response {
            for (name, header) in quota_headers() {
                response.headers.entry(name.into()).or_insert(header);
            }
            if post {
                response
                    .headers
                    .insert("Idempotent-Replayed".into(), replayed_header());
            }
        }
    }
    add_common(operation, &common);
}

/// Adds each refusal to the operation, or its causes to the operation's own
/// refusal with the same status.
fn add_common(operation: &mut Operation, common: &[&Common]) {
    for common in common {
        match operation.responses.responses.get_mut(common.status) {
            // The operation's own refusal with this status: add the layer's causes.
            Some(RefOr::T(own)) => {
                own.description = format!("{} Also: {}", own.description, common.description);
            }
            Some(RefOr::Ref(_)) => {}
            None => {
                operation.responses.responses.insert(
                    common.status.into(),
                    RefOr::Ref(Ref::from_response_name(common.name)),
                );
            }
        }
    }
}

/// `Idempotency-Key` (`api::idempotency`), optional on every POST.
fn add_idempotency_key(operation: &mut Operation) {
    let parameter = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Makes a retry safe: the first answer to a request with this key is kept 24 hours \
             (per account) and given again, marked `Idempotent-Replayed: true`, to a repeat of \
             the same request, which is not carried out twice.",
        ))
        .schema(Some(crate::api::input::fields::idempotency_key()))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(parameter);
}

/// Bodies are required JSON (an empty body is `MALFORMED_JSON`).
fn require_json(body: &mut RequestBody) {
    body.required = Some(Required::True);
}
