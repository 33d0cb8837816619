//! The internal listener: only requests signed with the cluster secret, each
//! once, for exactly its head (authority headers, client, origin included)
//! and body; a bad signature is refused before the body is read.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::signing::{SignedHead, new_nonce};
use super::*;

const PATH: &str = "/v1/loads";

fn right() -> ClusterSecret {
    ClusterSecret::parse("a-cluster-secret-of-32-characters!!").unwrap()
}

/// The headers of a GET of `PATH` signed with `secret` for `head`.
fn signed(secret: &ClusterSecret, head: &SignedHead) -> Vec<(&'static str, String)> {
    let (signature, body_signature) = secret.sign(head, b"");
    vec![
        ("x-freight-cluster-time", head.time.to_string()),
        ("x-freight-cluster-nonce", head.nonce.clone()),
        ("x-freight-cluster-length", head.length.to_string()),
        ("x-freight-cluster-client", head.client.clone()),
        ("x-freight-cluster-origin", head.origin.clone()),
        ("x-freight-cluster-signature", signature),
        ("x-freight-cluster-body-signature", body_signature),
    ]
}

fn head(key: &str) -> SignedHead {
    SignedHead {
        time: Utc::now().timestamp(),
        nonce: new_nonce(),
        method: "GET".into(),
        path_and_query: PATH.into(),
        length: 0,
        authorization: Some(format!("Bearer {key}")),
        cookie: None,
        idempotency_key: None,
        client: "203.0.113.7".into(),
        origin: "https://freight.example.com".into(),
    }
}

async fn send(cluster: &Cluster, key: &str, headers: &[(&'static str, String)]) -> (u16, Value) {
    let internal = &cluster.instances[0].internal;
    let mut request = reqwest::Client::new()
        .get(format!("http://{internal}{PATH}"))
        .bearer_auth(key)
        .header("x-forwarded-proto", "https");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[actix_rt::test]
async fn the_internal_listener_takes_only_requests_signed_with_the_cluster_secret() {
    let cluster = cluster_of(1).await;
    let key = cluster.key.clone();
    let wrong = ClusterSecret::parse("another-secret-of-32-characters!!!!").unwrap();
    let other_path = SignedHead {
        path_and_query: "/v1/carriers".into(),
        ..head(&key)
    };
    let long_ago = SignedHead {
        time: Utc::now().timestamp() - 600,
        ..head(&key)
    };
    let other_key = SignedHead {
        authorization: Some("Bearer frk_someone_else".into()),
        ..head(&key)
    };
    let mut other_client = signed(&right(), &head(&key));
    other_client[3].1 = "198.51.100.1".into();
    for (what, headers) in [
        ("unsigned", vec![]),
        ("signed with another secret", signed(&wrong, &head(&key))),
        ("signed for another request", signed(&right(), &other_path)),
        ("signed too long ago", signed(&right(), &long_ago)),
        ("signed for another key", signed(&right(), &other_key)),
        ("sent with another client address", other_client),
    ] {
        let (status, refusal) = send(&cluster, &key, &headers).await;
        assert_eq!(status, 401, "{what}");
        assert_eq!(
            refusal["error"]["code"], "CLUSTER_SIGNATURE_INVALID",
            "{what}: {refusal}"
        );
    }
    // Signed right, the request is served (with the client's own key), once.
    let headers = signed(&right(), &head(&key));
    let (status, body) = send(&cluster, &key, &headers).await;
    assert_eq!(status, 200, "{body}");
    let (status, refusal) = send(&cluster, &key, &headers).await;
    assert_eq!(status, 401, "a replay: {refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{refusal}"
    );
}

/// A request whose head is not signed is refused without its body being
/// waited for: a peer that declares 16 MiB and sends nothing hears 401 at once.
#[actix_rt::test]
async fn an_unsigned_request_is_refused_before_its_body_is_read() {
    let cluster = cluster_of(1).await;
    let internal = &cluster.instances[0].internal;
    let mut tcp = tokio::net::TcpStream::connect(internal.as_str())
        .await
        .unwrap();
    let head = format!(
        "POST {FIXES_PATH} HTTP/1.1\r\nHost: {internal}\r\nContent-Type: application/json\r\n\
         X-Forwarded-Proto: https\r\nContent-Length: 16000000\r\n\r\n",
        FIXES_PATH = super::super::forward::FIXES_PATH
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(8), tcp.read(&mut answer))
        .await
        .expect("an answer while the body was not sent")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..read]);
    assert!(text.starts_with("HTTP/1.1 401 "), "{text}");
}
