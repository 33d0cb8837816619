//! Sending a request for a load to the instance acting for it, and relaying
//! its answer unchanged.
//!
//! - **Whole requests** (a status change, an edit, the live view): the API's
//!   request runs here first; if the load's actor says another instance holds
//!   the lease (a [`LeaseHolder`] on the answer), the same request (method,
//!   path, query, headers, body) goes to that instance's internal listener
//!   and its answer is the answer. Nothing was changed here: an actor that
//!   does not hold the lease refuses before it reads or writes anything.
//! - **GPS fixes** ([`Cluster::forward_fixes`]), for the single and the
//!   batch routes and the device protocols alike: after the local write, the
//!   fixes refused as held elsewhere go, per holder, to `POST
//!   /internal/v1/fixes`, and each gets the holder's outcome, so a batch
//!   spread over loads held by different instances is accepted whole.
//! - **503 with `Retry-After`** only when the holder cannot be reached (it
//!   died, and its lease has not expired yet; within the lease's TTL another
//!   instance takes the load over) or is not known.

use std::collections::HashMap;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::Cluster;
use super::signing::{
    BODY_SIGNATURE_HEADER, CLIENT_HEADER, LENGTH_HEADER, NONCE_HEADER, ORIGIN_HEADER,
    SIGNATURE_HEADER, SignedHead, TIME_HEADER, new_nonce,
};
use crate::actors::LoadError;
use crate::api::forward::FORWARDED_BY;
use crate::domain::account::Account;
use crate::domain::ids::LoadId;
use crate::domain::load::LoadStatus;
use crate::domain::tracking::{Appended, FixSource, GpsFix};
use crate::services::tracking::ForwardFixes;
use crate::telemetry::error_chain;
use crate::unavailable::Unavailable;

/// The internal route GPS fixes are forwarded to.
pub const FIXES_PATH: &str = "/internal/v1/fixes";

/// Headers that describe one connection, not the request: not relayed.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
            | "content-length"
            // Set by the forwarder: the client's own request came over TLS.
            | "x-forwarded-proto"
    ) || name.starts_with("x-freight-cluster-")
        || name == FORWARDED_BY
}

/// Headers a forwarded request carries only as signed (`Relayed`), and the
/// client's forwarding headers, which the holder must not believe: the
/// address the first instance saw travels signed instead.
fn signed_or_the_clients_own(name: &str) -> bool {
    matches!(
        name,
        "authorization"
            | "cookie"
            | "idempotency-key"
            | "x-forwarded-for"
            | "x-forwarded-host"
            | "x-real-ip"
            | "forwarded"
    )
}

/// What a forwarded request carries of its client, signed with it.
#[derive(Debug, Default)]
pub(super) struct Relayed {
    pub authorization: Option<String>,
    pub cookie: Option<String>,
    pub idempotency_key: Option<String>,
    pub client: String,
    pub origin: String,
}

/// One forwarded fix, as `POST /internal/v1/fixes` takes it.
#[derive(Serialize, Deserialize)]
pub struct WireFix {
    pub load_id: String,
    pub at_us: i64,
    pub lat: f64,
    pub lng: f64,
    pub speed_mph: Option<f64>,
    pub heading_deg: Option<f64>,
    pub source: u8,
}

impl WireFix {
    fn new(load: &LoadId, fix: &GpsFix) -> Self {
        WireFix {
            load_id: load.as_str().to_owned(),
            at_us: fix.timestamp.timestamp_micros(),
            lat: fix.lat,
            lng: fix.lng,
            speed_mph: fix.speed_mph,
            heading_deg: fix.heading_deg,
            source: fix.source.code(),
        }
    }

    pub fn decode(&self) -> Option<(LoadId, GpsFix)> {
        Some((
            LoadId::parse(&self.load_id)?,
            GpsFix {
                timestamp: chrono::DateTime::from_timestamp_micros(self.at_us)?,
                lat: self.lat,
                lng: self.lng,
                speed_mph: self.speed_mph,
                heading_deg: self.heading_deg,
                source: FixSource::from_code(self.source)?,
            },
        ))
    }
}

#[derive(Serialize, Deserialize)]
pub struct FixesRequest {
    pub account_id: String,
    pub points: Vec<WireFix>,
}

/// What became of a forwarded fix: what a fix can become (see `PointOutcome`).
#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WireOutcome {
    Stored,
    Duplicate,
    NotFound,
    NotTrackable {
        status: String,
    },
    /// Storage failed there, or the load moved on again: retry.
    Unavailable,
}

