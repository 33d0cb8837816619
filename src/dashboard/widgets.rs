//! Form pieces every page uses: a labelled field with its error beside it, and
//! the summary of a refused form. Every field has a visible `<label>`; errors
//! are tied to their field with `aria-describedby`.

use chrono::{DateTime, Utc};
use maud::{Markup, html};

use crate::domain::load::{Load, LoadStatus};
use crate::domain::timestamp;
use crate::domain::validation::ValidationErrors;

/// What a refused form said, for re-showing it with its errors.
#[derive(Default)]
pub struct Problems {
    errors: Vec<(String, String)>,
}

impl Problems {
    pub fn from_validation(errors: &ValidationErrors) -> Self {
        Problems {
            errors: errors
                .errors()
                .iter()
                .map(|e| (e.field.clone(), readable(&e.message)))
                .collect(),
        }
    }

    /// One problem not tied to a field (`field` empty) or tied to one.
    pub fn one(field: &str, message: impl Into<String>) -> Self {
        Problems {
            errors: vec![(field.to_owned(), readable(&message.into()))],
        }
    }

    /// The message for `field` and the fields under it (`origin` for `origin.city`).
    fn for_field(&self, field: &str) -> Option<String> {
        let messages: Vec<&str> = self
            .errors
            .iter()
            .filter(|(f, _)| f == field || f.starts_with(&format!("{field}[")))
            .map(|(_, m)| m.as_str())
            .collect();
        (!messages.is_empty()).then(|| messages.join("; "))
    }

