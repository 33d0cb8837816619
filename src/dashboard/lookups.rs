//! The choices of selects that come from the account's data.

use super::errors::PageError;
use super::session::Viewer;
use super::widgets::Options;
use crate::services::Services;
use crate::storage::PageRequest;

/// The choices of the list's filters: any, or one status; any, or one state.
/// The account's newest 100 carriers as `(id, "name (MC number)")` choices.
pub async fn carrier_choices(services: &Services, viewer: &Viewer) -> Result<Options, PageError> {
    let page = PageRequest {
        offset: 0,
        limit: 100,
    };
    Ok(services
        .carriers
        .list(viewer.account_id(), page)
        .await
        .map_err(|e| PageError::Unavailable(e.to_string()))?
        .items
        .iter()
        .map(|c| (c.id.to_string(), format!("{} (MC {})", c.name, c.mc_number)))
        .collect())
}
