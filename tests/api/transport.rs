//! HTTPS only, unknown routes and methods, the admin listener, proxy mode.

use std::io::{Read, Write};

use freight::server::settings::ApiTransport;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, send, spawn_app, spawn_app_with};

/// Sends `request` over a plain TCP socket and returns everything the server said.
fn raw_exchange(port: u16, request: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[actix_web::test]
async fn plain_http_is_refused_with_a_clear_error_and_never_served() {
    let app = spawn_app().await;
    let port = app.api_port;
    let key = app.key.clone();
    let body = r#"{"origin":{"city":"Dallas","state":"TX","zip":"75201"},"destination":{"city":"Atlanta","state":"GA","zip":"30301"},"weight":1,"equipment_type":"dry_van"}"#;
    let request = format!(
        "POST /v1/loads HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = tokio::task::spawn_blocking(move || raw_exchange(port, &request))
        .await
        .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    let json_body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json_body["success"], false);
    assert_eq!(json_body["error"]["code"], "HTTPS_REQUIRED");

    // Through a real HTTP client too.
    let (status, body) =
        send(reqwest::Client::new().get(format!("http://127.0.0.1:{port}/v1/loads"))).await;
    assert_error(status, &body, 400, "HTTPS_REQUIRED");

    // Nothing was created, and HTTPS still works on the same port.
    let (status, list) = app.get("/loads").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["data"]["total"], 0);
}

#[actix_web::test]
async fn unknown_routes_and_methods_answer_in_the_envelope() {
    let app = spawn_app().await;
    let (status, body) = app.get("/nothing-here").await;
    assert_error(status, &body, 404, "NOT_FOUND");
    // `/` is the dashboard's door (it answered a JSON 404 before the dashboard).
    let pem = std::fs::read(app.data_dir.path().join("tls/cert.pem")).unwrap();
    let browser = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let root = browser
        .get(format!("https://localhost:{}/", app.api_port))
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), StatusCode::SEE_OTHER);
    assert_eq!(root.headers()["location"], "/dashboard");
    let (status, body) = send(
        app.client
            .get(format!("https://localhost:{}/elsewhere", app.api_port)),
    )
    .await;
    assert_error(status, &body, 404, "NOT_FOUND");
    let response = app
        .client
        .delete(app.url("/loads"))
        .bearer_auth(&app.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["allow"], "GET, POST");
    let (status, body) = send(app.client.delete(app.url("/loads")).bearer_auth(&app.key)).await;
    let error = assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
    assert_eq!(error["details"]["allowed_methods"], json!(["GET", "POST"]));
    let (status, body) = send(app.client.put(app.url("/carriers")).bearer_auth(&app.key)).await;
    assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
}

#[actix_web::test]
async fn the_admin_listener_needs_its_token() {
    let app = spawn_app().await;
    let (status, body) =
        send(reqwest::Client::new().get(format!("{}/admin/v1/accounts", app.admin_base))).await;
    assert_error(status, &body, 401, "INVALID_ADMIN_TOKEN");
    let (status, body) = send(
        reqwest::Client::new()
            .get(format!("{}/admin/v1/accounts", app.admin_base))
            .bearer_auth(&app.key),
    )
    .await;
    assert_error(status, &body, 401, "INVALID_ADMIN_TOKEN");
    let (status, body) = app.admin(Method::GET, "/accounts", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"]["accounts"][0]["id"], app.account_id.as_str());

    let (status, body) = app.admin(Method::DELETE, "/accounts", None).await;
    assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");

    let (status, health) =
        send(reqwest::Client::new().get(format!("{}/health", app.admin_base))).await;
    assert_eq!((status, health), (StatusCode::OK, json!({"status": "ok"})));
    let (status, ready) =
        send(reqwest::Client::new().get(format!("{}/ready", app.admin_base))).await;
    assert_eq!(
        (status, ready),
        (StatusCode::OK, json!({"status": "ready"}))
    );
}

#[actix_web::test]
async fn the_admin_listener_refuses_non_loopback_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = freight::server::settings::Settings::ephemeral(dir.path().to_owned());
    settings.admin_listen = "0.0.0.0:0".parse().unwrap();
    let error = freight::server::startup::Application::build(settings)
        .await
        .err()
        .expect("refused");
    assert!(error.to_string().contains("loopback"), "{error}");
}