    /// The box at the top of a refused form, listing every problem.
    pub fn summary(&self) -> Markup {
        html! {
            @if !self.errors.is_empty() {
                div.problems role="alert" {
                    p { "Please correct the following:" }
                    ul {
                        @for (field, message) in &self.errors {
                            li {
                                @if field.is_empty() || field == "body" { (message) }
                                @else { a href=(format!("#{}", field_id(field))) { (field_name(field)) } " " (message) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A message of the API as a form shows it: the fields it names by their
/// API names (`must not be before pickup_date`) read as words ("pickup date").
fn readable(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let api_name = word.contains('_') && !word.starts_with('_') && !word.ends_with('_');
        out.push_str(&if api_name {
            word.replace('_', " ")
        } else {
            word.clone()
        });
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// How a field is typed in.
pub enum Kind {
    Text,
    Email,
    Password { new: bool },
    Number { step: &'static str },
    DateTime,
    Url,
}

/// A labelled input named `name` (the API's field path) with its value and error.
pub fn field(
    name: &str,
    label: &str,
    kind: Kind,
    value: Option<&str>,
    required: bool,
    problems: &Problems,
) -> Markup {
    labelled(name, label, kind, value, required, !required, problems)
}

/// A field of a row that may be left empty as a whole (a stop between the
/// origin and the destination) but is needed once the row is used: neither
/// `required` nor marked optional.
pub fn row_field(
    name: &str,
    label: &str,
    kind: Kind,
    value: Option<&str>,
    problems: &Problems,
) -> Markup {
    labelled(name, label, kind, value, false, false, problems)
}

fn labelled(
    name: &str,
    label: &str,
    kind: Kind,
    value: Option<&str>,
    required: bool,
    optional: bool,
    problems: &Problems,
) -> Markup {
    let id = field_id(name);
    let error = problems.for_field(name);
    let error_id = format!("{id}-error");
    let (input_type, autocomplete, step) = match kind {
        Kind::Text => ("text", None, None),
        Kind::Email => ("email", Some("email"), None),
        Kind::Password { new: true } => ("password", Some("new-password"), None),
        Kind::Password { new: false } => ("password", Some("current-password"), None),
        Kind::Number { step } => ("number", None, Some(step)),
        Kind::DateTime => ("datetime-local", None, None),
        Kind::Url => ("url", None, None),
    };
    html! {
        div.field.invalid[error.is_some()] {
            label for=(id) { (label) @if optional { span.optional { " (optional)" } } }
            input id=(id) name=(name) type=(input_type) value=[value]
                required[required] autocomplete=[autocomplete] step=[step]
                aria-invalid=[error.is_some().then_some("true")]
                aria-describedby=[error.is_some().then_some(error_id.as_str())];
            @if let Some(error) = &error {
                p.error id=(error_id) { (error) }
            }
        }
    }
}

/// The `(value, label)` choices of a `<select>`.
pub type Options = Vec<(String, String)>;

/// A labelled `<select>` of `(value, label)` options.
pub fn select(
    name: &str,
    label: &str,
    options: &[(String, String)],
    selected: Option<&str>,
    problems: &Problems,
) -> Markup {
    let id = field_id(name);
    let error = problems.for_field(name);
    html! {
        div.field.invalid[error.is_some()] {
            label for=(id) { (label) }
            select id=(id) name=(name) {
                @for (value, text) in options {
                    option value=(value) selected[Some(value.as_str()) == selected] { (text) }
                }
            }
            @if let Some(error) = &error { p.error { (error) } }
        }
    }
}

/// A group of labelled checkboxes sharing `name`.
pub fn checkboxes(
    name: &str,
    legend: &str,
    options: &[(&str, &str)],
    checked: &[String],
    problems: &Problems,
) -> Markup {
    let error = problems.for_field(name);
    html! {
        fieldset.field.invalid[error.is_some()] {
            legend { (legend) }
            div.choices {
                @for (value, text) in options {
                    @let id = format!("{}-{}", field_id(name), value.replace('.', "-"));
                    label.choice for=(id) {
                        input id=(id) type="checkbox" name=(name) value=(value)
                            checked[checked.iter().any(|c| c == value)];
                        " " (text)
                    }
                }
            }
            @if let Some(error) = &error { p.error { (error) } }
        }
    }
}

/// Previous / next links around "Page n of m"; `link` makes a page's URL.
pub fn pager(page: u64, pages: u64, link: impl Fn(u64) -> String) -> Markup {
    html! {
        nav.pager aria-label="Pages" {
            @if page > 1 { a href=(link(page - 1)) rel="prev" { "Previous" } }
            span { "Page " (page) " of " (pages) }
            @if page < pages { a href=(link(page + 1)) rel="next" { "Next" } }
        }
    }
}

/// A whole number with thousands separators: `42,000`.
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A weight as the pages show it: `42,000 lb`, `1,250.5 lb`.
pub fn pounds(weight: f64) -> String {
    let whole = weight.trunc();
    let tenths = ((weight - whole) * 10.0).round();
    match tenths as i64 {
        0 => format!("{} lb", grouped(whole as i64)),
        10 => format!("{} lb", grouped(whole as i64 + 1)),
        t => format!("{}.{t} lb", grouped(whole as i64)),
    }
}

/// A field's API path as people read it: `origin.city` is "Origin city",
/// `contact.email` "Contact email", `equipment_types[1]` "Equipment types 2".
fn field_name(path: &str) -> String {
    let mut words = Vec::new();
    for part in path.split(['.', '_', '[']) {
        match part.strip_suffix(']').map(str::parse::<usize>) {
            Some(Ok(index)) => words.push((index + 1).to_string()),
            _ if part.is_empty() => {}
            _ => words.push(part.to_owned()),
        }
    }
    let text = words.join(" ");
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

fn field_id(name: &str) -> String {
    format!("f-{}", name.replace(['.', '[', ']'], "-"))
}

/// A time as views write it (RFC 3339, or none) as the pages show it:
/// `27 Nov 2026, 03:28 UTC`, or a dash.
pub fn when_text(raw: Option<&String>) -> String {
    raw.and_then(|raw| raw.parse::<chrono::DateTime<chrono::Utc>>().ok())
        .map_or("—".to_owned(), |at| {
            at.format("%-d %b %Y, %H:%M UTC").to_string()
        })
}

pub fn when(at: Option<DateTime<Utc>>) -> Markup {
    html! {
        @match at {
            // One way to write a time on every page: "27 Nov 2026, 03:28 UTC".
            Some(at) => time datetime=(timestamp::format(&at)) { (at.format("%-d %b %Y, %H:%M UTC")) },
            None => "—",
        }
    }
}

/// A labelled read-only value with a button that copies it.
pub fn copy(id: &str, label: &str, value: &str) -> Markup {
    html! {
        div.field {
            label for=(id) { (label) }
            div.copy {
                input id=(id) readonly value=(value);
                button type="button" data-copy=(format!("#{id}")) aria-label=(format!("Copy {label}")) { "Copy" }
            }
        }
    }
}

/// The links between the settings pages, `current` in bold.
pub fn settings_tabs(current: &str) -> Markup {
    const TABS: [(&str, &str); 3] = [
        ("API Keys", "/dashboard/settings/api-keys"),
        ("Users", "/dashboard/settings/users"),
        ("Stops", "/dashboard/settings/stops"),
    ];
    html! {
        p.tabs {
            @for (n, (name, href)) in TABS.iter().enumerate() {
                @if n > 0 { " · " }
                @if *name == current { strong { (name) } } @else { a href=(href) { (name) } }
            }
        }
    }
}

pub fn status_badge(status: LoadStatus) -> Markup {
    html! { span class=(format!("badge {}", status.as_str())) { (status.as_str().replace('_', " ")) } }
}

pub fn route(load: &Load) -> String {
    format!(
        "{}, {} → {}, {}",
        load.origin.city, load.origin.state, load.destination.city, load.destination.state
    )
}

#[cfg(test)]
mod tests {
    use super::{field_name, readable};

    #[test]
    fn numbers_have_their_thousands_marked() {
        use super::{grouped, pounds};
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(-42_000), "-42,000");
        assert_eq!(pounds(42_000.0), "42,000 lb");
        assert_eq!(pounds(1_250.5), "1,250.5 lb");
        assert_eq!(pounds(999.96), "1,000 lb");
    }

    #[test]
    fn field_paths_read_as_words() {
        assert_eq!(field_name("origin.city"), "Origin city");
        assert_eq!(field_name("contact.email"), "Contact email");
        assert_eq!(
            field_name("detention_free_minutes"),
            "Detention free minutes"
        );
        assert_eq!(field_name("equipment_types[1]"), "Equipment types 2");
        assert_eq!(field_name("password"), "Password");
    }

    #[test]
    fn messages_name_fields_in_words() {
        assert_eq!(
            readable("must not be before pickup_date"),
            "must not be before pickup date"
        );
        assert_eq!(
            readable("delivery_date must not be before pickup_date."),
            "delivery date must not be before pickup date."
        );
        assert_eq!(readable("must be a number"), "must be a number");
        assert_eq!(readable("_private and trailing_"), "_private and trailing_");
    }
}
