//! What pages read of the viewer's account: one of its loads, and the
//! choices of selects that come from its data.

use super::errors::{PageError, load_error};
use super::session::Viewer;
use super::widgets::Options;
use crate::domain::ids::LoadId;
use crate::domain::load::Load;
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

/// The viewer's load `id`; another account's, or none, is not found.
pub async fn viewer_load(
    services: &Services,
    viewer: &Viewer,
    id: &LoadId,
) -> Result<Load, PageError> {
    services
        .loads
        .get(viewer.account_id(), id)
        .await
        .map_err(load_error)
}
