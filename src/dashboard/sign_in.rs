//! Register, log in, log out.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::errors::user_error;
use super::form::Form;
use super::page::{self, Section};
use super::session::{self, SESSION_COOKIE, Viewer, signed_in_response, with_form_token};
use super::widgets::{Kind, Problems, field};
use crate::domain::account::MAX_ACCOUNT_NAME_CHARS;
use crate::domain::user::{check_new_password, parse_email};
use crate::domain::validation::{ValidationErrors, text};
use crate::services::Services;
use crate::services::users::{Registration, UserError};

pub async fn register_page(viewer: Option<Viewer>) -> HttpResponse {
    if viewer.is_some() {
        return page::see_other("/dashboard/board");
    }
    with_form_token(|token| register_form(token, &Problems::default(), None, None))
}

pub async fn register(
    req: HttpRequest,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    session::check_form_token(&req, form.raw("form_token").as_deref())?;
    let mut errors = ValidationErrors::new();
    let company = errors.require("company", form.text("company"), |c| {
        text(c, MAX_ACCOUNT_NAME_CHARS, false)
    });
    let email = errors.require("email", form.text("email"), |e| parse_email(&e));
    let password = form.raw("password").unwrap_or_default();
    if let Some(email) = &email {
        errors.check("password", check_new_password(&password, email));
    }
    if form.raw("password_confirmation").as_deref() != Some(password.as_str()) {
        errors.add("password_confirmation", "must repeat the password");
    }
    let refused = |problems: Problems| {
        let company = form.text("company");
        let email = form.text("email");
        with_form_token(|token| {
            register_form(token, &problems, company.as_deref(), email.as_deref())
        })
    };
    let registration = match errors.finish(|| Registration {
        company: company.expect("checked"),
        email: email.expect("checked"),
        password,
    }) {
        Ok(registration) => registration,
        Err(errors) => return Ok(refused(Problems::from_validation(&errors))),
    };
    // The same answer whether or not the address was registered before: a
    // new account is not signed in by it, so that the answer (a cookie or
    // none) tells nothing. Its owner logs in next, and is taken to the plans.
    services
        .users
        .register(registration, &session::client_address(&req))
        .await
        .map_err(user_error)?;
    Ok(page::see_other(
        "/dashboard/login?registered=1&next=%2Fdashboard%2Fplan%3Fwelcome%3D1",
    ))
}

pub async fn login_page(viewer: Option<Viewer>, req: HttpRequest) -> HttpResponse {
    if viewer.is_some() {
        return page::see_other("/dashboard/board");
    }
    let next = next_of(&req);
    let query = super::form::Query::of(&req);
    let note = if query.get("registered").is_some() {
        Some(
            "Registration received. If the address was not registered before, your account \
             is ready: log in with it and your password.",
        )
    } else if query.get("signed_out").is_some() {
        Some("You are signed out.")
    } else {
        None
    };
    with_form_token(|token| login_form(token, &Problems::default(), None, &next, note))
}

pub async fn login(
    req: HttpRequest,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    session::check_form_token(&req, form.raw("form_token").as_deref())?;
    let next = safe_next(form.text("next").as_deref());
    let email = form
        .text("email")
        .map(|e| e.to_lowercase())
        .unwrap_or_default();
    let password = form.raw("password").unwrap_or_default();
    match services
        .users
        .sign_in(&email, password, &session::client_address(&req))
        .await
    {
        Ok(signed_in) => Ok(signed_in_response(&signed_in.token, &next)),
        Err(UserError::BadCredentials) => Ok(with_form_token(|token| {
            let problems = Problems::one("", "The email address or password is not right.");
            login_form(token, &problems, Some(&email), &next, None)
        })),
        Err(error) => Err(user_error(error)),
    }
}

pub async fn logout(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    services
        .users
        .sign_out(&viewer.session)
        .await
        .map_err(user_error)?;
    let mut response = page::see_other("/dashboard/login?signed_out=1");
    response
        .add_removal_cookie(&session::removal(SESSION_COOKIE))
        .ok();
    Ok(response)
}

/// Where to go after signing in: only a dashboard path of this site.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/dashboard") && !n.starts_with("//") && !n.contains('\\') => {
            n.to_owned()
        }
        _ => "/dashboard/board".to_owned(),
    }
}

fn next_of(req: &HttpRequest) -> String {
    let next =
        web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
            .ok()
            .and_then(|q| q.get("next").cloned());
    safe_next(next.as_deref())
}

fn register_form(
    token: &str,
    problems: &Problems,
    company: Option<&str>,
    email: Option<&str>,
) -> Markup {
    page::page(
        "Register",
        None,
        Section::None,
        html! {
            section.card.narrow {
                h1 { "Create your account" }
                p { "Start on the Standard plan (1,000 API requests an hour); switch to Pro at any time." }
                (problems.summary())
                form method="post" action="/dashboard/register" {
                    input type="hidden" name="form_token" value=(token);
                    (field("company", "Company name", Kind::Text, company, true, problems))
                    (field("email", "Email address", Kind::Email, email, true, problems))
                    (field("password", "Password (at least 10 characters)", Kind::Password { new: true }, None, true, problems))
                    (field("password_confirmation", "Repeat the password", Kind::Password { new: true }, None, true, problems))
                    button.primary type="submit" { "Create account" }
                }
                p { "Already registered? " a href="/dashboard/login" { "Log in" } }
            }
        },
    )
}

fn login_form(
    token: &str,
    problems: &Problems,
    email: Option<&str>,
    next: &str,
    note: Option<&str>,
) -> Markup {
    page::page(
        "Log in",
        None,
        Section::None,
        html! {
            section.card.narrow {
                h1 { "Log in" }
                @if let Some(note) = note { p.notice role="status" { (note) } }
                (problems.summary())
                form method="post" action="/dashboard/login" {
                    input type="hidden" name="form_token" value=(token);
                    input type="hidden" name="next" value=(next);
                    (field("email", "Email address", Kind::Email, email, true, problems))
                    (field("password", "Password", Kind::Password { new: false }, None, true, problems))
                    button.primary type="submit" { "Log in" }
                }
                p { "No account yet? " a href="/dashboard/register" { "Register" } }
            }
        },
    )
}
