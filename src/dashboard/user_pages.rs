//! Settings → Users: the people of the account, inviting one (a one-time link
//! for the inviter to hand over), withdrawing an invitation, removing a user,
//! changing one's own password, and signing out every other browser of one's
//! own. Also the page a link leads to, where its holder chooses a password.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::errors::user_error;
use super::form::Form;
use super::page::{self, Section};
use super::session::{self, Viewer};
use super::session::{signed_in_response, with_form_token};
use super::widgets::when;
use super::widgets::{Kind, Problems, field};
use crate::domain::ids::UserId;
use crate::domain::password_link::{LinkPurpose, PasswordLink};
use crate::domain::user::{Role, User, check_new_password, parse_email};
use crate::domain::validation::ValidationErrors;
use crate::services::Services;
use crate::services::users::{IssuedLink, UserError};

/// What the users page shows besides its lists.
#[derive(Default)]
struct Shown<'a> {
    /// The invitation just made, with the link's full URL (shown this once).
    invited: Option<(&'a IssuedLink, String)>,
    note: Option<&'a str>,
    /// Problems of the invitation form, and its address as typed.
    invite: Problems,
    email: Option<String>,
    /// Problems of the password form.
    password: Problems,
}

pub async fn users_page(
    viewer: Viewer,
    services: web::Data<Services>,
) -> Result<HttpResponse, PageError> {
    Ok(page::ok(
        users_view(&services, &viewer, Shown::default()).await?,
    ))
}

/// Makes an invitation and shows its link. The answer is the same whether or
/// not the address is registered anywhere: nothing is looked up.
pub async fn invite(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let mut errors = ValidationErrors::new();
    let email = errors.require("email", form.text("email"), |e| parse_email(&e));
    let email = match errors.finish(|| email.expect("checked")) {
        Ok(email) => email,
        Err(errors) => {
            let shown = Shown {
                invite: Problems::from_validation(&errors),
                email: form.text("email"),
                ..Shown::default()
            };
            let view = users_view(&services, &viewer, shown).await?;
            return Ok(page::respond(
                actix_web::http::StatusCode::BAD_REQUEST,
                view,
            ));
        }
    };
    let issued = services
        .users
        .invite(&viewer.user, email)
        .await
        .map_err(user_error)?;
    let url = format!(
        "{}{}",
        crate::api::origin::public_origin(&req),
        issued.path()
    );
    let shown = Shown {
        invited: Some((&issued, url)),
        ..Shown::default()
    };
    Ok(page::ok(users_view(&services, &viewer, shown).await?))
}

pub async fn withdraw_invitation(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
    token_sha256: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    let withdrawn = services
        .users
        .withdraw_invitation(viewer.account_id(), &token_sha256)
        .await
        .map_err(user_error)?;
    if !withdrawn {
        return Err(PageError::NotFound);
    }
    Ok(page::see_other("/dashboard/settings/users"))
}

pub async fn remove_user(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = UserId::parse(&id).ok_or(PageError::NotFound)?;
    match services.users.remove_user(&viewer.user, &id).await {
        // Removing oneself ends this session too.
        Ok(_) if id == viewer.user.id => Ok(page::see_other("/dashboard/login?signed_out=1")),
        Ok(removed) => {
            let note = format!("Removed {}; their sessions have ended.", removed.email);
            noted(&services, &viewer, &note).await
        }
        Err(UserError::LastUser) => {
            let shown = Shown {
                note: Some(
                    "The last user of an account cannot be removed: invite someone first, \
                     or ask the operator to disable the account.",
                ),
                ..Shown::default()
            };
            let view = users_view(&services, &viewer, shown).await?;
            Ok(page::respond(actix_web::http::StatusCode::CONFLICT, view))
        }
        Err(UserError::UnknownUser) => Err(PageError::NotFound),
        Err(error) => Err(user_error(error)),
    }
}

/// Makes a user an owner or a member.
pub async fn set_role(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = UserId::parse(&id).ok_or(PageError::NotFound)?;
    let role = match form.text("role").as_deref() {
        Some("owner") => Role::Owner,
        Some("member") => Role::Member,
        _ => return Err(PageError::BadForm),
    };
    match services.users.set_role(&viewer.user, &id, role).await {
        Ok(user) => {
            let note = format!(
                "{} is now {} of the account.",
                user.email,
                match role {
                    Role::Owner => "an owner",
                    Role::Member => "a member",
                }
            );
            noted(&services, &viewer, &note).await
        }
        Err(UserError::UnknownUser) => Err(PageError::NotFound),
        Err(error) => Err(user_error(error)),
    }
}

