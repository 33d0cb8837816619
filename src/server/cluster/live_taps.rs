//! The account-wide event stream on any instance carries the fixes of the
//! account's loads wherever they are stored. While an account has a stream
//! open on this instance (or is in its resume window), this instance taps
//! every other instance for the account (`GET /internal/v1/taps/{account}`
//! on its internal listener): each sends the updates stored there as lines,
//! which this instance publishes to its own streams (never on to its own
//! taps, so nothing loops). A tap that fails is opened again after
//! [`RECONNECT`]; instances that join are tapped within [`PEER_SCAN`].
//!
//! What a client may miss: updates stored on another instance while its
//! tap was being (re)opened; a stream carries what arrives, as on one
//! instance a client that fell behind does.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpMessage, HttpResponse, web};
use futures_util::StreamExt;

use super::Cluster;
use super::internal::SignedAt;
use crate::api::error::ApiError;
use crate::domain::ids::AccountId;
use crate::services::Services;
use crate::services::live::{LiveHub, parse_tap_line};
use crate::telemetry::error_chain;

pub const PATH: &str = "/internal/v1/taps/{account_id}";
/// Lines a tap may have waiting; one more and it is dropped (and reopened).
const TAP_BUFFER: usize = 4096;
/// A failed tap is opened again after this.
const RECONNECT: Duration = Duration::from_secs(1);
/// The registry is looked at for new instances this often.
const PEER_SCAN: Duration = Duration::from_secs(5);
/// A tap silent this long (no line, no heartbeat) is taken for dead.
const SILENCE: Duration = Duration::from_secs(45);
/// How long a tap lasts from the time its request was signed: a request
/// captured on the private network cannot open an unending stream of an
/// account's fixes. The tapping instance opens the next one at once.
pub const TAP_LIFE: Duration = Duration::from_secs(600);
/// A tap that lasted at least this long and then closed is reopened at
/// once, not after [`RECONNECT`]: it reached its life, it did not fail.
const LIVED: Duration = Duration::from_secs(30);

/// `GET /internal/v1/taps/{account_id}`: the account's updates stored here.
pub async fn serve(
    services: web::Data<Services>,
    account: web::Path<String>,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let Some(account) = AccountId::parse(&account) else {
        return Err(ApiError::new(
            actix_web::http::StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "not an account id",
        ));
    };
    let signed_at = req
        .extensions()
        .get::<SignedAt>()
        .map_or(0, |signed| signed.0);
    let lines = services.tracking.live().tap(&account, TAP_BUFFER);
    let ends = until(signed_at, chrono::Utc::now().timestamp());
    Ok(HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .streaming(
            lines
                .take_until(tokio::time::sleep(ends))
                .map(Ok::<_, std::convert::Infallible>),
        ))
}

/// How much longer a tap signed at `signed_at` may last, `now` (Unix seconds).
fn until(signed_at: i64, now: i64) -> Duration {
    let left = signed_at
        .saturating_add(TAP_LIFE.as_secs() as i64)
        .saturating_sub(now);
    Duration::from_secs(left.max(0) as u64)
}

/// The accounts whose taps are kept (one task each).
type Tapping = Arc<std::sync::Mutex<std::collections::HashSet<AccountId>>>;

/// Taps the other instances for each account whose first stream opens here.
pub fn start(cluster: Arc<Cluster>, hub: &LiveHub, runtime: tokio::runtime::Handle) {
    let tapping = Tapping::default();
    hub.on_new_feed(move |hub, account| {
        // A feed that expired and came back while its task still runs keeps
        // that task: two would publish every update twice.
        if lock(&tapping).insert(account.clone()) {
            runtime.spawn(tap_account(
                cluster.clone(),
                hub.clone(),
                account.clone(),
                tapping.clone(),
            ));
        }
    });
}

fn lock(tapping: &Tapping) -> std::sync::MutexGuard<'_, std::collections::HashSet<AccountId>> {
    tapping.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps a tap open on every other instance while the account streams here.
