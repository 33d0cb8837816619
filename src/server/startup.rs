//! Builds the whole service from [`Settings`]: storage, services, the HTTPS API
//! listener and the loopback admin listener. Tests call [`Application::build`] with
//! port 0 and so run exactly what production runs.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_http::{HttpService, KeepAlive};
use actix_server::{Server, ServerHandle};
use actix_service::map_config;
use actix_web::dev::AppConfig;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::{Context, bail};

use super::admin::{self, AdminToken};
use super::bootstrap::{BootstrapKey, ensure_first_account};
use super::wiring::{join_cluster, start_services};
use super::{admin_token, plain_http, secrets_key, tls};
use crate::api::auth::TransportPolicy;
use crate::api::extract::BodyLimit;
use crate::cpu_placement::CpuPlacement;
use crate::routes;
use crate::server::settings::{ApiTransport, Settings};
use crate::services::Services;
use crate::services::auth::ConnectionAuth;
use crate::services::live::LiveHub;
use crate::storage::{self, Storage, StorageConfig};

/// Idle keep-alive connections are closed after this (telematics devices reuse them).
const KEEP_ALIVE: Duration = Duration::from_secs(75);
/// A client must send its request head within this.
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Webhook attempts in flight at shutdown get this long to finish and be recorded.
const WEBHOOK_DRAIN: Duration = Duration::from_secs(15);
/// In-flight requests get this long to finish on shutdown.
const SHUTDOWN_GRACE_SECS: u64 = 30;