pub async fn change_password(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let current = form.raw("current_password").unwrap_or_default();
    let new = form.raw("password").unwrap_or_default();
    let mut errors = ValidationErrors::new();
    errors.check("password", check_new_password(&new, &viewer.user.email));
    if form.raw("password_confirmation").as_deref() != Some(new.as_str()) {
        errors.add("password_confirmation", "must repeat the new password");
    }
    let refused = |problems: Problems| async {
        let shown = Shown {
            password: problems,
            ..Shown::default()
        };
        let view = users_view(&services, &viewer, shown).await?;
        Ok::<_, PageError>(page::respond(
            actix_web::http::StatusCode::BAD_REQUEST,
            view,
        ))
    };
    if let Err(errors) = errors.finish(|| ()) {
        return refused(Problems::from_validation(&errors)).await;
    }
    match services
        .users
        .change_password(&viewer.session, current, new)
        .await
    {
        Ok(ended) => {
            let note = format!("Password changed; {ended} other session(s) ended.");
            noted(&services, &viewer, &note).await
        }
        Err(UserError::WrongPassword) => {
            refused(Problems::one("current_password", "is not right")).await
        }
        Err(error) => Err(user_error(error)),
    }
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
    noted(&services, &viewer, &note).await
}

/// The users page with a note on what was just done.
async fn noted(
    services: &Services,
    viewer: &Viewer,
    note: &str,
) -> Result<HttpResponse, PageError> {
    let shown = Shown {
        note: Some(note),
        ..Shown::default()
    };
    Ok(page::ok(users_view(services, viewer, shown).await?))
}

