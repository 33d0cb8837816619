//! The service as the load generator reaches it: requests over its own
//! connections, timed and recorded, and the set-up requests that must succeed.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::Value;
use tokio::time::Instant;

use super::client::{Client, Failure};
use super::report::{Outcome, Recorder};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The service, as a client reaches it.
pub struct Target {
    pub(crate) http: Client,
    base: String,
    /// One per connection: a request holds one while it is on the wire.
    connections: tokio::sync::Semaphore,
}

/// HTTP methods, as the request line writes them.
#[derive(Clone, Copy)]
pub(crate) enum Method {
    Get,
    Post,
    Patch,
    Put,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Put => "PUT",
        }
    }
}

impl Target {
    pub fn connect(
        base: &str,
        key: &str,
        (cacert, insecure): (Option<&std::path::Path>, bool),
        connections: usize,
    ) -> anyhow::Result<Self> {
        let base = base.trim_end_matches('/');
        let http = Client::new(
            base,
            &format!("Bearer {key}"),
            cacert,
            insecure,
            REQUEST_TIMEOUT,
        )
        .with_context(|| format!("the base URL {base}"))?;
        Ok(Target {
            http,
            base: base.to_owned(),
            connections: tokio::sync::Semaphore::new(connections),
        })
    }

    /// Stops early, with the server's words, if the key cannot write.
    pub async fn check_key(&self) -> anyhow::Result<()> {
        let (status, body) = self
            .call(Method::Get, "/auth/verify", None)
            .await
            .map_err(|e| anyhow!("cannot reach {}: {e}", self.base))?;
        if status != 200 {
            bail!("the key was refused ({status}): {body}");
        }
        let permissions = body["data"]["permissions"].to_string();
        if !permissions.contains("write") {
            bail!("the key needs the write permission (it has {permissions})");
        }
        Ok(())
    }

    /// A request whose answer is read whole (set-up and checks).
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), Failure> {
        self.send(method, path, body.map(Value::to_string), true)
            .await
    }

    /// As `call`, with the body as text, read as JSON only when `parse` is
    /// set or the answer is a refusal: a client as cheap as it can be, so that
    /// it measures the server rather than itself.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        parse: bool,
    ) -> Result<(u16, Value), Failure> {
        let path = format!("/v1{path}");
        let _connection = self.connections.acquire().await.expect("never closed");
        let answer = self
            .http
            .request(method.as_str(), &path, body.as_deref().map(str::as_bytes))
            .await?;
        let status = answer.status;
        let answer = match parse || !(200..300).contains(&status) {
            true => serde_json::from_slice(&answer.body).unwrap_or(Value::Null),
            false => Value::Null,
        };
        Ok((status, answer))
    }

    /// Sends a request and records it under `operation`, its latency counted
    /// from `intended`; the answer's body when it was 2xx.
    pub(crate) async fn timed(
        &self,
        recorder: &Recorder,
        operation: &'static str,
        intended: Instant,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> Option<Value> {
        // Only a new load's answer is read (for its id).
        let parse = operation == "create_load";
        let answer = self.send(method, path, body, parse).await;
        let latency = intended.elapsed();
        match answer {
            Ok((status, body)) if (200..300).contains(&status) => {
                recorder.record(operation, latency, Outcome::Ok);
                Some(body)
            }
            Ok((status, body)) => {
                let code = body["error"]["code"].as_str().unwrap_or("-").to_owned();
                recorder.record(operation, latency, Outcome::Refused(status, code));
                None
            }
            Err(failure) => {
                recorder.record(operation, latency, Outcome::Failed(failure.kind().into()));
                None
            }
        }
    }

    /// A set-up request that must succeed.
    pub(crate) async fn must(
        &self,
        method: Method,
        path: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let (status, answer) = self
            .call(method, path, Some(&body))
            .await
            .map_err(|e| anyhow!("setting up: {path}: {e}"))?;
        if !(200..300).contains(&status) {
            bail!("setting up: {path} answered {status}: {answer}");
        }
        Ok(answer)
    }

    /// A set-up `POST` that must succeed.
    pub(crate) async fn must_post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.must(Method::Post, path, body).await
    }

    /// A set-up `PUT` that must succeed.
    pub(crate) async fn must_put(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.must(Method::Put, path, body).await
    }
}
