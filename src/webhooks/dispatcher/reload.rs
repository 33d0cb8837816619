//! Reading the soonest pending deliveries back from storage, when memory has
//! turned some away and has room again.

use std::sync::Arc;

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::{Dispatcher, Key, key_of};
use crate::domain::webhook::Delivery;
use crate::storage::{Storage, StorageError};
use crate::telemetry::error_chain;
use crate::webhooks::FastSet;

/// Whether a reload is reading storage. While it reads, the deliveries that
/// change in memory are noted: for those the read is already stale, and memory
/// knows better.
pub(super) enum Reload {
    Idle,
    Reading { touched: FastSet<Key> },
}

/// What a reload read: the soonest deliveries, and the backlog when it was
/// asked to count it.
type Read = (Vec<Delivery>, Option<u64>);

impl Dispatcher {
    /// Reads the soonest pending deliveries back from storage into memory.
    pub(super) fn reload(&mut self, ctx: &mut Context<Self>) {
        if matches!(self.reloading, Reload::Reading { .. }) || !self.role.active() {
            return;
        }
        self.reloading = Reload::Reading {
            touched: FastSet::default(),
        };
        let turned_away = self.schedule.turned_away();
        let limit = self.schedule.capacity();
        // In-flight deliveries are still pending in storage: ask for enough to skip them.
        let wanted = limit + self.in_flight.held();
        let work = read(self.storage.clone(), wanted, self.backlog.needs_count());
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            let touched = match std::mem::replace(&mut actor.reloading, Reload::Idle) {
                Reload::Reading { touched } => touched,
                Reload::Idle => FastSet::default(),
            };
            match result {
                Ok((soonest, backlog)) => {
                    // Complete: storage had no more, and none was turned away since the read.
                    let complete =
                        soonest.len() < wanted && actor.schedule.turned_away() == turned_away;
                    actor.reloaded(ctx, soonest, &touched, complete, backlog);
                }
                Err(error) => tracing::error!(error = %error_chain(&error), "reading pending webhook deliveries failed"),
            }
        }));
    }

    fn reloaded(
        &mut self,
        ctx: &mut Context<Self>,
        soonest: Vec<Delivery>,
        touched: &FastSet<Key>,
        complete: bool,
        backlog: Option<u64>,
    ) {
        // What changed since the read began is known better in memory.
        let fresh: Vec<Delivery> = soonest
            .into_iter()
            .filter(|d| {
                let key = key_of(d);
                !self.in_flight.holds(&key) && !touched.contains(&key)
            })
            .collect();
        self.schedule.merge(fresh, complete);
        if let Some(backlog) = backlog {
            self.backlog.counted(backlog);
        }
        self.dispatch_due(ctx);
    }

    /// Notes a delivery that changed while a reload was reading storage.
    pub(super) fn touch(&mut self, delivery: &Delivery) {
        if let Reload::Reading { touched } = &mut self.reloading {
            touched.insert(key_of(delivery));
        }
    }
}

/// The `wanted` soonest pending deliveries, and the backlog if `count`.
async fn read(storage: Arc<dyn Storage>, wanted: usize, count: bool) -> Result<Read, StorageError> {
    let soonest = storage
        .due_deliveries(DateTime::<Utc>::MAX_UTC, wanted)
        .await?;
    let backlog = match count {
        true => Some(storage.count_due_deliveries().await?),
        false => None,
    };
    Ok((soonest, backlog))
}
