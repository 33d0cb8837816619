//! Devices: the list (last seen, the loads each feeds), the form to create one
//! (its token and each app's settings shown this once), revoking after a
//! confirmation (a load's device is on its page: `load_page::device_card`).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::errors::device_error;
use super::form::Form;
use super::page::{self, Section};
use super::session::Viewer;
use super::tracker_setup;
use super::widgets::when;
use super::widgets::{Kind, Problems, copy, field, select};
use crate::api::input::device::NewDeviceInput;
use crate::api::path::PathId;
use crate::domain::device::Device;
use crate::domain::ids::{CarrierId, DeviceId};
use crate::services::Services;
use crate::services::devices::DeviceError;
use crate::storage::PageRequest;
use crate::views::device::IngestSettings;

/// Carriers offered when creating a device (the API takes any of them).
const CARRIER_CHOICES: u32 = 500;

/// A device just made: shown with its token and settings, this once.
struct Issued<'a> {
    device: &'a Device,
    token: &'a str,
    settings: IngestSettings,
}

pub async fn list(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let (form, problems) = (Form::empty(), Problems::default());
    let view = list_view(&services, &viewer, &req, &form, &problems, None).await?;
    Ok(page::ok(view))
}

pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let input = NewDeviceInput {
        name: form.text("name"),
        carrier_id: form.text("carrier_id"),
        identifier: form.text("identifier"),
        time_zone: form.text("time_zone"),
    };
    let problems = match input.validate() {
        Ok(new) => {
            let created = services.devices.create(viewer.account_id(), new).await;
            match created {
                Ok(issued) => {
                    // Where links point (`api::origin`), as the API's create answers.
                    let origin = crate::api::origin::public_origin(&req);
                    let shown = Issued {
                        device: &issued.device,
                        token: &issued.token,
                        settings: IngestSettings::new(&origin, &issued.token),
                    };
                    let (empty, none) = (Form::empty(), Problems::default());
                    let view =
                        list_view(&services, &viewer, &req, &empty, &none, Some(shown)).await?;
                    return Ok(page::ok(view));
                }
                Err(DeviceError::UnknownCarrier(_)) => {
                    Problems::one("carrier_id", "names no carrier of this account")
                }
                Err(DeviceError::IdentifierTaken) => {
                    Problems::one("identifier", "another device already has this identifier")
                }
                Err(error) => return Err(device_error(error)),
            }
        }
        Err(errors) => Problems::from_validation(&errors),
    };
    let view = list_view(&services, &viewer, &req, &form, &problems, None).await?;
    Ok(page::respond(StatusCode::BAD_REQUEST, view))
}

pub async fn confirm_revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<DeviceId>,
) -> Result<HttpResponse, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    let (device, loads) = services
        .devices
        .get(viewer.account_id(), &id)
        .await
        .map_err(device_error)?;
    Ok(page::ok(page::page(
        "Revoke device",
        Some(&viewer),
        Section::Devices,
        html! {
            section.card.narrow {
                h1 { "Revoke device " q { (device.name) } "?" }
                p {
                    "Its token will be refused at once (401)"
                    @match loads.len() {
                        0 => {}
                        1 => { ", and it will be detached from the load it feeds" }
                        n => { ", and it will be detached from the " (n) " loads it feeds" }
                    }
                    ". The positions it posted stay with their loads. This cannot be undone."
                }
                form method="post" action=(format!("/dashboard/devices/{}/revoke", device.id)) {
                    (viewer.csrf_field())
                    button.danger type="submit" { "Revoke device" }
                    " " a href="/dashboard/devices" { "Cancel" }
                }
            }
        },
    )))
}

pub async fn revoke(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<DeviceId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    services
        .devices
        .delete(viewer.account_id(), &id)
        .await
        .map_err(device_error)?;
    tracing::info!(request_id = %crate::telemetry::request_id(), account = %viewer.account_id(), device = %id, "device revoked in the dashboard");
    Ok(page::see_other("/dashboard/devices"))
}

