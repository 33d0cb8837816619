//! Field schemas of request bodies and parameters, built from the same constants
//! the validators use (`src/domain/*`), so the document states the rules the server
//! enforces. Input structs point at these with `#[schema(schema_with = ...)]`.
//!
//! The server trims strings before checking them: patterns allow the surrounding
//! whitespace where they can, but a `maxLength` counts it (the server counts after
//! trimming), so there the schema is the stricter side. Rules no schema can state
//! (a fix's age, dates across fields, state transitions, DNS of webhook hosts) are
//! in descriptions.

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::domain::carrier::{MAX_EMAIL_CHARS, MAX_NAME_CHARS, MAX_REGISTRATION_DIGITS};
use crate::domain::equipment::EquipmentType;
use crate::domain::event::EventType;
use crate::domain::idempotency::MAX_KEY_CHARS;
use crate::domain::load::{MAX_NOTES_CHARS, MAX_REFERENCE_CHARS};
use crate::domain::location::{MAX_ADDRESS_CHARS, MAX_CITY_CHARS, STATE_CODES};
use crate::domain::webhook::{MAX_SECRET_CHARS, MAX_URL_CHARS, MIN_SECRET_CHARS};
use crate::views::schema::{nullable_string, string};

/// Characters `validation::text` refuses: control characters other than newline
/// and tab, and the invisible formatting ones (zero-width, bidi overrides).
const FORBIDDEN: &str = r"\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB";

/// RFC 3339 in UTC as `timestamp::parse_utc` accepts it: a date that exists in
/// the years 2000–2100 (leap years are the multiples of 4 but 2100), `T` (or `t`
/// or a space), a time whose second may be a leap second (`60`), any fraction,
/// and `Z` or a zero offset.
const UTC_TIMESTAMP: &str = concat!(
    r"^\s*(?:",
    "(?:20[0-9]{2}|2100)-",
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])",
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)",
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    "|20(?:[02468][048]|[13579][26])-02-29",
    ")",
    r"[Tt ](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?",
    r"(?:[Zz]|[+\-\u2212]00:00)\s*$",
);

/// Free text as `validation::text` checks it, up to `max` characters.
fn text(base: ObjectBuilder, max: usize, allow_empty: bool) -> ObjectBuilder {
    let pattern = if allow_empty {
        format!("^[^{FORBIDDEN}]*$")
    } else {
        format!(r"^[^{FORBIDDEN}]*[^\s{FORBIDDEN}][^{FORBIDDEN}]*$")
    };
    base.min_length((!allow_empty).then_some(1))
        .max_length(Some(max))
        .pattern(Some(pattern))
}

pub fn city() -> ObjectBuilder {
    text(string(), MAX_CITY_CHARS, false).examples(["Dallas"])
}

pub fn address() -> ObjectBuilder {
    text(nullable_string(), MAX_ADDRESS_CHARS, true).examples(["1200 Main St"])
}

/// A load's `reference`: one line, 1 to 64 characters, not all blank.
pub fn reference() -> ObjectBuilder {
    let forbidden = format!(r"{FORBIDDEN}\t\n");
    nullable_string()
        .min_length(Some(1))
        .max_length(Some(MAX_REFERENCE_CHARS))
        .pattern(Some(format!(
            r"^[^{forbidden}]*[^\s{forbidden}][^{forbidden}]*$"
        )))
        .examples(["PO-44172"])
}

pub fn notes() -> ObjectBuilder {
    text(nullable_string(), MAX_NOTES_CHARS, true)
}

pub fn carrier_name() -> ObjectBuilder {
    text(string(), MAX_NAME_CHARS, false).examples(["Lone Star Hauling"])
}

pub fn zip() -> ObjectBuilder {
    string()
        .pattern(Some(r"^\s*[0-9]{5}(?:-[0-9]{4})?\s*$"))
        .description(Some("US ZIP code: 5 digits, optionally `-` and 4 more."))
        .examples(["75201"])
}

fn timestamp(base: ObjectBuilder) -> ObjectBuilder {
    base.pattern(Some(UTC_TIMESTAMP)).description(Some(
        "ISO 8601 / RFC 3339 timestamp in UTC (ending in `Z` or `+00:00`), years 2000–2100; \
         another offset is refused rather than converted.",
    ))
}

pub fn utc_timestamp() -> ObjectBuilder {
    timestamp(string()).examples(["2026-11-24T16:04:37Z"])
}

pub fn optional_utc_timestamp() -> ObjectBuilder {
    timestamp(nullable_string())
}

