//! Carriers: the list and the form to register one.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::account_pages::when;
use super::form::Form;
use super::load_pages::Query;
use super::page::{self, PageError, Section};
use super::session::Viewer;
use super::widgets::{Kind, Problems, checkboxes, field, pager};
use crate::api::input::carrier::{ContactInput, NewCarrierInput};
use crate::domain::equipment::EquipmentType;
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
                    table.carriers {
                        thead { tr { th { "Name" } th { "MC" } th.wide { "DOT" } th { "Equipment" } th.wide { "Service areas" } th.wide { "Added" } } }
                        tbody {
                            @for carrier in &found.items {
                                tr data-carrier-id=(carrier.id) {
                                    td { (carrier.name) }
                                    td { (carrier.mc_number) }
                                    td.wide { (carrier.dot_number.as_deref().unwrap_or("—")) }
                                    td { (carrier.equipment_types.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")) }
                                    td.wide { (carrier.service_areas.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")) }
                                    td.wide { (when(Some(carrier.created_at))) }
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
    let areas: Vec<String> = form
        .text("service_areas")
        .map(|text| {
            text.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
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

fn new_form(viewer: &Viewer, form: &Form, problems: &Problems) -> Markup {
    let value = |name: &str| form.text(name);
    let equipment: Vec<(&str, &str)> = EquipmentType::ALL
        .iter()
        .map(|e| (e.as_str(), e.as_str()))
        .collect();
    page::page(
        "Add carrier",
        Some(viewer),
        Section::Carriers,
        html! {
            h1 { "Add carrier" }
            (problems.summary())
            form.card method="post" action="/dashboard/carriers" {
                (viewer.csrf_field())
                div.grid2 {
                    (field("name", "Name", Kind::Text, value("name").as_deref(), true, problems))
                    (field("mc_number", "MC number (digits)", Kind::Text, value("mc_number").as_deref(), true, problems))
                    (field("dot_number", "USDOT number", Kind::Text, value("dot_number").as_deref(), false, problems))
                    (field("contact.email", "Contact email", Kind::Email, value("contact.email").as_deref(), false, problems))
                    (field("contact.phone", "Contact phone", Kind::Text, value("contact.phone").as_deref(), false, problems))
                    (field("service_areas", "Service areas (state codes, e.g. TX OK LA)", Kind::Text, value("service_areas").as_deref(), false, problems))
                }
                (checkboxes("equipment_types", "Equipment", &equipment, &form.all("equipment_types"), problems))
                button.primary type="submit" { "Add carrier" }
            }
        },
    )
}

fn carrier_error(error: CarrierError) -> PageError {
    match error {
        CarrierError::NotFound => PageError::NotFound,
        CarrierError::DuplicateMcNumber { .. } => PageError::BadForm,
        CarrierError::Storage(e) => PageError::Unavailable(e.to_string()),
    }
}
