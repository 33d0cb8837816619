//! Carriers: the trucking companies loads are assigned to.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::equipment::EquipmentType;
use super::ids::{AccountId, CarrierId};
use super::location::UsState;
use super::timestamp::serde_utc;
use super::validation::ValidationErrors;

pub const MAX_NAME_CHARS: usize = 200;
/// FMCSA MC and USDOT numbers are at most 8 digits today; 10 leaves headroom.
pub const MAX_REGISTRATION_DIGITS: usize = 10;
pub const MAX_EMAIL_CHARS: usize = 254;
pub const MAX_SERVICE_AREAS: usize = 52;
/// Longest list accepted at all, repeats included.
pub const MAX_LIST_INPUT: usize = 200;

/// How to reach a carrier; a part the carrier did not give is null (every
/// optional field of an answer is present, null when unset).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Contact {
    #[serde(default)]
    #[schema(required = true)]
    pub email: Option<String>,
    #[serde(default)]
    #[schema(required = true)]
    pub phone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carrier {
    pub id: CarrierId,
    pub account_id: AccountId,
    pub name: String,
    pub mc_number: String,
    pub dot_number: Option<String>,
    pub contact: Contact,
    pub equipment_types: Vec<EquipmentType>,
    pub service_areas: Vec<UsState>,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewCarrier {
    pub name: String,
    pub mc_number: String,
    pub dot_number: Option<String>,
    pub contact: Contact,
    pub equipment_types: Vec<EquipmentType>,
    pub service_areas: Vec<UsState>,
}

/// Parses each element, names a bad one by index, and drops repeats (keeping order).
pub fn parse_list<T: PartialEq>(
    errors: &mut ValidationErrors,
    field: &str,
    raw: Vec<String>,
    max_len: usize,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Vec<T> {
    // Repeats are dropped before the limit is applied, but a list far beyond any
    // real one is refused before parsing it element by element.
    if raw.len() > MAX_LIST_INPUT {
        errors.add(field, format!("must have at most {max_len} entries"));
        return Vec::new();
    }
    let mut out = Vec::with_capacity(raw.len().min(max_len));
    for (i, item) in raw.iter().enumerate() {
        match parse(item) {
            Ok(value) if !out.contains(&value) => out.push(value),
            Ok(_) => {}
            Err(message) => errors.add(format!("{field}[{i}]"), message),
        }
    }
    if out.len() > max_len {
        errors.add(
            field,
            format!("must have at most {max_len} distinct entries"),
        );
    }
    out
}

/// An MC or USDOT number as people write it: digits, after an optional
/// prefix (`MC-778812`, `MC 778812`, `mc#778812`; `USDOT 2233445`, `DOT
/// 2233445`), stored as the digits without leading zeros, so all of those and
/// `0778812` are the same registration.
pub fn registration_number(raw: &str, kind: &str) -> Result<String, String> {
    let prefixes: &[&str] = match kind {
        "USDOT" => &["USDOT", "US DOT", "DOT"],
        other => &[other][..],
    };
    let mut value = raw.trim();
    for prefix in prefixes {
        if value
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        {
            value = value[prefix.len()..].trim_start_matches([' ', '-', '#', ':', '.', '\t']);
            break;
        }
    }
    let refused = || {
        format!(
            "must be the {kind} number: 1 to {MAX_REGISTRATION_DIGITS} digits, with or without \
             the {kind} prefix"
        )
    };
    if value.is_empty()
        || value.len() > MAX_REGISTRATION_DIGITS
        || !value.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(refused());
    }
    let significant = value.trim_start_matches('0');
    if significant.is_empty() {
        return Err(refused());
    }
    Ok(significant.to_owned())
}

pub fn email(raw: &str) -> Result<String, String> {
    let value = raw.trim();
    let shape_ok = value.len() <= MAX_EMAIL_CHARS
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        && match value.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
                    && !domain.contains("..")
            }
            None => false,
        };
    if shape_ok {
        Ok(value.to_owned())
    } else {
        Err("must be an email address such as dispatch@example.com".into())
    }
}

