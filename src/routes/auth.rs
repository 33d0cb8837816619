//! `GET /v1/auth/verify`.

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::api::envelope;
use crate::api::extract::NoQuery;
use crate::services::auth::Principal;

/// Confirms the key works and says whose it is (spec 4.5).
async fn verify(principal: Principal, _: NoQuery) -> HttpResponse {
    let permissions: Vec<&str> = principal.permissions.iter().map(|p| p.as_str()).collect();
    envelope::ok(json!({
        "authenticated": true,
        "user_id": principal.account.id,
        "account_name": principal.account.name,
        "plan": principal.account.plan.as_str(),
        "key_id": principal.key_id,
        "permissions": permissions,
    }))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/auth/verify")
            .route(web::get().to(verify))
            .default_service(super::only("GET")),
    );
}
