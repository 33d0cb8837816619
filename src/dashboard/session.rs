//! Who is looking: the session cookie, the signed-in viewer it names, and the
//! CSRF checks of forms.
//!
//! The session cookie is `__Host-` prefixed (Secure, Path=/, no Domain),
//! HttpOnly and SameSite=Lax, and holds a random token whose SHA-256 names the
//! session in storage. Forms of a session carry its CSRF token (synchronizer
//! token); the sign-in and sign-up forms, before any session exists, carry a
//! token that must equal a short-lived cookie of their own (double submit).

use std::future::Future;
use std::pin::Pin;

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use rand::RngCore;
use subtle::ConstantTimeEq;

use super::errors::PageError;
use super::page;
use crate::domain::account::Account;
use crate::domain::ids::AccountId;
use crate::domain::user::{SESSION_LIFETIME, Session, User};
use crate::services::Services;

pub const SESSION_COOKIE: &str = "__Host-freight_session";
pub const FORM_COOKIE: &str = "__Host-freight_form";

/// A signed-in user, from a live session. Extracting it from a request without
/// one answers with a redirect to the sign-in page.
pub struct Viewer {
    pub user: User,
    pub session: Session,
    /// The user's account, as read for this request.
    pub account: Account,
}

impl super::page::SignedIn for Viewer {
    fn email(&self) -> &str {
        &self.user.email
    }

    fn csrf_field(&self) -> Markup {
        Viewer::csrf_field(self)
    }
}

impl Viewer {
    pub fn account_id(&self) -> &AccountId {
        &self.user.account_id
    }

    /// The hidden field every form of this session carries.
    pub fn csrf_field(&self) -> Markup {
        html! { input type="hidden" name="csrf" value=(self.session.csrf_token); }
    }

    /// Refuses a member what only owners may do (users, API keys, plan, settings).
    pub fn check_owner(&self) -> Result<(), PageError> {
        match self.user.role {
            crate::domain::user::Role::Owner => Ok(()),
            crate::domain::user::Role::Member => Err(PageError::OwnersOnly),
        }
    }

    /// Refuses a form without this session's token.
    pub fn check_csrf(&self, sent: Option<&str>) -> Result<(), PageError> {
        match sent {
            Some(sent) if same(sent, &self.session.csrf_token) => Ok(()),
            _ => Err(PageError::Csrf),
        }
    }
}

impl FromRequest for Viewer {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned());
        let services = req.app_data::<web::Data<Services>>().cloned();
        let next = req
            .uri()
            .path_and_query()
            .map_or("/dashboard".to_owned(), |p| p.as_str().to_owned());
        Box::pin(async move {
            let signed_out = || PageError::SignedOut { next: next.clone() };
            let (Some(token), Some(services)) = (token, services) else {
                return Err(signed_out());
            };
            match services.users.session(&token).await {
                Ok(Some((session, user))) => {
                    match services.accounts.get_account(&user.account_id).await {
                        Ok(account) if account.disabled => Err(PageError::AccountDisabled),
                        Ok(account) => Ok(Viewer {
                            user,
                            session,
                            account,
                        }),
                        Err(error) => Err(PageError::Unavailable(error.to_string())),
                    }
                }
                Ok(None) => Err(signed_out()),
                Err(error) => Err(PageError::Unavailable(error.to_string())),
            }
        })
    }
}

/// The session cookie for a new session's token.
pub fn session_cookie(token: &str) -> Cookie<'static> {
    secure_cookie(SESSION_COOKIE, token.to_owned(), SameSite::Lax)
        .max_age(CookieDuration::seconds(SESSION_LIFETIME.num_seconds()))
        .finish()
}

/// A cookie that tells the browser to forget `name`.
pub fn removal(name: &'static str) -> Cookie<'static> {
    let mut cookie = secure_cookie(name, String::new(), SameSite::Lax).finish();
    cookie.make_removal();
    cookie
}

/// The token of a sign-in or sign-up form, and the cookie it must match.
pub fn form_token() -> (String, Cookie<'static>) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let cookie = secure_cookie(FORM_COOKIE, token.clone(), SameSite::Strict)
        .max_age(CookieDuration::hours(2))
        .finish();
    (token, cookie)
}

/// Refuses a sign-in or sign-up form whose token does not match its cookie.
pub fn check_form_token(req: &HttpRequest, sent: Option<&str>) -> Result<(), PageError> {
    let cookie = req.cookie(FORM_COOKIE);
    match (cookie, sent) {
        (Some(cookie), Some(sent)) if !sent.is_empty() && same(sent, cookie.value()) => Ok(()),
        _ => Err(PageError::Csrf),
    }
}

pub use crate::api::client_address::client_address;

fn secure_cookie(
    name: &'static str,
    value: String,
    same_site: SameSite,
) -> actix_web::cookie::CookieBuilder<'static> {
    Cookie::build(name, value)
        .path("/")
        .secure(true)
        .http_only(true)
        .same_site(same_site)
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

pub(super) fn signed_in_response(token: &str, next: &str) -> HttpResponse {
    let mut response = page::see_other(next);
    response.add_cookie(&session_cookie(token)).ok();
    response.add_removal_cookie(&removal(FORM_COOKIE)).ok();
    response
}

/// A sign-in or sign-up page with a fresh form token and its cookie.
pub(super) fn with_form_token(render: impl FnOnce(&str) -> Markup) -> HttpResponse {
    let (token, cookie) = form_token();
    let mut response = page::ok(render(&token));
    response.add_cookie(&cookie).ok();
    response
}
