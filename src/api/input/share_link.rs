//! The body of `POST /v1/loads/{load_id}/share-links`.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::domain::timestamp;
use crate::domain::validation::ValidationErrors;

/// A share link to make (`{}` for the default lifetime).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A share link to make; `{}` for the default lifetime.")]
pub struct NewShareLinkInput {
    /// When the link stops working (UTC): in the future, at most 30 days
    /// away and at most 7 days after the load's delivery. Default: 72 hours
    /// from now (less if the load was delivered more than 4 days ago).
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub expires_at: Option<String>,
}

impl NewShareLinkInput {
    pub fn validate(self) -> Result<Option<DateTime<Utc>>, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let expires_at =
            errors.optional("expires_at", self.expires_at, |t| timestamp::parse_utc(&t));
        errors.finish(|| expires_at)
    }
}

impl crate::api::extract::BodyInput for NewShareLinkInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}
