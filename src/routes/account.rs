//! `/v1/account/settings`: how the account's loads' stops are judged.

use actix_web::{HttpResponse, web};

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{JsonBody, NoQuery};
use crate::api::input::account::SettingsChangeInput;
use crate::domain::account::StopSettings;
use crate::services::Services;
use crate::services::auth::Principal;

/// The account's stop settings.
///
/// Arrival thresholds (`late` / `early` against the appointment), the free
/// time at stops for new loads, and whether leaving the pickup starts the
/// trip. Defaults: 15, 60, 120 and `true`.
#[utoipa::path(
    get,
    path = "/v1/account/settings",
    operation_id = "get_account_settings",
    tag = "account",
    responses((status = 200, description = "The settings.", body = Envelope<StopSettings>)),
)]
pub(crate) async fn get(principal: Principal, _: NoQuery) -> HttpResponse {
    envelope::ok(principal.account.stop_settings)
}

/// Change the account's stop settings.
///
/// Only the fields sent change. The thresholds judge every arrival shown or
/// sent from now on (past arrivals too, when shown again); the free time
/// applies to loads created from now on without their own
/// `detention_free_minutes`; `auto_in_transit` to the next departure from a
/// pickup. Other instances of a cluster follow within their key cache's
/// lifetime.
#[utoipa::path(
    patch,
    path = "/v1/account/settings",
    operation_id = "change_account_settings",
    tag = "account",
    request_body(content = SettingsChangeInput, example = json!({
        "late_after_minutes": 30, "auto_in_transit": false
    })),
    responses((status = 200, description = "The settings after the change.", body = Envelope<StopSettings>)),
)]
pub(crate) async fn change(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    JsonBody(input): JsonBody<SettingsChangeInput>,
) -> Result<HttpResponse, ApiError> {
    let account = services
        .accounts
        .change_stop_settings(principal.account_id(), |current| input.apply(current))
        .await?;
    Ok(envelope::ok(account.stop_settings))
}

resources! {
    "/account/settings" => [GET => get, PATCH => change],
}
