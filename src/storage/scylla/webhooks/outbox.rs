//! The outbox: events committed with their changes (`outbox_events`), those
//! not fanned out yet (`unfanned_events`), and each load's event numbering.

use super::*;

pub(super) async fn last_event_sequence(store: &ScyllaStore, load: &LoadId) -> StorageResult<u64> {
    match store
        .first::<(i64,)>(&store.wh.last_sequence, (load.as_str(),))
        .await?
    {
        Some((sequence,)) => u64::try_from(sequence)
            .map_err(|_| StorageError::corrupt("a negative event sequence number")),
        None => Ok(0),
    }
}

pub(super) async fn unfanned_events(
    store: &ScyllaStore,
    after: Option<&EventId>,
    limit: usize,
) -> StorageResult<Vec<Event>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    // Every id is greater than "", so no cursor reads minutes whole.
    let (from, cursor) = match after {
        Some(id) => (event_slot(id).minute, id.as_str()),
        None => (i64::MIN, ""),
    };
    let shards =
        try_join_all((0..SHARDS).map(|shard| store.unfanned_in_shard(shard, from, cursor, limit)))
            .await?;
    // The first `limit` overall are among the first `limit` of each shard.
    let mut found: Vec<(Slot, String)> = shards.into_iter().flatten().collect();
    found.sort_unstable_by(|a, b| a.1.cmp(&b.1));
    found.truncate(limit);
    let mut records = store.event_records(&found).await?;
    // A marker whose event is not visible yet belongs to a batch still
    // being applied (logged batches are atomic, not isolated): left for
    // a later pass.
    Ok(found
        .iter()
        .filter_map(|(_, id)| records.remove(id))
        .collect())
}

pub(super) async fn get_event(store: &ScyllaStore, id: &EventId) -> StorageResult<Option<Event>> {
    let slot = event_slot(id);
    store
        .record(&store.wh.get_event, (slot.minute, slot.shard, id.as_str()))
        .await
}

impl ScyllaStore {
    /// Adds the outbox writes of `events` to a batch that stores the change
    /// they record: each event's record and its place in the outbox (with the
    /// listings of their minute), and each load's highest sequence.
    pub(in crate::storage::scylla) fn add_events(
        &self,
        batch: &mut LoggedBatch,
        events: &[Event],
    ) -> StorageResult<()> {
        let mut listed = HashSet::new();
        let mut sequences: HashMap<&LoadId, u64> = HashMap::new();
        for event in events {
            let slot = event_slot(&event.id);
            let id = event.id.as_str().to_owned();
            let record = encode(event)?;
            batch.add(
                &self.wh.put_event,
                (slot.minute, slot.shard, id.clone(), record),
            );
            batch.add(&self.wh.put_unfanned, (slot.minute, slot.shard, id));
            if listed.insert(slot) {
                batch.add(&self.wh.list_outbox_minute, (slot.shard, slot.minute));
                batch.add(&self.wh.list_unfanned_minute, (slot.shard, slot.minute));
            }
            let highest = sequences.entry(&event.load_id).or_default();
            *highest = (*highest).max(event.sequence);
        }
        for (load, sequence) in sequences {
            let sequence = i64::try_from(sequence)
                .map_err(|_| StorageError::corrupt("an event sequence number beyond 2^63"))?;
            // The sequence is also the write's timestamp: the highest wins.
            batch.add(
                &self.wh.put_sequence,
                (load.as_str().to_owned(), sequence, sequence),
            );
        }
        Ok(())
    }

    /// One shard's first `limit` unfanned events from minute `from` on (after
    /// `cursor` in minute `from`), unlisting the minutes found empty.
    pub(super) async fn unfanned_in_shard(
        &self,
        shard: i32,
        from: i64,
        cursor: &str,
        limit: usize,
    ) -> StorageResult<Vec<(Slot, String)>> {
        let minutes = self
            .rows(
                &self.wh.unfanned_minutes_from,
                (shard, from),
                |(minute,): (i64,)| Ok(minute),
            )
            .await?;
        let mut out = Vec::new();
        for minute in minutes {
            let after = if minute == from { cursor } else { "" };
            let seen_at = Utc::now();
            let slot = Slot { minute, shard };
            let ids = self
                .rows(
                    &self.wh.unfanned_after,
                    (minute, shard, after, cql_limit(limit - out.len())),
                    |(id,): (String,)| Ok(id),
                )
                .await?;
            if ids.is_empty() && after.is_empty() {
                self.unlist(&self.wh.unlist_unfanned_minute, shard, minute, seen_at)
                    .await;
            }
            out.extend(ids.into_iter().map(|id| (slot, id)));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// The records of events, by id (those not found are left out).
    pub(super) async fn event_records(
        &self,
        ids: &[(Slot, String)],
    ) -> StorageResult<HashMap<String, Event>> {
        let mut by_slot: BTreeMap<Slot, Vec<String>> = BTreeMap::new();
        for (slot, id) in ids {
            by_slot.entry(*slot).or_default().push(id.clone());
        }
        let reads = by_slot.into_iter().flat_map(|(slot, ids)| {
            ids.chunks(IN_CHUNK)
                .map(|chunk| (slot, chunk.to_vec()))
                .collect::<Vec<_>>()
        });
        let found = each(reads, |(slot, ids)| {
            self.rows(
                &self.wh.events_in,
                (slot.minute, slot.shard, ids),
                |(id, record): (String, String)| Ok((id, record)),
            )
        })
        .await?;
        found
            .into_iter()
            .flatten()
            .map(|(id, record)| Ok((id, decode::<Event>(&record)?)))
            .collect()
    }
}
