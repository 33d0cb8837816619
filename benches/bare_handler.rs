//! The bare reference handler as a server of its own, for the comparison with
//! an independent client (`benches/wrk/compare.sh` starts it; run alone, as
//! `cargo bench` does, it only says how to use it).
//!
//! `bare_handler serve <address> <cert.pem> <key.pem> <workers>`
//!
//! With `BARE_SYNC_DIR=<dir>` in its environment, its ingest route also makes
//! each fix durable before answering (see `durable`). That is a diagnostic, not
//! the reference: it says what the durability promise alone costs a handler
//! that does nothing else on the machine at hand, so that freight's distance
//! from the bare handler can be split into what every durable answer pays and
//! what freight adds.

#[path = "support/bare.rs"]
mod bare;

use actix_web::{App, HttpServer, web};
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
    let journal = match std::env::var_os("BARE_SYNC_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(durable::Journal::open(std::path::Path::new(&dir))?),
        None => None,
    };
    actix_rt::System::new().block_on(async move {
        HttpServer::new(move || {
            let app = App::new();
            // Registered first, so it answers the ingest route in place of the bare one.
            let app = match &journal {
                Some(journal) => app
                    .app_data(web::Data::new(journal.clone()))
                    .route("/v1/loads/{id}/tracking", web::post().to(durable::ingest)),
                None => app,
            };
            app.configure(bare::configure)
        })
        .workers(workers.parse().expect("workers is a number"))
        .bind_rustls_0_23(address.as_str(), tls)?
        .run()
        .await
    })
}

/// The bare ingest handler made durable in the simplest way there is: each
/// body is appended to one file, and answered once an `fdatasync` covers it.
/// One thread writes and syncs; whatever arrived during a sync is written and
/// synced together next (a group commit with no linger, as freight's is).
mod durable {
    use std::io::Write;
    use std::sync::mpsc;

    use actix_web::{HttpResponse, web};
    use freight::api::input::tracking::FixInput;
    use serde_json::json;
    use tokio::sync::oneshot;

    type Entry = (web::Bytes, oneshot::Sender<()>);

    #[derive(Clone)]
    pub struct Journal(mpsc::Sender<Entry>);

    impl Journal {
        /// Starts the syncing thread over a new file in `dir`.
        pub fn open(dir: &std::path::Path) -> std::io::Result<Self> {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("bare-journal"))?;
            let (sender, entries) = mpsc::channel::<Entry>();
            std::thread::Builder::new()
                .name("bare-sync".into())
                .spawn(move || {
                    let mut buffer = Vec::new();
                    while let Ok(first) = entries.recv() {
                        let mut batch = vec![first];
                        batch.extend(entries.try_iter());
                        buffer.clear();
                        for (body, _) in &batch {
                            buffer.extend_from_slice(body);
                            buffer.push(b'\n');
                        }
                        file.write_all(&buffer)
                            .expect("the journal takes the batch");
                        file.sync_data().expect("the journal syncs");
                        for (_, durable) in batch {
                            let _ = durable.send(());
                        }
                    }
                })?;
            Ok(Journal(sender))
        }
    }

    /// Parses the same body as the bare handler, then waits for it to be durable.
    pub async fn ingest(
        journal: web::Data<Journal>,
        _: web::Path<String>,
        body: web::Bytes,
    ) -> HttpResponse {
        if serde_json::from_slice::<FixInput>(&body).is_err() {
            return HttpResponse::BadRequest().finish();
        }
        let (durable, synced) = oneshot::channel();
        if journal.0.send((body, durable)).is_err() || synced.await.is_err() {
            return HttpResponse::ServiceUnavailable().finish();
        }
        HttpResponse::Created().json(json!({"success": true}))
    }
}
