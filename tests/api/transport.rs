//! HTTPS only, unknown routes and methods, the admin listener, proxy mode.

use std::io::{Read, Write};

use freight::server::settings::ApiTransport;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{assert_error, send, spawn_app, spawn_app_with};

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
