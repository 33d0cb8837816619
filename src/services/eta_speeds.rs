//! Each account's delivered loads' moving speeds, for the ETAs of its loads
//! on the road (`domain::speed_history`): read from storage in the
//! background, at most once per [`REFRESH`] per account, and never on the
//! path of a request (a request uses what is held, or nothing yet).

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::time::Instant;

use crate::domain::ids::AccountId;
use crate::domain::load::LoadStatus;
use crate::domain::speed_history::{DeliveredSpeed, LAST_LOADS};
use crate::storage::{LoadFilter, PageRequest, Storage};

/// How long an account's speeds are used before they are read again.
pub const REFRESH: Duration = Duration::from_secs(300);

struct Held {
    read_at: Instant,
    /// `None` until the first read lands.
    speeds: Option<Arc<Vec<DeliveredSpeed>>>,
}

pub struct EtaSpeeds {
    storage: Arc<dyn Storage>,
    accounts: DashMap<AccountId, Held>,
}

impl EtaSpeeds {
    pub fn new(storage: Arc<dyn Storage>) -> Arc<Self> {
        Arc::new(EtaSpeeds {
            storage,
            accounts: DashMap::new(),
        })
    }

    /// The account's delivered loads' speeds, newest first, as held now;
    /// starts a read when none is held or what is held is old.
    pub fn of(self: &Arc<Self>, account: &AccountId) -> Option<Arc<Vec<DeliveredSpeed>>> {
        let now = Instant::now();
        if let Some(held) = self.accounts.get(account)
            && now.duration_since(held.read_at) < REFRESH
        {
            return held.speeds.clone();
        }
        let stale = {
            let mut held = self.accounts.entry(account.clone()).or_insert(Held {
                read_at: now,
                speeds: None,
            });
            // Marked read now, so one request starts the read, not each.
            held.read_at = now;
            held.speeds.clone()
        };
        let this = self.clone();
        let account = account.clone();
        tokio::spawn(async move { this.read(account).await });
        stale
    }

    /// The account delivered a load: its speeds are read again at its next fix.
    pub fn forget(&self, account: &AccountId) {
        self.accounts.remove(account);
    }

    async fn read(&self, account: AccountId) {
        let filter = LoadFilter {
            status: Some(LoadStatus::Delivered),
            ..LoadFilter::default()
        };
        let page = PageRequest {
            offset: 0,
            limit: LAST_LOADS as u32,
        };
        match self.storage.list_loads(&account, &filter, page).await {
            Ok(page) => {
                let speeds: Vec<DeliveredSpeed> = page
                    .items
                    .iter()
                    .filter_map(|load| {
                        Some(DeliveredSpeed {
                            origin: load.origin.state,
                            destination: load.destination.state,
                            mph: load.moving_mph?,
                        })
                    })
                    .collect();
                if let Some(mut held) = self.accounts.get_mut(&account) {
                    held.speeds = Some(Arc::new(speeds));
                }
            }
            Err(error) => {
                tracing::warn!(%account, %error, "an account's delivered speeds could not be read; its ETAs use its setting meanwhile");
            }
        }
    }
}
