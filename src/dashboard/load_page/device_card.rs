//! The device card of a load's page: the device that feeds it, and the forms
//! to attach another or detach it.

use actix_web::{HttpResponse, web};
use maud::{Markup, html};

use crate::api::input::device::AttachDeviceInput;
use crate::api::path::PathId;
use crate::dashboard::errors::{PageError, device_error};
use crate::dashboard::form::Form;
use crate::dashboard::page;
use crate::dashboard::session::Viewer;
use crate::dashboard::widgets::{Problems, select, when};
use crate::domain::ids::LoadId;
use crate::services::Services;

/// Attaches the chosen device to the load (replacing the one it had).
pub async fn attach(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let load = id.valid().ok_or(PageError::NotFound)?;
    let input = AttachDeviceInput {
        device_id: form.text("device_id"),
    };
    // The select offers only the account's devices: anything else is a forged form.
    let device = input.validate().map_err(|_| PageError::BadForm)?;
    services
        .devices
        .attach(viewer.account_id(), &load, &device)
        .await
        .map_err(device_error)?;
    Ok(page::see_other(&format!("/dashboard/loads/{load}")))
}

pub async fn detach(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let load = id.valid().ok_or(PageError::NotFound)?;
    services
        .devices
        .detach(viewer.account_id(), &load)
        .await
        .map_err(device_error)?;
    Ok(page::see_other(&format!("/dashboard/loads/{load}")))
}

/// The card of a load's page: its device, and the forms to change it.
pub async fn load_device_card(
    services: &Services,
    viewer: &Viewer,
    load: &LoadId,
) -> Result<Markup, PageError> {
    let account = viewer.account_id();
    let attached = services
        .devices
        .device_of_load(account, load)
        .await
        .map_err(device_error)?;
    let choices: Vec<(String, String)> = services
        .devices
        .list(account)
        .await
        .map_err(device_error)?
        .into_iter()
        .map(|(device, _)| (device.id.to_string(), device.name))
        .collect();
    let selected = attached.as_ref().map(|d| d.id.to_string());
    let none = Problems::default();
    Ok(html! {
        section.card #device {
            h2 { "Device" }
            @match &attached {
                Some(device) => {
                    dl.facts {
                        dt { "Name" } dd.device-name { (device.name) }
                        dt { "Last seen" } dd { (when(device.last_seen_at)) }
                    }
                    p.hint { "Its positions become this load's fixes while the load is assigned or in transit." }
                }
                None => p { "No device attached: positions come only through the API." },
            }
            div.actions {
                @if choices.is_empty() {
                    p { "No devices yet: " a href="/dashboard/devices" { "create one" } "." }
                } @else {
                    form method="post" action=(format!("/dashboard/loads/{load}/device")) {
                        (viewer.csrf_field())
                        (select("device_id", "Device to attach", &choices, selected.as_deref(), &none))
                        button.primary type="submit" { "Attach" }
                    }
                }
                @if attached.is_some() {
                    form method="post" action=(format!("/dashboard/loads/{load}/device/detach")) {
                        (viewer.csrf_field())
                        button type="submit" { "Detach" }
                    }
                }
            }
        }
    })
}
