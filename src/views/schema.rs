//! OpenAPI schemas of the domain's value types (ids, states, equipment) and of
//! the fields views write, built from the domain's own constants so the
//! document states what the server does. Request fields have theirs beside the
//! inputs (`api::input::fields`), on top of the builders here.

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::domain::equipment::EquipmentType;
use crate::domain::ids::{AccountId, CarrierId, EventId, KeyId, LoadId, WebhookId};
use crate::domain::location::{STATE_CODES, UsState};

/// An id's suffix: a ULID in lower-case Crockford base32 (`ids.rs`).
const ULID_SUFFIX: &str = "[0-7][0-9a-hjkmnp-tv-z]{25}";

/// A timestamp as the service writes it back after a client sent it: UTC with
/// `Z` (a leap second the client sent is written as `...:59.999Z`).
const ECHOED_TIMESTAMP: &str =
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z$";

pub fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

pub fn nullable_string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null]))
}

/// `true`, the only value of `success` in a success envelope (and of other flags
/// that cannot be anything else).
pub fn always_true() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([true]))
}

fn echoed(base: ObjectBuilder) -> ObjectBuilder {
    base.format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .pattern(Some(ECHOED_TIMESTAMP))
        .examples(["2026-03-01T14:30:00Z"])
        .description(Some(
            "RFC 3339 timestamp in UTC (`Z`), from a time a client sent, to the \
             microsecond as sent (3 or 6 fraction digits, none when zero). Leap seconds \
             (`:60`) and digits below the microsecond other than zeros are refused on \
             input, so two distinct times are never stored as one.",
        ))
}

/// A timestamp the service writes back from a client's (see `ECHOED_TIMESTAMP`).
pub fn echoed_timestamp() -> ObjectBuilder {
    echoed(string())
}

pub fn optional_echoed_timestamp() -> ObjectBuilder {
    echoed(nullable_string())
}

/// The estimated arrival: from the latest fix's time, so written like it.
pub fn optional_eta() -> ObjectBuilder {
    nullable_string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .pattern(Some(ECHOED_TIMESTAMP))
        .examples(["2026-03-01T19:05:00Z"])
        .description(Some(
            "Estimated arrival, RFC 3339 in UTC (`Z`); null unless the load is assigned or in \
             transit, has a fix, and its destination ZIP is known.",
        ))
}

/// Written by hand: the enum's variants are renamed inside a macro, where the
/// derive cannot read the names.
impl PartialSchema for EquipmentType {
    fn schema() -> RefOr<Schema> {
        string()
            .enum_values(Some(EquipmentType::ALL.iter().map(|e| e.as_str())))
            .description(Some(
                "Truck and trailer types: `dry_van` and `refrigerated`, and the other common \
                 North American trailer types.",
            ))
            .into()
    }
}

impl ToSchema for EquipmentType {}

/// A state code as the service returns it.
impl PartialSchema for UsState {
    fn schema() -> RefOr<Schema> {
        string()
            .enum_values(Some(STATE_CODES))
            .description(Some(
                "Two-letter code of a US state, the District of Columbia or Puerto Rico.",
            ))
            .into()
    }
}

impl ToSchema for UsState {}

/// Ids are strings: a type prefix and a ULID (sorts by creation time).
macro_rules! id_schema {
    ($($id:ident => $what:literal),+ $(,)?) => {$(
        impl PartialSchema for $id {
            fn schema() -> RefOr<Schema> {
                string()
                    .pattern(Some(format!("^{}{ULID_SUFFIX}$", $id::PREFIX)))
                    .description(Some(concat!("Id of ", $what, ": its prefix and 26 characters.")))
                    .examples([format!("{}01jd5ex0k3m2v8q4r6t9w1y3z5", $id::PREFIX)])
                    .into()
            }
        }

        impl ToSchema for $id {}
    )+};
}

id_schema! {
    LoadId => "a load",
    CarrierId => "a carrier",
    AccountId => "an account",
    KeyId => "an API key",
    WebhookId => "a webhook subscription",
    EventId => "an event (and of its deliveries)",
}
