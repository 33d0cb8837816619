//! The loadgen's HTTP/1.1 client: hyper's connection-level client
//! (`hyper::client::conn::http1`) over TLS, or plain TCP for an `http://` base
//! URL, with keep-alive connections kept in a plain list.
//!
//! Why not reqwest (or hyper-util's pooled client): a general client (a pool
//! with a task per connection, URL parsing and header maps per request) spent
//! more than twice wrk's user CPU per request, and on a machine the generator
//! shares with the server that CPU comes out of the server's share, so the tool
//! measured itself (loadgen/wrk 0.70-0.86 on one server). Here a connection's
//! state machine is polled by the task that sends on it, only while it waits
//! for its answer: no pool task, no task per connection, no channel hop.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// Idle connections kept beyond this are closed rather than reused: well under
/// the idle timeouts of servers and balancers, so a reused connection is alive.
const MAX_IDLE: Duration = Duration::from_secs(4);

/// A transport's bytes, TLS or not.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection's state machine (hyper's), which does the reading and writing
/// when polled.
type Driver = http1::Connection<TokioIo<Box<dyn Io>>, Full<Bytes>>;

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("connection failed: {0}")]
    Transport(String),
}

impl Failure {
    /// A short name for reports ("timeout", "connect", "transport").
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Timeout(_) => "timeout",
            Failure::Connect(_) => "connect",
            Failure::Transport(_) => "transport",
        }
    }
}

/// A whole answer.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Where requests go, with what, over which connections.
pub struct Client {
    /// `host:port` to connect to.
    address: String,
    /// `Some` for https.
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// Written before each request's path.
    path_prefix: String,
    /// The `Host` header (the base URL's authority).
    host: HeaderValue,
    authorization: HeaderValue,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
}

/// One keep-alive connection: where requests are sent, and the state machine
/// that carries them (`None` once it ended).
struct Connection {
    sender: SendRequest<Full<Bytes>>,
    driver: Option<Pin<Box<Driver>>>,
    last_used: Instant,
}

impl Client {
    /// A client of `base` (`https://host[:port][/prefix]`, or `http://`), sending
    /// `authorization` with every request. Certificates are checked against
    /// `cacert` alone when given, against the platform's roots otherwise, or not
    /// at all with `insecure`.
    pub fn new(
        base: &str,
        authorization: &str,
        cacert: Option<&std::path::Path>,
        insecure: bool,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let (https, rest) = match base.split_once("://") {
            Some(("https", rest)) => (true, rest),
            Some(("http", rest)) => (false, rest),
            _ => bail!("the base URL must start with https:// or http:// (got {base})"),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            bail!("the base URL needs a host, without user information (got {base})");
        }
        let (host, has_port) = match authority.strip_prefix('[') {
            // An IPv6 literal: [::1] or [::1]:8443.
            Some(v6) => {
                let (host, after) = v6
                    .split_once(']')
                    .with_context(|| format!("unclosed [ in {base}"))?;
                (host, after.starts_with(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, _)) => (host, true),
                None => (authority, false),
            },
        };
        let address = match has_port {
            true => authority.to_owned(),
            false => format!("{authority}:{}", if https { 443 } else { 80 }),
        };
        let tls = match https {
            true => {
                let config = tls_config(cacert, insecure)?;
                let name = ServerName::try_from(host.to_owned())
                    .with_context(|| format!("{host} is not a host name or address"))?;
                Some((TlsConnector::from(Arc::new(config)), name))
            }
            false => None,
        };
        Ok(Client {
            address,
            tls,
            path_prefix: path.trim_end_matches('/').to_owned(),
            host: HeaderValue::from_str(authority)
                .with_context(|| format!("{authority} cannot be sent as a Host header"))?,
            authorization: HeaderValue::from_str(authorization)
                .context("the API key cannot be sent in a header")?,
            idle: Mutex::new(Vec::new()),
            timeout,
        })
    }

