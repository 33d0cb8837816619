//! Truck and trailer types a load can require and a carrier can run.

use serde::{Deserialize, Serialize};

macro_rules! equipment_types {
    ($($variant:ident => $name:literal, $label:literal),+ $(,)?) => {
        /// Equipment types known to the service. The spec names `dry_van` and
        /// `refrigerated`; the rest are the common North American trailer types.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum EquipmentType { $(#[serde(rename = $name)] $variant),+ }

        impl EquipmentType {
            pub const ALL: &'static [EquipmentType] = &[$(EquipmentType::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(EquipmentType::$variant => $name),+ }
            }

            /// As people write it (the dashboard's pages).
            pub fn label(self) -> &'static str {
                match self { $(EquipmentType::$variant => $label),+ }
            }
        }
    };
}

equipment_types! {
    DryVan => "dry_van", "Dry van",
    Refrigerated => "refrigerated", "Refrigerated (reefer)",
    Flatbed => "flatbed", "Flatbed",
    StepDeck => "step_deck", "Step deck",
    DoubleDrop => "double_drop", "Double drop",
    Lowboy => "lowboy", "Lowboy",
    Conestoga => "conestoga", "Conestoga",
    Tanker => "tanker", "Tanker",
    Hopper => "hopper", "Hopper",
    AutoCarrier => "auto_carrier", "Auto carrier",
    Container => "container", "Container",
    PowerOnly => "power_only", "Power only",
    BoxTruck => "box_truck", "Box truck",
    Hotshot => "hotshot", "Hotshot",
}

impl EquipmentType {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let wanted = raw.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|e| e.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|e| e.as_str()).collect();
                format!("must be one of: {}", names.join(", "))
            })
    }
}
