//! The forms that make and change a load by hand: create, with its stops
//! (`stop_rows`), and edit what the load's status still allows (the API's
//! `PATCH /v1/loads/{id}`).

mod stop_rows;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::{Markup, html};

use self::stop_rows::{StopsInput, stop_rows};
use crate::actors::LoadError;
use crate::api::input::load::{LoadChangeInput, NewLoadInput};
use crate::api::input::location::LocationInput;
use crate::api::path::PathId;
use crate::dashboard::errors::{PageError, load_error};
use crate::dashboard::form::Form;
use crate::dashboard::lookups::viewer_load;
use crate::dashboard::page::{self, Section};
use crate::dashboard::session::Viewer;
use crate::dashboard::widgets::{Kind, Options, Problems, field, select, status_badge};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::LoadId;
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::STATE_CODES;
use crate::domain::validation::ValidationErrors;
use crate::services::Services;

/// Which form is shown: a new load, or a stored one to change.
#[derive(Clone, Copy)]
enum Mode<'a> {
    Create,
    Edit(&'a Load),
}

pub async fn new_page(viewer: Viewer) -> HttpResponse {
    page::ok(load_form(
        &viewer,
        &Form::empty(),
        &Problems::default(),
        Mode::Create,
    ))
}

pub async fn create(
    viewer: Viewer,
    services: web::Data<Services>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let mut errors = ValidationErrors::new();
    let mut stops = StopsInput::read(&form, &mut errors);
    let input = NewLoadInput {
        reference: form.text("reference"),
        weight: form.number("weight", &mut errors),
        equipment_type: form.text("equipment_type"),
        rate: form.number("rate", &mut errors),
        notes: form.text("notes"),
        detention_free_minutes: form.number("detention_free_minutes", &mut errors),
        team: None,
        ..stops.input()
    };
    let validated = input.validate();
    let new = match (validated, errors.is_empty()) {
        (Ok(new), true) => new,
        (result, _) => {
            // The API's names for the stops sent are the form's rows.
            if let Err(more) = result {
                for e in more.errors() {
                    let (field, message) = stops.form_field(&e.field, &e.message);
                    errors.add(field, message);
                }
            }
            let problems = Problems::from_validation(&errors);
            return Ok(page::respond(
                StatusCode::BAD_REQUEST,
                load_form(&viewer, &form, &problems, Mode::Create),
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

/// The edit form of a load, filled in with what is stored.
pub async fn edit_page(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<LoadId>,
) -> Result<HttpResponse, PageError> {
    let load = editable(&services, &viewer, id).await?;
    let form = filled(&load);
    Ok(page::ok(load_form(
        &viewer,
        &form,
        &Problems::default(),
        Mode::Edit(&load),
    )))
}

/// Applies the edit form as `PATCH /v1/loads/{id}` would: a blank optional
/// field clears it; origin and destination only while the load is posted.
pub async fn edit(
    viewer: Viewer,
    services: web::Data<Services>,
    id: PathId<LoadId>,
    form: Form,
) -> Result<HttpResponse, PageError> {
    viewer.check_csrf(form.raw("csrf").as_deref())?;
    let load = editable(&services, &viewer, id).await?;
    let mut errors = ValidationErrors::new();
    let posted = load.status == LoadStatus::Posted;
    let weight = form.number("weight", &mut errors);
    if weight.is_none() && form.text("weight").is_none() {
        errors.add("weight", "is required");
    }
    let input = LoadChangeInput {
        origin: posted.then(|| Some(place(&form, "origin", &mut errors))),
        destination: posted.then(|| Some(place(&form, "destination", &mut errors))),
        weight: weight.map(Some),
        equipment_type: form.text("equipment_type").map(Some),
        pickup_date: Some(form.text("pickup_date").map(|t| as_utc(&t))),
        delivery_date: Some(form.text("delivery_date").map(|t| as_utc(&t))),
        rate: Some(form.number("rate", &mut errors)),
        notes: Some(form.text("notes")),
        stops: None,
        team: None,
        reference: Some(form.text("reference")),
    };
    let refused = |problems: Problems, status| {
        page::respond(
            status,
            load_form(&viewer, &form, &problems, Mode::Edit(&load)),
        )
    };
    let change = match (input.validate(), errors.is_empty()) {
        (Ok(change), true) => change,
        (result, _) => {
            if let Err(more) = result {
                for e in more.errors() {
                    errors.add(e.field.clone(), e.message.clone());
                }
            }
            let problems = Problems::from_validation(&errors);
            return Ok(refused(problems, StatusCode::BAD_REQUEST));
        }
    };
    match services
        .loads
        .edit(viewer.account_id(), &load.id, change)
        .await
    {
        Ok(_) => Ok(page::see_other(&format!("/dashboard/loads/{}", load.id))),
        Err(LoadError::ReferenceTaken(_)) => Ok(refused(
            Problems::one(
                "reference",
                "is already the reference of another load of this account",
            ),
            StatusCode::CONFLICT,
        )),
        // The load moved on since the form was shown (picked up, delivered).
        Err(LoadError::Edit(why)) => Ok(refused(
            Problems::one("", why.to_string()),
            StatusCode::CONFLICT,
        )),
        Err(error) => Err(load_error(error)),
    }
}

/// The viewer's load, if it can still be changed: a delivered or cancelled
/// load cannot.
async fn editable(
    services: &Services,
    viewer: &Viewer,
    id: PathId<LoadId>,
) -> Result<Load, PageError> {
    let id = id.valid().ok_or(PageError::NotFound)?;
    let load = viewer_load(services, viewer, &id).await?;
    if load.status.is_final() {
        return Err(PageError::Conflict(format!(
            "This load is {} and can no longer be changed.",
            load.status.as_str()
        )));
    }
    Ok(load)
}

/// A stop's fields of the form, as the API's location.
fn place(form: &Form, prefix: &str, errors: &mut ValidationErrors) -> LocationInput {
    LocationInput {
        city: form.text(&format!("{prefix}.city")),
        state: form.text(&format!("{prefix}.state")),
        zip: form.text(&format!("{prefix}.zip")),
        address: form.text(&format!("{prefix}.address")),
        lat: form.number(&format!("{prefix}.lat"), errors),
        lng: form.number(&format!("{prefix}.lng"), errors),
        radius_m: form.number(&format!("{prefix}.radius_m"), errors),
    }
}

/// The form as the stored load fills it (times as the UTC inputs take them).
fn filled(load: &Load) -> Form {
    let local = |at: Option<DateTime<Utc>>| at.map(|at| at.format("%Y-%m-%dT%H:%M").to_string());
    let mut pairs = vec![
        ("reference", load.reference.clone()),
        ("weight", Some(load.weight.to_string())),
        (
            "equipment_type",
            Some(load.equipment_type.as_str().to_owned()),
        ),
        ("pickup_date", local(load.pickup_date)),
        ("delivery_date", local(load.delivery_date)),
        (
            "rate",
            load.rate_cents
                .map(|c| format!("{}.{:02}", c / 100, c % 100)),
        ),
        ("notes", load.notes.clone()),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name.to_owned(), value?)))
    .collect::<Vec<_>>();
    for (prefix, stop) in [("origin", &load.origin), ("destination", &load.destination)] {
        let fields = [
            ("city", Some(stop.city.clone())),
            ("state", Some(stop.state.to_string())),
            ("zip", Some(stop.zip.clone())),
            ("address", stop.address.clone()),
            ("lat", stop.lat.map(|v| v.to_string())),
            ("lng", stop.lng.map(|v| v.to_string())),
            ("radius_m", stop.radius_m.map(|v| v.to_string())),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                pairs.push((format!("{prefix}.{name}"), value));
            }
        }
    }
    Form::from_pairs(pairs)
}

fn load_form(viewer: &Viewer, form: &Form, problems: &Problems, mode: Mode<'_>) -> Markup {
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
    let (title, action, back) = match mode {
        Mode::Create => (
            "Create load".to_owned(),
            "/dashboard/loads".to_owned(),
            "/dashboard/loads".to_owned(),
        ),
        Mode::Edit(load) => (
            format!(
                "Edit load {}",
                load.reference.as_deref().unwrap_or(load.id.as_str())
            ),
            format!("/dashboard/loads/{}/edit", load.id),
            format!("/dashboard/loads/{}", load.id),
        ),
    };
    let stop_count = match mode {
        Mode::Edit(load) => load.stops().len(),
        Mode::Create => 0,
    };
    let stops_change = match mode {
        Mode::Create => true,
        Mode::Edit(load) => load.status == LoadStatus::Posted,
    };
    page::page(
        &title,
        Some(viewer),
        Section::Loads,
        html! {
            p { a href=(back) { @if matches!(mode, Mode::Create) { "← Loads" } @else { "← Back to the load" } } }
            @match mode {
                Mode::Create => h1 { "Create load" },
                // The id is long: on a line of its own, where it may wrap.
                Mode::Edit(load) => {
                    h1 { "Edit load" }
                    p { @match &load.reference {
                        Some(reference) => strong.reference { (reference) },
                        None => code.id { (load.id) },
                    } }
                }
            }
            (problems.summary())
            form method="post" action=(action) {
                (viewer.csrf_field())
                @if matches!(mode, Mode::Create) {
                    section.stops-plan aria-labelledby="stops-heading" {
                        h2 #stops-heading { "Stops" }
                        p.hint { "In the order the truck visits them: 2 to " (stop_rows::MIDDLE_ROWS + 2) " here (up to 50 through the API). Times are UTC." }
                        (stop_rows(form, problems, &states))
                    }
                } @else if stops_change {
                    @if stop_count > 2 {
                        p.hint { "This load has " (stop_count) " stops: the form changes the first and the last; the others change through the API (" code { "PATCH /v1/loads/{id}" } " with " code { "stops" } ")." }
                    }
                    div.grid2 { (place("origin", "Origin")) (place("destination", "Destination")) }
                } @else {
                    p.hint { "Origin and destination change only while a load is posted: this one is " (status_badge(match mode { Mode::Edit(load) => load.status, Mode::Create => LoadStatus::Posted })) "." }
                }
                section.card {
                    div.grid2 {
                        (field("reference", "Reference (PO, BOL or pro number)", Kind::Text, value("reference").as_deref(), false, problems))
                        (field("weight", "Weight (lb)", Kind::Number { step: "any" }, value("weight").as_deref(), true, problems))
                        (select("equipment_type", "Equipment type", &equipment, value("equipment_type").as_deref(), problems))
                        @if !matches!(mode, Mode::Create) {
                            (field("pickup_date", "Pickup (UTC)", Kind::DateTime, value("pickup_date").as_deref(), false, problems))
                            (field("delivery_date", "Delivery (UTC)", Kind::DateTime, value("delivery_date").as_deref(), false, problems))
                        }
                        (field("rate", "Rate (USD)", Kind::Number { step: "0.01" }, value("rate").as_deref(), false, problems))
                        (field("notes", "Notes", Kind::Text, value("notes").as_deref(), false, problems))
                        @if matches!(mode, Mode::Create) {
                            (field("detention_free_minutes", "Free time at each stop (minutes; default 120)", Kind::Number { step: "1" }, value("detention_free_minutes").as_deref(), false, problems))
                        }
                    }
                    @if matches!(mode, Mode::Create) {
                        button.primary type="submit" { "Create load" }
                    } @else {
                        p.hint { "A blank optional field is cleared." }
                        button.primary type="submit" { "Save changes" }
                    }
                }
            }
            @if matches!(mode, Mode::Create) {
                script src="/dashboard/assets/load_form.js" defer {}
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
