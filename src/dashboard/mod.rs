//! The web dashboard, served under `/dashboard` on the API's HTTPS listener:
//! register, log in, choose a plan, generate API keys, post and move loads by
//! hand, and watch them on a live board. Pages are rendered on the server
//! (maud); a little plain JavaScript drives the live board and the copy button.
//!
//! It is separate from the API: its own session cookie, never an API key, and
//! the API never accepts the cookie. Pages go through the same services and the
//! same inputs (`api::input`) as the API, so the rules and their wording are
//! one. A layer beside `routes`: it imports services, api and views.

mod account_pages;
mod assets;
mod board;
mod carrier_pages;
mod form;
mod load_pages;
mod page;
mod session;
mod sign_in;
mod webhook_pages;
mod widgets;

use actix_web::{HttpResponse, web};

use self::session::Viewer;

/// Mounts the dashboard, and `/` redirecting to it.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(root)).service(
        web::scope("/dashboard")
            .route("", web::get().to(home))
            .route("/", web::get().to(home))
            .route("/assets/{name}", web::get().to(assets::serve))
            .route("/register", web::get().to(sign_in::register_page))
            .route("/register", web::post().to(sign_in::register))
            .route("/login", web::get().to(sign_in::login_page))
            .route("/login", web::post().to(sign_in::login))
            .route("/logout", web::post().to(sign_in::logout))
            .route("/plan", web::get().to(account_pages::plan_page))
            .route("/plan", web::post().to(account_pages::change_plan))
            .route(
                "/settings/api-keys",
                web::get().to(account_pages::keys_page),
            )
            .route(
                "/settings/api-keys",
                web::post().to(account_pages::generate_key),
            )
            .route(
                "/settings/api-keys/{key}/revoke",
                web::get().to(account_pages::confirm_revoke),
            )
            .route(
                "/settings/api-keys/{key}/revoke",
                web::post().to(account_pages::revoke),
            )
            .route("/board", web::get().to(board::page))
            .route("/board/loads.json", web::get().to(board::loads))
            .route("/loads", web::get().to(load_pages::list))
            .route("/loads", web::post().to(load_pages::create))
            .route("/loads/new", web::get().to(load_pages::new_page))
            .route("/loads/{id}", web::get().to(load_pages::show))
            .route(
                "/loads/{id}/status",
                web::post().to(load_pages::change_status),
            )
            .route("/carriers", web::get().to(carrier_pages::list))
            .route("/carriers", web::post().to(carrier_pages::create))
            .route("/carriers/new", web::get().to(carrier_pages::new_page))
            .route("/webhooks", web::get().to(webhook_pages::list))
            .route("/webhooks", web::post().to(webhook_pages::create))
            .route("/webhooks/{id}", web::get().to(webhook_pages::show))
            .route(
                "/webhooks/{id}/deliveries/{event}/redeliver",
                web::post().to(webhook_pages::redeliver),
            )
            .default_service(web::to(not_found)),
    );
}

async fn root() -> HttpResponse {
    page::see_other("/dashboard")
}

async fn home(viewer: Option<Viewer>) -> HttpResponse {
    match viewer {
        Some(_) => page::see_other("/dashboard/board"),
        None => page::see_other("/dashboard/login"),
    }
}

async fn not_found() -> HttpResponse {
    use actix_web::ResponseError;
    page::PageError::NotFound.error_response()
}
