//! The stops of the new-load form: the origin, up to [`MIDDLE_ROWS`] stops
//! between, and the destination, each a row of fields. Rows left empty are
//! ignored. Two stops with nothing but a place and a time are sent as the
//! API's `origin`, `destination`, `pickup_date` and `delivery_date`; anything
//! more (a stop between, a window's end, drop handling, references) as its
//! `stops`, whose errors (`stops[2].location.zip`) are shown at the row's
//! fields. `assets/load_form.js` adds and removes the rows between; without
//! it they are all shown.

use maud::{Markup, html};

use crate::api::input::load::NewLoadInput;
use crate::api::input::location::LocationInput;
use crate::api::input::stops::{StopAppointmentInput, StopInput, StopReferenceInput};
use crate::dashboard::form::Form;
use crate::dashboard::widgets::{Kind, Options, Problems, field, row_field, select};
use crate::domain::stop_plan::{Handling, StopKind};
use crate::domain::validation::ValidationErrors;

/// Stops the form offers between the origin and the destination.
pub const MIDDLE_ROWS: usize = 4;

/// A row of the form: the prefix of its fields and the name of its
/// appointment's (or window's) start.
struct Row {
    prefix: String,
    start: String,
    /// The origin (a pickup) or the destination (a delivery); a stop between
    /// chooses its type.
    fixed: Option<StopKind>,
}

fn rows() -> Vec<Row> {
    let end = |prefix: &str, start: &str, kind| Row {
        prefix: prefix.to_owned(),
        start: start.to_owned(),
        fixed: Some(kind),
    };
    let mut rows = vec![end("origin", "pickup_date", StopKind::Pickup)];
    rows.extend((2..MIDDLE_ROWS + 2).map(|n| Row {
        prefix: format!("stop_{n}"),
        start: format!("stop_{n}.window_start"),
        fixed: None,
    }));
    rows.push(end("destination", "delivery_date", StopKind::Delivery));
    rows
}

impl Row {
    fn name(&self, field: &str) -> String {
        format!("{}.{field}", self.prefix)
    }

    /// Nothing typed in (the selects, which always hold a value, aside).
    fn is_empty(&self, form: &Form) -> bool {
        let typed = [
            "city",
            "state",
            "zip",
            "address",
            "lat",
            "lng",
            "radius_m",
            "window_end",
            "references",
        ];
        form.text(&self.start).is_none() && typed.iter().all(|f| form.text(&self.name(f)).is_none())
    }

    /// Asks for more than the API's two-stop fields can say.
    fn needs_stops(&self, form: &Form) -> bool {
        form.text(&self.name("window_end")).is_some()
            || form.text(&self.name("references")).is_some()
            || form
                .text(&self.name("handling"))
                .is_some_and(|h| h != Handling::Live.as_str())
    }

    fn location(&self, form: &Form, errors: &mut ValidationErrors) -> LocationInput {
        LocationInput {
            city: form.text(&self.name("city")),
            state: form.text(&self.name("state")),
            zip: form.text(&self.name("zip")),
            address: form.text(&self.name("address")),
            lat: form.number(&self.name("lat"), errors),
            lng: form.number(&self.name("lng"), errors),
            radius_m: form.number(&self.name("radius_m"), errors),
        }
    }

    fn stop(&self, form: &Form, errors: &mut ValidationErrors) -> StopInput {
        let start = form.text(&self.start).map(|t| super::as_utc(&t));
        let end = form
            .text(&self.name("window_end"))
            .map(|t| super::as_utc(&t));
        StopInput {
            kind: match self.fixed {
                Some(kind) => Some(kind.as_str().to_owned()),
                None => form.text(&self.name("type")),
            },
            location: Some(self.location(form, errors)),
            appointment: (start.is_some() || end.is_some())
                .then_some(StopAppointmentInput { start, end }),
            handling: form.text(&self.name("handling")),
            references: self.references(form, errors),
            ..StopInput::default()
        }
    }

    /// `po:4500123, bol:889` as the API's references; a type may be written
    /// as words (`pickup number:77`).
    fn references(
        &self,
        form: &Form,
        errors: &mut ValidationErrors,
    ) -> Option<Vec<StopReferenceInput>> {
        let text = form.text(&self.name("references"))?;
        let mut references = Vec::new();
        for entry in text.split([',', ';', '\n']).map(str::trim) {
            if entry.is_empty() {
                continue;
            }
            match entry.split_once(':') {
                Some((kind, value)) => references.push(StopReferenceInput {
                    kind: Some(kind.trim().to_lowercase().replace([' ', '-'], "_")),
                    value: Some(value.trim().to_owned()),
                }),
                None => errors.add(
                    self.name("references"),
                    format!("write each as type:value (po:4500123), not \"{entry}\""),
                ),
            }
        }
        Some(references)
    }
}