async fn users_view(
    services: &Services,
    viewer: &Viewer,
    shown: Shown<'_>,
) -> Result<Markup, PageError> {
    let users = services
        .users
        .users(viewer.account_id())
        .await
        .map_err(user_error)?;
    let invitations = services
        .users
        .invitations(viewer.account_id())
        .await
        .map_err(user_error)?;
    let only_user = users.len() <= 1;
    let owner = viewer.user.role == Role::Owner;
    let inviter = |user: &User| match &user.invited_by {
        Some(by) => users
            .iter()
            .find(|u| &u.id == by)
            .map_or_else(|| "a former user".to_owned(), |u| u.email.clone()),
        None => "—".to_owned(),
    };
    Ok(page::page(
        "Users",
        Some(viewer),
        Section::Settings,
        html! {
            h1 { "Settings → Users" }
            (super::widgets::settings_tabs("Users"))
            @if let Some(note) = shown.note { p.notice role="status" { (note) } }
            @if let Some((issued, url)) = &shown.invited {
                section.card.new-key role="status" {
                    h2 { "Invitation link for " (issued.link.invited_email().unwrap_or_default()) }
                    p {
                        "Send this link to them yourself; freight sends no email. It works once, until "
                        (when(Some(issued.link.expires_at))) ", and is shown only now."
                    }
                    div.copy {
                        input id="invitation-link" readonly value=(url) aria-label="Invitation link";
                        button type="button" data-copy="#invitation-link" { "Copy" }
                    }
                }
            }
            section.card {
                h2 { "People in this account" }
                table.stack {
                    thead { tr { th { "Email" } th { "Role" } th { "Invited by" } th { "Since" } th { span.visually-hidden { "Actions" } } } }
                    tbody {
                        @for user in &users {
                            tr data-user=(user.email) {
                                td.email data-label="Email" { (user.email) @if user.id == viewer.user.id { " (you)" } }
                                td.role data-label="Role" { (user.role.as_str()) }
                                td.invited-by data-label="Invited by" { (inviter(user)) }
                                td data-label="Since" { (when(Some(user.created_at))) }
                                td.action {
                                    @if owner && !only_user {
                                        @let (to, label) = match user.role { Role::Owner => ("member", "Make member"), Role::Member => ("owner", "Make owner") };
                                        form.inline method="post" action=(format!("/dashboard/settings/user-roles/{}", user.id)) {
                                            (viewer.csrf_field())
                                            input type="hidden" name="role" value=(to);
                                            button type="submit" { (label) }
                                        }
                                        " "
                                        form.inline method="post" action=(format!("/dashboard/settings/users/{}/remove", user.id)) {
                                            (viewer.csrf_field())
                                            button.danger type="submit" { "Remove" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if !invitations.is_empty() {
                section.card {
                    h2 { "Open invitations" }
                    table.stack {
                        thead { tr { th { "Email" } th { "Until" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for invitation in &invitations {
                                (invitation_row(viewer, invitation))
                            }
                        }
                    }
                }
            }
            @if !owner {
                p.hint { "Owners manage the account's users, API keys, plan and settings; you are a member." }
            }
            @if owner { section.card {
                h2 { "Invite someone" }
                p.hint { "They get a link to choose their own password. It is valid for 7 days." }
                (shown.invite.summary())
                form method="post" action="/dashboard/settings/users" {
                    (viewer.csrf_field())
                    (field("email", "Email address", Kind::Email, shown.email.as_deref(), true, &shown.invite))
                    button.primary type="submit" { "Make invitation link" }
                }
            } }
            section.card {
                h2 { "Change your password" }
                p.hint { "Your other sessions end; this one stays." }
                (shown.password.summary())
                form method="post" action="/dashboard/settings/password" {
                    (viewer.csrf_field())
                    (field("current_password", "Current password", Kind::Password { new: false }, None, true, &shown.password))
                    (field("password", "New password (at least 10 characters)", Kind::Password { new: true }, None, true, &shown.password))
                    (field("password_confirmation", "Repeat the new password", Kind::Password { new: true }, None, true, &shown.password))
                    button.primary type="submit" { "Change password" }
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

fn invitation_row(viewer: &Viewer, invitation: &PasswordLink) -> Markup {
    html! {
        tr {
            td.email data-label="Email" { (invitation.invited_email().unwrap_or_default()) }
            td data-label="Until" { (when(Some(invitation.expires_at))) }
            td.action {
                form.inline method="post" action=(format!("/dashboard/settings/invitations/{}/withdraw", invitation.token_sha256)) {
                    (viewer.csrf_field())
                    button.danger type="submit" { "Withdraw" }
                }
            }
        }
    }
}

/// `GET /dashboard/password?token=…`: where an invitation or a reset link
/// leads; its holder chooses a password.
pub async fn password_link_page(
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let token = link_token(&req);
    match services.users.link(&token).await {
        Ok((link, email)) => Ok(with_form_token(|form_token| {
            link_form(form_token, &token, &link, &email, &Problems::default())
        })),
        Err(UserError::LinkUnusable) => Ok(unusable_link()),
        Err(error) => Err(user_error(error)),
    }
}

/// `POST /dashboard/password`: the chosen password; signed in on success.
pub async fn redeem_password_link(
    services: web::Data<Services>,
    req: HttpRequest,
    form: Form,
) -> Result<HttpResponse, PageError> {
    session::check_form_token(&req, form.raw("form_token").as_deref())?;
    let token = form.raw("token").unwrap_or_default();
    let (link, email) = match services.users.link(&token).await {
        Ok(found) => found,
        Err(UserError::LinkUnusable) => return Ok(unusable_link()),
        Err(error) => return Err(user_error(error)),
    };
    let password = form.raw("password").unwrap_or_default();
    let mut errors = ValidationErrors::new();
    errors.check("password", check_new_password(&password, &email));
    if form.raw("password_confirmation").as_deref() != Some(password.as_str()) {
        errors.add("password_confirmation", "must repeat the password");
    }
    // A refused password does not use the link up.
    if let Err(errors) = errors.finish(|| ()) {
        let problems = Problems::from_validation(&errors);
        let mut response =
            with_form_token(|form_token| link_form(form_token, &token, &link, &email, &problems));
        *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
        return Ok(response);
    }
    match services.users.redeem(&token, password).await {
        Ok(signed_in) => Ok(signed_in_response(&signed_in.token, "/dashboard/board")),
        Err(UserError::LinkUnusable) => Ok(unusable_link()),
        Err(UserError::EmailTaken) => Ok(page::respond(
            actix_web::http::StatusCode::CONFLICT,
            super::errors::error_page(
                "This address has an account already",
                "An address belongs to one user: log in with it instead, or ask for an \
                 invitation to another address.",
            ),
        )),
        Err(error) => Err(user_error(error)),
    }
}

/// The token of a link, from its query string (empty if none).
fn link_token(req: &HttpRequest) -> String {
    web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.get("token").cloned())
        .unwrap_or_default()
}

/// The same answer for a link used, withdrawn, expired or never made.
fn unusable_link() -> HttpResponse {
    page::respond(
        actix_web::http::StatusCode::NOT_FOUND,
        super::errors::error_page(
            "This link does not work",
            "It was used already, withdrawn, or has expired. Ask for a new one.",
        ),
    )
}

fn link_form(
    form_token: &str,
    token: &str,
    link: &PasswordLink,
    email: &str,
    problems: &Problems,
) -> Markup {
    let (title, intro, button) = match link.purpose {
        LinkPurpose::Invitation { .. } => (
            "Join the account",
            "You were invited to the dashboard. Choose a password to sign in with.",
            "Join",
        ),
        LinkPurpose::Reset { .. } => (
            "Choose a new password",
            "Your password was reset. Choose a new one to sign in with.",
            "Set password",
        ),
    };
    page::page(
        title,
        None,
        Section::None,
        html! {
            section.card.narrow {
                h1 { (title) }
                p { (intro) }
                p { "Email address: " strong { (email) } }
                (problems.summary())
                form method="post" action=(crate::domain::password_link::LINK_PATH) {
                    input type="hidden" name="form_token" value=(form_token);
                    input type="hidden" name="token" value=(token);
                    (field("password", "Password (at least 10 characters)", Kind::Password { new: true }, None, true, problems))
                    (field("password_confirmation", "Repeat the password", Kind::Password { new: true }, None, true, problems))
                    button.primary type="submit" { (button) }
                }
            }
        },
    )
}