    /// A request for `path` below the base URL, with the headers every request
    /// carries.
    fn build(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, Failure> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        let uri = format!("{}{path}", self.path_prefix);
        *request.uri_mut() = uri
            .parse()
            .map_err(|_| Failure::Transport(format!("{uri} is not a request path")))?;
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        headers.insert(AUTHORIZATION, self.authorization.clone());
        headers.insert(USER_AGENT, HeaderValue::from_static("freight-loadgen"));
        Ok(request)
    }

    /// Sends `method path` (the path below the base URL) with a JSON `body`,
    /// and reads the whole answer.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Answer, Failure> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|_| Failure::Transport(format!("{method} is not an HTTP method")))?;
        let mut request = self.build(
            method,
            path,
            Bytes::copy_from_slice(body.unwrap_or_default()),
        )?;
        if body.is_some() {
            let json = HeaderValue::from_static("application/json");
            request.headers_mut().insert(CONTENT_TYPE, json);
        }
        tokio::time::timeout(self.timeout, self.exchange(request))
            .await
            .unwrap_or(Err(Failure::Timeout(self.timeout)))
    }

    async fn exchange(&self, request: Request<Full<Bytes>>) -> Result<Answer, Failure> {
        let mut request = request;
        if let Some(mut connection) = self.reused() {
            match connection.exchange(request).await {
                Ok(answer) => {
                    self.put_back(connection);
                    return Ok(answer);
                }
                // The server closed the idle connection before the request
                // was written: it was not processed, so it is sent again on a
                // new connection, as browsers and pooled clients do.
                Err(Attempt::Unsent(unsent, _)) => request = *unsent,
                Err(Attempt::Broken(failure)) => return Err(failure),
            }
        }
        let mut connection = self.connect().await?;
        match connection.exchange(request).await {
            Ok(answer) => {
                self.put_back(connection);
                Ok(answer)
            }
            Err(Attempt::Unsent(_, failure) | Attempt::Broken(failure)) => Err(failure),
        }
    }

    /// Opens `path` as a stream (server-sent events) on a connection of its
    /// own, resuming after `last_event_id`, and hands each piece of its body to
    /// `each` as it arrives, until the server ends it or `until` comes. Answers
    /// the status; a refusal's body is not read.
    pub async fn stream(
        &self,
        path: &str,
        last_event_id: Option<&str>,
        until: Instant,
        mut each: impl FnMut(&[u8]),
    ) -> Result<u16, Failure> {
        let mut request = self.build(Method::GET, path, Bytes::new())?;
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert("last-event-id", id);
        }
        let started = Instant::now();
        let status = std::cell::Cell::new(None);
        let reading = async {
            let mut connection = self.connect().await?;
            let Connection { sender, driver, .. } = &mut connection;
            let answer = drive(driver, sender.try_send_request(request))
                .await
                .map_err(|e| transport(e.into_error()))?;
            status.set(Some(answer.status().as_u16()));
            if !answer.status().is_success() {
                return Ok(());
            }
            let mut body = answer.into_body();
            while let Some(frame) = drive(driver, body.frame()).await {
                if let Some(data) = frame.map_err(transport)?.data_ref() {
                    each(data);
                }
            }
            Ok::<(), Failure>(())
        };
        let ended = tokio::time::timeout_at(until, reading).await;
        match (ended, status.get()) {
            (Ok(Ok(())), Some(status)) | (Err(_), Some(status)) => Ok(status),
            (Ok(Err(failure)), _) => Err(failure),
            (_, None) => Err(Failure::Timeout(started.elapsed())),
        }
    }

    fn reused(&self) -> Option<Connection> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(connection) = idle.pop() {
            if connection.last_used.elapsed() < MAX_IDLE && !connection.sender.is_closed() {
                return Some(connection);
            }
        }
        None
    }

    /// Keeps a connection for the next request, unless it ended (the answer
    /// said `Connection: close`, or the server went).
    fn put_back(&self, mut connection: Connection) {
        if connection.driver.is_some() && !connection.sender.is_closed() {
            connection.last_used = Instant::now();
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(connection);
        }
    }

    async fn connect(&self) -> Result<Connection, Failure> {
        let tcp = TcpStream::connect(&self.address)
            .await
            .map_err(|e| Failure::Connect(format!("{}: {e}", self.address)))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = match &self.tls {
            Some((connector, name)) => Box::new(
                connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| Failure::Connect(format!("TLS with {}: {e}", self.address)))?,
            ),
            None => Box::new(tcp),
        };
        let (sender, driver) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| Failure::Connect(format!("{}: {e}", self.address)))?;
        Ok(Connection {
            sender,
            driver: Some(Box::pin(driver)),
            last_used: Instant::now(),
        })
    }
}

