//! Loads by hand: the list with filters and pages, the create form, and a
//! load's page with its history, GPS trail and the moves its status allows.

use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::account_pages::when;
use super::form::Form;
use super::map_tiles::MapSource;
use super::maps;
use super::page::{self, PageError, Section};
use super::session::Viewer;
use super::widgets::{Kind, Options, Problems, field, grouped, pager, pounds, select, when_text};
use super::{device_pages, stop_pages};
use crate::actors::LoadError;
use crate::api::input::load::{NewLoadInput, StatusChangeInput};
use crate::api::input::location::LocationInput;
use crate::api::path::PathId;
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::{CarrierId, LoadId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::{STATE_CODES, UsState};
use crate::domain::stops::StopKind;
use crate::domain::validation::ValidationErrors;
use crate::services::Services;
use crate::services::load_search::{self, FieldFilter, LoadQuery, StopFilter};
use crate::services::tracking::History;
use crate::storage::{LoadFilter, PageRequest, PointRange};
use crate::views::tracking::TrackingSummary;

const PAGE_SIZE: u32 = 25;
/// GPS points listed on a load's page (the API's history pages through all).
const TRAIL_POINTS: usize = 50;
/// GPS points its map draws as the trail's line.
const MAP_POINTS: usize = 2_000;

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

pub async fn new_page(viewer: Viewer) -> HttpResponse {
    page::ok(new_form(&viewer, &Form::empty(), &Problems::default()))
}

pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let mut errors = ValidationErrors::new();
    let place = |prefix: &str, errors: &mut ValidationErrors| LocationInput {
        city: form.text(&format!("{prefix}.city")),
        state: form.text(&format!("{prefix}.state")),
        zip: form.text(&format!("{prefix}.zip")),
        address: form.text(&format!("{prefix}.address")),
        lat: form.number(&format!("{prefix}.lat"), errors),
        lng: form.number(&format!("{prefix}.lng"), errors),
        radius_m: form.number(&format!("{prefix}.radius_m"), errors),
    };
    let input = NewLoadInput {
        reference: form.text("reference"),
        origin: Some(place("origin", &mut errors)),
        destination: Some(place("destination", &mut errors)),
        weight: form.number("weight", &mut errors),
        equipment_type: form.text("equipment_type"),
        pickup_date: form.text("pickup_date").map(|t| as_utc(&t)),
        delivery_date: form.text("delivery_date").map(|t| as_utc(&t)),
        rate: form.number("rate", &mut errors),
        notes: form.text("notes"),
        detention_free_minutes: form.number("detention_free_minutes", &mut errors),
    };
    let validated = input.validate();
    let new = match (validated, errors.is_empty()) {
        (Ok(new), true) => new,
        (result, _) => {
            if let Err(more) = result {
                for e in more.errors() {
                    errors.add(e.field.clone(), e.message.clone());
                }
            }
            let problems = Problems::from_validation(&errors);
            return Ok(page::respond(
                actix_web::http::StatusCode::BAD_REQUEST,
                new_form(&viewer, &form, &problems),
            ));
        }
    };
    let load = services
        .loads
        .create(&viewer.account, new)
        .await
        .map_err(load_error)?;
    Ok(page::see_other(&format!("/dashboard/loads/{}", load.id)))
}

pub async fn show(
    viewer: Viewer,
    services: web::Data<Services>,
    map: web::Data<MapSource>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    let load = services
        .loads
        .get(viewer.account_id(), &id)
        .await
        .map_err(load_error)?;
    Ok(page::ok(
        load_view(&services, &viewer, &map, &load, &Problems::default(), None).await?,
    ))
}

/// The load's page with the URL of a share link just made.
pub async fn page_with_link(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    load: &Load,
    url: &str,
) -> Result<HttpResponse, PageError> {
    Ok(page::ok(
        load_view(services, viewer, map, load, &Problems::default(), Some(url)).await?,
    ))
}

pub async fn change_status(
    viewer: Viewer,
    services: web::Data<Services>,
    map: web::Data<MapSource>,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let id = id.valid().ok_or(PageError::NotFound)?;
    let input = StatusChangeInput {
        status: form.text("status"),
        carrier_id: form.text("carrier_id"),
        location: None,
        notes: form.text("notes"),
    };
    let change = match input.validate() {
        Ok(change) => change,
        Err(errors) => {
            return refused(
                &services,
                &viewer,
                &map,
                &id,
                Problems::from_validation(&errors),
            )
            .await;
        }
    };
    match services
        .loads
        .change_status(viewer.account_id(), &id, change)
        .await
    {
        Ok(_) => Ok(page::see_other(&format!("/dashboard/loads/{id}"))),
        Err(LoadError::Transition(e)) => {
            refused(
                &services,
                &viewer,
                &map,
                &id,
                Problems::one("", e.to_string()),
            )
            .await
        }
        Err(LoadError::UnknownCarrier(_)) => {
            let problems = Problems::one("carrier_id", "names no carrier of this account");
            refused(&services, &viewer, &map, &id, problems).await
        }
        Err(error) => Err(load_error(error)),
    }
}

