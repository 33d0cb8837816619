//! Carriers: the list, the form to register one, and each carrier's page
//! (change it, delete it).

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::errors::PageError;
use super::form::Form;
use super::form::Query;
use super::page::{self, Section};
use super::session::Viewer;
use super::widgets::when;
use super::widgets::{Kind, Problems, checkboxes, field, pager};
use crate::api::input::carrier::{
    CarrierChangeInput, ContactChangeInput, ContactInput, NewCarrierInput,
};
use crate::api::path::PathId;
use crate::domain::carrier::Carrier;
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::CarrierId;
use crate::services::Services;
use crate::services::carriers::CarrierError;
use crate::storage::PageRequest;

const PAGE_SIZE: u32 = 50;

pub async fn list(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let page_number = Query::of(&req).page();
    let found = services
        .carriers
        .list(
            viewer.account_id(),
            PageRequest {
                offset: (page_number - 1) * u64::from(PAGE_SIZE),
                limit: PAGE_SIZE,
            },
        )
        .await
        .map_err(carrier_error)?;
    let pages = found.total.div_ceil(u64::from(PAGE_SIZE)).max(1);
    Ok(page::ok(page::page(
        "Carriers",
        Some(&viewer),
        Section::Carriers,
        html! {
            div.actions { h1 { "Carriers" } a.button href="/dashboard/carriers/new" { "Add carrier" } }
            section.card {
                @if found.items.is_empty() { p { "No carriers yet: add the companies you assign loads to." } }
                div.table-wrap {
                    table.carriers.stack {
                        thead { tr { th { "Name" } th { "MC" } th { "DOT" } th { "Equipment" } th { "Service areas" } th { "Added" } } }
                        tbody {
                            @for carrier in &found.items {
                                tr data-carrier-id=(carrier.id) {
                                    td data-label="Name" { a href=(format!("/dashboard/carriers/{}", carrier.id)) { (carrier.name) } }
                                    td data-label="MC" { (carrier.mc_number) }
                                    td data-label="DOT" { (carrier.dot_number.as_deref().unwrap_or("—")) }
                                    td data-label="Equipment" { (carrier.equipment_types.iter().map(|e| e.label()).collect::<Vec<_>>().join(", ")) }
                                    td data-label="Service areas" { (carrier.service_areas.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")) }
                                    td data-label="Added" { (when(Some(carrier.created_at))) }
                                }
                            }
                        }
                    }
                }
                (pager(page_number, pages, |n| format!("/dashboard/carriers?page={n}")))
            }
        },
    )))
}

pub async fn new_page(viewer: Viewer) -> HttpResponse {
    page::ok(new_form(&viewer, &Form::empty(), &Problems::default()))
}

pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let areas = service_areas(&form);
    let input = NewCarrierInput {
        name: form.text("name"),
        mc_number: form.text("mc_number"),
        dot_number: form.text("dot_number"),
        contact: Some(ContactInput {
            email: form.text("contact.email"),
            phone: form.text("contact.phone"),
        }),
        equipment_types: Some(form.all("equipment_types")),
        service_areas: Some(areas),
    };
    let bad_request = |problems: Problems| {
        page::respond(
            actix_web::http::StatusCode::BAD_REQUEST,
            new_form(&viewer, &form, &problems),
        )
    };
    let new = match input.validate() {
        Ok(new) => new,
        Err(errors) => return Ok(bad_request(Problems::from_validation(&errors))),
    };
    match services.carriers.create(viewer.account_id(), new).await {
        Ok(_) => Ok(page::see_other("/dashboard/carriers")),
        Err(CarrierError::DuplicateMcNumber { existing, .. }) => Ok(bad_request(Problems::one(
            "mc_number",
            format!("is already registered in this account ({existing})"),
        ))),
        Err(error) => Err(carrier_error(error)),
    }
}

/// Service areas as typed: state codes separated by commas or spaces.
fn service_areas(form: &Form) -> Vec<String> {
    form.text("service_areas")
        .map(|text| {
            text.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn new_form(viewer: &Viewer, form: &Form, problems: &Problems) -> Markup {
    page::page(
        "Add carrier",
        Some(viewer),
        Section::Carriers,
        html! {
            h1 { "Add carrier" }
            (problems.summary())
            (carrier_form(viewer, "/dashboard/carriers", form, None, problems))
        },
    )
}

/// The carrier form: empty to add one, or `editing` one (its MC number is
/// shown, not editable).
fn carrier_form(
    viewer: &Viewer,
    action: &str,
    form: &Form,
    editing: Option<&Carrier>,
    problems: &Problems,
) -> Markup {
    let value = |name: &str| form.text(name);
    let equipment: Vec<(&str, &str)> = EquipmentType::ALL
        .iter()
        .map(|e| (e.as_str(), e.label()))
        .collect();
    html! {
        form.card method="post" action=(action) {
            (viewer.csrf_field())
            div.grid2 {
                (field("name", "Name", Kind::Text, value("name").as_deref(), true, problems))
                @match editing {
                    None => (field("mc_number", "MC number", Kind::Text, value("mc_number").as_deref(), true, problems)),
                    Some(carrier) => div.field { strong { "MC number" } p { "MC " (carrier.mc_number) " (it cannot change)" } },
                }
                (field("dot_number", "USDOT number", Kind::Text, value("dot_number").as_deref(), false, problems))
                (field("contact.email", "Contact email", Kind::Email, value("contact.email").as_deref(), false, problems))
                (field("contact.phone", "Contact phone", Kind::Text, value("contact.phone").as_deref(), false, problems))
                (field("service_areas", "Service areas (state codes, e.g. TX OK LA)", Kind::Text, value("service_areas").as_deref(), false, problems))
            }
            (checkboxes("equipment_types", "Equipment", &equipment, &form.all("equipment_types"), problems))
            button.primary type="submit" { @if editing.is_some() { "Save changes" } @else { "Add carrier" } }
        }
    }
}

/// A carrier's page: its details in the form to change them, and deletion.
pub async fn show(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
) -> Result<HttpResponse, PageError> {
    let carrier = services
        .carriers
        .get(viewer.account_id(), &id.valid().ok_or(PageError::NotFound)?)
        .await
        .map_err(carrier_error)?;
    let form = Form::from_pairs(filled(&carrier));
    Ok(page::ok(carrier_page(
        &viewer,
        &carrier,
        &form,
        &Problems::default(),
    )))
}

/// The form's fields as the carrier stands.
fn filled(carrier: &Carrier) -> Vec<(String, String)> {
    let mut pairs = vec![
        ("name".to_owned(), carrier.name.clone()),
        (
            "service_areas".to_owned(),
            carrier
                .service_areas
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
    ];
    let optional = [
        ("dot_number", &carrier.dot_number),
        ("contact.email", &carrier.contact.email),
        ("contact.phone", &carrier.contact.phone),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            pairs.push((name.to_owned(), value.clone()));
        }
    }
    for equipment in &carrier.equipment_types {
        pairs.push(("equipment_types".to_owned(), equipment.as_str().to_owned()));
    }
    pairs
}

fn carrier_page(viewer: &Viewer, carrier: &Carrier, form: &Form, problems: &Problems) -> Markup {
    page::page(
        &carrier.name,
        Some(viewer),
        Section::Carriers,
        html! {
            p { a href="/dashboard/carriers" { "← Carriers" } }
            h1 { (carrier.name) " " span.hint { "MC " (carrier.mc_number) } }
            (problems.summary())
            (carrier_form(viewer, &format!("/dashboard/carriers/{}", carrier.id), form, Some(carrier), problems))
            section.card {
                h2 { "Delete" }
                p { "Loads it delivered keep its name. A carrier with loads assigned or in transit cannot be deleted." }
                form method="post" action=(format!("/dashboard/carriers/{}/delete", carrier.id)) {
                    (viewer.csrf_field())
                    button.danger type="submit" { "Delete carrier" }
                }
            }
        },
    )
}

/// Saves the carrier form: every field as sent (a blank optional one clears it).
pub async fn update(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let carrier = services
        .carriers
        .get(viewer.account_id(), &id)
        .await
        .map_err(carrier_error)?;
    let input = CarrierChangeInput {
        name: Some(form.text("name")),
        mc_number: None,
        dot_number: Some(form.text("dot_number")),
        contact: Some(Some(ContactChangeInput {
            email: Some(form.text("contact.email")),
            phone: Some(form.text("contact.phone")),
        })),
        equipment_types: Some(Some(form.all("equipment_types"))),
        service_areas: Some(Some(service_areas(&form))),
    };
    let edit = match input.validate() {
        Ok(edit) => edit,
        Err(errors) => {
            return Ok(page::respond(
                actix_web::http::StatusCode::BAD_REQUEST,
                carrier_page(
                    &viewer,
                    &carrier,
                    &form,
                    &Problems::from_validation(&errors),
                ),
            ));
        }
    };
    services
        .carriers
        .edit(viewer.account_id(), &id, &edit)
        .await
        .map_err(carrier_error)?;
    Ok(page::see_other(&format!("/dashboard/carriers/{id}")))
}

/// Deletes the carrier, or says which loads keep it.
pub async fn delete(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<CarrierId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    match services.carriers.delete(viewer.account_id(), &id).await {
        Ok(()) => Ok(page::see_other("/dashboard/carriers")),
        Err(CarrierError::HasActiveLoads { loads }) => {
            let carrier = services
                .carriers
                .get(viewer.account_id(), &id)
                .await
                .map_err(carrier_error)?;
            let named: Vec<&str> = loads.iter().map(|l| l.as_str()).collect();
            let problems = Problems::one(
                "body",
                format!(
                    "This carrier has loads assigned or in transit ({}): deliver, unassign or cancel them first.",
                    named.join(", ")
                ),
            );
            Ok(page::respond(
                actix_web::http::StatusCode::CONFLICT,
                carrier_page(
                    &viewer,
                    &carrier,
                    &Form::from_pairs(filled(&carrier)),
                    &problems,
                ),
            ))
        }
        Err(error) => Err(carrier_error(error)),
    }
}

fn carrier_error(error: CarrierError) -> PageError {
    match error {
        CarrierError::NotFound => PageError::NotFound,
        CarrierError::DuplicateMcNumber { .. } | CarrierError::HasActiveLoads { .. } => {
            PageError::BadForm
        }
        CarrierError::Storage(e) => PageError::Unavailable(e.to_string()),
    }
}
