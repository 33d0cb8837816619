//! Schemas of JSON the handlers build on the fly (`json!`, `envelope::list`) and
//! of the error envelope, which have no struct of their own to derive from.
//!
//! Each mirrors the code that writes the JSON, named beside it; the conformance
//! test (`tests/api/openapi.rs`) checks real answers against them with every
//! object closed, so a field added to an answer but not here fails it.

use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, SchemaType, Type,
};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::api::input::load::StatusChangeInput;
use crate::api::input::tracking::FixInput;
use crate::api::webhook_views::{DeliveryView, WebhookView};
use crate::domain::account::PlanKind;
use crate::domain::api_key::Permission;
use crate::domain::ids::{AccountId, EventId, KeyId, LoadId, WebhookId};
use crate::domain::validation::FieldError;
use crate::views::device::DeviceView;
use crate::views::load::{CarrierView, LoadView};
use crate::views::schema::always_true;
use crate::views::share_link::ShareLinkView;
use crate::views::tracking::PointView;

/// `false`, the only value of `success` in an error envelope.
pub fn always_false() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([false]))
}

fn reference<T: ToSchema>() -> RefOr<Schema> {
    RefOr::Ref(utoipa::openapi::Ref::from_schema_name(T::name()))
}

fn count(minimum: u64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(minimum))
}

/// Adds `T` and what it refers to, for a hand-written schema that refers to `T`.
fn collect<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

/// One event of a `text/event-stream` answer, as a client's parser reads it
/// (the fields of the SSE format; OpenAPI 3.1 has a streaming media type's
/// `schema` describe each event). `data` is one line of JSON, described in the
/// operation: `TrackingUpdate` for `tracking.updated`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // a schema only
pub struct ServerSentEvent {
    /// `tracking.updated`, `reset` or `overflow`; absent on the opening `retry`.
    event: Option<String>,
    data: Option<String>,
    /// `<epoch>-<number>`, opaque; send the last one back to resume.
    id: Option<String>,
    /// Milliseconds a client waits before reconnecting (the first line: 2000).
    retry: Option<u32>,
}

/// `ApiError::body`: `{"success": false, "error": {"code", "message", "details"}}`.
pub struct Error;

impl PartialSchema for Error {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(
                "Every refusal. `error.code` is stable and upper-snake; `error.message` is for people.",
            ))
            .property("success", always_false())
            .required("success")
            .property("error", reference::<ErrorDetail>())
            .required("error")
            .into()
    }
}

impl ToSchema for Error {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<ErrorDetail>(schemas);
    }
}

/// The `error` of the envelope, also each rejected point of a GPS batch.
pub struct ErrorDetail;

impl PartialSchema for ErrorDetail {
    fn schema() -> RefOr<Schema> {
        let details = ObjectBuilder::new()
            .description(Some(
                "Facts about the refusal, by code (an empty object when there are none). \
                 Validation refusals name the first offending `field` and list every \
                 problem in `errors`; field paths are dotted, with `[i]` for array \
                 elements, and `body` is the body as a whole.",
            ))
            .property(
                "field",
                ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null])),
            )
            .property(
                "errors",
                ArrayBuilder::new().items(reference::<FieldError>()),
            )
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(true),
            ));
        ObjectBuilder::new()
            .property(
                "code",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[A-Z][A-Z0-9_]*$"))
                    .examples(["VALIDATION_FAILED"]),
            )
            .required("code")
            .property("message", ObjectBuilder::new().schema_type(Type::String))
            .required("message")
            .property("details", details)
            .required("details")
            .into()
    }
}

impl ToSchema for ErrorDetail {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<FieldError>(schemas);
    }
}

/// What `envelope::list_value` writes: the items under their own name in `data`
/// beside `total` and `page`, and `pagination` repeating them with `limit`.
fn list(items: &str, item: RefOr<Schema>, pagination: ObjectBuilder) -> RefOr<Schema> {
    let data = ObjectBuilder::new()
        .property(items, ArrayBuilder::new().items(item))
        .required(items)
        .property("total", count(0).description(Some("Matches on all pages.")))
        .required("total")
        .property("page", count(1))
        .required("page");
    let pagination = pagination
        .property("page", count(1))
        .required("page")
        .property("limit", count(1))
        .required("limit")
        .property("total", count(0))
        .required("total");
    ObjectBuilder::new()
        .property("success", always_true())
        .required("success")
        .property("data", data)
        .required("data")
        .property("pagination", pagination)
        .required("pagination")
        .into()
}

macro_rules! list_schema {
    ($(#[$doc:meta])* $name:ident, $items:literal, $item:ty) => {
        $(#[$doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                list($items, reference::<$item>(), ObjectBuilder::new())
            }
        }

        impl ToSchema for $name {
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                collect::<$item>(schemas);
            }
        }
    };
}

