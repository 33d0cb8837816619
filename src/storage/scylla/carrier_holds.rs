//! A carrier's deletion against its assignment to a load, across instances
//! (see `cql/017_carrier_holds.cql`): an assignment holds the carrier in its
//! row from the read to the load's write, a deletion marks the row from its
//! check for loads to the delete; each refuses while the other is there.
//! Both last a few milliseconds, so each waits out the other a moment before
//! it answers. Each statement here may be run again (a set's add or remove,
//! a token set or cleared under a condition), so one that failed is tried
//! again before the request is answered 503.

use std::future::Future;
use std::time::Duration;

use super::ScyllaStore;
use crate::domain::ids::{AccountId, CarrierId, LoadId};
use crate::storage::{DeletingMark, StorageResult};

/// How long a hold or a mark outlives a holder that died: the deletion, or
/// the assignment, it kept out waits that long at most.
const HOLD_TTL_SECONDS: i32 = 60;
/// Tries of a hold (or a mark) that finds the other in the way, 50 ms apart.
const ATTEMPTS: usize = 20;
const PAUSE: Duration = Duration::from_millis(50);
/// Tries of a statement that failed (Paxos on a contended row times out now
/// and then, see `load_rows::CAS_TRIES`), 100 ms apart.
const FAILED_TRIES: usize = 3;
const FAILED_PAUSE: Duration = Duration::from_millis(100);

/// `run` until it answers, or has failed [`FAILED_TRIES`] times.
async fn again<T, F: Future<Output = StorageResult<T>>>(
    mut run: impl FnMut() -> F,
) -> StorageResult<T> {
    let mut tries = 1;
    loop {
        match run().await {
            Err(_) if tries < FAILED_TRIES => tries += 1,
            answer => return answer,
        }
        tokio::time::sleep(FAILED_PAUSE).await;
    }
}

pub(super) async fn hold(
    store: &ScyllaStore,
    account: &AccountId,
    carrier: &CarrierId,
    load: &LoadId,
) -> StorageResult<bool> {
    for attempt in 1..=ATTEMPTS {
        let values = || {
            (
                HOLD_TTL_SECONDS,
                vec![load.as_str()],
                account.as_str(),
                carrier.as_str(),
            )
        };
        let answer = again(|| store.lwt(&store.st.hold_carrier, values())).await?;
        if answer.applied {
            return Ok(true);
        }
        // No record: no such carrier. Else a deletion is checking it, which
        // either deletes it (refused then) or lets go.
        if answer.text("record").is_none() || attempt == ATTEMPTS {
            return Ok(false);
        }
        tokio::time::sleep(PAUSE).await;
    }
    Ok(false)
}

/// Not applied: the carrier is gone (a deletion cannot run while held).
pub(super) async fn release(
    store: &ScyllaStore,
    account: &AccountId,
    carrier: &CarrierId,
    load: &LoadId,
) -> StorageResult<()> {
    let values = || (vec![load.as_str()], account.as_str(), carrier.as_str());
    again(|| store.applied(&store.st.release_carrier, values()))
        .await
        .map(|_| ())
}

/// Marks the carrier; the mark's token is kept in the store, so that
/// [`unmark`] takes back only this deletion's.
pub(super) async fn mark(
    store: &ScyllaStore,
    account: &AccountId,
    carrier: &CarrierId,
    token: &str,
) -> StorageResult<DeletingMark> {
    for attempt in 1..=ATTEMPTS {
        let values = || (HOLD_TTL_SECONDS, token, account.as_str(), carrier.as_str());
        let answer = again(|| store.lwt(&store.st.mark_carrier_deleting, values())).await?;
        if answer.applied {
            return Ok(DeletingMark::Marked);
        }
        if answer.text("record").is_none() {
            return Ok(DeletingMark::Missing);
        }
        if attempt == ATTEMPTS {
            return Ok(DeletingMark::Held(held_by(answer.value("assigning"))));
        }
        tokio::time::sleep(PAUSE).await;
    }
    Ok(DeletingMark::Held(Vec::new()))
}

pub(super) async fn unmark(
    store: &ScyllaStore,
    account: &AccountId,
    carrier: &CarrierId,
    token: &str,
) -> StorageResult<()> {
    let values = || (account.as_str(), carrier.as_str(), token);
    again(|| store.applied(&store.st.unmark_carrier_deleting, values()))
        .await
        .map(|_| ())
}

/// The loads an `assigning` set names.
fn held_by(assigning: Option<&scylla::value::CqlValue>) -> Vec<LoadId> {
    let Some(scylla::value::CqlValue::Set(loads)) = assigning else {
        return Vec::new();
    };
    loads
        .iter()
        .filter_map(|load| match load {
            scylla::value::CqlValue::Text(id) => LoadId::parse(id),
            _ => None,
        })
        .collect()
}
