//! Request bodies as clients send them, and the one place they are checked:
//! every `*Input` here turns into a domain type or a list of every problem
//! (`ValidationErrors`), and states its rules in the OpenAPI document through
//! `fields`. The dashboard's forms go through the same inputs.
//!
//! Every field is an `Option` so that a missing field is reported by name with
//! the others, rather than by serde as the first error.

pub mod account;
pub mod carrier;
pub mod device;
pub mod fields;
pub mod load;
pub mod location;
pub mod share_link;
pub mod stops;
pub mod tracking;
pub mod webhook;

#[cfg(test)]
mod properties;

/// For a change's fields (`PATCH`): present and null (`Some(None)`, which
/// clears an optional field or is refused for a required one) apart from
/// absent (`None`, which leaves it). Use with `#[serde(default,
/// deserialize_with = "super::nullable")]`.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
