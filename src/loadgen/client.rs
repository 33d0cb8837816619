//! The loadgen's HTTP/1.1 client: keep-alive connections (TLS, or plain TCP for
//! an `http://` base URL), each request written in one buffer and its answer
//! read with `httparse`, nothing else.
//!
//! Why not reqwest: a general client (URL parsing, header maps, a pool with a
//! task per connection) spent more than twice wrk's user CPU per request, and on
//! a machine the generator shares with the server that CPU comes out of the
//! server's share, so the tool measured itself (loadgen/wrk 0.70-0.86 on one
//! server). A load generator wants the cheapest correct client, as wrk is.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// Headers an answer may carry; more is refused as a malformed answer.
const MAX_HEADERS: usize = 64;
/// An answer's head must fit in this; a body may be any size.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Idle connections kept beyond this are closed rather than reused: well under
/// the idle timeouts of servers and balancers, so a reused connection is alive.
const MAX_IDLE: Duration = Duration::from_secs(4);

/// A transport's bytes, TLS or not.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

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
    /// Written before each request line's path, and the fixed headers after it.
    path_prefix: String,
    fixed_headers: String,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
}

struct Connection {
    io: Box<dyn Io>,
    /// Bytes read and not yet consumed (the start of the next answer, at most).
    buffer: Vec<u8>,
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
            fixed_headers: format!(
                "Host: {authority}\r\nAuthorization: {authorization}\r\nUser-Agent: freight-loadgen\r\n"
            ),
            idle: Mutex::new(Vec::new()),
            timeout,
        })
    }

    /// Sends `method path` (the path below the base URL) with a JSON `body`,
    /// and reads the whole answer.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Answer, Failure> {
        let mut request = String::with_capacity(256);
        request.push_str(method);
        request.push(' ');
        request.push_str(&self.path_prefix);
        request.push_str(path);
        request.push_str(" HTTP/1.1\r\n");
        request.push_str(&self.fixed_headers);
        if let Some(body) = body {
            request.push_str("Content-Type: application/json\r\nContent-Length: ");
            request.push_str(&body.len().to_string());
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        let mut request = request.into_bytes();
        request.extend_from_slice(body.unwrap_or_default());
        tokio::time::timeout(self.timeout, self.exchange(&request))
            .await
            .unwrap_or(Err(Failure::Timeout(self.timeout)))
    }

    async fn exchange(&self, request: &[u8]) -> Result<Answer, Failure> {
        if let Some(mut connection) = self.reused() {
            match connection.exchange(request).await {
                Ok((answer, keep)) => {
                    self.put_back(connection, keep);
                    return Ok(answer);
                }
                // The server closed the idle connection before it read the
                // request (nothing came back): it was not processed, so it is
                // sent again on a new connection, as browsers and hyper do.
                Err(Attempt::Unanswered(_)) => {}
                Err(Attempt::Broken(failure)) => return Err(failure),
            }
        }
        let mut connection = self.connect().await?;
        match connection.exchange(request).await {
            Ok((answer, keep)) => {
                self.put_back(connection, keep);
                Ok(answer)
            }
            Err(Attempt::Unanswered(failure) | Attempt::Broken(failure)) => Err(failure),
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
        let mut request = format!(
            "GET {}{path} HTTP/1.1\r\n{}Accept: text/event-stream\r\n",
            self.path_prefix, self.fixed_headers
        );
        if let Some(id) = last_event_id {
            request.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        request.push_str("\r\n");
        let started = Instant::now();
        let status = std::cell::Cell::new(None);
        let reading = async {
            let mut connection = self.connect().await?;
            let head = connection
                .send(request.as_bytes())
                .await
                .map_err(Attempt::failure)?;
            status.set(Some(head.status));
            if head.status != 200 {
                return Ok(());
            }
            match head.body {
                BodyKind::Chunked => {
                    while let Some(chunk) =
                        connection.next_chunk().await.map_err(Attempt::failure)?
                    {
                        each(&chunk);
                    }
                }
                _ => {
                    each(&std::mem::take(&mut connection.buffer));
                    while connection
                        .fill()
                        .await
                        .map_err(|e| Failure::Transport(e.to_string()))?
                        > 0
                    {
                        each(&std::mem::take(&mut connection.buffer));
                    }
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
            if connection.last_used.elapsed() < MAX_IDLE {
                return Some(connection);
            }
        }
        None
    }

    fn put_back(&self, mut connection: Connection, keep: bool) {
        if keep {
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
        Ok(Connection {
            io,
            buffer: Vec::with_capacity(4096),
            last_used: Instant::now(),
        })
    }
}

/// How one exchange on a connection failed.
enum Attempt {
    /// Nothing of an answer arrived and the connection ended: safe to resend.
    Unanswered(Failure),
    Broken(Failure),
}

impl Attempt {
    fn failure(self) -> Failure {
        match self {
            Attempt::Unanswered(failure) | Attempt::Broken(failure) => failure,
        }
    }
}

/// What an answer's head says about its body.
struct Head {
    status: u16,
    length: usize,
    body: BodyKind,
    keep_alive: bool,
}

enum BodyKind {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

impl Connection {
    /// Writes `request` and reads its answer; says whether the connection can
    /// carry another.
    async fn exchange(&mut self, request: &[u8]) -> Result<(Answer, bool), Attempt> {
        let head = self.send(request).await?;
        let mut keep = head.keep_alive;
        let body = match head.body {
            BodyKind::None => Vec::new(),
            BodyKind::Length(length) => {
                while self.buffer.len() < length {
                    self.fill_or_fail().await?;
                }
                self.buffer.drain(..length).collect()
            }
            BodyKind::Chunked => {
                let mut body = Vec::new();
                while let Some(chunk) = self.next_chunk().await? {
                    body.extend_from_slice(&chunk);
                }
                body
            }
            BodyKind::UntilClose => {
                keep = false;
                while self.fill().await.map_err(transport)? > 0 {}
                std::mem::take(&mut self.buffer)
            }
        };
        Ok((
            Answer {
                status: head.status,
                body,
            },
            keep,
        ))
    }

    /// Writes `request` and reads its answer's head, leaving the body's start
    /// in the buffer.
    async fn send(&mut self, request: &[u8]) -> Result<Head, Attempt> {
        let fresh = |e: io::Error| Attempt::Unanswered(Failure::Transport(e.to_string()));
        self.io.write_all(request).await.map_err(fresh)?;
        self.io.flush().await.map_err(fresh)?;
        let head = loop {
            if let Some(head) = parse_head(&self.buffer).map_err(Attempt::Broken)? {
                break head;
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err(Attempt::Broken(Failure::Transport(
                    "an answer's head is larger than 64 KiB".into(),
                )));
            }
            let empty = self.buffer.is_empty();
            match self.fill().await {
                Ok(0) if empty => {
                    return Err(Attempt::Unanswered(Failure::Transport(
                        "the server closed the connection".into(),
                    )));
                }
                Ok(0) => return Err(broken("the answer ended inside its head")),
                Ok(_) => {}
                Err(e) if empty => return Err(fresh(e)),
                Err(e) => return Err(Attempt::Broken(Failure::Transport(e.to_string()))),
            }
        };
        self.buffer.drain(..head.length);
        Ok(head)
    }

    /// The next chunk of a chunked body, `None` after the last.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, Attempt> {
        let (start, size) = loop {
            match httparse::parse_chunk_size(&self.buffer) {
                Ok(httparse::Status::Complete(found)) => break found,
                Ok(httparse::Status::Partial) => self.fill_or_fail().await?,
                Err(_) => return Err(broken("a malformed chunk size")),
            }
        };
        let size = usize::try_from(size).map_err(|_| broken("a chunk too large"))?;
        // The chunk and its CRLF.
        while self.buffer.len() < start + size + 2 {
            self.fill_or_fail().await?;
        }
        let chunk = self.buffer[start..start + size].to_vec();
        self.buffer.drain(..start + size + 2);
        // No trailers are sent by the servers this drives: after the last
        // (empty) chunk's CRLF the answer is over.
        Ok((size > 0).then_some(chunk))
    }

    /// Reads more into the buffer; 0 at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let read = self.io.read(&mut chunk).await?;
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(read)
    }

    async fn fill_or_fail(&mut self) -> Result<(), Attempt> {
        match self.fill().await.map_err(transport)? {
            0 => Err(broken("the answer ended inside its body")),
            _ => Ok(()),
        }
    }
}

fn broken(why: &str) -> Attempt {
    Attempt::Broken(Failure::Transport(why.into()))
}

fn transport(error: io::Error) -> Attempt {
    Attempt::Broken(Failure::Transport(error.to_string()))
}

/// The head at the start of `buffer`, once it is all there.
fn parse_head(buffer: &[u8]) -> Result<Option<Head>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Failure::Transport(format!("a malformed answer: {e}"))),
    };
    let status = response.code.unwrap_or(0);
    let mut keep_alive = response.version == Some(1);
    let mut body = BodyKind::UntilClose;
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let length = value
                .parse()
                .map_err(|_| Failure::Transport(format!("a bad Content-Length: {value}")))?;
            body = BodyKind::Length(length);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding")
            && value.eq_ignore_ascii_case("chunked")
        {
            body = BodyKind::Chunked;
        } else if header.name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        }
    }
    if status == 204 || status == 304 || (100..200).contains(&status) {
        body = BodyKind::None;
    }
    Ok(Some(Head {
        status,
        length,
        body,
        keep_alive,
    }))
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
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes()).unwrap().expect("complete")
    }

    #[test]
    fn a_head_says_how_its_body_ends_and_whether_the_connection_stays() {
        let sized = head("HTTP/1.1 201 Created\r\ncontent-length: 12\r\n\r\n{\"a\":1}");
        assert_eq!(sized.status, 201);
        assert!(matches!(sized.body, BodyKind::Length(12)));
        assert!(sized.keep_alive);
        let chunked =
            head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        assert!(matches!(chunked.body, BodyKind::Chunked));
        assert!(!chunked.keep_alive);
        let empty = head("HTTP/1.1 204 No Content\r\n\r\n");
        assert!(matches!(empty.body, BodyKind::None));
        let old = head("HTTP/1.0 200 OK\r\n\r\n");
        assert!(matches!(old.body, BodyKind::UntilClose));
        assert!(!old.keep_alive);
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
                .unwrap()
                .is_none()
        );
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
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
        assert!(tls.fixed_headers.starts_with("Host: localhost\r\n"));
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
                let mut request = [0u8; 1024];
                let read = first.read(&mut request).await.unwrap();
                seen.push(String::from_utf8_lossy(&request[..read]).into_owned());
                for piece in pieces {
                    first.write_all(piece).await.unwrap();
                    first.flush().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let read = second.read(&mut request).await.unwrap();
            seen.push(String::from_utf8_lossy(&request[..read]).into_owned());
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
        assert!(seen[0].contains("Authorization: Bearer frk_test\r\n"));
        assert!(
            seen[1].ends_with("Content-Length: 7\r\n\r\n{\"x\":1}"),
            "{}",
            seen[1]
        );
        assert!(seen[2].starts_with("GET /base/v1/c "));
    }
}