/// The choices of the list's filters: any, or one status; any, or one state.
/// The account's newest 100 carriers as `(id, "name (MC number)")` choices.
async fn carrier_choices(services: &Services, viewer: &Viewer) -> Result<Options, PageError> {
    let page = PageRequest {
        offset: 0,
        limit: 100,
    };
    Ok(services
        .carriers
        .list(viewer.account_id(), page)
        .await
        .map_err(|e| PageError::Unavailable(e.to_string()))?
        .items
        .iter()
        .map(|c| (c.id.to_string(), format!("{} (MC {})", c.name, c.mc_number)))
        .collect())
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

/// The load's page again, saying why the move was refused.
async fn refused(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    id: &LoadId,
    problems: Problems,
) -> Result<HttpResponse, PageError> {
    let load = services
        .loads
        .get(viewer.account_id(), id)
        .await
        .map_err(load_error)?;
    let view = load_view(services, viewer, map, &load, &problems, None).await?;
    Ok(page::respond(actix_web::http::StatusCode::CONFLICT, view))
}

async fn load_view(
    services: &Services,
    viewer: &Viewer,
    map: &MapSource,
    load: &Load,
    problems: &Problems,
    new_link: Option<&str>,
) -> Result<Markup, PageError> {
    let tracking = services
        .tracking
        .current(viewer.account_id(), &load.id)
        .await
        .ok()
        .map(|state| TrackingSummary::new(&state));
    let trail = services
        .tracking
        .history(
            viewer.account_id(),
            &load.id,
            PointRange::latest(MAP_POINTS),
        )
        .await
        .map_err(load_error)?;
    // Only a posted load can be assigned, so only then are carriers offered.
    let carriers = match load.status {
        LoadStatus::Posted => carrier_choices(services, viewer).await?,
        _ => Vec::new(),
    };
    let device = device_pages::load_device_card(services, viewer, &load.id).await?;
    let stops = stop_pages::stops_card(services, viewer, load).await;
    let share = stop_pages::share_card(services, viewer, load, new_link).await;
    Ok(page::page(
        &format!("Load {}", load.id),
        Some(viewer),
        Section::Loads,
        html! {
            p { a href="/dashboard/loads" { "← Loads" } }
            h1 {
                @match &load.reference {
                    Some(reference) => { "Load " strong.reference { (reference) } }
                    None => { "Load" }
                }
                " " (status_badge(load.status))
            }
            // The id is long: it wraps, and copies whole with one button.
            div.copy.id-copy {
                input #load-id readonly value=(load.id) aria-label="Load id";
                button type="button" data-copy="#load-id" { "Copy id" }
            }
            (problems.summary())
            (next_steps(viewer, load, &carriers, problems))
            div.grid2 { (facts(load)) (tracking_card(tracking.as_ref())) }
            (maps::load_map(map, load, &trail.points))
            (stops)
            (device)
            (share)
            (history(load))
            (trail_table(&trail))
            script src="/dashboard/assets/dashboard.js" defer {}
        },
    ))
}

/// A form per move the load's status allows.
fn next_steps(
    viewer: &Viewer,
    load: &Load,
    carriers: &[(String, String)],
    problems: &Problems,
) -> Markup {
    let action = format!("/dashboard/loads/{}/status", load.id);
    html! {
        section.card {
            h2 { "Next step" }
            div.actions {
                @for next in load.status.allowed_next() {
                    form method="post" action=(action) {
                        (viewer.csrf_field())
                        input type="hidden" name="status" value=(next.as_str());
                        @if *next == LoadStatus::Assigned {
                            @if carriers.is_empty() {
                                p { "Register a carrier first: " a href="/dashboard/carriers/new" { "Add carrier" } }
                            } @else {
                                (select("carrier_id", "Carrier", carriers, None, problems))
                                button.primary type="submit" { "Assign" }
                            }
                        } @else if *next == LoadStatus::Cancelled {
                            button.danger type="submit" { (action_name(*next)) }
                        } @else {
                            button type="submit" { (action_name(*next)) }
                        }
                    }
                }
                @if load.status.allowed_next().is_empty() {
                    p { (status_badge(load.status)) ": nothing more to do." }
                }
            }
        }
    }
}

fn facts(load: &Load) -> Markup {
    let rate = load.rate_cents.map_or("—".to_owned(), |c| {
        format!("${}.{:02}", grouped(c / 100), c % 100)
    });
    let carrier = load.carrier.as_ref().map_or("—".to_owned(), |c| {
        format!("{} (MC {})", c.name, c.mc_number)
    });
    html! {
        section.card {
            h2 { "Load" }
            dl.facts {
                dt { "Route" } dd { (route(load)) }
                dt { "Equipment" } dd { (load.equipment_type.label()) }
                dt { "Weight" } dd { (pounds(load.weight)) }
                dt { "Rate" } dd { (rate) }
                dt { "Carrier" } dd { (carrier) }
                dt { "Pickup" } dd { (when(load.pickup_date)) }
                dt { "Delivery" } dd { (when(load.delivery_date)) }
                dt { "Notes" } dd { (load.notes.as_deref().unwrap_or("—")) }
            }
        }
    }
}

fn tracking_card(tracking: Option<&TrackingSummary>) -> Markup {
    html! {
        section.card {
            h2 { "Tracking" }
            @match tracking.and_then(|t| t.current_location.as_ref().map(|here| (t, here))) {
                Some((t, here)) => {
                    dl.facts {
                        dt { "Position" } dd {
                            (format!("{:.4}, {:.4}", here.lat, here.lng))
                            @if let (Some(city), Some(state)) = (here.city, here.state) { " near " (city) ", " (state) }
                        }
                        dt { "Last update" } dd { (when_text(t.last_update.as_ref())) }
                        dt { "ETA" } dd { (when_text(t.eta.as_ref())) }
                    }
                }
                None => p { "No GPS fix yet." },
            }
            p { a href="/dashboard/board" { "See it on the board" } }
        }
    }
}

fn history(load: &Load) -> Markup {
    html! {
        section.card {
            h2 { "Status history" }
            table.stack {
                thead { tr { th { "Status" } th { "When" } th { "Notes" } } }
                tbody {
                    @for entry in &load.status_history {
                        tr {
                            td data-label="Status" { (status_badge(entry.status)) }
                            td data-label="When" { (when(Some(entry.at))) }
                            td data-label="Notes" { (entry.notes.as_deref().unwrap_or("—")) }
                        }
                    }
                }
            }
        }
    }
}

fn trail_table(trail: &History) -> Markup {
    html! {
        section.card {
            h2 { "GPS trail" }
            @let shown = &trail.points[..trail.points.len().min(TRAIL_POINTS)];
            p.hint { (trail.total) " points; the latest " (shown.len()) " shown, newest first." }
            table.trail.stack {
                thead { tr { th { "Time" } th { "Latitude" } th { "Longitude" } th { "Speed" } th { "Heading" } } }
                tbody {
                    @for fix in shown {
                        tr {
                            td data-label="Time" { (when(Some(fix.timestamp))) }
                            td data-label="Latitude" { (format!("{:.5}", fix.lat)) }
                            td data-label="Longitude" { (format!("{:.5}", fix.lng)) }
                            td data-label="Speed" { (fix.speed_mph.map_or("—".to_owned(), |s| format!("{s:.0} mph"))) }
                            td data-label="Heading" { (fix.heading_deg.map_or("—".to_owned(), |h| format!("{h:.0}°"))) }
                        }
                    }
                }
            }
        }
    }
}

fn new_form(viewer: &Viewer, form: &Form, problems: &Problems) -> Markup {
    let value = |name: &str| form.text(name);
    let equipment: Vec<(String, String)> = EquipmentType::ALL
        .iter()
        .map(|e| (e.as_str().to_owned(), e.label().to_owned()))
        .collect();
    let states: Options = std::iter::once((String::new(), "Choose…".to_owned()))
        .chain(STATE_CODES.iter().map(|s| (s.to_string(), s.to_string())))
        .collect();
    let place = |prefix: &str, title: &str| {
        html! {
            fieldset.card {
                legend { (title) }
                (field(&format!("{prefix}.city"), "City", Kind::Text, value(&format!("{prefix}.city")).as_deref(), true, problems))
                (select(&format!("{prefix}.state"), "State", &states, value(&format!("{prefix}.state")).map(|s| s.to_uppercase()).as_deref(), problems))
                (field(&format!("{prefix}.zip"), "ZIP code", Kind::Text, value(&format!("{prefix}.zip")).as_deref(), true, problems))
                (field(&format!("{prefix}.address"), "Street address", Kind::Text, value(&format!("{prefix}.address")).as_deref(), false, problems))
                details.geofence {
                    summary { "Facility location (optional)" }
                    p.hint { "Without it, freight places the stop at the ZIP's centre, 3,000 m wide." }
                    (field(&format!("{prefix}.lat"), "Latitude", Kind::Number { step: "any" }, value(&format!("{prefix}.lat")).as_deref(), false, problems))
                    (field(&format!("{prefix}.lng"), "Longitude", Kind::Number { step: "any" }, value(&format!("{prefix}.lng")).as_deref(), false, problems))
                    (field(&format!("{prefix}.radius_m"), "Arrival radius (m, 25-10,000; default 500)", Kind::Number { step: "1" }, value(&format!("{prefix}.radius_m")).as_deref(), false, problems))
                }
            }
        }
    };
    page::page(
        "Create load",
        Some(viewer),
        Section::Loads,
        html! {
            h1 { "Create load" }
            (problems.summary())
            form method="post" action="/dashboard/loads" {
                (viewer.csrf_field())
                div.grid2 { (place("origin", "Origin")) (place("destination", "Destination")) }
                section.card {
                    div.grid2 {
                        (field("reference", "Reference (PO, BOL or pro number)", Kind::Text, value("reference").as_deref(), false, problems))
                        (field("weight", "Weight (lb)", Kind::Number { step: "any" }, value("weight").as_deref(), true, problems))
                        (select("equipment_type", "Equipment type", &equipment, value("equipment_type").as_deref(), problems))
                        (field("pickup_date", "Pickup (UTC)", Kind::DateTime, value("pickup_date").as_deref(), false, problems))
                        (field("delivery_date", "Delivery (UTC)", Kind::DateTime, value("delivery_date").as_deref(), false, problems))
                        (field("rate", "Rate (USD)", Kind::Number { step: "0.01" }, value("rate").as_deref(), false, problems))
                        (field("notes", "Notes", Kind::Text, value("notes").as_deref(), false, problems))
                        (field("detention_free_minutes", "Free time at each stop (minutes; default 120)", Kind::Number { step: "1" }, value("detention_free_minutes").as_deref(), false, problems))
                    }
                    button.primary type="submit" { "Create load" }
                }
            }
        },
    )
}

/// A `datetime-local` value is taken as UTC, as the labels say.
fn as_utc(raw: &str) -> String {
    match raw.len() {
        16 if raw.as_bytes()[10] == b'T' => format!("{raw}:00Z"),
        19 if raw.as_bytes()[10] == b'T' => format!("{raw}Z"),
        _ => raw.to_owned(),
    }
}

fn action_name(status: LoadStatus) -> &'static str {
    match status {
        LoadStatus::Posted => "Unassign",
        LoadStatus::Assigned => "Assign",
        LoadStatus::InTransit => "Picked up",
        LoadStatus::Delivered => "Delivered",
        LoadStatus::Cancelled => "Cancel load",
    }
}