/// The stops as the API's create body takes them.
pub struct StopsInput {
    origin: Option<LocationInput>,
    destination: Option<LocationInput>,
    pickup_date: Option<String>,
    delivery_date: Option<String>,
    stops: Option<Vec<StopInput>>,
    /// The row of each stop sent, for putting the API's errors back.
    sent: Vec<usize>,
}

impl StopsInput {
    /// Reads the rows of `form`; numbers that are not are `errors`.
    pub fn read(form: &Form, errors: &mut ValidationErrors) -> Self {
        let rows = rows();
        let last = rows.len() - 1;
        let sent: Vec<usize> = (0..rows.len())
            .filter(|&i| i == 0 || i == last || !rows[i].is_empty(form))
            .collect();
        let (origin, destination) = (&rows[0], &rows[last]);
        if sent.len() > 2 || origin.needs_stops(form) || destination.needs_stops(form) {
            let stops = sent.iter().map(|&i| rows[i].stop(form, errors)).collect();
            return StopsInput {
                origin: None,
                destination: None,
                pickup_date: None,
                delivery_date: None,
                stops: Some(stops),
                sent,
            };
        }
        StopsInput {
            origin: Some(origin.location(form, errors)),
            destination: Some(destination.location(form, errors)),
            pickup_date: form.text("pickup_date").map(|t| super::as_utc(&t)),
            delivery_date: form.text("delivery_date").map(|t| super::as_utc(&t)),
            stops: None,
            sent,
        }
    }

    /// The create body's stop fields (taken: a second call has none).
    pub fn input(&mut self) -> NewLoadInput {
        NewLoadInput {
            origin: self.origin.take(),
            destination: self.destination.take(),
            pickup_date: self.pickup_date.take(),
            delivery_date: self.delivery_date.take(),
            stops: self.stops.take(),
            ..NewLoadInput::default()
        }
    }

    /// The form's field for the API's `field`, and the message to show there:
    /// `stops[2].location.zip` is the zip of the third row sent.
    pub fn form_field(&self, field: &str, message: &str) -> (String, String) {
        let unchanged = (field.to_owned(), message.to_owned());
        let Some(rest) = field.strip_prefix("stops[") else {
            return unchanged;
        };
        let Some((index, rest)) = rest.split_once(']') else {
            return ("".to_owned(), message.to_owned());
        };
        let rows = rows();
        let Some(row) = index
            .parse::<usize>()
            .ok()
            .and_then(|i| self.sent.get(i))
            .map(|&i| &rows[i])
        else {
            return unchanged;
        };
        let rest = rest.trim_start_matches('.');
        if let Some(reference) = rest.strip_prefix("references") {
            // `references[1].value`: the second entry's value.
            let entry = reference
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .and_then(|(i, part)| Some((i.parse::<usize>().ok()? + 1, part)));
            let message = match entry {
                Some((n, part)) => {
                    format!("reference {n} ({}) {message}", part.trim_start_matches('.'))
                }
                None => message.to_owned(),
            };
            return (row.name("references"), message);
        }
        let name = match rest {
            "appointment" | "appointment.start" => row.start.clone(),
            "appointment.end" => row.name("window_end"),
            "handling" => row.name("handling"),
            "type" if row.fixed.is_none() => row.name("type"),
            _ => match rest.strip_prefix("location.") {
                Some(place) => row.name(place),
                None => row.name("city"),
            },
        };
        (name, message.to_owned())
    }
}