#[actix_web::test]
async fn behind_a_tls_proxy_forwarded_proto_decides() {
    let app = spawn_app_with(|s| s.transport = ApiTransport::BehindTlsProxy).await;
    let url = format!("http://127.0.0.1:{}/v1/auth/verify", app.api_port);
    let client = reqwest::Client::new();
    let (status, body) = send(client.get(&url).bearer_auth(&app.key)).await;
    assert_error(status, &body, 400, "HTTPS_REQUIRED");
    let (status, body) = send(
        client
            .get(&url)
            .bearer_auth(&app.key)
            .header("X-Forwarded-Proto", "http"),
    )
    .await;
    assert_error(status, &body, 400, "HTTPS_REQUIRED");
    let (status, body) = send(
        client
            .get(&url)
            .bearer_auth(&app.key)
            .header("X-Forwarded-Proto", "https"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[actix_web::test]
async fn the_first_start_key_is_made_once_and_can_be_turned_off() {
    let app = spawn_app().await;
    assert!(app.key.starts_with("frk_"));
    let restarted = app.restart().await;
    let (status, accounts) = restarted.admin(Method::GET, "/accounts", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(accounts["data"]["accounts"].as_array().unwrap().len(), 1);

    let quiet = spawn_app_with(|s| s.bootstrap_key = false).await;
    assert!(quiet.key.is_empty());
    let (_, accounts) = quiet.admin(Method::GET, "/accounts", None).await;
    assert_eq!(accounts["data"]["accounts"], json!([]));
}

/// Writes `head` and `body` over TLS the way Python's `http.client` and most
/// SDKs do (the whole body, then read; no `Expect: 100-continue`), and
/// returns the answer's status line, or why there was none.
pub async fn write_all_then_read(app: &TestApp, head: &str, body: &[u8]) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(app.data_dir.path().join("tls/cert.pem")).unwrap();
    use rustls_pki_types::pem::PemObject;
    for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", app.api_port))
        .await
        .unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.write_all(head.as_bytes())
        .await
        .map_err(|e| format!("writing the head: {e}"))?;
    tls.write_all(body)
        .await
        .map_err(|e| format!("writing the body: {e}"))?;
    tls.flush().await.map_err(|e| format!("flushing: {e}"))?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match tls.read(&mut chunk).await {
            Ok(0) => return Err("the connection ended before an answer".into()),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("reading: {e}")),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// A refusal that comes before the body is read (a bad key, an unknown route,
/// a body over the limit) still reaches a client that writes its whole body
/// before reading: the unread body is read and dropped first. Closing with it
/// unread reset the connection, and such clients saw a TLS EOF, not the 401.
#[actix_web::test]
async fn a_refusal_before_the_body_is_read_still_reaches_the_client() {
    let app = spawn_app().await;
    let body = vec![b'a'; 2_000_000];
    let head = |path: &str, key: &str| {
        format!(
            "POST /v1{path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    };
    for (path, key, status) in [
        ("/loads", "frk_nope", "401"),
        ("/tracking/batch", "frk_nope", "401"),
        ("/nowhere", app.key.as_str(), "404"),
        ("/loads", app.key.as_str(), "413"),
    ] {
        for attempt in 0..3 {
            let line = write_all_then_read(&app, &head(path, key), &body)
                .await
                .unwrap_or_else(|why| panic!("{path} attempt {attempt}: {why}"));
            assert!(
                line.starts_with(&format!("HTTP/1.1 {status} ")),
                "{path}: {line}"
            );
        }
    }
}

/// Every answer says `nosniff`, and every answer sent over HTTPS pins HTTPS for
/// a year: API answers and refusals, the dashboard, the documentation, the
/// admin listener; the plain-HTTP refusal says `nosniff` but never pins.
#[actix_web::test]
async fn every_answer_carries_the_transport_headers() {
    let app = spawn_app().await;
    let https = [
        app.client
            .get(app.url("/auth/verify"))
            .bearer_auth(&app.key),
        app.client.get(app.url("/loads")),
        app.client
            .get(app.url("/nothing-here"))
            .bearer_auth(&app.key),
        app.client.put(app.url("/carriers")).bearer_auth(&app.key),
        app.client.get(app.url("/openapi.json")),
        app.client.get(app.url("/docs")),
        app.client.get(format!(
            "https://localhost:{}/dashboard/login",
            app.api_port
        )),
        app.client.get(format!(
            "https://localhost:{}/dashboard/assets/dashboard.css",
            app.api_port
        )),
    ];
    for request in https {
        let response = request.send().await.expect("answered");
        let (url, headers) = (response.url().clone(), response.headers());
        assert_eq!(headers["x-content-type-options"], "nosniff", "{url}");
        assert_eq!(
            headers["strict-transport-security"], "max-age=31536000",
            "{url}"
        );
    }
    for path in ["/health", "/metrics", "/admin/v1/accounts"] {
        let response = reqwest::get(format!("{}{path}", app.admin_base))
            .await
            .unwrap();
        assert_eq!(
            response.headers().get("x-content-type-options"),
            Some(&reqwest::header::HeaderValue::from_static("nosniff")),
            "{path}: {response:?}"
        );
    }
    let port = app.api_port;
    let answer = tokio::task::spawn_blocking(move || {
        raw_exchange(port, "GET /v1/loads HTTP/1.1\r\nHost: localhost\r\n\r\n")
    })
    .await
    .unwrap();
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    assert!(!head.contains("strict-transport-security"), "{head}");
}
