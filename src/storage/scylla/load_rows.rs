//! How a load's row (`loads`, the commit point of every change) and what
//! follows a change (its list rows and outbox events, other partitions) are
//! written, generic over the statements ([`LoadRowStatements`]) so tests can
//! fail any of them.
//!
//! A change commits with one lightweight transaction that also stores what
//! must follow it (`pending`); the follow-up is then written, and `pending`
//! cleared. Every write to the row is conditional (issue 38, finding 2: a
//! plain write beside lightweight transactions can be ordered wrongly under
//! clock skew): the insert `IF NOT EXISTS`, a change `IF version = <read>
//! AND pending = null`, the clear `IF version = <its change's>`.
//!
//! Only the load's writer (the lease holder) finishes a change: a reader
//! returns the committed record and leaves `pending` alone (finding 1: a slow
//! reader re-listing an old version after a newer one). A change never
//! replaces an unfinished one: it finishes it first, so no follow-up is lost
//! when a writer died, or failed, between commit and follow-up.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{decode, encode};
use crate::domain::event::Event;
use crate::domain::ids::LoadId;
use crate::domain::load::Load;
use crate::storage::{StorageError, StorageResult};

/// What must follow a committed change of a load: kept in the load's row
/// until written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Pending {
    /// The load before the change (`None`: the change created it), whose list
    /// rows the change leaves.
    pub previous: Option<Load>,
    pub events: Vec<Event>,
}

/// What a conditional change of the row found when it did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RowCas {
    Applied,
    NotApplied {
        version: Option<i64>,
        pending: Option<String>,
    },
}

