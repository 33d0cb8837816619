//! The bare reference handler as a server of its own, for the comparison with
//! an independent client (`benches/wrk/compare.sh` starts it; run alone, as
//! `cargo bench` does, it only says how to use it).
//!
//! `bare_handler serve <address> <cert.pem> <key.pem> <workers>`

#[path = "support/bare.rs"]
mod bare;

use actix_web::{App, HttpServer};
use rustls_pki_types::pem::PemObject;

/// The allocator `freight`'s binary uses, so the comparison is like for like.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, command, address, cert, key, workers] = args.as_slice() else {
        println!(
            "bare_handler: started by benches/wrk/compare.sh (serve <address> <cert> <key> <workers>)"
        );
        return Ok(());
    };
    assert_eq!(command, "serve", "the only command is serve");
    freight::telemetry::install_crypto_provider();
    let certs = rustls_pki_types::CertificateDer::pem_file_iter(cert)
        .expect("certificate file")
        .collect::<Result<Vec<_>, _>>()
        .expect("certificates");
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key).expect("key file");
    let tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("TLS configuration");
    actix_rt::System::new().block_on(async move {
        HttpServer::new(|| App::new().configure(bare::configure))
            .workers(workers.parse().expect("workers is a number"))
            .bind_rustls_0_23(address.as_str(), tls)?
            .run()
            .await
    })
}
