//! A submitted HTML form: its fields as sent, read whole and capped, for the
//! page handlers to turn into the API's own inputs (`api::input`), so the
//! dashboard applies the API's rules and words its errors the same way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};

use super::errors::PageError;
use crate::domain::validation::ValidationErrors;

/// Far above any form of the dashboard.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The fields of a form, each name with every value sent for it, in order.
pub struct Form {
    fields: HashMap<String, Vec<String>>,
}

impl Form {
    /// A form with nothing filled in, for a page shown before any post.
    pub fn empty() -> Self {
        Form {
            fields: HashMap::new(),
        }
    }

    /// A form filled in with `pairs` (a page showing what is stored).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut fields: HashMap<String, Vec<String>> = HashMap::new();
        for (name, value) in pairs {
            fields.entry(name).or_default().push(value);
        }
        Form { fields }
    }

    /// The field's first value, trimmed; `None` when absent or blank.
    pub fn text(&self, name: &str) -> Option<String> {
        self.fields
            .get(name)
            .and_then(|values| values.first())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value exactly as sent (passwords keep their spaces).
    pub fn raw(&self, name: &str) -> Option<String> {
        self.fields
            .get(name)
            .and_then(|values| values.first())
            .cloned()
    }

    /// Every value of a repeated field (checkboxes), blanks left out.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.fields
            .get(name)
            .map(|values| {
                values
                    .iter()
                    .filter(|v| !v.trim().is_empty())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A number field: absent when blank; a value that is not a number is
    /// recorded as the field's error.
    pub fn number(&self, name: &str, errors: &mut ValidationErrors) -> Option<f64> {
        let text = self.text(name)?;
        match text.replace(',', "").parse::<f64>() {
            Ok(n) if n.is_finite() => Some(n),
            _ => {
                errors.add(name, "must be a number");
                None
            }
        }
    }
}

impl FromRequest for Form {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = crate::api::body::declared_length(req.headers());
        let mut payload = payload.take();
        Box::pin(async move {
            // Capped in size and rate as the API's bodies are.
            let body = crate::api::body::read_capped(&mut payload, declared, MAX_FORM_BYTES)
                .await
                .map_err(|_| PageError::BadForm)?;
            let pairs: Vec<(String, String)> =
                serde_urlencoded::from_bytes(&body).map_err(|_| PageError::BadForm)?;
            let mut fields: HashMap<String, Vec<String>> = HashMap::new();
            for (name, value) in pairs {
                fields.entry(name).or_default().push(value);
            }
            Ok(Form { fields })
        })
    }
}

/// A page's query string, read leniently: a bad filter is simply no filter.
pub struct Query(std::collections::HashMap<String, String>);

impl Query {
    pub fn of(req: &HttpRequest) -> Self {
        Query(serde_urlencoded::from_str(req.query_string()).unwrap_or_default())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The `page` asked for, 1 when absent or nonsense.
    pub fn page(&self) -> u64 {
        self.get("page")
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(1)
            .clamp(1, 100_000)
    }
}