/// The statements on a load's row and its follow-up.
#[async_trait]
pub(super) trait LoadRowStatements: Sync {
    /// `INSERT … IF NOT EXISTS`: whether it applied.
    async fn insert_row(
        &self,
        id: &LoadId,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<bool>;
    /// `UPDATE … IF version = <expected> AND pending = null`.
    async fn update_row(
        &self,
        id: &LoadId,
        expected: i64,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<RowCas>;
    /// The row's record and pending follow-up; `as_writer`: at LOCAL_SERIAL,
    /// which completes a proposal a dead writer's LWT left accepted (a
    /// quorum read would not see it, and the writer would start from the
    /// version before it).
    async fn read_row(
        &self,
        id: &LoadId,
        as_writer: bool,
    ) -> StorageResult<Option<(String, Option<String>)>>;
    /// The change's list rows (leaving `previous`'s) and events, all or none.
    async fn follow_up(
        &self,
        previous: Option<&Load>,
        load: &Load,
        record: &str,
        events: &[Event],
    ) -> StorageResult<()>;
    /// `UPDATE … SET pending = null IF version = <version>`.
    async fn clear_pending(&self, id: &LoadId, version: i64) -> StorageResult<()>;
    /// Adds `delta` to each of the account's list totals named (`list_totals`).
    async fn add_to_totals(&self, account: &str, deltas: &[(String, i64)]) -> StorageResult<()>;
}

/// The load changed since its writer read it: another writer moved it (two
/// instances acted for one load, which the lease is there to prevent). The
/// change is not made; the writer reads the load again on its next attempt.
#[derive(Debug, thiserror::Error)]
#[error("load {0} was changed by another writer since it was read")]
struct ChangedMeanwhile(String);

/// A new load: its row (with the follow-up as pending), then the follow-up.
/// A retry of an insert whose answer was lost finishes what the first try left.
pub(super) async fn insert<S: LoadRowStatements>(
    st: &S,
    load: &Load,
    events: &[Event],
) -> StorageResult<()> {
    let record = encode(load)?;
    let pending = Pending {
        previous: None,
        events: events.to_vec(),
    };
    let pending_text = encode(&pending)?;
    let mut tries = 1;
    let inserted = loop {
        let error = match st
            .insert_row(&load.id, load.version as i64, &record, &pending_text)
            .await
        {
            Ok(inserted) => break inserted,
            Err(error) => error,
        };
        match answer_ambiguous(st, load, &record, &pending, error).await {
            Ambiguous::Committed => return Ok(()),
            Ambiguous::NotIn(_) if tries < CAS_TRIES => tries += 1,
            Ambiguous::NotIn(error) | Ambiguous::Unknown(error) => return Err(error),
        }
        tokio::time::sleep(CAS_RETRY_PAUSE).await;
    };
    if !inserted {
        // Its ids are fresh (made by this service): the row is this load's,
        // written by an earlier try.
        return finish_unfinished(st, &load.id).await;
    }
    finish_committed(st, load, &record, &pending).await;
    Ok(())
}

/// Replaces `previous` with `updated`, first finishing a change of `previous`
/// that was committed and not followed up.
pub(super) async fn update<S: LoadRowStatements>(
    st: &S,
    previous: &Load,
    updated: &Load,
    events: &[Event],
) -> StorageResult<()> {
    let record = encode(updated)?;
    let pending = Pending {
        previous: Some(previous.clone()),
        events: events.to_vec(),
    };
    let pending_text = encode(&pending)?;
    let expected = previous.version as i64;
    // Twice at most after finishing an unfinished change, and CAS_TRIES
    // times at most for transactions that failed and are read back not in.
    let (mut finished, mut tries) = (false, 1);
    loop {
        let cas = st
            .update_row(
                &updated.id,
                expected,
                updated.version as i64,
                &record,
                &pending_text,
            )
            .await;
        let cas = match cas {
            Ok(cas) => cas,
            Err(error) => match answer_ambiguous(st, updated, &record, &pending, error).await {
                Ambiguous::Committed => return Ok(()),
                Ambiguous::NotIn(_) if tries < CAS_TRIES => {
                    tries += 1;
                    tokio::time::sleep(CAS_RETRY_PAUSE).await;
                    continue;
                }
                Ambiguous::NotIn(error) | Ambiguous::Unknown(error) => return Err(error),
            },
        };
        match cas {
            RowCas::Applied => {
                finish_committed(st, updated, &record, &pending).await;
                return Ok(());
            }
            RowCas::NotApplied {
                version: Some(version),
                pending: Some(_),
            } if version == expected && !finished => {
                finish_unfinished(st, &updated.id).await?;
                finished = true;
            }
            RowCas::NotApplied { .. } => {
                return Err(StorageError::unavailable(ChangedMeanwhile(
                    updated.id.to_string(),
                )));
            }
        }
    }
}

/// Tries of a change whose lightweight transaction failed and is read back
/// not in: Paxos under contention, or on a loaded node, answers a timeout
/// now and then (Cassandra 5 on the 3-node test cluster: about one change
/// in 40 while a deletion contends for the same carrier), and a second
/// try a moment later goes in.
const CAS_TRIES: usize = 3;
const CAS_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// What a change whose transaction failed turned out to be.
enum Ambiguous {
    /// It committed, and is answered as made.
    Committed,
    /// It is not in, nor can it still go in: trying again is safe.
    NotIn(StorageError),
    /// Nobody knows (the read back failed too).
    Unknown(StorageError),
}

/// What became of a change whose lightweight transaction failed: a timeout
/// may come after the proposal was accepted, so the row is read back at
/// LOCAL_SERIAL (which completes or supersedes whatever proposal is in
/// flight, so the answer cannot change after it). Holding this change's
/// record: it committed, and is answered as made (a client told otherwise
/// would retry a change that is in). Another record: the change is not in.
async fn answer_ambiguous<S: LoadRowStatements>(
    st: &S,
    load: &Load,
    record: &str,
    pending: &Pending,
    error: StorageError,
) -> Ambiguous {
    if error.was_not_sent() {
        return Ambiguous::NotIn(error);
    }
    match st.read_row(&load.id, true).await {
        Ok(Some((stored, _))) if stored == record => {
            tracing::info!(load = %load.id, %error, "a change whose answer was lost had committed; answered as made");
            finish_committed(st, load, record, pending).await;
            Ambiguous::Committed
        }
        Ok(_) => Ambiguous::NotIn(error),
        Err(_) => Ambiguous::Unknown(error),
    }
}

/// The committed load, as a reader sees it: a pending follow-up is its
/// writer's to finish.
pub(super) async fn read<S: LoadRowStatements>(st: &S, id: &LoadId) -> StorageResult<Option<Load>> {
    match st.read_row(id, false).await? {
        Some((record, _)) => decode(&record).map(Some),
        None => Ok(None),
    }
}

/// Finishes the load's committed change, if one was not followed up (its
/// writer died or failed after the commit). For the load's writer only.
pub(super) async fn finish_unfinished<S: LoadRowStatements>(
    st: &S,
    id: &LoadId,
) -> StorageResult<()> {
    let Some((record, Some(pending))) = st.read_row(id, true).await? else {
        return Ok(());
    };
    let load: Load = decode(&record)?;
    finish(st, &load, &record, &decode(&pending)?).await
}

/// Finishes a change that is committed: the change is made whatever happens
/// here, so it is answered as made (a client told it failed would retry a
/// change that is in, and the load's next event numbers would repeat its
/// events'). Tried twice; if both fail, the follow-up waits in `pending` for
/// the load's next change or its actor's next start, which finish it first.
async fn finish_committed<S: LoadRowStatements>(
    st: &S,
    load: &Load,
    record: &str,
    pending: &Pending,
) {
    for attempt in 1..=2 {
        match finish(st, load, record, pending).await {
            Ok(()) => return,
            Err(error) if attempt == 2 => tracing::warn!(
                load = %load.id,
                %error,
                "a committed change's list rows and events are not written yet; the load's next change or actor start writes them"
            ),
            Err(_) => {}
        }
    }
}

async fn finish<S: LoadRowStatements>(
    st: &S,
    load: &Load,
    record: &str,
    pending: &Pending,
) -> StorageResult<()> {
    st.follow_up(pending.previous.as_ref(), load, record, &pending.events)
        .await?;
    // After the list rows, and not retried: a counter add may have applied
    // when it fails, and adding again would count twice. A total is off by
    // one when this fails, or when a change is finished twice (its writer
    // died between these lines and the clear); `freight migrate
    // --recount-list-totals` sets them right.
    let deltas = total_deltas(pending.previous.as_ref(), load);
    if let Err(error) = st.add_to_totals(load.account_id.as_str(), &deltas).await {
        tracing::warn!(load = %load.id, %error, "a load list's total could not be updated; it is off by one until recounted");
    }
    st.clear_pending(&load.id, load.version as i64).await
}

/// The list totals a change moves: `+1` for each list the load joins, `-1`
/// for each it leaves (`'loads:'` and the partition's filter).
pub(super) fn total_deltas(previous: Option<&Load>, load: &Load) -> Vec<(String, i64)> {
    let before = previous.map(super::keys::load_filters).unwrap_or_default();
    let after = super::keys::load_filters(load);
    let list = |filter: &String| format!("{LOAD_LISTS}{filter}");
    let left = before
        .iter()
        .filter(|f| !after.contains(f))
        .map(|f| (list(f), -1));
    let joined = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|f| (list(f), 1));
    left.chain(joined).collect()
}

/// The prefix of a load list's name in `list_totals`.
pub(super) const LOAD_LISTS: &str = "loads:";

#[cfg(test)]
mod tests;
