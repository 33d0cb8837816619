//! The loads list: filters (status, states, carrier, equipment, pickup days,
//! stops, late risk, a search), pages, and the way to the create form.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::html;

use super::errors::{PageError, load_error};
use super::form::Query;
use super::lookups::carrier_choices;
use super::page::{self, Section};
use super::session::Viewer;
use super::widgets::{Options, Problems, grouped, pager, route, select, status_badge, when};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::CarrierId;
use crate::domain::load::LoadStatus;
use crate::domain::location::{STATE_CODES, UsState};
use crate::domain::stops::StopKind;
use crate::services::Services;
use crate::services::load_search::{self, FieldFilter, LoadQuery, StopFilter};
use crate::storage::{LoadFilter, PageRequest};

const PAGE_SIZE: u32 = 25;

pub async fn list(
    viewer: Viewer,
    services: web::Data<Services>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let query = Query::of(&req);
    let indexed = LoadFilter {
        status: query.get("status").and_then(|s| LoadStatus::parse(s).ok()),
        origin_state: query
            .get("origin_state")
            .and_then(|s| UsState::parse(s).ok()),
        destination_state: query
            .get("destination_state")
            .and_then(|s| UsState::parse(s).ok()),
    };
    let stops = StopFilter {
        late_risk: match query.get("late_risk") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        },
        at_stop: query.get("at_stop").and_then(StopKind::parse),
    };
    let page_number = query.page();
    let page_request = PageRequest {
        offset: (page_number - 1) * u64::from(PAGE_SIZE),
        limit: PAGE_SIZE,
    };
    // A day in a date input is that day in UTC, as the form says.
    let day = |name: &str, end: bool| {
        let day = chrono::NaiveDate::parse_from_str(query.get(name)?, "%Y-%m-%d").ok()?;
        let time = match end {
            false => day.and_hms_opt(0, 0, 0)?,
            true => day.and_hms_micro_opt(23, 59, 59, 999_999)?,
        };
        Some(time.and_utc())
    };
    let fields = FieldFilter {
        carrier_id: query.get("carrier_id").and_then(CarrierId::parse),
        equipment_type: query
            .get("equipment_type")
            .and_then(|e| EquipmentType::parse(e).ok()),
        pickup_from: day("pickup_from", false),
        pickup_to: day("pickup_to", true),
        q: query
            .get("q")
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_owned),
        ..FieldFilter::default()
    };
    let search = LoadQuery {
        indexed,
        reference: None,
        fields,
        stops,
    };
    let found = load_search::list(&services, viewer.account_id(), &search, page_request)
        .await
        .map_err(load_error)?;
    let carriers: Options = std::iter::once((String::new(), "Any carrier".to_owned()))
        .chain(carrier_choices(&services, &viewer).await?)
        .collect();
    let equipment: Options = std::iter::once((String::new(), "Any equipment".to_owned()))
        .chain(
            EquipmentType::ALL
                .iter()
                .map(|e| (e.as_str().to_owned(), e.label().to_owned())),
        )
        .collect();
    let pages = found.total.div_ceil(u64::from(PAGE_SIZE)).max(1);
    let link = |n: u64| {
        let mut parts = vec![format!("page={n}")];
        for name in FILTERS {
            if let Some(value) = query.get(name) {
                parts.push(format!("{name}={}", page::encode_query(value)));
            }
        }
        format!("/dashboard/loads?{}", parts.join("&"))
    };
    let (statuses, states) = filter_options();
    let none = Problems::default();
    Ok(page::ok(page::page(
        "Loads",
        Some(&viewer),
        Section::Loads,
        html! {
            div.actions { h1 { "Loads" } a.button href="/dashboard/loads/new" { "Create load" } }
            form.card.filters method="get" action="/dashboard/loads" {
                div.field {
                    label for="q" { "Search" }
                    input #q name="q" type="search" value=[query.get("q")] placeholder="Reference or city";
                }
                (select("status", "Status", &statuses, query.get("status"), &none))
                (select("origin_state", "Origin state", &states, query.get("origin_state"), &none))
                (select("destination_state", "Destination state", &states, query.get("destination_state"), &none))
                (select("carrier_id", "Carrier", &carriers, query.get("carrier_id"), &none))
                (select("equipment_type", "Equipment", &equipment, query.get("equipment_type"), &none))
                div.field {
                    label for="pickup_from" { "Pickup from (UTC)" }
                    input #pickup_from name="pickup_from" type="date" value=[query.get("pickup_from")];
                }
                div.field {
                    label for="pickup_to" { "Pickup to (UTC)" }
                    input #pickup_to name="pickup_to" type="date" value=[query.get("pickup_to")];
                }
                (select("at_stop", "Truck at", &options(&[("", "Anywhere"), ("pickup", "Pickup"), ("delivery", "Delivery")]), query.get("at_stop"), &none))
                (select("late_risk", "Late risk", &options(&[("", "Any"), ("true", "At risk of being late"), ("false", "Not at risk")]), query.get("late_risk"), &none))
                button type="submit" { "Filter" }
            }
            section.card {
                p.hint { (grouped(found.total as i64)) @if found.total == 1 { " load" } @else { " loads" } }
                div.table-wrap {
                    table.loads.stack {
                        thead { tr { th { "Load" } th { "Status" } th { "Route" } th { "Carrier" } th { "Created" } } }
                        tbody {
                            @for load in &found.items {
                                tr data-load-id=(load.id) {
                                    td data-label="Load" {
                                        a href=(format!("/dashboard/loads/{}", load.id)) {
                                            @match &load.reference {
                                                Some(reference) => { strong.reference { (reference) } }
                                                None => { code.id { (load.id) } }
                                            }
                                        }
                                    }
                                    td data-label="Status" { (status_badge(load.status)) }
                                    td data-label="Route" { (route(load)) }
                                    td data-label="Carrier" { (load.carrier.as_ref().map_or("—", |c| c.name.as_str())) }
                                    td data-label="Created" { (when(Some(load.created_at))) }
                                }
                            }
                        }
                    }
                }
                (pager(page_number, pages, link))
            }
        },
    )))
}

/// The list's filters, as query parameters (kept by the pager's links).
const FILTERS: [&str; 10] = [
    "q",
    "status",
    "origin_state",
    "destination_state",
    "carrier_id",
    "equipment_type",
    "pickup_from",
    "pickup_to",
    "at_stop",
    "late_risk",
];

fn options(pairs: &[(&str, &str)]) -> Options {
    pairs
        .iter()
        .map(|(value, label)| ((*value).to_owned(), (*label).to_owned()))
        .collect()
}

fn filter_options() -> (Options, Options) {
    let statuses: Vec<(String, String)> = std::iter::once((String::new(), "Any status".to_owned()))
        .chain(
            LoadStatus::ALL
                .iter()
                .map(|s| (s.as_str().to_owned(), s.as_str().replace('_', " "))),
        )
        .collect();
    let states: Vec<(String, String)> = std::iter::once((String::new(), "Any".to_owned()))
        .chain(STATE_CODES.iter().map(|s| (s.to_string(), s.to_string())))
        .collect();
    (statuses, states)
}