pub struct Application {
    api_addr: SocketAddr,
    admin_addr: SocketAddr,
    bootstrap: Option<BootstrapKey>,
    services: Services,
    api: Server,
    admin: Server,
    /// With a shared store: where other instances forward requests.
    internal: Option<Server>,
    /// The hardware trackers' TCP listeners (none unless asked for).
    trackers: super::trackers::Trackers,
    /// The MQTT subscription (none unless a broker is configured).
    mqtt: super::mqtt::Mqtt,
}

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        // Installs the metrics recorder before anything reports to it.
        crate::telemetry::metrics();
        super::metrics_catalog::register();
        if !settings.admin_listen.ip().is_loopback() {
            if !settings.admin_allow_remote {
                bail!(
                    "the admin listener must bind a loopback address, not {} \
                     (--admin-allow-remote permits it, for a private network)",
                    settings.admin_listen
                );
            }
            tracing::warn!(admin_listen = %settings.admin_listen, "the admin listener is reachable from other machines (--admin-allow-remote); keep it off public networks");
        }
        super::data_dir::prepare(&settings.data_dir)?;
        let storage = open_storage(&settings).await?;
        Self::build_over(settings, storage).await
    }

    /// As [`Self::build`], over a store already open (tests run several
    /// instances over one store this way).
    pub async fn build_over(settings: Settings, storage: Arc<dyn Storage>) -> anyhow::Result<Self> {
        let placement = Arc::new(CpuPlacement::plan(settings.cpu_pinning, settings.workers));
        if placement.pins() {
            tracing::info!("{}", placement.describe());
        }
        let services = start_services(storage, &settings, placement.clone())
            .await
            .context("starting the services")?;
        let cluster = match &settings.cluster {
            Some(cluster_settings) => Some(join_cluster(&services, cluster_settings).await?),
            None if services.storage.needs_leases() => bail!(
                "several instances share this store: give each the cluster secret and its \
                 internal listener (--cluster-secret, --internal-listen, --internal-address), so \
                 that any instance can serve any request"
            ),
            None => None,
        };
        let token = admin_token::load_or_create(&settings.data_dir)?;

        let api_listener = TcpListener::bind(settings.listen)
            .with_context(|| format!("binding the API listener to {}", settings.listen))?;
        let api_addr = api_listener.local_addr()?;
        let admin_listener = TcpListener::bind(settings.admin_listen)
            .with_context(|| format!("binding the admin listener to {}", settings.admin_listen))?;
        let admin_addr = admin_listener.local_addr()?;

        let internal = match (&settings.cluster, &cluster) {
            (Some(cluster_settings), Some(cluster)) => {
                let listener =
                    TcpListener::bind(cluster_settings.internal_listen).with_context(|| {
                        format!(
                            "binding the internal listener to {}",
                            cluster_settings.internal_listen
                        )
                    })?;
                Some((listener, cluster_settings.secret.clone(), cluster.clone()))
            }
            _ => None,
        };
        let forwarder = cluster
            .clone()
            .map(|c| web::Data::from(c as Arc<dyn crate::api::forward::ForwardRequests>));
        let api = api_server(&settings, &services, api_listener, placement, forwarder)?;
        let links = crate::api::origin::PublicOrigin::new(
            settings.public_url.as_deref(),
            matches!(settings.transport, ApiTransport::BehindTlsProxy),
            api_addr,
        );
        let admin = admin_server(&services, token, links, admin_listener)?;
        let internal = match internal {
            Some((listener, secret, _)) => Some(super::cluster::internal::server(
                &services,
                secret,
                listener,
                settings.workers,
                web::Data::new(crate::api::idempotency::KnownRoutes::new(
                    routes::all_routes(),
                )),
                BodyLimit(settings.body_limit),
                settings.map.clone(),
            )?),
            None => None,
        };
        let trackers = start_trackers(&settings, &services)?;
        let mqtt = super::mqtt::start(&settings.mqtt, device_feed(&services), &settings.data_dir)?;
        let _ = services
            .device_listeners
            .set(device_listeners(&trackers, &settings.mqtt));
        // Last, once nothing else can fail: a first-start key that is created but
        // never printed would be lost for good.
        let bootstrap = if settings.bootstrap_key {
            ensure_first_account(&services).await?
        } else {
            None
        };
        Ok(Application {
            api_addr,
            admin_addr,
            bootstrap,
            services,
            api,
            admin,
            internal,
            trackers,
            mqtt,
        })
    }

    /// Where the tracker listener for `protocol` listens, if one was asked for.
    pub fn tracker_addr(&self, protocol: super::trackers::TrackerProtocol) -> Option<SocketAddr> {
        self.trackers.addr(protocol)
    }

    pub fn api_addr(&self) -> SocketAddr {
        self.api_addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// The key created on first start, if this start was the first.
    pub fn bootstrap_key(&self) -> Option<&BootstrapKey> {
        self.bootstrap.as_ref()
    }

    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Handles to stop the listeners (API first, the internal one last: a
    /// request forwarded here is answered while this instance drains).
    pub fn handles(&self) -> Vec<ServerHandle> {
        let mut handles = vec![self.api.handle(), self.admin.handle()];
        handles.extend(self.internal.as_ref().map(Server::handle));
        handles
    }

    /// Serves until both listeners stop. SIGINT/SIGTERM stop them gracefully: no
    /// new connections, requests in flight finish (their GPS points committed
    /// before they are answered), then webhook attempts in flight are let finish
    /// and recorded. Every event not yet delivered is in the outbox already.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        // The servers are built with actix-server's signal handling off: on SIGTERM
        // it stops the whole actix System once its listeners have drained, which
        // also stopped the webhook dispatcher's arbiter before it could finish the
        // attempts in flight (a race, lost now and then). Here a signal stops the
        // listeners only, and the System ends when this returns.
        let handles = self.handles();
        let (trackers, mqtt) = (self.trackers.clone(), self.mqtt.clone());
        let signals = tokio::spawn(async move {
            let signal = stop_signal().await;
            tracing::info!("{signal} received; starting graceful shutdown");
            trackers.stop();
            mqtt.stop();
            for handle in handles {
                handle.stop(true).await;
            }
        });
        let internal = async move {
            match self.internal {
                Some(internal) => internal.await,
                None => Ok(()),
            }
        };
        let (api, admin, internal) = tokio::join!(self.api, self.admin, internal);
        signals.abort();
        // However the listeners were stopped (a signal, or a test's handles).
        self.trackers.stop();
        self.mqtt.stop();
        self.services.actors.release_leases().await;
        if !self.services.webhooks.drain(WEBHOOK_DRAIN).await {
            tracing::warn!(
                "webhook attempts still in flight at shutdown; they are retried after the next start"
            );
        }
        api.and(admin).and(internal)
    }
}

