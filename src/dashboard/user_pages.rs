//! Settings → Users: the people of the account, adding one, and signing out
//! every other browser of one's own.

use actix_web::{HttpResponse, web};
use maud::{Markup, html};

use super::account_pages::when;
use super::form::Form;
use super::page::{self, PageError, Section};
use super::session::Viewer;
use super::sign_in::user_error;
use super::widgets::{Kind, Problems, field};
use crate::domain::user::{check_new_password, parse_email};
use crate::domain::validation::ValidationErrors;
use crate::services::Services;
use crate::services::users::UserError;

pub async fn users_page(
    viewer: Viewer,
    services: web::Data<Services>,
) -> Result<HttpResponse, PageError> {
    Ok(page::ok(
        users_view(&services, &viewer, &Problems::default(), None, None).await?,
    ))
}

pub async fn add_user(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let mut errors = ValidationErrors::new();
    let email = errors.require("email", form.text("email"), |e| parse_email(&e));
    let password = form.raw("password").unwrap_or_default();
    if let Some(email) = &email {
        errors.check("password", check_new_password(&password, email));
    }
    let email = match errors.finish(|| email.expect("checked")) {
        Ok(email) => email,
        Err(errors) => {
            return refused(
                &services,
                &viewer,
                &form,
                Problems::from_validation(&errors),
            )
            .await;
        }
    };
    match services
        .users
        .add_user(viewer.account_id(), email, password)
        .await
    {
        Ok(user) => {
            tracing::info!(request_id = %crate::telemetry::request_id(), account = %viewer.account_id(), user = %user.id, "user added in the dashboard");
            Ok(page::see_other("/dashboard/settings/users"))
        }
        Err(UserError::EmailTaken) => {
            let problems = Problems::one("email", "is already registered");
            refused(&services, &viewer, &form, problems).await
        }
        Err(error) => Err(user_error(error)),
    }
}

/// The page again, with the form's problems.
async fn refused(
    services: &Services,
    viewer: &Viewer,
    form: &Form,
    problems: Problems,
) -> Result<HttpResponse, PageError> {
    let email = form.text("email");
    let view = users_view(services, viewer, &problems, email.as_deref(), None).await?;
    Ok(page::respond(
        actix_web::http::StatusCode::BAD_REQUEST,
        view,
    ))
}

pub async fn sign_out_elsewhere(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let ended = services
        .users
        .sign_out_elsewhere(&viewer.session)
        .await
        .map_err(user_error)?;
    let note = format!("Signed out of {ended} other session(s).");
    Ok(page::ok(
        users_view(&services, &viewer, &Problems::default(), None, Some(&note)).await?,
    ))
}

async fn users_view(
    services: &Services,
    viewer: &Viewer,
    problems: &Problems,
    email: Option<&str>,
    note: Option<&str>,
) -> Result<Markup, PageError> {
    let users = services
        .users
        .users(viewer.account_id())
        .await
        .map_err(user_error)?;
    Ok(page::page(
        "Users",
        Some(viewer),
        Section::Settings,
        html! {
            h1 { "Settings → Users" }
            p { a href="/dashboard/settings/api-keys" { "API Keys" } " · " strong { "Users" } }
            @if let Some(note) = note { p.notice role="status" { (note) } }
            section.card {
                h2 { "People in this account" }
                table {
                    thead { tr { th { "Email" } th { "Since" } } }
                    tbody {
                        @for user in &users {
                            tr { td { (user.email) @if user.id == viewer.user.id { " (you)" } } td { (when(Some(user.created_at))) } }
                        }
                    }
                }
            }
            section.card {
                h2 { "Add user" }
                (problems.summary())
                form method="post" action="/dashboard/settings/users" {
                    (viewer.csrf_field())
                    (field("email", "Email address", Kind::Email, email, true, problems))
                    (field("password", "Password (at least 10 characters)", Kind::Password { new: true }, None, true, problems))
                    button.primary type="submit" { "Add user" }
                }
            }
            section.card {
                h2 { "Your sessions" }
                p { "Signed in elsewhere, on a shared or lost device? End every session but this one." }
                form method="post" action="/dashboard/settings/sessions/end-others" {
                    (viewer.csrf_field())
                    button.danger type="submit" { "Log out everywhere else" }
                }
            }
        },
    ))
}