fn registration(base: ObjectBuilder, kind: &str, prefix: &str) -> ObjectBuilder {
    // 1 to 10 digits, not all zeros (leading zeros are dropped when stored): one
    // alternative per count of leading zeros, as the total is bounded.
    let alternatives: Vec<String> = (0..MAX_REGISTRATION_DIGITS)
        .map(|zeros| {
            let rest = MAX_REGISTRATION_DIGITS - zeros - 1;
            format!("{}[1-9][0-9]{{0,{rest}}}", "0".repeat(zeros))
        })
        .collect();
    base.pattern(Some(format!(
        r"^\s*(?:{prefix}[\s\-#:.]*)?(?:{})\s*$",
        alternatives.join("|")
    )))
    .description(Some(format!(
        "The {kind} number: 1 to {MAX_REGISTRATION_DIGITS} digits, with or without the \
         `{kind}` prefix people write (`{kind}-778812`, `{kind} 778812` and `778812` are \
         the same); stored as digits, without leading zeros."
    )))
}

pub fn mc_number() -> ObjectBuilder {
    registration(string(), "MC", "[Mm][Cc]").examples(["123456"])
}

pub fn dot_number() -> ObjectBuilder {
    registration(nullable_string(), "USDOT", r"(?:[Uu][Ss]\s?)?[Dd][Oo][Tt]")
}

pub fn email() -> ObjectBuilder {
    // ASCII only so that `maxLength` (characters) is also the byte limit the server applies.
    nullable_string()
        .max_length(Some(MAX_EMAIL_CHARS))
        .pattern(Some(r"^\s*[!-?A-~]+@[!-\-/-?A-~]+(?:\.[!-\-/-?A-~]+)+\s*$"))
        .examples(["dispatch@example.com"])
}

pub fn phone() -> ObjectBuilder {
    nullable_string()
        .max_length(Some(32))
        .pattern(Some(r"^[+ .()\-]*(?:[0-9][+ .()\-]*){7,15}$"))
        .description(Some(
            "7 to 15 digits, with optional `+`, spaces, dots, dashes and parentheses.",
        ))
        .examples(["+1 214-555-0100"])
}

/// Equipment types a carrier runs; at most 200 entries are read, repeats dropped.
pub fn equipment_types() -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            EquipmentType::name(),
        )))
        .max_items(Some(200))
}

/// States a carrier serves; at most 200 entries are read, repeats dropped.
pub fn service_areas() -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            StateCodeInput::name(),
        )))
        .max_items(Some(200))
}

fn webhook_url(base: ObjectBuilder) -> ObjectBuilder {
    base.max_length(Some(MAX_URL_CHARS))
        .pattern(Some(r"^\s*https://"))
        .description(Some(
            "Absolute `https://` URL without credentials or fragment (plain `http://` only \
             where the operator allows it). A host that is, or resolves to, a loopback, \
             private, link-local or reserved address, or that does not resolve, is refused \
             unless the operator allows private targets.",
        ))
        .examples(["https://hooks.example.com/freight"])
}

pub fn url() -> ObjectBuilder {
    webhook_url(string())
}

pub fn optional_url() -> ObjectBuilder {
    webhook_url(nullable_string())
}

fn secret(base: ObjectBuilder) -> ObjectBuilder {
    base.min_length(Some(MIN_SECRET_CHARS))
        .max_length(Some(MAX_SECRET_CHARS))
        .pattern(Some(r"^[^\u0000-\u001F\u007F-\u009F]*$"))
        .description(Some(
            "HMAC secret. `whsec_<base64>` is decoded (to at least 16 bytes) as Standard \
             Webhooks does; any other secret is used as its UTF-8 bytes. Never returned \
             as sent: the answer to the request that sets it carries `signing_secret`, the \
             same key in the `whsec_` form that Standard Webhooks libraries take.",
        ))
        .examples(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
}

pub fn webhook_secret() -> ObjectBuilder {
    secret(string())
}

pub fn optional_webhook_secret() -> ObjectBuilder {
    secret(nullable_string())
}

fn events(schema_type: SchemaType) -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(schema_type)
        .items(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            EventType::name(),
        )))
        .min_items(Some(1))
        .max_items(Some(20))
        .description(Some("1 to 20 event types; repeats are dropped."))
}

pub fn webhook_events() -> ArrayBuilder {
    events(Type::Array.into())
}

pub fn optional_webhook_events() -> ArrayBuilder {
    events(SchemaType::from_iter([Type::Array, Type::Null]))
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters. No example:
/// a client that copied one key into every request would get 422s.
pub fn idempotency_key() -> ObjectBuilder {
    string()
        .min_length(Some(1))
        .max_length(Some(MAX_KEY_CHARS))
        .pattern(Some("^[!-~]+$"))
}

/// A state code as clients may send it: any letter case, stored upper-case.
pub struct StateCodeInput;

impl PartialSchema for StateCodeInput {
    fn schema() -> RefOr<Schema> {
        let alternatives: Vec<String> = STATE_CODES
            .iter()
            .map(|code| {
                code.chars()
                    .map(|c| format!("[{}{}]", c, c.to_ascii_lowercase()))
                    .collect()
            })
            .collect();
        string()
            .pattern(Some(format!(r"^\s*(?:{})\s*$", alternatives.join("|"))))
            .description(Some(
                "Two-letter code of a US state, DC or PR, in any letter case (`tx` is `TX`).",
            ))
            .examples(["TX"])
            .into()
    }
}

impl ToSchema for StateCodeInput {}