/// How one exchange on a connection failed.
enum Attempt {
    /// The request was not written (the connection had ended): safe to send
    /// again, and here it is.
    Unsent(Box<Request<Full<Bytes>>>, Failure),
    Broken(Failure),
}

impl Connection {
    /// Sends `request` and reads its whole answer.
    async fn exchange(&mut self, request: Request<Full<Bytes>>) -> Result<Answer, Attempt> {
        let Connection { sender, driver, .. } = self;
        if drive(driver, sender.ready()).await.is_err() {
            let failure = Failure::Transport("the server closed the connection".into());
            return Err(Attempt::Unsent(Box::new(request), failure));
        }
        let answer = match drive(driver, sender.try_send_request(request)).await {
            Ok(answer) => answer,
            Err(mut error) => {
                let unsent = error.take_message();
                let failure = transport(error.into_error());
                return Err(match unsent {
                    Some(request) => Attempt::Unsent(Box::new(request), failure),
                    None => Attempt::Broken(failure),
                });
            }
        };
        let status = answer.status().as_u16();
        let body = drive(driver, answer.into_body().collect())
            .await
            .map_err(|e| Attempt::Broken(transport(e)))?;
        Ok(Answer {
            status,
            body: body.to_bytes().to_vec(),
        })
    }
}

/// Runs `work` (a send, or a body's reading) while polling the connection's
/// state machine, which moves its bytes; the machine is dropped once it ends
/// (the connection closed), after which `work` sees the connection gone.
async fn drive<T>(driver: &mut Option<Pin<Box<Driver>>>, work: impl Future<Output = T>) -> T {
    let mut work = pin!(work);
    poll_fn(|cx| {
        if let Some(machine) = driver.as_mut()
            && machine.as_mut().poll(cx).is_ready()
        {
            *driver = None;
        }
        work.as_mut().poll(cx)
    })
    .await
}

fn transport(error: hyper::Error) -> Failure {
    Failure::Transport(error.to_string())
}