/// A phone number as people write them: digits with optional `+`, spaces, dots,
/// dashes and parentheses; 7 to 15 digits (E.164's maximum).
pub fn phone(raw: &str) -> Result<String, String> {
    let value = raw.trim();
    let allowed = value
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '.' | '(' | ')'));
    let digits = value.chars().filter(char::is_ascii_digit).count();
    if allowed && (7..=15).contains(&digits) && value.len() <= 32 {
        Ok(value.to_owned())
    } else {
        Err("must be a phone number of 7 to 15 digits, such as +1 214-555-0100".into())
    }
}

/// A validated change of a carrier (`PATCH /v1/carriers/{id}`): `None` leaves
/// a field as it is; for the optional ones `Some(None)` clears it. The MC
/// number is what the carrier is: it does not change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CarrierEdit {
    pub name: Option<String>,
    pub dot_number: Option<Option<String>>,
    pub email: Option<Option<String>>,
    pub phone: Option<Option<String>>,
    pub equipment_types: Option<Vec<EquipmentType>>,
    pub service_areas: Option<Vec<UsState>>,
}

impl Carrier {
    /// The carrier with `edit` applied.
    pub fn edited(&self, edit: &CarrierEdit) -> Carrier {
        let mut next = self.clone();
        if let Some(name) = &edit.name {
            next.name = name.clone();
        }
        if let Some(dot) = &edit.dot_number {
            next.dot_number = dot.clone();
        }
        if let Some(email) = &edit.email {
            next.contact.email = email.clone();
        }
        if let Some(phone) = &edit.phone {
            next.contact.phone = phone.clone();
        }
        if let Some(types) = &edit.equipment_types {
            next.equipment_types = types.clone();
        }
        if let Some(areas) = &edit.service_areas {
            next.service_areas = areas.clone();
        }
        next
    }

    pub fn create(
        id: CarrierId,
        account_id: AccountId,
        new: NewCarrier,
        now: DateTime<Utc>,
    ) -> Self {
        Carrier {
            id,
            account_id,
            name: new.name,
            mc_number: new.mc_number,
            dot_number: new.dot_number,
            contact: new.contact,
            equipment_types: new.equipment_types,
            service_areas: new.service_areas,
            created_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_numbers_drop_leading_zeros() {
        assert_eq!(registration_number("0123456", "MC"), Ok("123456".into()));
        assert!(registration_number("000", "MC").is_err());
        assert!(registration_number("MC-", "MC").is_err());
        assert!(registration_number("MCX1", "MC").is_err());
    }

    #[test]
    fn registration_numbers_are_the_same_however_people_write_them() {
        for written in [
            "MC-778812",
            "MC 778812",
            "mc#778812",
            " MC: 0778812 ",
            "778812",
        ] {
            assert_eq!(
                registration_number(written, "MC"),
                Ok("778812".into()),
                "{written}"
            );
        }
        for written in ["USDOT 2233445", "US DOT-2233445", "dot 2233445", "2233445"] {
            assert_eq!(
                registration_number(written, "USDOT"),
                Ok("2233445".into()),
                "{written}"
            );
        }
        // Another kind's prefix is not this kind's.
        assert!(registration_number("DOT 1", "MC").is_err());
    }

    #[test]
    fn contact_shapes() {
        assert!(email("ops@acme-freight.com").is_ok());
        for bad in [
            "ops",
            "ops@",
            "@acme.com",
            "ops@acme",
            "o ps@acme.com",
            "a@b@c.com",
        ] {
            assert!(email(bad).is_err(), "{bad}");
        }
        assert!(phone("+1 (214) 555-0100").is_ok());
        assert!(phone("555").is_err());
        assert!(phone("call me").is_err());
    }
}