async fn tap_account(cluster: Arc<Cluster>, hub: LiveHub, account: AccountId, tapping: Tapping) {
    loop {
        keep_taps(&cluster, &hub, &account).await;
        lock(&tapping).remove(&account);
        // A stream that opened between the last look and the removal found
        // this task still listed and started none: carry on for it.
        if !hub.streaming(&account) || !lock(&tapping).insert(account.clone()) {
            return;
        }
    }
}

async fn keep_taps(cluster: &Arc<Cluster>, hub: &LiveHub, account: &AccountId) {
    let mut taps: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    while hub.streaming(account) {
        let others = cluster.peers().others();
        // Instances gone from the registry are let go; a tap that ended (it
        // saw no stream for a moment) is opened again below.
        taps.retain(|instance, tap| {
            let keep = others.iter().any(|(other, _)| other == instance);
            if !keep {
                tap.abort();
            }
            keep && !tap.is_finished()
        });
        for (instance, _) in others {
            taps.entry(instance.clone()).or_insert_with(|| {
                tokio::spawn(tap_instance(
                    cluster.clone(),
                    hub.clone(),
                    account.clone(),
                    instance.into(),
                ))
            });
        }
        tokio::time::sleep(PEER_SCAN).await;
    }
    for tap in taps.into_values() {
        tap.abort();
    }
}

/// Reads one instance's tap on the account, reopening it when it fails.
async fn tap_instance(cluster: Arc<Cluster>, hub: LiveHub, account: AccountId, instance: Arc<str>) {
    let path = PATH.replace("{account_id}", account.as_str());
    while hub.streaming(&account) {
        let opened = tokio::time::Instant::now();
        match cluster.open_tap(&instance, &path).await {
            Ok(response) => {
                if let Err(error) = read_tap(response, &hub, &account).await {
                    if error == CLOSED && opened.elapsed() >= LIVED {
                        continue;
                    }
                    tracing::info!(%instance, error = %error, "a tap on another instance ended; reopening it");
                }
            }
            Err(error) => {
                tracing::debug!(%instance, error = %error_chain(&error), "could not tap another instance; retrying");
            }
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

/// How [`read_tap`] says the other instance ended the tap.
const CLOSED: &str = "closed";

async fn read_tap(
    mut response: reqwest::Response,
    hub: &LiveHub,
    account: &AccountId,
) -> Result<(), String> {
    let mut pending = Vec::new();
    loop {
        let chunk = tokio::time::timeout(SILENCE, response.chunk())
            .await
            .map_err(|_| "silent past its heartbeat".to_owned())?
            .map_err(|e| error_chain(&e).to_string())?;
        let Some(chunk) = chunk else {
            return Err(CLOSED.into());
        };
        pending.extend_from_slice(&chunk);
        let Some(end) = pending.iter().rposition(|b| *b == b'\n') else {
            continue;
        };
        let complete: Vec<u8> = pending.drain(..=end).collect();
        let updates: Vec<_> = String::from_utf8_lossy(&complete)
            .lines()
            .filter(|line| !line.is_empty())
            .filter_map(parse_tap_line)
            .collect();
        hub.publish_relayed(account, updates);
    }
}

impl Cluster {
    /// Opens a tap on `instance` (no overall timeout: it lasts).
    async fn open_tap(
        &self,
        instance: &Arc<str>,
        path: &str,
    ) -> Result<reqwest::Response, crate::unavailable::Unavailable> {
        let request = self
            .signed(
                &self.tap_client,
                instance,
                reqwest::Method::GET,
                path,
                bytes::Bytes::new(),
                super::forward::Relayed::default(),
            )
            .await?;
        self.answered(instance, request, "a tap").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_lasts_its_life_from_the_signed_time() {
        assert_eq!(until(1_000, 1_000), TAP_LIFE);
        assert_eq!(until(1_000, 1_060), TAP_LIFE - Duration::from_secs(60));
        assert_eq!(until(1_000, 1_000 + 601), Duration::ZERO);
        assert_eq!(until(0, 1_000_000), Duration::ZERO, "unsigned: none");
    }
}
