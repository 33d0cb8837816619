//! `/v1/loads/{load_id}/share-links`: public tracking pages of a load, made,
//! listed and revoked by its account. (The pages are `dashboard::track_page`.)

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use crate::api::envelope::{self, Envelope};
use crate::api::error::ApiError;
use crate::api::extract::{NoQuery, OptionalJsonBody};
use crate::api::input::share_link::NewShareLinkInput;
use crate::api::path::PathId;
use crate::domain::ids::{LoadId, ShareLinkId};
use crate::openapi::schemas::{Error, RevokedShareLink, ShareLinkList};
use crate::services::Services;
use crate::services::auth::Principal;
use crate::services::share_links::delivered_at;
use crate::views::share_link::{NewShareLinkView, ShareLinkView};

/// Share a load's tracking page.
///
/// Makes a link to a public page (no sign-in) with the load's route (city
/// and state), status, the truck's position, ETA, late risk and stops, and
/// nothing else: no carrier, rate, notes, weight or ids. The URL holds the
/// link's token and is shown this once.
#[utoipa::path(
    post,
    path = "/v1/loads/{load_id}/share-links",
    operation_id = "create_share_link",
    tag = "loads",
    params(("load_id" = LoadId, Path, description = "The load.")),
    request_body(content = Option<NewShareLinkInput>, description = "May be left out: no body is `{}`.", example = json!({"expires_at": "2026-11-30T17:00:00Z"})),
    responses(
        (status = 201, description = "The link, with its URL (shown once).", body = Envelope<NewShareLinkView>),
        (status = 409, description = "`TOO_MANY_SHARE_LINKS`: 50 per load.", body = Error),
    ),
)]
pub(crate) async fn create(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    req: HttpRequest,
    id: PathId<LoadId>,
    OptionalJsonBody(input): OptionalJsonBody<NewShareLinkInput>,
) -> Result<HttpResponse, ApiError> {
    let expires_at = input.validate()?;
    let (link, token) = services
        .share_links
        .create(principal.account_id(), &id.found()?, expires_at)
        .await?;
    let origin = crate::api::origin::public_origin(&req);
    Ok(envelope::created(NewShareLinkView::new(
        &link, &origin, &token,
    )))
}

/// List a load's share links, oldest first (their URLs are not kept).
#[utoipa::path(
    get,
    path = "/v1/loads/{load_id}/share-links",
    operation_id = "list_share_links",
    tag = "loads",
    params(("load_id" = LoadId, Path, description = "The load.")),
    responses((status = 200, description = "The load's links.", body = ShareLinkList)),
)]
pub(crate) async fn list(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, ApiError> {
    let (load, links) = services
        .share_links
        .list(principal.account_id(), &id.found()?)
        .await?;
    let now = services.clock.now();
    let delivered = delivered_at(&load);
    let views: Vec<ShareLinkView> = links
        .iter()
        .map(|link| ShareLinkView::new(link, delivered, now))
        .collect();
    let total = views.len() as u64;
    Ok(envelope::list(
        "share_links",
        views,
        envelope::PageInfo {
            page: 1,
            limit: crate::domain::share_link::MAX_PER_LOAD as u32,
            total,
        },
    ))
}

/// Revoke a share link: its page answers 410 from now on.
#[utoipa::path(
    delete,
    path = "/v1/loads/{load_id}/share-links/{link_id}",
    operation_id = "revoke_share_link",
    tag = "loads",
    params(
        ("load_id" = LoadId, Path, description = "The load."),
        ("link_id" = String, Path, description = "The link."),
    ),
    responses((status = 200, description = "Revoked (again: no change).", body = Envelope<RevokedShareLink>)),
)]
pub(crate) async fn revoke(
    principal: Principal,
    _: NoQuery,
    services: web::Data<Services>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (load, link) = path.into_inner();
    let load = LoadId::parse(&load).ok_or(crate::actors::LoadError::NotFound)?;
    let link =
        ShareLinkId::parse(&link).ok_or(crate::services::share_links::ShareLinkError::NotFound)?;
    let revoked = services
        .share_links
        .revoke(principal.account_id(), &load, &link)
        .await?;
    Ok(envelope::ok(json!({
        "id": revoked.id.as_str(),
        "revoked": true,
        "revoked_at": revoked.revoked_at.as_ref().map(crate::domain::timestamp::format),
    })))
}

resources! {
    "/loads/{load_id}/share-links" => [GET => list, POST => create],
    "/loads/{load_id}/share-links/{link_id}" => [DELETE => revoke],
}