/// The tracker listeners, with the API's certificate for those on TLS.
fn start_trackers(
    settings: &Settings,
    services: &Services,
) -> anyhow::Result<super::trackers::Trackers> {
    let wants_tls = settings.trackers.listeners.iter().any(|l| l.tls);
    let tls = match (&settings.transport, wants_tls) {
        (ApiTransport::Tls(source), true) => Some(tls::server_config(source, &settings.data_dir)?),
        _ => None,
    };
    super::trackers::start(&settings.trackers, device_feed(services), tls)
}

/// Where trackers and OwnTracks devices reach this service, as the dashboard
/// tells people.
fn device_listeners(
    trackers: &super::trackers::Trackers,
    mqtt: &super::mqtt::MqttSettings,
) -> crate::services::device_feed::DeviceListeners {
    use crate::services::device_feed::{MqttBroker, TcpListenerPort};
    crate::services::device_feed::DeviceListeners {
        tcp: trackers
            .bound()
            .map(|(protocol, addr, tls)| TcpListenerPort {
                protocol: protocol.name(),
                port: addr.port(),
                tls,
            })
            .collect(),
        mqtt: mqtt.broker.as_ref().map(|broker| MqttBroker {
            host: broker.host.clone(),
            port: broker.port,
            tls: broker.tls,
            topic: mqtt.topic.clone(),
        }),
    }
}

/// What the tracker listeners and the MQTT subscription store through.
fn device_feed(services: &Services) -> crate::services::device_feed::DeviceFeed {
    crate::services::device_feed::DeviceFeed {
        devices: services.devices.clone(),
        tracking: services.tracking.clone(),
        clock: services.clock.clone(),
    }
}

/// Opens the store with the key that seals webhook secrets at rest, checks
/// that the key opens the secrets stored, and seals those stored plain (by a
/// version before secrets were sealed).
async fn open_storage(settings: &Settings) -> anyhow::Result<Arc<dyn Storage>> {
    let named = settings.webhooks.secrets_key_file.as_deref();
    let key_path = secrets_key::path(&settings.data_dir, named);
    if settings.scylla.is_some() && !key_path.exists() {
        tracing::warn!(path = %key_path.display(), "creating a new key to seal webhook secrets; every instance sharing this ScyllaDB keyspace needs this same key (--secrets-key-file)");
    }
    let secrets = secrets_key::load_or_create(&key_path, named.is_none())?;
    let config = match &settings.scylla {
        Some(cluster) => StorageConfig::Scylla(cluster.clone()),
        None => StorageConfig::Embedded {
            data_dir: settings.data_dir.clone(),
        },
    };
    let storage = storage::open(&config, Arc::new(secrets))
        .await
        .context("opening storage")?;
    let resealed = storage
        .reseal_webhook_secrets()
        .await
        .map_err(anyhow::Error::new)
        .with_context(|| {
            format!(
                "checking the webhook secrets against the key in {}: a secret that does not \
                 open means this is not the key they were sealed with; restore the key backed \
                 up with this store (with several instances, give them all the same \
                 --secrets-key-file)",
                key_path.display()
            )
        })?;
    if resealed > 0 {
        tracing::info!(
            resealed,
            "sealed webhook secrets that were stored in plain text"
        );
    }
    Ok(storage)
}

