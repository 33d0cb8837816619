//! What clients see of the domain's records: the JSON of API answers and of
//! webhook payloads alike, so a receiver parses what an API client already
//! parses. Records are stored in their own shape; these are written from them.
//!
//! Views derive `ToSchema`: the OpenAPI document describes these very structs,
//! so a field added here is documented by the same change. This module sits
//! below both the HTTP boundary and the webhook pipeline and imports only the
//! domain.

pub mod device;
pub mod load;
pub mod schema;
pub mod share_link;
pub mod stops;
pub mod tracking;
