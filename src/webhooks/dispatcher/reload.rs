use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::{Dispatcher, key_of};
use crate::domain::webhook::Delivery;
use crate::storage::StorageError;
use crate::webhooks::FastSet;

impl Dispatcher {
    /// Reads the soonest pending deliveries back from storage into memory.
    pub(super) fn reload(&mut self, ctx: &mut Context<Self>) {
        if self.touched.is_some() {
            return;
        }
        self.touched = Some(FastSet::default());
        let turned_away = self.schedule.turned_away();
        let storage = self.storage.clone();
        let limit = self.schedule.capacity();
        // In-flight deliveries are still pending in storage: ask for enough to skip them.
        let wanted = limit + self.in_flight.held();
        let count = !self.counted;
        let work = async move {
            let soonest = storage
                .due_deliveries(DateTime::<Utc>::MAX_UTC, wanted)
                .await?;
            let backlog = match count {
                true => Some(storage.count_due_deliveries().await?),
                false => None,
            };
            Ok::<_, StorageError>((soonest, backlog))
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            let touched = actor.touched.take().unwrap_or_default();
            match result {
                Ok((soonest, backlog)) => {
                    // Complete: storage had no more, and none was turned away since the read.
                    let complete =
                        soonest.len() < wanted && actor.schedule.turned_away() == turned_away;
                    // What changed since the read began is known better in memory.
                    let fresh: Vec<Delivery> = soonest
                        .into_iter()
                        .filter(|d| {
                            let key = key_of(d);
                            !actor.in_flight.holds(&key) && !touched.contains(&key)
                        })
                        .collect();
                    actor.schedule.merge(fresh, complete);
                    if let Some(backlog) = backlog {
                        actor.counted = true;
                        actor.set_backlog(backlog);
                    }
                    actor.dispatch_due(ctx);
                }
                Err(error) => tracing::error!(%error, "reading pending webhook deliveries failed"),
            }
        }));
    }

    /// Notes a delivery that changed while a reload was reading storage.
    pub(super) fn touch(&mut self, delivery: &Delivery) {
        if let Some(touched) = &mut self.touched {
            touched.insert((delivery.webhook_id.clone(), delivery.event_id.clone()));
        }
    }
}
