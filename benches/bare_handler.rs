//! The bare reference handler as a server of its own, for the comparison with
//! an independent client (`benches/wrk/compare.sh` starts it; run alone, as
//! `cargo bench` does, it only says how to use it).
//!
//! `bare_handler serve <address> <cert.pem> <key.pem> <workers>`
//!
//! With `BARE_SYNC_DIR=<dir>` in its environment, its ingest route also makes
//! each fix durable before answering (see `durable`): the reference for GPS
//! ingest, which makes the promise freight makes (a 2xx means durable) and
//! nothing else. With `BARE_SYNC_STORE=embedded` as well, each fix is made
//! durable through freight's own GPS write path instead of a plain file (its
//! embedded store in that directory, fed by its group committer): freight's
//! distance from that one is its own work, the store held equal
//! (`benches/wrk/store_cost.sh` compares the two references). With
//! `BARE_SYNC_STORE=cql`, the same through freight's CQL store instead, in the
//! keyspace `BARE_SCYLLA_KEYSPACE` (migrated beforehand) of the cluster at
//! `BARE_SCYLLA_NODES`: the same statements at the same consistency through
//! the same driver, the reference for `--storage scylla`. None pins a thread
//! to a CPU, as freight does with fewer workers than CPUs.

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
    let sync_dir = std::env::var_os("BARE_SYNC_DIR").filter(|dir| !dir.is_empty());
    let store = std::env::var("BARE_SYNC_STORE").unwrap_or_default();
    actix_rt::System::new().block_on(async move {
        let journal = match (sync_dir, store.as_str()) {
            (Some(dir), "embedded") => Some(durable::Journal::open_store(dir.as_ref()).await?),
            (Some(_), "cql") => Some(durable::Journal::open_cql().await?),
            (Some(dir), "") => Some(durable::Journal::open(dir.as_ref())?),
            (Some(_), other) => {
                panic!("BARE_SYNC_STORE is `embedded`, `cql` or unset, not `{other}`")
            }
            (None, _) => None,
        };
        HttpServer::new(move || {
            let app = App::new();
            // Registered first, so it answers the ingest route in place of the bare one.
            let app = match &journal {
                Some(journal) => app
                    .app_data(web::Data::new(journal.clone()))
                    .route("/v1/loads/{id}/tracking", web::post().to(durable::ingest))
                    .route("/v1/tracking/batch", web::post().to(durable::batch)),
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
/// fix is appended to one file as a text line, and answered once an
/// `fdatasync` covers it.
/// One thread writes and syncs; whatever arrived during a sync is written and
/// synced together next (a group commit with no linger, as freight's is).
/// Or, opened with `open_store`, through freight's own store and committer.
mod durable {
    use std::io::Write;
    use std::sync::{Arc, mpsc};

    use actix_web::{HttpResponse, web};
    use freight::api::input::tracking::FixInput;
    use freight::domain::ids::LoadId;
    use freight::domain::tracking::TrackingPoint;
    use freight::domain::validation::ValidationErrors;
    use freight::services::tracking::group_commit::GroupCommitter;
    use freight::storage::embedded::EmbeddedStore;
    use freight::storage::scylla::{ScyllaConfig, ScyllaStore};
    use tokio::sync::oneshot;

    type Entry = (Vec<u8>, oneshot::Sender<()>);

    #[derive(Clone)]
    pub enum Journal {
        File(FileJournal),
        Store(GroupCommitter),
    }

    impl Journal {
        /// Freight's embedded store in `dir`, written by freight's group committer.
        pub async fn open_store(dir: &std::path::Path) -> std::io::Result<Self> {
            let store = EmbeddedStore::open(&dir.join("store"))
                .await
                .map_err(std::io::Error::other)?;
            let (committer, _thread) = GroupCommitter::start(Arc::new(store))?;
            Ok(Journal::Store(committer))
        }

        /// Freight's CQL store over `BARE_SCYLLA_KEYSPACE` at `BARE_SCYLLA_NODES`,
        /// written by freight's group committer.
        pub async fn open_cql() -> std::io::Result<Self> {
            let setting = |name: &str| {
                std::env::var(name)
                    .map_err(|_| std::io::Error::other(format!("{name} is required with cql")))
            };
            let config = ScyllaConfig {
                nodes: ScyllaConfig::parse_nodes(&setting("BARE_SCYLLA_NODES")?),
                keyspace: setting("BARE_SCYLLA_KEYSPACE")?,
                local_dc: None,
                credentials: None,
            };
            let store = Box::pin(ScyllaStore::open(&config))
                .await
                .map_err(std::io::Error::other)?;
            let (committer, _thread) = GroupCommitter::start(Arc::new(store))?;
            Ok(Journal::Store(committer))
        }

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
                        for (line, _) in &batch {
                            buffer.extend_from_slice(line);
                        }
                        file.write_all(&buffer)
                            .expect("the journal takes the batch");
                        file.sync_data().expect("the journal syncs");
                        for (_, durable) in batch {
                            let _ = durable.send(());
                        }
                    }
                })?;
            Ok(Journal::File(FileJournal(sender)))
        }
    }

    /// The answer to a durable fix: a small JSON body written as bytes.
    const STORED: &str = r#"{"success":true}"#;

    /// Parses the same body as the bare handler, then waits for it to be
    /// durable: to a file, as one text line (load, position, time); to the
    /// store, as the point freight stores. Nothing else: no path extractor,
    /// no JSON value built for the answer.
    pub async fn ingest(
        journal: web::Data<Journal>,
        req: actix_web::HttpRequest,
        body: web::Bytes,
    ) -> HttpResponse {
        let Ok(fix) = serde_json::from_slice::<FixInput>(&body) else {
            return HttpResponse::BadRequest().finish();
        };
        let load = req.match_info().get("id").unwrap_or_default();
        let durable = match journal.get_ref() {
            Journal::File(file) => file.append(line(load, &fix)).await,
            Journal::Store(committer) => match point(load, fix) {
                Some(point) => committer.append(vec![point]).await.is_ok(),
                None => return HttpResponse::BadRequest().finish(),
            },
        };
        if !durable {
            return HttpResponse::ServiceUnavailable().finish();
        }
        HttpResponse::Created()
            .content_type("application/json")
            .body(STORED)
    }

    /// `<load> <lat> <lng> <timestamp>`, the fix as a text line.
    fn line(load: &str, fix: &FixInput) -> Vec<u8> {
        let mut line = Vec::with_capacity(96);
        let (lat, lng) = (fix.lat.unwrap_or(f64::NAN), fix.lng.unwrap_or(f64::NAN));
        let time = fix.timestamp.as_deref().unwrap_or_default();
        writeln!(line, "{load} {lat} {lng} {time}").expect("a Vec takes any line");
        line
    }

    #[derive(serde::Deserialize)]
    pub struct Batch {
        points: Vec<FixInput>,
    }

    /// A batch parsed as the bare handler's, each point made durable (one
    /// line, or one submission to the committer) before answering.
    pub async fn batch(journal: web::Data<Journal>, body: web::Bytes) -> HttpResponse {
        let Ok(batch) = serde_json::from_slice::<Batch>(&body) else {
            return HttpResponse::BadRequest().finish();
        };
        let durable = match journal.get_ref() {
            Journal::File(file) => {
                let mut lines = body.to_vec();
                lines.push(b'\n');
                file.append(lines).await
            }
            Journal::Store(committer) => {
                let mut points = Vec::with_capacity(batch.points.len());
                for mut fix in batch.points {
                    let load = fix.load_id.take().unwrap_or_default();
                    match point(&load, fix) {
                        Some(point) => points.push(point),
                        None => return HttpResponse::BadRequest().finish(),
                    }
                }
                committer.append(points).await.is_ok()
            }
        };
        if !durable {
            return HttpResponse::ServiceUnavailable().finish();
        }
        HttpResponse::Ok()
            .content_type("application/json")
            .body(STORED)
    }

    /// The store keeps points by load and time: the fix validated into one,
    /// as freight's ingest does, and nothing else done.
    fn point(load: &str, fix: FixInput) -> Option<TrackingPoint> {
        let mut errors = ValidationErrors::new();
        Some(TrackingPoint {
            load_id: LoadId::parse(load)?,
            fix: fix.validate("", chrono::Utc::now(), &mut errors)?,
            event: None,
            stops: None,
        })
    }

    /// The syncing thread's queue.
    #[derive(Clone)]
    pub struct FileJournal(mpsc::Sender<Entry>);

    impl FileJournal {
        /// Appends `line`; true once an fdatasync covers it.
        async fn append(&self, line: Vec<u8>) -> bool {
            let (durable, synced) = oneshot::channel();
            self.0.send((line, durable)).is_ok() && synced.await.is_ok()
        }
    }
}
