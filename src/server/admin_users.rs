//! The operator's side of dashboard users, on the admin listener: list an
//! account's users, invite one (the way into an account nobody registered,
//! such as the first start's), and reset a user's password (their sessions
//! end, and a one-time link lets them choose a new one).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use crate::api::envelope;
use crate::api::error::ApiError;
use crate::api::extract::JsonBody;
use crate::api::origin::PublicOrigin;
use crate::api::path::PathId;
use crate::domain::ids::AccountId;
use crate::domain::timestamp;
use crate::domain::user::{User, parse_email};
use crate::routes;
use crate::services::Services;
use crate::services::users::UserError;

/// Mounts the routes inside the admin scope (behind its token).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/accounts/{id}/users")
            .route(web::get().to(list_users))
            .route(web::post().to(create_user))
            .default_service(routes::only("GET, POST")),
    )
    .service(
        web::resource("/users/reset-password")
            .route(web::post().to(reset_password))
            .default_service(routes::only("POST")),
    );
}

fn user_view(user: &User) -> serde_json::Value {
    json!({
        "id": user.id.as_str(),
        "account_id": user.account_id.as_str(),
        "email": user.email,
        "created_at": timestamp::format(&user.created_at),
    })
}

fn user_error(error: UserError) -> ApiError {
    match error {
        UserError::UnknownUser => ApiError::field(
            StatusCode::NOT_FOUND,
            "USER_NOT_FOUND",
            "email",
            "no dashboard user has this address",
        ),
        UserError::Storage(e) => e.into(),
        UserError::Unavailable(e) => e.into(),
        // Not raised by what the operator calls.
        other @ (UserError::EmailTaken
        | UserError::BadCredentials
        | UserError::Throttled { .. }
        | UserError::LastUser
        | UserError::LastOwner
        | UserError::OwnersOnly
        | UserError::LinkUnusable
        | UserError::WrongPassword) => ApiError::new(
            StatusCode::CONFLICT,
            "USER_CHANGE_REFUSED",
            other.to_string(),
        ),
    }
}

async fn list_users(
    services: web::Data<Services>,
    id: PathId<AccountId>,
) -> Result<HttpResponse, ApiError> {
    let account = services.accounts.get_account(&id.found()?).await?;
    let users = services
        .users
        .users(&account.id)
        .await
        .map_err(user_error)?;
    let views: Vec<_> = users.iter().map(user_view).collect();
    Ok(envelope::ok(json!({ "users": views })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewUser {
    email: String,
}

impl crate::api::extract::BodyInput for NewUser {}

/// A one-time link for `email` to join the account as a dashboard user,
/// choosing a password (an invitation from the operator).
async fn create_user(
    services: web::Data<Services>,
    origin: web::Data<PublicOrigin>,
    id: PathId<AccountId>,
    JsonBody(body): JsonBody<NewUser>,
) -> Result<HttpResponse, ApiError> {
    let account = services.accounts.get_account(&id.found()?).await?;
    let email = parse_email(&body.email).map_err(|message| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            "VALIDATION_FAILED",
            "email",
            message,
        )
    })?;
    let issued = services
        .users
        .invite_as_operator(&account.id, email.clone())
        .await
        .map_err(user_error)?;
    Ok(envelope::created(json!({
        "account_id": account.id,
        "email": email,
        "link_path": issued.path(),
        "link": full_link(&origin, &issued.path()),
        "expires_at": timestamp::format(&issued.link.expires_at),
    })))
}

/// The whole link, `null` where no origin is known (behind a TLS proxy
/// without `--public-url`): the path alone is then all there is to give.
fn full_link(origin: &PublicOrigin, path: &str) -> serde_json::Value {
    match origin.without_request() {
        Some(origin) => json!(format!("{origin}{path}")),
        None => serde_json::Value::Null,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetPassword {
    email: String,
}

impl crate::api::extract::BodyInput for ResetPassword {}

async fn reset_password(
    services: web::Data<Services>,
    origin: web::Data<PublicOrigin>,
    JsonBody(body): JsonBody<ResetPassword>,
) -> Result<HttpResponse, ApiError> {
    let email = parse_email(&body.email).map_err(|message| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            "VALIDATION_FAILED",
            "email",
            message,
        )
    })?;
    let (user, issued) = services
        .users
        .reset_password(&email)
        .await
        .map_err(user_error)?;
    Ok(envelope::ok(json!({
        "user": user_view(&user),
        "link_path": issued.path(),
        "link": full_link(&origin, &issued.path()),
        "expires_at": timestamp::format(&issued.link.expires_at),
    })))
}
