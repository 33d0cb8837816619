//! A lenient JSON leaf for device bodies. Apps disagree on types (a number
//! sent as a string, `null` for unknown), and a typed `Option<f64>` field
//! would turn one odd field into "malformed body". A `Scalar` accepts any
//! value, borrows strings from the body when it can, and lets the protocol
//! refuse with the reason of the field concerned.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::time;

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Scalar<'a> {
    /// Absent (with `#[serde(default)]`) or `null`.
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    /// An array or object where a leaf was expected.
    Compound,
}

impl<'a> Scalar<'a> {
    /// A number, or a string holding one. `Err` for anything else (booleans,
    /// objects, words, non-finite numbers); `Ok(None)` for null or absent.
    pub(crate) fn number(&self) -> Result<Option<f64>, ()> {
        match self {
            Self::Null => Ok(None),
            Self::Int(i) => Ok(Some(*i as f64)),
            Self::Float(f) => Ok(Some(*f)),
            Self::Str(s) if s.trim().is_empty() => Ok(None),
            Self::Str(s) => super::finite_number(s).map(Some),
            Self::Bool(_) | Self::Compound => Err(()),
        }
    }

    /// A number for telemetry: anything unusable is simply unknown.
    pub(crate) fn telemetry(&self) -> Option<f64> {
        self.number().ok().flatten()
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A boolean, or 0/1, or "true"/"false"; anything else is unknown.
    pub(crate) fn flag(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            Self::Int(0) => Some(false),
            Self::Int(1) => Some(true),
            Self::Str(s) => super::flag(s),
            _ => None,
        }
    }

    /// A time as a device may write it: Unix seconds or milliseconds (as a
    /// number or a string), or an ISO 8601 / `yyyy-MM-dd HH:mm:ss` string.
    pub(crate) fn timestamp(&self) -> Result<Option<DateTime<Utc>>, ()> {
        match self {
            Self::Null => Ok(None),
            Self::Int(i) => time::from_unix_int(*i).map(Some),
            Self::Float(f) => time::from_unix_float(*f).map(Some),
            Self::Str(s) if s.trim().is_empty() => Ok(None),
            Self::Str(s) => time::parse(s).map(Some),
            Self::Bool(_) | Self::Compound => Err(()),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Compound)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Compound)
    }
}

/// A struct that must be a JSON object. serde's derived structs also accept
/// an array, filling fields by position, so `"location": [{…}]` would pass
/// as a location of nonsense instead of failing.
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(ObjectVisitor(PhantomData))
    }
}

/// Parses a JSON body, reporting any failure as one "malformed" message.
pub(crate) fn from_body<'a, T: Deserialize<'a>>(
    body: &'a [u8],
    what: &str,
) -> Result<T, super::Refusal> {
    serde_json::from_slice::<Object<T>>(body)
        .map(|object| object.0)
        .map_err(|err| {
            let detail = match err.classify() {
                serde_json::error::Category::Data => "has an unexpected shape",
                serde_json::error::Category::Eof => "ends early",
                serde_json::error::Category::Io | serde_json::error::Category::Syntax => {
                    "is not valid JSON"
                }
            };
            super::Refusal::malformed(format!(
                "{what} {detail} (line {}, column {})",
                err.line(),
                err.column()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(json: &str) -> Scalar<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn numbers_in_any_dress() {
        assert_eq!(scalar("32.77").number(), Ok(Some(32.77)));
        assert_eq!(scalar("-96").number(), Ok(Some(-96.0)));
        assert_eq!(scalar("\"32.77\"").number(), Ok(Some(32.77)));
        assert_eq!(scalar("null").number(), Ok(None));
        assert_eq!(scalar("\"\"").number(), Ok(None));
        assert_eq!(scalar("\"north\"").number(), Err(()));
        assert_eq!(scalar("\"NaN\"").number(), Err(()));
        assert_eq!(scalar("true").number(), Err(()));
        assert_eq!(scalar("[1, 2]").number(), Err(()));
        assert_eq!(scalar("{\"a\": [1]}").number(), Err(()));
    }

    #[test]
    fn strings_borrow_from_the_body_when_unescaped() {
        assert!(matches!(
            scalar("\"abc\""),
            Scalar::Str(Cow::Borrowed("abc"))
        ));
        assert_eq!(scalar("\"a\\u0062c\"").as_str(), Some("abc"));
    }

    #[test]
    fn flags() {
        assert_eq!(scalar("true").flag(), Some(true));
        assert_eq!(scalar("0").flag(), Some(false));
        assert_eq!(scalar("\"false\"").flag(), Some(false));
        assert_eq!(scalar("2").flag(), None);
        assert_eq!(scalar("null").flag(), None);
    }
}