async fn list_view(
    services: &Services,
    viewer: &Viewer,
    req: &HttpRequest,
    form: &Form,
    problems: &Problems,
    issued: Option<Issued<'_>>,
) -> Result<Markup, PageError> {
    let account = viewer.account_id();
    let listeners = services.device_listeners.get().cloned().unwrap_or_default();
    let origin = crate::api::origin::public_origin(req);
    let lacking = req
        .app_data::<web::Data<crate::api::origin::PublicOrigin>>()
        .map(|origin| origin.what_phones_lack())
        .unwrap_or_default();
    let devices = services.devices.list(account).await.map_err(device_error)?;
    let carriers = services
        .carriers
        .list(
            account,
            PageRequest {
                offset: 0,
                limit: CARRIER_CHOICES,
            },
        )
        .await
        .map_err(|e| PageError::Unavailable(e.to_string()))?
        .items;
    let mut names: HashMap<CarrierId, String> = carriers
        .iter()
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    // A device's carrier beyond the choices is read on its own.
    for id in devices.iter().filter_map(|(d, _)| d.carrier_id.as_ref()) {
        if !names.contains_key(id)
            && let Ok(carrier) = services.carriers.get(account, id).await
        {
            names.insert(id.clone(), carrier.name);
        }
    }
    let carrier_of = |device: &Device| {
        device
            .carrier_id
            .as_ref()
            .map(|id| names.get(id).cloned().unwrap_or_else(|| id.to_string()))
    };
    let choices: Vec<(String, String)> = std::iter::once((String::new(), "None".to_owned()))
        .chain(
            carriers
                .iter()
                .map(|c| (c.id.to_string(), format!("{} (MC {})", c.name, c.mc_number))),
        )
        .collect();
    Ok(page::page(
        "Devices",
        Some(viewer),
        Section::Devices,
        html! {
            h1 { "Devices" }
            p.hint { "Trackers and drivers' phone apps that post positions with a token of their own, which opens nothing else. Attach one to a load on the load's page." }
            @if !lacking.is_empty() {
                section.problems data-field="phone-warning" {
                    p { "A phone cannot use these settings yet: it needs a host name it can reach and a certificate it trusts (see \"Connect a device\" in the guide)." }
                    ul { @for why in &lacking { li { (why) } } }
                }
            }
            @if let Some(issued) = &issued { (issued_card(issued, carrier_of(issued.device))) }
            section.card {
                h2 { "Create device" }
                (problems.summary())
                form method="post" action="/dashboard/devices" {
                    (viewer.csrf_field())
                    div.grid2 {
                        (field("name", "Name (a truck number, a driver's phone)", Kind::Text, form.text("name").as_deref(), true, problems))
                        (select("carrier_id", "Carrier (optional)", &choices, form.text("carrier_id").as_deref(), problems))
                        (field("identifier", "Identifier (a tracker's IMEI, or OwnTracks user/device)", Kind::Text, form.text("identifier").as_deref(), false, problems))
                        (field("time_zone", "Time zone of a GT06's local times (UTC offset, e.g. +08:00)", Kind::Text, form.text("time_zone").as_deref(), false, problems))
                    }
                    button.primary type="submit" { "Create device" }
                }
            }
            (tracker_setup::card(&listeners, tracker_setup::host_of(&origin)))
            section.card {
                h2 { "Devices" }
                @if devices.is_empty() { p { "No devices yet." } }
                @else {
                    div.table-wrap {
                        table.devices.stack {
                            thead { tr { th { "Name" } th { "Identifier" } th { "Carrier" } th { "Last seen" } th { "Protocol" } th { "Loads" } th { "Ignored positions" } th { span.visually-hidden { "Actions" } } } }
                            tbody {
                                @for (device, loads) in &devices {
                                    tr data-device-id=(device.id) {
                                        td.device-name data-label="Name" { (device.name) }
                                        td.device-identifier data-label="Identifier" {
                                            @match &device.identifier { Some(id) => code { (id) }, None => "—" }
                                        }
                                        td data-label="Carrier" { (carrier_of(device).unwrap_or_else(|| "—".to_owned())) }
                                        td data-label="Last seen" { (when(device.last_seen_at)) }
                                        td.device-protocol data-label="Protocol" {
                                            @match services.devices.last_protocol(&device.id) { Some(p) => code { (p.as_str()) }, None => "—" }
                                        }
                                        td.device-loads data-label="Loads" {
                                            @if loads.is_empty() { "—" }
                                            @for load in loads {
                                                a.load-link href=(format!("/dashboard/loads/{load}")) { code { (load) } } " "
                                            }
                                        }
                                        td.device-ignored data-label="Ignored positions" { (ignored(&services.devices.standing(&device.id).ignored)) }
                                        td.action { a.danger href=(format!("/dashboard/devices/{}/revoke", device.id)) { "Revoke" } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            script src="/dashboard/assets/dashboard.js" defer {}
        },
    ))
}

/// Positions a device sent that were taken but not stored: how many, and
/// the latest one's reason in words.
fn ignored(ignored: &crate::domain::device::Ignored) -> Markup {
    let total: u64 = ignored.counts.values().sum();
    let Some((reason, at)) = ignored.last else {
        return html! { "None" };
    };
    let words = crate::services::ignored_positions::REASONS
        .iter()
        .find(|(r, _)| *r == reason)
        .map_or(reason, |(_, words)| words);
    html! {
        strong { (total) } " since the service started. Latest " (when(Some(at))) ": " (words) "."
        @if ignored.counts.len() > 1 {
            br;
            small {
                @for (reason, n) in &ignored.counts { code { (reason) } " " (n) " " }
            }
        }
    }
}

/// The new device's token and, per app, what to type where.
fn issued_card(issued: &Issued<'_>, carrier: Option<String>) -> Markup {
    let s = &issued.settings;
    html! {
        section.card.new-device role="status" data-new-device=(issued.device.id) {
            h2 { "Device " q { (issued.device.name) } " created" }
            @if let Some(carrier) = carrier { p { "Carrier: " (carrier) } }
            p { "Copy its settings now: the token is shown only this once and cannot be recovered. Revoke the device and create another if it is lost." }
            (copy("device-token", "Token", issued.token))
            h3 { "Traccar Client" }
            p.hint { "Settings: Server URL and Device identifier." }
            (copy("traccar-url", "Server URL", &s.traccar_client.url))
            (copy("traccar-identifier", "Device identifier", &s.traccar_client.identifier))
            h3 { "OsmAnd" }
            p.hint { "Trip recording → Online tracking: Web address." }
            (copy("osmand-url", "Web address", &s.osmand.url))
            h3 { "GPSLogger" }
            p.hint { "Logging details → Log to custom URL: URL, HTTP method GET." }
            (copy("gpslogger-url", "URL", &s.gpslogger.url))
            h3 { "OwnTracks" }
            p.hint { "Preferences → Connection: Mode HTTP, URL; Identification: Username and Password." }
            (copy("owntracks-url", "URL", &s.owntracks.url))
            (copy("owntracks-username", "Username", &s.owntracks.username))
            (copy("owntracks-password", "Password", &s.owntracks.password))
            h3 { "Overland" }
            p.hint { "Settings: Receiver Endpoint." }
            (copy("overland-url", "Receiver endpoint", &s.overland.url))
        }
    }
}
