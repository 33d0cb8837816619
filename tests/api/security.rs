//! The security findings of an outside review, each checked against the real
//! server: the first key's hand-over, webhook proxies from the environment.
//! (Headers: `transport.rs`; streams and their credentials: `streams.rs`;
//! sign-in throttling and users: `dashboard.rs`.)

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{first_key_in, free_port, https_client, send, until_healthy};
use crate::receiver::Receiver;

/// `freight serve` with its output not a terminal, on fresh ports; `env` is
/// added to its environment. Returns the process, its API base and its key.
async fn serve(
    data: &std::path::Path,
    log: &std::path::Path,
    env: &[(&str, String)],
) -> (tokio::process::Child, String, String) {
    freight::telemetry::install_crypto_provider();
    let (api, admin) = (free_port(), free_port());
    let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--webhooks-allow-private", "--webhooks-allow-http"])
        .args(["--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--data-dir")
        .arg(data)
        .env_remove("RUST_LOG")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::fs::File::create(data.with_extension("stdout")).unwrap())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    assert!(
        until_healthy(&format!("http://127.0.0.1:{admin}")).await,
        "the server started"
    );
    let key = first_key_in(data).await.expect("the first key's file");
    (server, format!("https://localhost:{api}/v1"), key)
}

/// Without a terminal (a service manager, a container), the first key goes to
/// a file only the service's user can read, never to the captured output, and
/// the log says where it is.
#[actix_web::test]
async fn the_first_key_is_written_to_a_private_file_without_a_terminal() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("data"), dir.path().join("freight.log"));
    let (_server, base, key) = serve(&data, &log, &[]).await;
    let file = data.join(freight::server::bootstrap::FIRST_KEY_FILE);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let stdout = std::fs::read_to_string(data.with_extension("stdout")).unwrap();
    assert!(!stdout.contains("frk_"), "{stdout}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains(&key), "the key is not logged");
    assert!(
        logged.contains(&file.display().to_string()),
        "the log names the file: {logged}"
    );
    let (status, body) = send(
        https_client(&data)
            .get(format!("{base}/auth/verify"))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// `HTTP_PROXY` and friends in the server's environment are not followed by
/// webhook deliveries: through a proxy the address check would be skipped.
#[actix_web::test]
async fn webhook_deliveries_ignore_proxy_variables() {
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    proxy.set_nonblocking(true).unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let env: Vec<(&str, String)> = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy"]
        .into_iter()
        .map(|name| (name, proxy_url.clone()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("data"), dir.path().join("freight.log"));
    let (_server, base, key) = serve(&data, &log, &env).await;
    let receiver = Receiver::start(200).await;
    let client = https_client(&data);
    let (status, created) = send(
        client
            .post(format!("{base}/webhooks"))
            .bearer_auth(&key)
            .json(&json!({"url": format!("{}/hook", receiver.base), "events": ["load.created"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["data"]["id"].as_str().unwrap();
    let (status, tested) = send(
        client
            .post(format!("{base}/webhooks/{id}/test"))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tested}");
    assert_eq!(tested["data"]["delivered"], true, "{tested}");
    assert_eq!(receiver.received().len(), 1);
    assert!(
        proxy.accept().is_err(),
        "nothing connected to the proxy of the environment"
    );
}

/// Device tokens travel in query strings (OsmAnd, Traccar Client, GPSLogger):
/// no log line of the server carries one, at the most verbose level, whether
/// the token works or not.
#[actix_web::test]
async fn device_tokens_are_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("data"), dir.path().join("freight.log"));
    let (_server, base, key) = serve(&data, &log, &[("RUST_LOG", "trace".to_owned())]).await;
    let client = https_client(&data);
    let (status, created) = send(
        client
            .post(format!("{base}/devices"))
            .bearer_auth(&key)
            .json(&json!({"name": "Truck"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let token = created["data"]["token"].as_str().unwrap().to_owned();
    let forged = format!("{}{}", &token[..token.len() - 64], "ab".repeat(32));
    for (id, expected) in [
        (&token, StatusCode::OK),
        (&forged, StatusCode::UNAUTHORIZED),
    ] {
        let url = format!("{base}/ingest/osmand?id={id}&lat=32.7&lon=-96.8&batt=50");
        let response = client.post(&url).send().await.unwrap();
        assert_eq!(response.status(), expected);
    }
    // A request that fails to parse, with the token in it, is not logged either.
    let response = client
        .get(format!("{base}/ingest/osmand?id={token}&lat=bad&lon=-96.8"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("/v1/ingest/osmand"),
        "the requests are logged"
    );
    let secret = &token[token.len() - 64..];
    assert!(!logged.contains(secret), "a token's secret is in the log");
    assert!(!logged.contains(&forged[forged.len() - 64..]));
}
