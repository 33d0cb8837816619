//! The page frame every dashboard page shares: plain server-rendered HTML
//! (maud), one stylesheet, no script needed to read it.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use maud::{DOCTYPE, Markup, html};

/// Who a signed-in page is for, as its frame shows them (the sign-out form).
pub trait SignedIn {
    fn email(&self) -> &str;
    /// The hidden field that proves a form came from this session's page.
    fn csrf_field(&self) -> Markup;
}

/// Where a signed-in page sits in the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Board,
    Loads,
    Carriers,
    Devices,
    Webhooks,
    Plan,
    Settings,
    None,
}

const NAV: [(Section, &str, &str); 7] = [
    (Section::Board, "/dashboard/board", "Board"),
    (Section::Loads, "/dashboard/loads", "Loads"),
    (Section::Carriers, "/dashboard/carriers", "Carriers"),
    (Section::Devices, "/dashboard/devices", "Devices"),
    (Section::Webhooks, "/dashboard/webhooks", "Webhooks"),
    (Section::Plan, "/dashboard/plan", "Plan"),
    (
        Section::Settings,
        "/dashboard/settings/api-keys",
        "Settings",
    ),
];

/// A whole page: the frame, the navigation for a signed-in viewer, the body.
pub fn page(title: &str, viewer: Option<&dyn SignedIn>, section: Section, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · freight" }
                link rel="stylesheet" href="/dashboard/assets/dashboard.css";
                link rel="icon" type="image/svg+xml" href="/dashboard/assets/favicon.svg";
            }
            body {
                header.top {
                    a.brand href="/dashboard" { "freight" }
                    @if let Some(viewer) = viewer {
                        // Narrow screens fold the links behind a Menu button
                        // (a checkbox and its label: no script needed).
                        input #menu-toggle.menu-toggle type="checkbox" aria-label="Menu";
                        label.menu-button for="menu-toggle" aria-hidden="true" { "Menu" }
                        nav aria-label="Main" {
                            @for (s, href, label) in NAV {
                                a href=(href) aria-current=[(s == section).then_some("page")] { (label) }
                            }
                        }
                        form.signout method="post" action="/dashboard/logout" {
                            (viewer.csrf_field())
                            span.who { (viewer.email()) }
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// An HTML answer with `status`.
pub fn respond(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        // Pages show account data: never kept by shared caches, nor framed.
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("x-frame-options", "DENY"))
        .insert_header(("content-security-policy", CSP))
        .insert_header(("referrer-policy", "same-origin"))
        .body(markup.into_string())
}

pub fn ok(markup: Markup) -> HttpResponse {
    respond(StatusCode::OK, markup)
}

/// Scripts and styles only from this origin; no inline script.
pub(super) const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                   script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
                   form-action 'self'; base-uri 'none'";

/// After a form: see the result with a GET (so a reload does not post again).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((
            header::LOCATION,
            HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/dashboard")),
        ))
        .finish()
}

/// Percent-encodes a value for a query string.
pub fn encode_query(value: &str) -> String {
    serde_urlencoded::to_string([("", value)])
        .map(|pair| pair.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}