/// The form's rows: the origin, the stops between, the destination.
pub fn stop_rows(form: &Form, problems: &Problems, states: &Options) -> Markup {
    let rows = rows();
    let last = rows.len() - 1;
    html! {
        @for (i, row) in rows.iter().enumerate() {
            @if i == last {
                p.add-stop { button #add-stop type="button" hidden { "Add a stop" } }
            }
            (stop_row(row, i, form, problems, states))
        }
    }
}

fn stop_row(row: &Row, index: usize, form: &Form, problems: &Problems, states: &Options) -> Markup {
    let value = |name: &str| form.text(name);
    // A stop between needs its city and ZIP only once it is used.
    let text = |name: &str, label: &str, needed: bool| {
        let (name, value) = (row.name(name), value(&row.name(name)));
        match (needed, row.fixed) {
            (true, None) => row_field(&name, label, Kind::Text, value.as_deref(), problems),
            (needed, _) => field(&name, label, Kind::Text, value.as_deref(), needed, problems),
        }
    };
    let number = |name: &str, label: &str, step: &'static str| {
        field(
            &row.name(name),
            label,
            Kind::Number { step },
            value(&row.name(name)).as_deref(),
            false,
            problems,
        )
    };
    let kinds: Options = [
        ("", "Choose…"),
        ("pickup", "Pickup"),
        ("delivery", "Delivery"),
    ]
    .iter()
    .map(|(v, l)| (v.to_string(), l.to_string()))
    .collect();
    let handlings: Options = Handling::ALL
        .iter()
        .map(|h| {
            let label = match h {
                Handling::Live => "Live (driver waits)",
                Handling::Drop => "Drop (trailer)",
            };
            (h.as_str().to_owned(), label.to_owned())
        })
        .collect();
    let (legend, hint) = match row.fixed {
        Some(StopKind::Pickup) => ("Origin".to_owned(), "Stop 1, a pickup."),
        Some(StopKind::Delivery) => ("Destination".to_owned(), "The last stop, a delivery."),
        None => (
            format!("Stop {}", index + 1),
            "Optional: a pickup or delivery between the origin and the destination. Left empty, it is ignored.",
        ),
    };
    html! {
        fieldset.card.stop-row data-stop-row=[row.fixed.is_none().then_some(index + 1)] {
            legend { (legend) }
            p.hint { (hint) }
            div.stop-fields {
                @if row.fixed.is_none() {
                    (select(&row.name("type"), "Type", &kinds, value(&row.name("type")).as_deref(), problems))
                }
                (text("city", "City", true))
                (select(&row.name("state"), "State", states, value(&row.name("state")).map(|s| s.to_uppercase()).as_deref(), problems))
                (text("zip", "ZIP code", true))
                (text("address", "Street address", false))
                (field(&row.start, "Appointment or window start (UTC)", Kind::DateTime, value(&row.start).as_deref(), false, problems))
                (field(&row.name("window_end"), "Window end (UTC)", Kind::DateTime, value(&row.name("window_end")).as_deref(), false, problems))
                (select(&row.name("handling"), "Handling", &handlings, value(&row.name("handling")).as_deref(), problems))
                (text("references", "References (po:4500123, bol:889)", false))
            }
            details.geofence {
                summary { "Facility location (optional)" }
                p.hint { "Without it, freight places the stop at the ZIP's centre, 3,000 m wide." }
                (number("lat", "Latitude", "any"))
                (number("lng", "Longitude", "any"))
                (number("radius_m", "Arrival radius (m, 25-10,000; default 500)", "1"))
            }
            @if row.fixed.is_none() {
                p.remove-stop { button type="button" data-remove-stop hidden { "Remove this stop" } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Form {
        Form::from_pairs(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn two_plain_stops_go_as_origin_and_destination() {
        let mut errors = ValidationErrors::new();
        let read = StopsInput::read(
            &form(&[
                ("origin.city", "Dallas"),
                ("pickup_date", "2030-01-02T08:00"),
            ]),
            &mut errors,
        );
        assert!(read.stops.is_none());
        assert_eq!(read.pickup_date.as_deref(), Some("2030-01-02T08:00:00Z"));
        assert_eq!(read.form_field("origin.state", "x").0, "origin.state");
    }

    #[test]
    fn empty_rows_are_skipped_and_errors_find_their_row() {
        let mut errors = ValidationErrors::new();
        let read = StopsInput::read(
            &form(&[
                ("origin.city", "Dallas"),
                ("stop_3.city", "Memphis"),
                ("stop_3.references", "po:1, bol:2"),
                ("destination.handling", "drop"),
            ]),
            &mut errors,
        );
        let stops = read.stops.as_ref().expect("sent as stops");
        assert_eq!(stops.len(), 3);
        assert_eq!(stops[1].references.as_ref().map(Vec::len), Some(2));
        assert_eq!(
            read.form_field("stops[1].location.zip", "is required").0,
            "stop_3.zip"
        );
        assert_eq!(
            read.form_field("stops[2].appointment.start", "x").0,
            "delivery_date"
        );
        assert_eq!(
            read.form_field("stops[1].references[1].type", "is bad"),
            (
                "stop_3.references".to_owned(),
                "reference 2 (type) is bad".to_owned()
            )
        );
        assert_eq!(read.form_field("weight", "x").0, "weight");
        assert!(errors.is_empty());
    }

    #[test]
    fn a_reference_without_its_type_is_an_error_of_the_row() {
        let mut errors = ValidationErrors::new();
        StopsInput::read(&form(&[("origin.references", "4500123")]), &mut errors);
        assert_eq!(errors.errors()[0].field, "origin.references");
    }
}
