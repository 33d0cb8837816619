//! Keeps plain HTTP off the API port, with an answer a person can act on.
//!
//! A bare TLS listener would just drop a plain-HTTP request, and the client would
//! report a baffling "connection reset". Instead each new connection's first byte
//! is peeked at: a TLS ClientHello always starts with the handshake record type
//! 0x16, which no HTTP method starts with. Anything else gets a 400 in the error
//! envelope saying to use https, and the connection is closed without serving it.

use std::fmt::Debug;
use std::rc::Rc;
use std::time::Duration;

use actix_rt::net::TcpStream;
use actix_service::{Service, ServiceFactory, fn_factory, fn_service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// TLS record content type "handshake".
const TLS_HANDSHAKE: u8 = 0x16;
/// A client that opens a connection and says nothing is dropped after this.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(10);
const PLAIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_PLAIN_REQUEST_HEAD: usize = 16 * 1024;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
const MAX_DRAIN_BYTES: usize = 1024 * 1024;

const BODY: &str = r#"{"success":false,"error":{"code":"HTTPS_REQUIRED","message":"this API is served over HTTPS only; repeat the request with an https:// URL","details":{"scheme":"http"}}}"#;

/// Wraps the TLS HTTP service so plain HTTP is answered with `HTTPS_REQUIRED`.
pub fn https_only<F>(
    tls_http: F,
) -> impl ServiceFactory<TcpStream, Config = (), Response = (), Error = (), InitError = ()>
where
    F: ServiceFactory<TcpStream, Config = (), Response = (), InitError = ()> + 'static,
    F::Service: 'static,
    F::Future: 'static,
    F::Error: Debug,
{
    let factory = Rc::new(tls_http);
    fn_factory(move || {
        let creating = factory.new_service(());
        async move {
            let tls_http = Rc::new(creating.await?);
            Ok::<_, ()>(fn_service(move |stream: TcpStream| {
                let tls_http = tls_http.clone();
                async move {
                    match first_byte(&stream).await {
                        Some(TLS_HANDSHAKE) => tls_http.call(stream).await.map_err(|error| {
                            tracing::debug!(?error, "TLS connection ended with an error");
                        }),
                        Some(_) => {
                            refuse_plain_http(stream).await;
                            Ok(())
                        }
                        None => Ok(()),
                    }
                }
            }))
        }
    })
}

/// The first byte the client sent, without consuming it; `None` if it sent nothing.
async fn first_byte(stream: &TcpStream) -> Option<u8> {
    let mut buf = [0u8; 1];
    match tokio::time::timeout(FIRST_BYTE_TIMEOUT, stream.peek(&mut buf)).await {
        Ok(Ok(1)) => Some(buf[0]),
        _ => None,
    }
}

/// Reads the request head (so closing does not reset the connection before the
/// client has read the answer), answers 400, and closes.
async fn refuse_plain_http(mut stream: TcpStream) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    let _ = tokio::time::timeout(PLAIN_REQUEST_TIMEOUT, async {
        while head.len() < MAX_PLAIN_REQUEST_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    if stream.write_all(response.as_bytes()).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    // Closing a socket with unread input makes the kernel send a reset, which can
    // destroy the answer before the client reads it; so read (and discard) what the
    // client still sends, for a bounded time and amount.
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        let mut drained = 0;
        while drained < MAX_DRAIN_BYTES {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}
