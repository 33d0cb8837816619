//! Ids in the path, parsed into their domain types by the extractor, so that
//! services take `LoadId`, `CarrierId`, … and never see raw path text.
//!
//! One rule for every resource: a malformed id is not found, with the same 404
//! (and code) as a well-formed id that names nothing of this account. The
//! extractor never fails: the handler asks for the id with [`PathId::found`]
//! after the query string and body have been checked, so a bad body sent to an
//! unknown load is a 400, as the documented order of checks says (actix polls
//! extractors together, so an extractor that failed at once would win).

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};

use super::error::ApiError;
use crate::actors::LoadError;
use crate::domain::ids::{
    AccountId, CarrierId, DeviceId, EventId, KeyId, LoadId, StopId, WebhookId,
};
use crate::services::accounts::AccountError;
use crate::services::carriers::CarrierError;
use crate::services::devices::DeviceError;
use crate::services::webhooks::WebhookError;

/// An id type that names a resource in a path, and the 404 for one that is not there.
pub trait PathResource: Sized {
    fn parse(raw: &str) -> Option<Self>;
    fn not_found(raw: &str) -> ApiError;
}

/// The id in the path segment at `POSITION` (0: the first `{…}` of the route).
pub struct PathId<T, const POSITION: usize = 0> {
    raw: String,
    id: Option<T>,
}

impl<T: PathResource, const POSITION: usize> PathId<T, POSITION> {
    /// The id, or the resource's 404 when the path's text is not one.
    pub fn found(self) -> Result<T, ApiError> {
        self.id.ok_or_else(|| T::not_found(&self.raw))
    }

    /// The id, if the path held a valid one (for callers that answer an
    /// invalid id their own way, such as the dashboard's pages).
    pub fn valid(self) -> Option<T> {
        self.id
    }
}

/// The second id of a route with two (`/webhooks/{id}/deliveries/{delivery_id}/…`).
pub type SecondPathId<T> = PathId<T, 1>;

impl<T: PathResource, const POSITION: usize> FromRequest for PathId<T, POSITION> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let raw = req
            .match_info()
            .iter()
            .nth(POSITION)
            .map(|(_, value)| value.to_owned())
            .unwrap_or_default();
        let id = T::parse(&raw);
        ready(Ok(PathId { raw, id }))
    }
}

/// Resources whose 404 does not repeat the id.
macro_rules! path_resources {
    ($($id:ty => $not_found:expr),+ $(,)?) => {$(
        impl PathResource for $id {
            fn parse(raw: &str) -> Option<Self> {
                <$id>::parse(raw)
            }
            fn not_found(_: &str) -> ApiError {
                $not_found.into()
            }
        }
    )+};
}

path_resources! {
    LoadId => LoadError::NotFound,
    CarrierId => CarrierError::NotFound,
    WebhookId => WebhookError::NotFound,
    DeviceId => DeviceError::NotFound,
    // A delivery is named by its event's id.
    EventId => WebhookError::DeliveryNotFound,
}

impl PathResource for StopId {
    fn parse(raw: &str) -> Option<Self> {
        StopId::parse(raw)
    }
    fn not_found(_: &str) -> ApiError {
        ApiError::new(
            actix_web::http::StatusCode::NOT_FOUND,
            "INVALID_STOP",
            "the load has no such stop",
        )
    }
}

impl PathResource for AccountId {
    fn parse(raw: &str) -> Option<Self> {
        AccountId::parse(raw)
    }
    fn not_found(raw: &str) -> ApiError {
        AccountError::AccountNotFound(raw.to_owned()).into()
    }
}

impl PathResource for KeyId {
    fn parse(raw: &str) -> Option<Self> {
        KeyId::parse(raw)
    }
    fn not_found(raw: &str) -> ApiError {
        AccountError::KeyNotFound(raw.to_owned()).into()
    }
}
