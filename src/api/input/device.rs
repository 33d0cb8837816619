//! The bodies of `POST /v1/devices` and `PUT /v1/loads/{load_id}/device`.

use serde::Deserialize;

use crate::domain::device::MAX_NAME_CHARS;
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
}

/// A validated new device.
pub struct NewDevice {
    pub name: String,
    pub carrier_id: Option<CarrierId>,
}

impl NewDeviceInput {
    pub fn validate(self) -> Result<NewDevice, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let name = errors.require("name", self.name, |n| text(n, MAX_NAME_CHARS, false));
        let carrier_id = errors.optional("carrier_id", self.carrier_id, |raw| {
            CarrierId::parse(raw.trim()).ok_or_else(|| "is not a carrier id".to_string())
        });
        errors.finish(|| NewDevice {
            name: name.expect("checked"),
            carrier_id,
        })
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
