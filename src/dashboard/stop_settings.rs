//! Settings → Stops: the account's arrival radius, free time and late-risk
//! margin, which every load's stops take unless the load says otherwise.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::form::Form;
use super::page;
use super::session::Viewer;
use super::widgets::{Kind, Problems, field, settings_tabs};
use crate::api::input::account::SettingsChangeInput;
use crate::domain::account::StopSettings;
use crate::domain::validation::ValidationErrors;
use crate::services::Services;

/// Settings → Stops: the account's arrival thresholds, default free time
/// and automatic in-transit (`/v1/account/settings` in the API).
pub async fn settings_page(viewer: Viewer, req: HttpRequest) -> HttpResponse {
    let current = viewer.account.stop_settings;
    let saved = req.query_string() == "saved=1";
    page::ok(settings_view(
        &viewer,
        &current,
        None,
        &Problems::default(),
        saved,
    ))
}

pub async fn change_settings(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    viewer.check_owner()?;
    let mut errors = ValidationErrors::new();
    let input = SettingsChangeInput {
        late_after_minutes: form.number("late_after_minutes", &mut errors),
        early_before_minutes: form.number("early_before_minutes", &mut errors),
        detention_free_minutes: form.number("detention_free_minutes", &mut errors),
        // An unticked box is not sent.
        auto_in_transit: Some(form.raw("auto_in_transit").is_some()),
        // Not on this form yet: kept as they are.
        auto_delivered: None,
        driving_mph: None,
        road_circuity: None,
    };
    let current = viewer.account.stop_settings;
    let checked = input.apply(current).and_then(|next| errors.finish(|| next));
    let next = match checked {
        Ok(next) => next,
        Err(errors) => {
            let problems = Problems::from_validation(&errors);
            return Ok(page::respond(
                actix_web::http::StatusCode::BAD_REQUEST,
                settings_view(&viewer, &current, Some(&form), &problems, false),
            ));
        }
    };
    services
        .accounts
        .change_stop_settings(viewer.account_id(), |_| Ok(next))
        .await
        .map_err(super::errors::account_error)?;
    Ok(page::see_other("/dashboard/settings/stops?saved=1"))
}

fn settings_view(
    viewer: &Viewer,
    current: &StopSettings,
    sent: Option<&Form>,
    problems: &Problems,
    saved: bool,
) -> Markup {
    let value = |name: &str, stored: u32| match sent {
        Some(form) => form.text(name),
        None => Some(stored.to_string()),
    };
    let auto = sent.map_or(current.auto_in_transit, |f| {
        f.raw("auto_in_transit").is_some()
    });
    page::page(
        "Stops",
        Some(viewer),
        page::Section::Settings,
        html! {
            h1 { "Settings → Stops" }
            (settings_tabs("Stops"))
            @if saved { p.notice role="status" { "Saved." } }
            form.card method="post" action="/dashboard/settings/stops" {
                (viewer.csrf_field())
                (problems.summary())
                p.hint { "How arrivals at your loads' pickups and deliveries are judged against their appointments." }
                (field("late_after_minutes", "Late: minutes after the appointment", Kind::Number { step: "1" }, value("late_after_minutes", current.late_after_minutes).as_deref(), true, problems))
                (field("early_before_minutes", "Early: minutes before the appointment", Kind::Number { step: "1" }, value("early_before_minutes", current.early_before_minutes).as_deref(), true, problems))
                (field("detention_free_minutes", "Free time at a stop for new loads (minutes)", Kind::Number { step: "1" }, value("detention_free_minutes", current.detention_free_minutes).as_deref(), true, problems))
                div.field {
                    label {
                        input type="checkbox" name="auto_in_transit" value="on" checked[auto];
                        " Move an assigned load to in transit when its truck leaves the pickup"
                    }
                }
                button type="submit" { "Save" }
            }
        },
    )
}
