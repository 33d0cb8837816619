//! The bodies of `POST /v1/devices`, `PATCH /v1/devices/{id}` and
//! `PUT /v1/loads/{load_id}/device`.

use serde::Deserialize;

use crate::domain::device::{
    DeviceEdit, MAX_NAME_CHARS, NewDevice, check_identifier, check_time_zone,
};
use crate::domain::ids::{CarrierId, DeviceId};
use crate::domain::validation::{ValidationErrors, text};

/// A device to create.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A device (a tracker or a phone app) to create.")]
pub struct NewDeviceInput {
    /// What the account calls it: a truck number, a driver's phone.
    #[schema(
        required = true,
        min_length = 1,
        max_length = 100,
        examples("Truck 12")
    )]
    pub name: Option<String>,
    /// The carrier that runs it (one of the account's).
    #[schema(value_type = Option<String>, examples("carrier_01jd8y6m2x0q3v5p7r9t1w3y5z"))]
    pub carrier_id: Option<String>,
    /// What the device calls itself, for trackers that name themselves
    /// rather than send a token: the IMEI (15 digits) of a Teltonika, GT06,
    /// Queclink or H02 unit, or the `user/device` of an OwnTracks MQTT topic.
    /// Unique across the service (`409 IDENTIFIER_TAKEN`).
    #[schema(min_length = 1, max_length = 64, examples("356307042441013"))]
    pub identifier: Option<String>,
    /// The UTC offset of the local times the unit reports (`+08:00`), for
    /// trackers that send local time without a zone (GT06); unset: the zone
    /// the unit gives at login, else UTC.
    #[schema(examples("+08:00"))]
    pub time_zone: Option<String>,
}

impl NewDeviceInput {
    pub fn validate(self) -> Result<NewDevice, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let name = errors.require("name", self.name, |n| text(n, MAX_NAME_CHARS, false));
        let carrier_id = errors.optional("carrier_id", self.carrier_id, |raw| {
            CarrierId::parse(raw.trim()).ok_or_else(|| "is not a carrier id".to_string())
        });
        let identifier =
            errors.optional("identifier", self.identifier, |raw| check_identifier(&raw));
        let time_zone = errors.optional("time_zone", self.time_zone, |raw| check_time_zone(&raw));
        errors.finish(|| NewDevice {
            name: name.expect("checked"),
            carrier_id,
            identifier,
            time_zone,
        })
    }
}

/// The body of `PATCH /v1/devices/{id}` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    description = "Fields to change; those left out stay as they are, and `null` clears \
    `carrier_id`, `identifier` (which frees the identifier for another device) or `time_zone`."
)]
pub struct DeviceChangeInput {
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 100)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<String>)]
    pub carrier_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub identifier: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<String>, examples("+08:00"))]
    pub time_zone: Option<Option<String>>,
}

impl DeviceChangeInput {
    pub fn validate(self) -> Result<DeviceEdit, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let name = match self.name {
            None => None,
            Some(None) => {
                errors.add("name", "must not be null");
                None
            }
            Some(Some(n)) => errors.check("name", text(n, MAX_NAME_CHARS, false)),
        };
        let carrier_id = match self.carrier_id {
            None => None,
            Some(None) => Some(None),
            Some(Some(raw)) => errors
                .check(
                    "carrier_id",
                    CarrierId::parse(raw.trim()).ok_or_else(|| "is not a carrier id".to_string()),
                )
                .map(Some),
        };
        let identifier = match self.identifier {
            None => None,
            Some(None) => Some(None),
            Some(Some(raw)) => errors.check("identifier", check_identifier(&raw)).map(Some),
        };
        let time_zone = match self.time_zone {
            None => None,
            Some(None) => Some(None),
            Some(Some(raw)) => errors.check("time_zone", check_time_zone(&raw)).map(Some),
        };
        errors.finish(|| DeviceEdit {
            name,
            carrier_id,
            identifier,
            time_zone,
        })
    }
}

impl crate::api::extract::BodyInput for DeviceChangeInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

impl crate::api::extract::BodyInput for NewDeviceInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

/// The device to attach to a load.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "The device to attach to the load.")]
pub struct AttachDeviceInput {
    #[schema(required = true, value_type = String, examples("dev_01jd8y6m2x0q3v5p7r9t1w3y5z"))]
    pub device_id: Option<String>,
}

impl AttachDeviceInput {
    pub fn validate(self) -> Result<DeviceId, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let id = errors.require("device_id", self.device_id, |raw| {
            DeviceId::parse(raw.trim()).ok_or_else(|| "is not a device id".to_string())
        });
        errors.finish(|| id.expect("checked"))
    }
}

impl crate::api::extract::BodyInput for AttachDeviceInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}