fn tls_config(cacert: Option<&std::path::Path>, insecure: bool) -> anyhow::Result<ClientConfig> {
    let mut config = if insecure {
        ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate::new()))
            .with_no_client_auth()
    } else if let Some(path) = cacert {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading the CA certificate {}", path.display()))?
        {
            let cert =
                cert.with_context(|| format!("{} is not a PEM certificate", path.display()))?;
            roots.add(cert).with_context(|| {
                format!("{} holds a certificate rustls refuses", path.display())
            })?;
        }
        if roots.is_empty() {
            bail!("{} holds no certificate", path.display());
        }
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth()
    } else {
        use rustls_platform_verifier::ConfigVerifierExt;
        ClientConfig::with_platform_verifier().context("loading the platform's certificates")?
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// `--insecure`: any certificate is taken (for a quick try against a server
/// whose certificate the machine does not trust).
#[derive(Debug)]
struct AnyCertificate {
    schemes: Vec<rustls::SignatureScheme>,
}

impl AnyCertificate {
    fn new() -> Self {
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        AnyCertificate {
            schemes: provider
                .signature_verification_algorithms
                .supported_schemes(),
        }
    }
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.schemes.clone()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// One whole request as the server reads it: its head, and its body when
    /// it says it has one.
    async fn read_request(stream: &mut TcpStream) -> String {
        let mut seen = Vec::new();
        loop {
            let mut chunk = [0u8; 1024];
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the request ended early");
            seen.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(str::to_owned)
                    })
                    .map_or(0, |l| l.trim().parse().unwrap());
                if body.len() >= length {
                    return text;
                }
            }
        }
    }

    #[test]
    fn base_urls_name_host_port_and_prefix() {
        let client = |base: &str| Client::new(base, "Bearer k", None, true, Duration::from_secs(1));
        let plain = client("http://127.0.0.1:8080/freight/").unwrap();
        assert_eq!(plain.address, "127.0.0.1:8080");
        assert_eq!(plain.path_prefix, "/freight");
        assert!(plain.tls.is_none());
        let tls = client("https://localhost").unwrap();
        assert_eq!(tls.address, "localhost:443");
        assert_eq!(tls.host, "localhost");
        let sent = tls
            .build(Method::GET, "/v1/loads?limit=5", Bytes::new())
            .unwrap();
        assert_eq!(sent.uri(), "/v1/loads?limit=5");
        assert!(tls.build(Method::GET, "/v1/a path", Bytes::new()).is_err());
        let v6 = client("https://[::1]:8443").unwrap();
        assert_eq!(v6.address, "[::1]:8443");
        assert!(client("ftp://host").is_err());
        assert!(client("localhost:8443").is_err());
        assert!(client("https://user@host").is_err());
    }

    /// A real exchange over plain TCP with a server that answers in pieces:
    /// a sized answer, a chunked one on the same connection, then a close that
    /// the next request survives by reconnecting.
    #[tokio::test]
    async fn answers_in_pieces_chunked_and_after_a_close_are_read_whole() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let answers: [&[&[u8]]; 2] = [
                &[
                    b"HTTP/1.1 200 OK\r\nContent-",
                    b"Length: 5\r\n\r\nhel",
                    b"lo",
                ],
                &[
                    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
                    b"c\r\n0\r\n\r\n",
                ],
            ];
            let (mut first, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            for pieces in answers {
                seen.push(read_request(&mut first).await);
                for piece in pieces {
                    first.write_all(piece).await.unwrap();
                    first.flush().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            seen.push(read_request(&mut second).await);
            second
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")
                .await
                .unwrap();
            seen
        });
        let client = Client::new(
            &format!("http://127.0.0.1:{port}/base"),
            "Bearer frk_test",
            None,
            false,
            Duration::from_secs(5),
        )
        .unwrap();
        let first = client.request("GET", "/v1/a", None).await.unwrap();
        assert_eq!((first.status, first.body.as_slice()), (200, &b"hello"[..]));
        let second = client
            .request("POST", "/v1/b", Some(b"{\"x\":1}"))
            .await
            .unwrap();
        assert_eq!((second.status, second.body.as_slice()), (201, &b"abc"[..]));
        // The server closed the kept connection: the request goes on a new one.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let third = client.request("GET", "/v1/c", None).await.unwrap();
        assert_eq!(third.status, 404);
        let seen = server.await.unwrap();
        assert!(
            seen[0].starts_with("GET /base/v1/a HTTP/1.1\r\n"),
            "{}",
            seen[0]
        );
        // hyper writes header names in lower case.
        assert!(seen[0].contains("authorization: Bearer frk_test\r\n"));
        assert!(seen[1].contains("content-length: 7\r\n"), "{}", seen[1]);
        assert!(seen[1].contains("content-type: application/json\r\n"));
        assert!(seen[1].ends_with("\r\n\r\n{\"x\":1}"), "{}", seen[1]);
        assert!(seen[2].starts_with("GET /base/v1/c "));
    }
}
