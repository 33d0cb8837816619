//! A real HTTP webhook receiver for the tests, with its own Standard Webhooks
//! signature check written from the specification (not the service's code).

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Vec<u8>,
    pub json: Value,
}

pub struct Receiver {
    pub base: String,
    received: Arc<Mutex<Vec<Received>>>,
    answer: Arc<AtomicU16>,
    handle: actix_server::ServerHandle,
}

/// What arrived, and the status to answer with.
type State = (Arc<Mutex<Vec<Received>>>, Arc<AtomicU16>);

async fn record(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.0.lock().unwrap().push(Received {
        path: req.path().to_owned(),
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: body.to_vec(),
        json,
    });
    let status = state.1.load(Ordering::SeqCst);
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).finish()
}

impl Receiver {
    /// Starts a receiver on a random loopback port, answering `answer` to everything.
    pub async fn start(answer: u16) -> Receiver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Self::start_on(listener, answer)
    }

    pub fn start_on(listener: std::net::TcpListener, answer: u16) -> Receiver {
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(AtomicU16::new(answer));
        let state = web::Data::new((received.clone(), answer.clone()));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .default_service(web::to(record))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Receiver {
            base: format!("http://127.0.0.1:{port}"),
            received,
            answer,
            handle,
        }
    }

    pub fn answer(&self, status: u16) {
        self.answer.store(status, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) until `done` holds for what arrived.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        self.wait_advancing(None, what, done).await
    }

    /// Like [`wait_for`](Self::wait_for), moving the server's clock 200 ms per poll
    /// so that scheduled retries come due without waiting for them in real time.
    pub async fn wait_advancing(
        &self,
        clock: Option<&freight::clock::ManualClock>,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        crate::helpers::eventually(Duration::from_secs(20), what, || async {
            if let Some(clock) = clock {
                clock.advance(chrono::Duration::milliseconds(200));
            }
            let received = self.received();
            if done(&received) {
                return Ok(received);
            }
            let types: Vec<_> = received.iter().map(|r| r.json["type"].clone()).collect();
            Err(format!("{} deliveries: {types:?}", received.len()))
        })
        .await
    }
}

/// The Standard Webhooks check, from the specification: the key is the secret's
/// UTF-8 bytes, or the base64-decoded part after `whsec_`; the signed content is
/// `id.timestamp.body`; the header holds space-separated `v1,<base64>` entries;
/// the timestamp must be within five minutes of now.
pub fn verify(secret: &str, delivery: &Received) -> Result<(), String> {
    verify_at(secret, delivery, chrono::Utc::now())
}

/// [`verify`] as a receiver whose clock reads `now` would (a server on a
/// manual clock that a test moved on signs with its own time).
pub fn verify_at(
    secret: &str,
    delivery: &Received,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), String> {
    let key = match secret.strip_prefix("whsec_") {
        Some(encoded) => STANDARD.decode(encoded).map_err(|e| e.to_string())?,
        None => secret.as_bytes().to_vec(),
    };
    let timestamp: i64 = delivery.timestamp.parse().map_err(|_| "bad timestamp")?;
    let now = now.timestamp();
    if (now - timestamp).abs() > 300 {
        return Err(format!("timestamp {timestamp} is too far from now {now}"));
    }
    let mut content = format!("{}.{}.", delivery.id, delivery.timestamp).into_bytes();
    content.extend_from_slice(&delivery.body);
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(&content);
    let expected = mac.finalize().into_bytes();
    for entry in delivery.signature.split(' ') {
        if let Some(encoded) = entry.strip_prefix("v1,")
            && let Ok(given) = STANDARD.decode(encoded)
            && given.len() == expected.len()
            && given
                .iter()
                .zip(expected.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        {
            return Ok(());
        }
    }
    Err("no valid v1 signature".into())
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // `stop` sends the command at once; the future only waits for completion.
        drop(self.handle.stop(false));
    }
}
