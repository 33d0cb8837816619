//! Recounting the totals kept as counters (load and carrier lists, webhook
//! delivery logs) from the rows they count.

use std::collections::BTreeMap;

use anyhow::Context;
use scylla::client::session::Session;

use super::super::carriers::CARRIER_LIST;
use super::super::load_rows::LOAD_LISTS;

/// Every row a query answers, read a page at a time (`what` names them in an
/// error).
pub(super) async fn all_rows<R>(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
    what: &str,
) -> anyhow::Result<Vec<R>>
where
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm> + 'static,
{
    use futures_util::TryStreamExt;
    let rows = session
        .query_iter(cql, values)
        .await
        .with_context(|| format!("reading {what}"))?
        .rows_stream::<R>()?;
    Ok(rows.try_collect().await?)
}

/// How many rows a query answers, counted a page at a time: a `COUNT(*)` of
/// a long partition in one request is what the maintained totals replace,
/// and it times out.
pub(super) async fn count_rows(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
    what: &str,
) -> anyhow::Result<i64> {
    use futures_util::TryStreamExt;
    let mut rows = session
        .query_iter(cql, values)
        .await
        .with_context(|| format!("reading {what}"))?
        .rows_stream::<(String,)>()?;
    let mut count = 0;
    while rows.try_next().await?.is_some() {
        count += 1;
    }
    Ok(count)
}

/// Sets every subscription's delivery total (`delivery_totals`) to its log's
/// record count by adding the difference, as `recount_load_totals` does for
/// lists: idempotent, so it fills the totals in when cql/016 is applied and
/// repairs them later. Totals of deleted subscriptions are left alone (they
/// are never read). The number of totals it changed.
pub(super) async fn recount_delivery_totals(session: &Session) -> anyhow::Result<u64> {
    let kept: Vec<(String, Option<scylla::value::Counter>)> = all_rows(
        session,
        "SELECT webhook_id, n FROM delivery_totals",
        (),
        "delivery_totals",
    )
    .await?;
    let current: BTreeMap<String, i64> = kept
        .into_iter()
        .map(|(webhook, n)| (webhook, n.map_or(0, |n| n.0)))
        .collect();
    let webhooks: Vec<(String,)> = all_rows(
        session,
        "SELECT webhook_id FROM webhooks",
        (),
        "the subscriptions",
    )
    .await?;
    let mut changed = 0;
    for (webhook,) in webhooks {
        let hours: Vec<(i64,)> = all_rows(
            session,
            "SELECT hour FROM delivery_hours WHERE webhook_id = ?",
            (webhook.as_str(),),
            &format!("{webhook}'s delivery hours"),
        )
        .await?;
        let mut count = 0;
        for (hour,) in hours {
            count += count_rows(
                session,
                "SELECT event_id FROM deliveries WHERE webhook_id = ? AND hour = ?",
                (webhook.as_str(), hour),
                &format!("{webhook}'s deliveries"),
            )
            .await?;
        }
        let delta = count - current.get(&webhook).copied().unwrap_or(0);
        if delta != 0 {
            session
                .query_unpaged(
                    "UPDATE delivery_totals SET n = n + ? WHERE webhook_id = ?",
                    (scylla::value::Counter(delta), webhook.as_str()),
                )
                .await
                .with_context(|| format!("setting {webhook}'s delivery total"))?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Sets every list's total (`list_totals`: load lists, carrier lists) to its
/// list's row count, by
/// adding the difference: run again, it changes nothing (idempotent), so it
/// fills the totals in when cql/014 is applied and repairs them later. The
/// number of totals it changed.
pub(super) async fn recount_load_totals(session: &Session) -> anyhow::Result<u64> {
    use futures_util::TryStreamExt;
    let mut lists: BTreeMap<(String, String), i64> = BTreeMap::new();
    // The totals kept, zero or not (a list emptied since still has one)...
    let mut kept = session
        .query_iter("SELECT account_id, list, n FROM list_totals", ())
        .await
        .context("reading list_totals")?
        .rows_stream::<(String, String, Option<scylla::value::Counter>)>()?;
    let mut current: BTreeMap<(String, String), i64> = BTreeMap::new();
    while let Some((account, list, n)) = kept.try_next().await? {
        current.insert((account.clone(), list.clone()), n.map_or(0, |n| n.0));
        lists.entry((account, list)).or_default();
    }
    // ...and every list that has rows.
    let mut partitions = session
        .query_iter(
            "SELECT DISTINCT account_id, filter FROM loads_by_account",
            (),
        )
        .await
        .context("reading the load lists")?
        .rows_stream::<(String, String)>()?;
    while let Some((account, filter)) = partitions.try_next().await? {
        lists
            .entry((account, format!("{LOAD_LISTS}{filter}")))
            .or_default();
    }
    let mut accounts = session
        .query_iter("SELECT DISTINCT account_id FROM carriers", ())
        .await
        .context("reading the carrier lists")?
        .rows_stream::<(String,)>()?;
    while let Some((account,)) = accounts.try_next().await? {
        lists.entry((account, CARRIER_LIST.to_owned())).or_default();
    }
    let mut changed = 0;
    for ((account, list), _) in lists {
        let what = format!("{account}'s list {list}");
        let count = match list.strip_prefix(LOAD_LISTS) {
            Some(filter) => {
                count_rows(
                    session,
                    "SELECT load_id FROM loads_by_account WHERE account_id = ? AND filter = ?",
                    (account.as_str(), filter),
                    &what,
                )
                .await?
            }
            None if list == CARRIER_LIST => {
                count_rows(
                    session,
                    "SELECT carrier_id FROM carriers WHERE account_id = ?",
                    (account.as_str(),),
                    &what,
                )
                .await?
            }
            None => continue,
        };
        let delta = count
            - current
                .get(&(account.clone(), list.clone()))
                .copied()
                .unwrap_or(0);
        if delta != 0 {
            session
                .query_unpaged(
                    "UPDATE list_totals SET n = n + ? WHERE account_id = ? AND list = ?",
                    (scylla::value::Counter(delta), &account, &list),
                )
                .await
                .with_context(|| format!("setting {account}'s total of {list}"))?;
            changed += 1;
        }
    }
    Ok(changed)
}
