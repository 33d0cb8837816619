//! The bare reference handler as written outside freight: parses the bodies
//! freight's GPS routes take and answers, nothing else. Same command line as
//! freight's own `bare_handler` bench, so `compare.sh` can start either:
//!
//! `outside_bare serve <address> <cert.pem> <key.pem> <workers>`

use actix_web::{web, App, HttpResponse, HttpServer};
use rustls_pki_types::pem::PemObject;
use serde::Deserialize;

#[derive(Deserialize)]
#[allow(dead_code)]
struct Fix {
    load_id: Option<String>,
    lat: f64,
    lng: f64,
    timestamp: String,
    speed: Option<f64>,
    heading: Option<f64>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Batch {
    points: Vec<Fix>,
}

async fn ingest(_: web::Path<String>, body: web::Json<Fix>) -> HttpResponse {
    let _ = body.into_inner();
    HttpResponse::Created().json(serde_json::json!({"success": true}))
}

async fn read(_: web::Path<String>) -> HttpResponse {
    HttpResponse::Ok()
        .json(serde_json::json!({"success": true, "data": {"lat": 33.0, "lng": -95.0}}))
}

async fn batch(body: web::Json<Batch>) -> HttpResponse {
    let _ = body.into_inner();
    HttpResponse::Ok().json(serde_json::json!({"success": true}))
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, command, address, cert, key, workers] = args.as_slice() else {
        eprintln!("usage: outside_bare serve <address> <cert.pem> <key.pem> <workers>");
        std::process::exit(2);
    };
    assert_eq!(command, "serve", "the only command is serve");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = rustls_pki_types::CertificateDer::pem_file_iter(cert)
        .expect("certificate file")
        .collect::<Result<Vec<_>, _>>()
        .expect("certificates");
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key).expect("key file");
    let tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("TLS configuration");
    let workers: usize = workers.parse().expect("workers is a number");
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(|| {
            App::new()
                // A bulk request is up to 1,000 points: past actix's 32 KiB default.
                .app_data(web::JsonConfig::default().limit(1 << 20))
                .route("/v1/loads/{id}/tracking", web::post().to(ingest))
                .route("/v1/loads/{id}/tracking", web::get().to(read))
                .route("/v1/tracking/batch", web::post().to(batch))
        })
        .workers(workers)
        .bind_rustls_0_23(address.as_str(), tls)?
        .run()
        .await
    })
}
