//! `GET /v1/auth/verify`.

use actix_web::HttpResponse;
use serde_json::json;

use crate::api::envelope::{self, Envelope};
use crate::api::extract::NoQuery;
use crate::openapi::schemas::KeyVerification;
use crate::services::auth::Principal;

/// Check an API key: whose it is and what it may do.
///
/// Needs a working key but no particular permission.
#[utoipa::path(
    get,
    path = "/v1/auth/verify",
    operation_id = "verify_api_key",
    tag = "auth",
    responses((status = 200, description = "The key works.", body = Envelope<KeyVerification>)),
)]
// Confirms the key works and says whose it is (spec 4.5).
pub(crate) async fn verify(principal: Principal, _: NoQuery) -> HttpResponse {
    let permissions: Vec<&str> = principal.permissions.iter().map(|p| p.as_str()).collect();
    envelope::ok(json!({
        "authenticated": true,
        "user_id": principal.account.id,
        "account_name": principal.account.name,
        "plan": principal.account.plan.as_str(),
        "key_id": principal.key_id,
        "permissions": permissions,
        "expires_at": principal.expires_at.as_ref().map(crate::domain::timestamp::format),
    }))
}

resources! {
    "/auth/verify" => [GET => verify],
}
