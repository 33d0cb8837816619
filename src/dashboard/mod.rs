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
mod device_pages;
mod errors;
mod form;
mod load_form;
mod load_list;
mod load_page;
mod lookups;
pub mod map_tiles;
mod maps;
mod page;
mod session;
mod sign_in;
mod stop_settings;
mod stop_words;
mod track_page;
mod tracker_setup;
mod user_pages;
mod webhook_pages;
mod widgets;

use actix_web::dev::Service;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};

pub use self::map_tiles::MapSource;
use self::session::Viewer;

/// A page's path and its GET and POST handlers: `page!(scope, "/x", get => a, post => b)`.
/// Any other method answers the "not allowed" page, never an empty 405.
macro_rules! pages {
    ($scope:expr, $( $path:literal => [ $( $method:ident => $handler:expr ),+ ] ),+ $(,)?) => {
        $scope $(
            .service(
                web::resource($path)
                    $( .route(web::$method().to($handler)) )+
                    .default_service(web::to(method_not_allowed)),
            )
        )+
    };
}

/// Mounts the dashboard, and `/` redirecting to it, drawing maps from `map`.
pub fn configure(map: MapSource) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg| mount(cfg, map.clone())
}

fn mount(cfg: &mut web::ServiceConfig, map: MapSource) {
    // Pages answer with the outline-only policy (`page::CSP`); with tiles, the
    // scope widens `img-src` to the tile server on every answer it gives.
    let csp = map.0.as_ref().map(|tiles| {
        HeaderValue::from_str(&map_tiles::content_security_policy(Some(tiles)))
            .expect("a validated tile origin is a valid header value")
    });
    let scope = web::scope("/dashboard")
        .app_data(web::Data::new(map))
        // A page or form for a load another instance acts for runs there.
        .wrap(actix_web::middleware::from_fn(
            crate::api::forward::serve_or_forward,
        ))
        .wrap_fn(move |req, srv| {
            let answer = srv.call(req);
            let csp = csp.clone();
            async move {
                let mut response = answer.await?;
                if let Some(csp) = csp {
                    response
                        .headers_mut()
                        .insert(header::CONTENT_SECURITY_POLICY, csp);
                }
                Ok(response)
            }
        });
    let scope = pages!(scope,
        "" => [get => home],
        "/" => [get => home],
        "/assets/{name}" => [get => assets::serve],
        "/register" => [get => sign_in::register_page, post => sign_in::register],
        "/login" => [get => sign_in::login_page, post => sign_in::login],
        "/logout" => [post => sign_in::logout],
        "/plan" => [get => account_pages::plan_page, post => account_pages::change_plan],
        "/settings/api-keys" => [get => account_pages::keys_page, post => account_pages::generate_key],
        "/settings/api-keys/{key}/revoke" => [get => account_pages::confirm_revoke, post => account_pages::revoke],
        "/settings/users" => [get => user_pages::users_page, post => user_pages::invite],
        "/settings/users/{id}/remove" => [post => user_pages::remove_user],
        "/settings/user-roles/{id}" => [post => user_pages::set_role],
        "/settings/invitations/{token}/withdraw" => [post => user_pages::withdraw_invitation],
        "/settings/password" => [post => user_pages::change_password],
        "/settings/stops" => [get => stop_settings::settings_page, post => stop_settings::change_settings],
        "/settings/sessions/end-others" => [post => user_pages::sign_out_elsewhere],
        "/password" => [get => user_pages::password_link_page, post => user_pages::redeem_password_link],
        "/board" => [get => board::page],
        "/board/loads.json" => [get => board::loads],
        "/stream" => [get => board::stream],
        "/loads" => [get => load_list::list, post => load_form::create],
        "/loads/new" => [get => load_form::new_page],
        "/loads/{id}" => [get => load_page::show],
        "/loads/{id}/edit" => [get => load_form::edit_page, post => load_form::edit],
        "/loads/{id}/status" => [post => load_page::change_status],
        "/loads/{id}/device" => [post => load_page::attach],
        "/loads/{id}/device/detach" => [post => load_page::detach],
        "/loads/{id}/share-links" => [post => load_page::create_share_link],
        "/loads/{load}/share-links/{link}/revoke" => [post => load_page::revoke_share_link],
        "/carriers" => [get => carrier_pages::list, post => carrier_pages::create],
        "/carriers/new" => [get => carrier_pages::new_page],
        "/carriers/{id}" => [get => carrier_pages::show, post => carrier_pages::update],
        "/carriers/{id}/delete" => [post => carrier_pages::delete],
        "/devices" => [get => device_pages::list, post => device_pages::create],
        "/devices/{id}/revoke" => [get => device_pages::confirm_revoke, post => device_pages::revoke],
        "/webhooks" => [get => webhook_pages::list, post => webhook_pages::create],
        "/webhooks/{id}" => [get => webhook_pages::show],
        "/webhooks/{id}/test" => [post => webhook_pages::test],
        "/webhooks/{id}/enabled" => [post => webhook_pages::set_enabled],
        "/webhooks/{id}/edit" => [post => webhook_pages::edit],
        "/webhooks/{id}/delete" => [post => webhook_pages::delete],
        "/webhooks/{id}/deliveries/{event}/redeliver" => [post => webhook_pages::redeliver],
    );
    cfg.route("/", web::get().to(root))
        // Browsers ask for it whatever the page says.
        .route("/favicon.ico", web::get().to(favicon))
        .route("/track/{token}", web::get().to(track_page::show))
        .service(scope.default_service(web::to(not_found)));
}

async fn favicon() -> HttpResponse {
    page::see_other("/dashboard/assets/favicon.svg")
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
    errors::PageError::NotFound.error_response()
}

async fn method_not_allowed() -> HttpResponse {
    use actix_web::ResponseError;
    errors::PageError::MethodNotAllowed.error_response()
}