pub fn status_badge(status: LoadStatus) -> Markup {
    html! { span class=(format!("badge {}", status.as_str())) { (status.as_str().replace('_', " ")) } }
}

fn route(load: &Load) -> String {
    format!(
        "{}, {} → {}, {}",
        load.origin.city, load.origin.state, load.destination.city, load.destination.state
    )
}

pub fn load_error(error: LoadError) -> PageError {
    match error {
        LoadError::NotFound => PageError::NotFound,
        LoadError::UnknownCarrier(_)
        | LoadError::Transition(_)
        | LoadError::NotTrackable(_)
        | LoadError::ReferenceTaken(_)
        | LoadError::Edit(_) => PageError::BadForm,
        LoadError::Storage(e) => PageError::Unavailable(e.to_string()),
        LoadError::Unavailable(crate::unavailable::Unavailable::LeasedElsewhere {
            holder: Some(holder),
            ..
        }) => PageError::LeasedElsewhere(holder),
        LoadError::Unavailable(e) => PageError::Unavailable(e.to_string()),
    }
}

/// A page's query string, read leniently: a bad filter is simply no filter.
pub struct Query(std::collections::HashMap<String, String>);

impl Query {
    pub fn of(req: &HttpRequest) -> Self {
        Query(serde_urlencoded::from_str(req.query_string()).unwrap_or_default())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The `page` asked for, 1 when absent or nonsense.
    pub fn page(&self) -> u64 {
        self.get("page")
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(1)
            .clamp(1, 100_000)
    }
}