impl WireOutcome {
    pub fn new(outcome: &Result<Appended, LoadError>) -> Self {
        match outcome {
            Ok(Appended::Stored) => WireOutcome::Stored,
            Ok(Appended::Duplicate) => WireOutcome::Duplicate,
            Err(LoadError::NotFound) => WireOutcome::NotFound,
            Err(LoadError::NotTrackable(status)) => WireOutcome::NotTrackable {
                status: status.as_str().to_owned(),
            },
            Err(_) => WireOutcome::Unavailable,
        }
    }

    fn decode(self, holder: &std::sync::Arc<str>) -> Result<Appended, LoadError> {
        let unavailable = || {
            LoadError::Unavailable(Unavailable::HolderUnreachable {
                instance: holder.clone(),
            })
        };
        match self {
            WireOutcome::Stored => Ok(Appended::Stored),
            WireOutcome::Duplicate => Ok(Appended::Duplicate),
            WireOutcome::NotFound => Err(LoadError::NotFound),
            WireOutcome::NotTrackable { status } => {
                Err(LoadStatus::parse(&status)
                    .map_or_else(|_| unavailable(), LoadError::NotTrackable))
            }
            WireOutcome::Unavailable => Err(unavailable()),
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct FixesAnswer {
    pub outcomes: Vec<WireOutcome>,
}

// Not `Send`: it runs on the worker that took the request.
#[async_trait::async_trait(?Send)]
impl crate::api::forward::ForwardRequests for Cluster {
    /// Sends `req` (its head here, `body` as read) to `holder`'s internal
    /// listener and gives back its answer as is.
    async fn forward_request(
        &self,
        holder: &std::sync::Arc<str>,
        req: &actix_web::HttpRequest,
        body: Bytes,
    ) -> Result<HttpResponse, Unavailable> {
        let path = req
            .uri()
            .path_and_query()
            .map_or(req.path(), |p| p.as_str())
            .to_owned();
        let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
            .expect("an HTTP method is a method");
        let text = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let relayed = Relayed {
            authorization: text("authorization"),
            cookie: text("cookie"),
            idempotency_key: text("idempotency-key"),
            client: crate::api::client_address::client_address(req),
            origin: crate::api::origin::public_origin(req),
        };
        let mut request = self
            .signed(&self.client, holder, method, &path, body, relayed)
            .await?;
        for (name, value) in req.headers() {
            if !hop_by_hop(name.as_str()) && !signed_or_the_clients_own(name.as_str()) {
                request = request.header(name.as_str(), value.as_bytes());
            }
        }
        let answer = request
            .send()
            .await
            .map_err(|error| self.unreachable(holder, &error))?;
        if answer
            .headers()
            .contains_key(super::internal::REFUSED_HEADER)
        {
            // Not the client's fault: a secret or clock that differs between
            // the instances (during a rotation of the secret, say).
            tracing::error!(instance = %holder, "another instance refused this one's signature; check that every instance has the same --cluster-secret and a synchronised clock");
            return Err(Unavailable::HolderUnreachable {
                instance: holder.clone(),
            });
        }
        let status = StatusCode::from_u16(answer.status().as_u16())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut relayed = HttpResponse::build(status);
        for (name, value) in answer.headers() {
            if !hop_by_hop(name.as_str()) {
                relayed.append_header((name.as_str(), value.as_bytes()));
            }
        }
        let body = answer
            .bytes()
            .await
            .map_err(|error| self.unreachable(holder, &error))?;
        Ok(relayed.body(body))
    }
}

#[async_trait::async_trait]
impl ForwardFixes for Cluster {
    async fn forward_fixes(
        &self,
        account: &Account,
        fixes: &[(LoadId, GpsFix)],
        outcomes: &mut [Result<Appended, LoadError>],
    ) {
        let mut by_holder: HashMap<std::sync::Arc<str>, Vec<usize>> = HashMap::new();
        for (index, outcome) in outcomes.iter().enumerate() {
            if let Err(LoadError::Unavailable(Unavailable::LeasedElsewhere {
                holder: Some(holder),
                ..
            })) = outcome
            {
                by_holder.entry(holder.clone()).or_default().push(index);
            }
        }
        for (holder, indexes) in by_holder {
            let request = FixesRequest {
                account_id: account.id.as_str().to_owned(),
                points: indexes
                    .iter()
                    .map(|&i| WireFix::new(&fixes[i].0, &fixes[i].1))
                    .collect(),
            };
            match self.send_fixes(&holder, &request).await {
                Ok(answer) if answer.outcomes.len() == indexes.len() => {
                    for (index, outcome) in indexes.into_iter().zip(answer.outcomes) {
                        outcomes[index] = outcome.decode(&holder);
                    }
                }
                Ok(_) => {
                    tracing::warn!(instance = %holder, "another instance answered forwarded fixes with the wrong number of outcomes");
                    let error = Unavailable::HolderUnreachable { instance: holder };
                    for index in indexes {
                        outcomes[index] = Err(error.clone().into());
                    }
                }
                Err(error) => {
                    for index in indexes {
                        outcomes[index] = Err(error.clone().into());
                    }
                }
            }
        }
    }
}

impl Cluster {
    async fn send_fixes(
        &self,
        holder: &std::sync::Arc<str>,
        request: &FixesRequest,
    ) -> Result<FixesAnswer, Unavailable> {
        let body = Bytes::from(serde_json::to_vec(request).expect("fixes serialise"));
        let request = self
            .signed(
                &self.client,
                holder,
                reqwest::Method::POST,
                FIXES_PATH,
                body,
                Relayed::default(),
            )
            .await?
            .header("content-type", "application/json");
        let answer = self.answered(holder, request, "forwarded fixes").await?;
        answer
            .json()
            .await
            .map_err(|error| self.unreachable(holder, &error))
    }

    /// Sends one of this service's own internal requests (`what`, for the
    /// log) to `holder`; anything but a success is the holder's failure.
    pub(super) async fn answered(
        &self,
        holder: &std::sync::Arc<str>,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, Unavailable> {
        let answer = request
            .send()
            .await
            .map_err(|error| self.unreachable(holder, &error))?;
        if !answer.status().is_success() {
            tracing::warn!(instance = %holder, status = %answer.status(), "another instance refused {what}");
            return Err(Unavailable::HolderUnreachable {
                instance: holder.clone(),
            });
        }
        Ok(answer)
    }

    /// A request to `holder`'s internal listener with `body` and what it
    /// carries of its client, signed.
    pub(super) async fn signed(
        &self,
        client: &reqwest::Client,
        holder: &std::sync::Arc<str>,
        method: reqwest::Method,
        path: &str,
        body: Bytes,
        relayed: Relayed,
    ) -> Result<reqwest::RequestBuilder, Unavailable> {
        let Some(address) = self.peers.address_of(self.storage.as_ref(), holder).await else {
            tracing::warn!(instance = %holder, "the instance acting for a load is not in the instance registry");
            return Err(Unavailable::HolderUnreachable {
                instance: holder.clone(),
            });
        };
        let head = SignedHead {
            time: Self::now(),
            nonce: new_nonce(),
            method: method.as_str().to_owned(),
            path_and_query: path.to_owned(),
            length: body.len() as u64,
            authorization: relayed.authorization,
            cookie: relayed.cookie,
            idempotency_key: relayed.idempotency_key,
            client: relayed.client,
            origin: relayed.origin,
        };
        let (signature, body_signature) = self.secret.sign(&head, &body);
        let mut request = client
            .request(method, format!("http://{address}{path}"))
            .header(TIME_HEADER, head.time.to_string())
            .header(NONCE_HEADER, &head.nonce)
            .header(LENGTH_HEADER, head.length.to_string())
            .header(SIGNATURE_HEADER, signature)
            .header(BODY_SIGNATURE_HEADER, body_signature)
            .header(CLIENT_HEADER, &head.client)
            .header(ORIGIN_HEADER, &head.origin)
            // The client's own request reached this instance over TLS.
            .header("x-forwarded-proto", "https")
            .header(FORWARDED_BY, self.peers.me().as_ref());
        for (name, value) in [
            ("authorization", head.authorization),
            ("cookie", head.cookie),
            ("idempotency-key", head.idempotency_key),
        ] {
            if let Some(value) = value {
                request = request.header(name, value);
            }
        }
        Ok(request.body(body))
    }

    pub(super) fn unreachable(
        &self,
        holder: &std::sync::Arc<str>,
        error: &reqwest::Error,
    ) -> Unavailable {
        tracing::warn!(instance = %holder, error = %error_chain(error), "could not forward a request to the instance acting for its load");
        Unavailable::HolderUnreachable {
            instance: holder.clone(),
        }
    }
}
