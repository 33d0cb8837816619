//! Loads and carriers as clients see them, in API answers and webhook payloads.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::carrier::{Carrier, Contact};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::{CarrierId, LoadId};
use crate::domain::load::{CarrierSummary, Load, LoadStatus, StatusEntry};
use crate::domain::location::{Location, UsState};
use crate::domain::timestamp::format;

use super::device::AttachedDevice;
use super::stops::StopView;
use super::tracking::TrackingSummary;

/// A load. Optional fields are present as `null` when unset.
#[derive(Serialize, ToSchema)]
#[schema(as = Load)]
pub struct LoadView<'a> {
    #[schema(value_type = LoadId)]
    pub id: &'a str,
    /// The shipper's or broker's own number (PO, BOL, pro number), unique
    /// among the account's loads; null when none was given.
    #[schema(required = true, value_type = Option<String>)]
    pub reference: Option<&'a str>,
    #[schema(value_type = LoadStatus)]
    pub status: &'static str,
    #[schema(value_type = Location)]
    pub origin: &'a Location,
    #[schema(value_type = Location)]
    pub destination: &'a Location,
    /// Pounds.
    pub weight: f64,
    #[schema(value_type = EquipmentType)]
    pub equipment_type: &'static str,
    #[schema(required = true, schema_with = super::schema::optional_echoed_timestamp)]
    pub pickup_date: Option<String>,
    #[schema(required = true, schema_with = super::schema::optional_echoed_timestamp)]
    pub delivery_date: Option<String>,
    /// US dollars.
    #[schema(required = true)]
    pub rate: Option<f64>,
    #[schema(value_type = Currency)]
    pub currency: &'static str,
    #[schema(required = true, value_type = Option<String>)]
    pub notes: Option<&'a str>,
    /// Free minutes at each stop before detention starts (120 unless the load
    /// says).
    pub detention_free_minutes: u32,
    /// The carrier as it was when the load was assigned; null while posted.
    #[schema(required = true, value_type = Option<CarrierSummary>)]
    pub carrier: Option<&'a CarrierSummary>,
    /// On a retrieved load (spec 2.1); left out of list items, which would otherwise
    /// wake the actor of every listed load.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = TrackingSummary, required = false)]
    pub tracking: Option<TrackingSummary>,
    /// On a retrieved load: the device attached to it, null when none
    /// (`PUT /v1/loads/{id}/device`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<AttachedDevice>, required = false)]
    pub device: Option<Option<AttachedDevice>>,
    /// On a retrieved load: its pickup and delivery as stops (geofence and
    /// milestones), pickup first.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<StopView>, required = false)]
    pub stops: Option<Vec<StopView<'a>>>,
    /// The last 50 status changes, oldest first.
    #[schema(value_type = Vec<StatusEntry>)]
    pub status_history: &'a [StatusEntry],
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// Money is always US dollars.
#[derive(ToSchema)]
pub enum Currency {
    #[schema(rename = "USD")]
    Usd,
}

impl<'a> LoadView<'a> {
    /// A load with its tracking summary.
    pub fn with_tracking(load: &'a Load, tracking: TrackingSummary) -> Self {
        LoadView {
            tracking: Some(tracking),
            ..Self::new(load)
        }
    }

    /// A retrieved load: with its tracking summary and its device (`None`:
    /// not known now, left out).
    pub fn retrieved(
        load: &'a Load,
        tracking: TrackingSummary,
        device: Option<Option<AttachedDevice>>,
    ) -> Self {
        LoadView {
            device,
            ..Self::with_tracking(load, tracking)
        }
    }

    /// With its stops (`None`: not known now, left out).
    pub fn with_stops(self, stops: Option<Vec<StopView<'a>>>) -> Self {
        LoadView { stops, ..self }
    }

    /// A load without tracking (list items).
    pub fn new(load: &'a Load) -> Self {
        LoadView {
            id: load.id.as_str(),
            reference: load.reference.as_deref(),
            status: load.status.as_str(),
            origin: &load.origin,
            destination: &load.destination,
            weight: load.weight,
            equipment_type: load.equipment_type.as_str(),
            pickup_date: load.pickup_date.as_ref().map(format),
            delivery_date: load.delivery_date.as_ref().map(format),
            rate: load.rate_cents.map(|c| c as f64 / 100.0),
            currency: "USD",
            notes: load.notes.as_deref(),
            detention_free_minutes: load.free_minutes(),
            carrier: load.carrier.as_ref(),
            tracking: None,
            device: None,
            stops: None,
            status_history: &load.status_history,
            created_at: format(&load.created_at),
            updated_at: format(&load.updated_at),
        }
    }
}

/// A carrier.
#[derive(Serialize, ToSchema)]
#[schema(as = Carrier)]
pub struct CarrierView<'a> {
    #[schema(value_type = CarrierId)]
    pub id: &'a str,
    #[schema(value_type = String)]
    pub name: &'a str,
    /// Digits only, without leading zeros.
    #[schema(value_type = String, pattern = "^[1-9][0-9]*$")]
    pub mc_number: &'a str,
    /// Digits only, without leading zeros.
    #[schema(required = true, value_type = Option<String>, pattern = "^[1-9][0-9]*$")]
    pub dot_number: Option<&'a str>,
    #[schema(value_type = Contact)]
    pub contact: &'a Contact,
    #[schema(value_type = Vec<EquipmentType>)]
    pub equipment_types: Vec<&'static str>,
    #[schema(value_type = Vec<UsState>)]
    pub service_areas: Vec<&'a str>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl<'a> CarrierView<'a> {
    pub fn new(carrier: &'a Carrier) -> Self {
        CarrierView {
            id: carrier.id.as_str(),
            name: &carrier.name,
            mc_number: &carrier.mc_number,
            dot_number: carrier.dot_number.as_deref(),
            contact: &carrier.contact,
            equipment_types: carrier.equipment_types.iter().map(|e| e.as_str()).collect(),
            service_areas: carrier.service_areas.iter().map(|s| s.as_str()).collect(),
            created_at: format(&carrier.created_at),
        }
    }
}