list_schema!(
    /// `GET /v1/loads` (`routes::loads::list`).
    LoadList, "loads", LoadView
);
list_schema!(
    /// `GET /v1/carriers` (`routes::carriers::list`).
    CarrierList, "carriers", CarrierView
);
list_schema!(
    /// `GET /v1/webhooks` (`routes::webhooks::list`).
    WebhookList, "webhooks", WebhookView
);
list_schema!(
    /// `GET /v1/webhooks/{id}/deliveries` (`routes::webhooks::deliveries`).
    DeliveryList, "deliveries", DeliveryView
);

list_schema!(
    /// `GET /v1/devices` (`routes::devices::list`).
    DeviceList, "devices", DeviceView
);

list_schema!(
    /// `GET /v1/loads/{id}/share-links` (`routes::share_links::list`).
    ShareLinkList, "share_links", ShareLinkView
);

/// `GET /v1/loads/{id}/tracking/history` (`routes::tracking::history`): the list
/// shape plus `pagination.next_cursor`.
pub struct GpsHistory;

impl PartialSchema for GpsHistory {
    fn schema() -> RefOr<Schema> {
        let cursor = ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .pattern(Some(r"^c[0-9]{1,10}\.[0-9]{1,18}$"))
            .description(Some(
                "Opaque; pass it as `cursor` (with the same `from`/`to`) for the next page. \
                 Null on the last page.",
            ));
        list(
            "points",
            reference::<PointView>(),
            ObjectBuilder::new()
                .property("next_cursor", cursor)
                .required("next_cursor"),
        )
    }
}

impl ToSchema for GpsHistory {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<PointView>(schemas);
    }
}

/// One point of a GPS batch: a fix with the `load_id` it belongs to.
pub struct BatchPoint;

impl PartialSchema for BatchPoint {
    fn schema() -> RefOr<Schema> {
        let mut point = FixInput::schema();
        if let RefOr::T(Schema::Object(object)) = &mut point {
            object.description = Some("One GPS fix, with the load it belongs to.".into());
            object
                .properties
                .insert("load_id".into(), reference::<LoadId>());
            object.required.insert(0, "load_id".into());
        }
        point
    }
}

impl ToSchema for BatchPoint {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<LoadId>(schemas);
    }
}

/// The body of `PATCH /v1/loads/{id}/status`: a [`StatusChangeInput`] whose
/// `carrier_id` comes only with `status: assigned` (`TransitionError::
/// CarrierOnlyWhenAssigning`), a rule across two fields.
pub struct StatusChangeBody;

impl PartialSchema for StatusChangeBody {
    fn schema() -> RefOr<Schema> {
        let assigning = ObjectBuilder::new().property(
            "status",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["assigned"])),
        );
        let no_carrier = ObjectBuilder::new()
            .property("carrier_id", ObjectBuilder::new().schema_type(Type::Null));
        AllOfBuilder::new()
            .item(reference::<StatusChangeInput>())
            .item(AnyOfBuilder::new().item(assigning).item(no_carrier))
            .description(Some(
                "A status change; `carrier_id` only with `status: assigned` (required to \
                 assign a posted load).",
            ))
            .into()
    }
}

impl ToSchema for StatusChangeBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<StatusChangeInput>(schemas);
    }
}

/// `routes::webhooks::delete`.
#[derive(ToSchema)]
pub struct DeletedWebhook {
    pub id: WebhookId,
    #[schema(schema_with = always_true)]
    pub deleted: bool,
}

/// `routes::share_links::revoke`.
#[derive(ToSchema)]
pub struct RevokedShareLink {
    #[schema(value_type = String)]
    pub id: String,
    #[schema(schema_with = always_true)]
    pub revoked: bool,
    #[schema(format = DateTime)]
    pub revoked_at: String,
}

/// `routes::devices::delete`.
#[derive(ToSchema)]
pub struct DeletedDevice {
    #[schema(value_type = String)]
    pub id: String,
    #[schema(schema_with = always_true)]
    pub deleted: bool,
}

/// `routes::carriers::delete`.
#[derive(ToSchema)]
pub struct DeletedCarrier {
    #[schema(value_type = String)]
    pub id: String,
    #[schema(schema_with = always_true)]
    pub deleted: bool,
}

/// `routes::webhooks::test`: how the receiver answered the signed test event.
#[derive(ToSchema)]
pub struct WebhookTestResult {
    pub event_id: EventId,
    /// The receiver answered 2xx.
    pub delivered: bool,
    /// The receiver's HTTP status; null if it did not answer.
    #[schema(required = true)]
    pub status_code: Option<u16>,
    /// Why the attempt failed, if it did.
    #[schema(required = true)]
    pub error: Option<String>,
}

/// `routes::auth::verify`: whose key this is and what it may do.
#[derive(ToSchema)]
pub struct KeyVerification {
    #[schema(schema_with = always_true)]
    pub authenticated: bool,
    /// The account id.
    pub user_id: AccountId,
    pub account_name: String,
    pub plan: PlanKind,
    pub key_id: KeyId,
    pub permissions: Vec<Permission>,
    /// When the key stops working (RFC 3339 UTC); `null`: it does not expire.
    pub expires_at: Option<String>,
}