fn api_server(
    settings: &Settings,
    services: &Services,
    listener: TcpListener,
    placement: Arc<CpuPlacement>,
    forwarder: Option<web::Data<dyn crate::api::forward::ForwardRequests>>,
) -> anyhow::Result<Server> {
    let live = services.tracking.live().clone();
    let services = services.clone();
    // Polling pays only on a CPU of the worker's own (see `idle_poll`).
    let idle_poll = match placement.pins() {
        true => settings.idle_poll,
        false => std::time::Duration::ZERO,
    };
    // actix-server makes each worker's services on the worker's own thread: the
    // listener's factory below runs this first, where a worker places itself
    // and starts its poller.
    let settle_worker = move || {
        placement.place_worker();
        super::idle_poll::start(idle_poll);
    };
    let body_limit = BodyLimit(settings.body_limit);
    let policy = match settings.transport {
        ApiTransport::Tls(_) => TransportPolicy::DirectTls,
        ApiTransport::BehindTlsProxy => TransportPolicy::TrustForwardedProto,
    };
    let dashboard = crate::dashboard::configure(settings.map.clone());
    let known_routes = web::Data::new(crate::api::idempotency::KnownRoutes::new(
        routes::all_routes(),
    ));
    let origin = web::Data::new(
        crate::api::origin::PublicOrigin::new(
            settings.public_url.as_deref(),
            matches!(settings.transport, ApiTransport::BehindTlsProxy),
            listener.local_addr()?,
        )
        .with_trusted_certificate(matches!(
            settings.transport,
            ApiTransport::Tls(crate::server::tls::TlsSource::Files { .. })
        )),
    );
    let make_app = move || {
        App::new()
            .app_data(web::Data::new(services.clone()))
            .app_data(origin.clone())
            .app_data(known_routes.clone())
            .app_data(web::Data::new(body_limit))
            .app_data(web::Data::new(policy))
            .configure(|config| {
                if let Some(forwarder) = &forwarder {
                    config.app_data(forwarder.clone());
                }
            })
            // Outermost: every answer, refusals included, gets an id and is
            // counted; plain HTTP is refused here, before routing.
            .wrap(from_fn(super::observe::observe))
            .configure(routes::configure)
            .configure(dashboard.clone())
            .default_service(web::to(routes::not_found))
    };
    let builder = Server::build()
        .workers(settings.workers)
        .shutdown_timeout(SHUTDOWN_GRACE_SECS)
        // Signals are handled by `run_until_stopped`.
        .disable_signals();
    // Tells idle keep-alive connections to close when a graceful shutdown starts,
    // so shutdown waits only for requests actually in flight.
    let shutdown = builder.graceful_shutdown_signal();
    end_streams_on(shutdown.clone(), live);
    // A macro, not a closure: the TLS and plain listeners need HttpServices over
    // different stream types.
    macro_rules! http {
        () => {{
            let shutdown = shutdown.clone();
            HttpService::build()
                .keep_alive(KeepAlive::Timeout(KEEP_ALIVE))
                .client_request_timeout(CLIENT_REQUEST_TIMEOUT)
                // A client that closes its side ends the connection at once,
                // never waited out: an event stream whose client went away
                // would otherwise be noticed only when a write to it fails
                // (the next heartbeats, 15-30 s), and hold its place under
                // the account's stream cap until then.
                .h1_allow_half_closed(false)
                // What the connection's last request authenticated with.
                .on_connect_ext(|_, connection| {
                    connection.insert(ConnectionAuth::default());
                })
                .graceful_shutdown_signal(move || {
                    let shutdown = shutdown.clone();
                    async move { shutdown.notified().await }
                })
                .finish(map_config(make_app(), |_| AppConfig::default()))
        }};
    }
    let builder = match &settings.transport {
        ApiTransport::Tls(source) => {
            let tls = tls::server_config(source, &settings.data_dir)?;
            builder.listen("freight-api", listener, move || {
                settle_worker();
                plain_http::https_only(http!().rustls_0_23((*tls).clone()))
            })?
        }
        ApiTransport::BehindTlsProxy => builder.listen("freight-api", listener, move || {
            settle_worker();
            http!().tcp()
        })?,
    };
    Ok(builder.run())
}

/// Ends the live tracking streams when the API server starts a graceful
/// shutdown (a signal, or a `ServerHandle::stop(true)`): a stream is a request
/// that never finishes, and would hold the shutdown for its whole grace period.
fn end_streams_on(shutdown: actix_server::GracefulShutdownSignal, live: LiveHub) {
    actix_rt::spawn(async move {
        shutdown.notified().await;
        live.shutdown();
    });
}

/// The first SIGTERM or SIGINT (never, if they cannot be listened for).
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM and SIGINT; stop the service by other means");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

fn admin_server(
    services: &Services,
    token: String,
    links: crate::api::origin::PublicOrigin,
    listener: TcpListener,
) -> anyhow::Result<Server> {
    let services = services.clone();
    let token = AdminToken(token);
    // The links the operator's commands print start with the API's origin.
    let links = web::Data::new(links);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(services.clone()))
            .app_data(web::Data::new(token.clone()))
            .app_data(links.clone())
            .wrap(actix_web::middleware::DefaultHeaders::new().add(super::observe::NO_SNIFF))
            .configure(admin::configure)
            .default_service(web::to(routes::not_found))
    })
    .workers(1)
    .shutdown_timeout(SHUTDOWN_GRACE_SECS)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok(server)
}
