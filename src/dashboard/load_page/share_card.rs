//! The share links card of a load's page: make one (its URL shown this once),
//! see those made, revoke one.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use crate::api::path::PathId;
use crate::dashboard::errors::PageError;
use crate::dashboard::form::Form;
use crate::dashboard::lookups::viewer_load;
use crate::dashboard::page;
use crate::dashboard::session::Viewer;
use crate::dashboard::widgets::copy;
use crate::domain::ids::{LoadId, ShareLinkId};
use crate::domain::load::Load;
use crate::domain::share_link::ShareLink;
use crate::services::Services;
use crate::services::share_links::{ShareLinkError, delivered_at};

/// The load's share links, and the URL of one just made (shown this once).
pub async fn share_card(
    services: &Services,
    viewer: &Viewer,
    load: &Load,
    new_url: Option<&str>,
) -> Markup {
    let links = match services
        .share_links
        .list(viewer.account_id(), &load.id)
        .await
    {
        Ok((_, links)) => links,
        Err(error) => {
            tracing::warn!(load = %load.id, %error, "a load's share links could not be read");
            Vec::new()
        }
    };
    let now = services.clock.now();
    let delivered = delivered_at(load);
    let live: Vec<&ShareLink> = links
        .iter()
        .filter(|link| link.check(delivered, now).is_ok())
        .collect();
    html! {
        section.card #share {
            h2 { "Share tracking" }
            p.hint { "A link to a public page with the route's cities, status, position, ETA and stops: no carrier, rate, notes or weight." }
            @if let Some(url) = new_url {
                (copy("share-url", "Tracking page (shown once)", url))
            }
            form method="post" action=(format!("/dashboard/loads/{}/share-links", load.id)) {
                (viewer.csrf_field())
                button type="submit" { "Make a link (72 hours)" }
            }
            @if !live.is_empty() {
                ul.links {
                    @for link in &live {
                        li {
                            "Works until " (link.ends_at(delivered).format("%-d %b %Y, %H:%M UTC"))
                            form.inline method="post" action=(format!("/dashboard/loads/{}/share-links/{}/revoke", load.id, link.id)) {
                                (viewer.csrf_field())
                                button type="submit" { "Revoke" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn share_error(error: ShareLinkError) -> PageError {
    match error {
        ShareLinkError::Storage(error) => PageError::Unavailable(error.to_string()),
        _ => PageError::NotFound,
    }
}

/// `POST /dashboard/loads/{id}/share-links`: makes a link and shows the
/// load's page with its URL.
pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    map: web::Data<super::MapSource>,
    req: HttpRequest,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let (_, token) = services
        .share_links
        .create(viewer.account_id(), &id, None)
        .await
        .map_err(share_error)?;
    let url = format!("{}/track/{token}", crate::api::origin::public_origin(&req));
    let load = viewer_load(&services, &viewer, &id).await?;
    super::page_with_link(&services, &viewer, &map, &load, &url).await
}

/// `POST /dashboard/loads/{id}/share-links/{link}/revoke`.
pub async fn revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    path: web::Path<(String, String)>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let (load, link) = path.into_inner();
    let load = LoadId::parse(&load).ok_or(PageError::NotFound)?;
    let link = ShareLinkId::parse(&link).ok_or(PageError::NotFound)?;
    services
        .share_links
        .revoke(viewer.account_id(), &load, &link)
        .await
        .map_err(share_error)?;
    Ok(page::see_other(&format!("/dashboard/loads/{load}#share")))
}
