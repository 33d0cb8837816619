//! The bodies of `POST /v1/webhooks` and `PATCH /v1/webhooks/{id}`, checked
//! whole here, the URL's host resolved and judged against the SSRF policy too, so
//! that services get subscriptions that are already valid.

use serde::Deserialize;

use crate::domain::validation::ValidationErrors;
use crate::domain::webhook::{
    NewSubscription, SubscriptionPatch, UrlPolicy, parse_events, parse_secret, parse_url,
};
use crate::webhooks::client::check_host;

/// The body of `POST /v1/webhooks`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A webhook subscription.")]
pub struct NewSubscriptionInput {
    #[schema(required = true, schema_with = super::fields::url)]
    pub url: Option<String>,
    #[schema(required = true, schema_with = super::fields::webhook_events)]
    pub events: Option<Vec<String>>,
    /// Left out, the service makes one (answered once, as `signing_secret`).
    #[schema(schema_with = super::fields::webhook_secret)]
    pub secret: Option<String>,
}

/// The body of `PATCH /v1/webhooks/{id}`: every field optional.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "Changes to a webhook subscription; fields left out are kept.")]
pub struct SubscriptionPatchInput {
    #[schema(schema_with = super::fields::optional_url)]
    pub url: Option<String>,
    #[schema(schema_with = super::fields::optional_webhook_events)]
    pub events: Option<Vec<String>>,
    /// A new secret takes effect from the next delivery attempt.
    #[schema(schema_with = super::fields::optional_webhook_secret)]
    pub secret: Option<String>,
    /// `true` also clears `disabled_reason` and sends what waited meanwhile.
    pub enabled: Option<bool>,
}

impl NewSubscriptionInput {
    /// Every problem at once; the URL's host is resolved only if its text is valid.
    pub async fn validate(self, policy: UrlPolicy) -> Result<NewSubscription, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let url = match self.url {
            Some(raw) => checked_url(raw, policy, &mut errors).await,
            None => {
                errors.add("url", "is required");
                None
            }
        };
        let events = match self.events {
            Some(raw) => parse_events(raw, &mut errors),
            None => {
                errors.add("events", "is required");
                Vec::new()
            }
        };
        let secret = match self.secret {
            Some(raw) => errors.check("secret", parse_secret(&raw)),
            None => Some(crate::webhooks::signing::generate_secret()),
        };
        errors.finish(|| NewSubscription {
            url: url.expect("checked"),
            events,
            secret: secret.expect("checked"),
        })
    }
}

impl SubscriptionPatchInput {
    pub async fn validate(self, policy: UrlPolicy) -> Result<SubscriptionPatch, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let url = match self.url {
            Some(raw) => checked_url(raw, policy, &mut errors).await,
            None => None,
        };
        let events = self.events.map(|raw| parse_events(raw, &mut errors));
        let secret = self
            .secret
            .and_then(|raw| errors.check("secret", parse_secret(&raw)));
        errors.finish(|| SubscriptionPatch {
            url,
            events,
            secret,
            enabled: self.enabled,
        })
    }
}

/// The URL if its text is valid and its host may be called under `policy`.
async fn checked_url(
    raw: String,
    policy: UrlPolicy,
    errors: &mut ValidationErrors,
) -> Option<String> {
    let url = errors.check("url", parse_url(&raw, policy))?;
    match check_host(&url.host, policy).await {
        Ok(()) => Some(url.url),
        Err(message) => {
            errors.add("url", message);
            None
        }
    }
}

/// The URL's form alone: its scheme and host are judged against the server's
/// policy, and its host resolved, only once the body parses.
const ANY_URL: UrlPolicy = UrlPolicy {
    allow_http: true,
    allow_private: true,
};

/// The checks that need no lookup (a URL's host is resolved only once the
/// body parses).
impl crate::api::extract::BodyInput for NewSubscriptionInput {
    fn problems(self) -> ValidationErrors {
        let mut errors = ValidationErrors::new();
        match self.url {
            Some(raw) => {
                errors.check("url", parse_url(&raw, ANY_URL));
            }
            None => errors.add("url", "is required"),
        }
        match self.events {
            Some(raw) => {
                parse_events(raw, &mut errors);
            }
            None => errors.add("events", "is required"),
        }
        if let Some(raw) = self.secret {
            errors.check("secret", parse_secret(&raw));
        }
        errors
    }
}

impl crate::api::extract::BodyInput for SubscriptionPatchInput {
    fn problems(self) -> ValidationErrors {
        let mut errors = ValidationErrors::new();
        if let Some(raw) = self.url {
            errors.check("url", parse_url(&raw, ANY_URL));
        }
        if let Some(raw) = self.events {
            parse_events(raw, &mut errors);
        }
        if let Some(raw) = self.secret {
            errors.check("secret", parse_secret(&raw));
        }
        errors
    }
}
