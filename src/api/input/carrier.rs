//! The bodies of `POST /v1/carriers` and `PATCH /v1/carriers/{id}`.

use serde::Deserialize;

use crate::domain::carrier::{
    CarrierEdit, Contact, MAX_NAME_CHARS, MAX_SERVICE_AREAS, NewCarrier, email, parse_list, phone,
    registration_number,
};
use crate::domain::equipment::EquipmentType;
use crate::domain::location::UsState;
use crate::domain::validation::{ValidationErrors, text};

/// How to reach a carrier; both parts optional.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactInput {
    #[schema(schema_with = super::fields::email)]
    pub email: Option<String>,
    #[schema(schema_with = super::fields::phone)]
    pub phone: Option<String>,
}

/// The body of `POST /v1/carriers` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A carrier to register.")]
pub struct NewCarrierInput {
    #[schema(required = true, schema_with = super::fields::carrier_name)]
    pub name: Option<String>,
    /// Unique within the account.
    #[schema(required = true, schema_with = super::fields::mc_number)]
    pub mc_number: Option<String>,
    #[schema(schema_with = super::fields::dot_number)]
    pub dot_number: Option<String>,
    pub contact: Option<ContactInput>,
    #[schema(schema_with = super::fields::equipment_types)]
    pub equipment_types: Option<Vec<String>>,
    #[schema(schema_with = super::fields::service_areas)]
    pub service_areas: Option<Vec<String>>,
}

impl NewCarrierInput {
    pub fn validate(self) -> Result<NewCarrier, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let name = errors.require("name", self.name, |n| text(n, MAX_NAME_CHARS, false));
        let mc_number = errors.require("mc_number", self.mc_number, |n| {
            registration_number(&n, "MC")
        });
        let dot_number = errors.optional("dot_number", self.dot_number, |n| {
            registration_number(&n, "USDOT")
        });
        let contact = self.contact.unwrap_or_default();
        let email = errors.optional("contact.email", contact.email, |e| email(&e));
        let phone = errors.optional("contact.phone", contact.phone, |p| phone(&p));
        let equipment_types = parse_list(
            &mut errors,
            "equipment_types",
            self.equipment_types.unwrap_or_default(),
            EquipmentType::ALL.len(),
            EquipmentType::parse,
        );
        let service_areas = parse_list(
            &mut errors,
            "service_areas",
            self.service_areas.unwrap_or_default(),
            MAX_SERVICE_AREAS,
            UsState::parse,
        );
        errors.finish(|| NewCarrier {
            name: name.expect("checked"),
            mc_number: mc_number.expect("checked"),
            dot_number,
            contact: Contact { email, phone },
            equipment_types,
            service_areas,
        })
    }
}

impl crate::api::extract::BodyInput for NewCarrierInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

/// How to reach a carrier, as a change: a part left out stays, null clears it.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactChangeInput {
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::email)]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::phone)]
    pub phone: Option<Option<String>>,
}

/// The body of `PATCH /v1/carriers/{id}` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    description = "Fields to change; those left out stay as they are, and `null` clears \
    `dot_number` or a part of `contact`. The MC number cannot change (register the carrier \
    again under the new one)."
)]
pub struct CarrierChangeInput {
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::carrier_name)]
    pub name: Option<Option<String>>,
    /// Refused: a carrier is its MC number.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<String>)]
    pub mc_number: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::dot_number)]
    pub dot_number: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<ContactChangeInput>)]
    pub contact: Option<Option<ContactChangeInput>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::equipment_types)]
    pub equipment_types: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::service_areas)]
    pub service_areas: Option<Option<Vec<String>>>,
}

impl CarrierChangeInput {
    pub fn validate(self) -> Result<CarrierEdit, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        if self.mc_number.is_some() {
            errors.add(
                "mc_number",
                "cannot be changed: a carrier is its MC number (register the new one as a carrier)",
            );
        }
        let name = match self.name {
            None => None,
            Some(None) => {
                errors.add("name", "must not be null");
                None
            }
            Some(Some(n)) => errors.check("name", text(n, MAX_NAME_CHARS, false)),
        };
        let dot_number = match self.dot_number {
            None => None,
            Some(None) => Some(None),
            Some(Some(n)) => errors
                .check("dot_number", registration_number(&n, "USDOT"))
                .map(Some),
        };
        // Null stands for nothing here but the optional values it clears: a
        // list is emptied with `[]`, a contact part with its own null.
        for (field, sent_null) in [
            ("contact", matches!(self.contact, Some(None))),
            (
                "equipment_types",
                matches!(self.equipment_types, Some(None)),
            ),
            ("service_areas", matches!(self.service_areas, Some(None))),
        ] {
            if sent_null {
                errors.add(field, "must not be null (send [] to empty a list)");
            }
        }
        let contact = self.contact.flatten().unwrap_or_default();
        let email = match contact.email {
            None => None,
            Some(None) => Some(None),
            Some(Some(e)) => errors.check("contact.email", email(&e)).map(Some),
        };
        let phone = match contact.phone {
            None => None,
            Some(None) => Some(None),
            Some(Some(p)) => errors.check("contact.phone", phone(&p)).map(Some),
        };
        let equipment_types = self.equipment_types.flatten().map(|raw| {
            parse_list(
                &mut errors,
                "equipment_types",
                raw,
                EquipmentType::ALL.len(),
                EquipmentType::parse,
            )
        });
        let service_areas = self.service_areas.flatten().map(|raw| {
            parse_list(
                &mut errors,
                "service_areas",
                raw,
                MAX_SERVICE_AREAS,
                UsState::parse,
            )
        });
        errors.finish(|| CarrierEdit {
            name,
            dot_number,
            email,
            phone,
            equipment_types,
            service_areas,
        })
    }
}

impl crate::api::extract::BodyInput for CarrierChangeInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_name_the_bad_index_and_drop_repeats() {
        let errors = NewCarrierInput {
            name: Some("Acme".into()),
            mc_number: Some("123456".into()),
            equipment_types: Some(vec!["dry_van".into(), "spaceship".into()]),
            service_areas: Some(vec!["TX".into(), "tx".into()]),
            ..Default::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(errors.errors()[0].field, "equipment_types[1]");

        let ok = NewCarrierInput {
            name: Some("Acme".into()),
            mc_number: Some("123456".into()),
            service_areas: Some(vec!["TX".into(), "tx".into()]),
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert_eq!(ok.service_areas.len(), 1);
    }
}
