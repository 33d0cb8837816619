//! Application services: the operations handlers call, independent of HTTP.

pub mod accounts;
pub mod auth;
pub mod carriers;
pub mod loads;

use std::sync::Arc;

use crate::clock::Clock;
use crate::storage::Storage;

/// Everything a request handler may use; cheap to clone (all `Arc`s inside).
#[derive(Clone)]
pub struct Services {
    pub storage: Arc<dyn Storage>,
    pub clock: Clock,
    pub auth: Arc<auth::Authenticator>,
    pub accounts: Arc<accounts::AccountService>,
    pub loads: Arc<loads::LoadService>,
    pub carriers: Arc<carriers::CarrierService>,
}

impl Services {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        let auth = Arc::new(auth::Authenticator::new(storage.clone(), clock.clone()));
        Services {
            accounts: Arc::new(accounts::AccountService::new(
                storage.clone(),
                clock.clone(),
                auth.clone(),
            )),
            loads: Arc::new(loads::LoadService::new(storage.clone(), clock.clone())),
            carriers: Arc::new(carriers::CarrierService::new(
                storage.clone(),
                clock.clone(),
            )),
            auth,
            storage,
            clock,
        }
    }
}
