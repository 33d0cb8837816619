//! Wires the services a server runs over: the webhook dispatcher on an arbiter
//! of its own, the GPS group committer, the load actors' registry, the
//! cluster's peers and taps, and the periodic chores.

use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use actix_rt::Arbiter;
use anyhow::{Context, bail};

use crate::actors::load_actor::ActorDeps;
use crate::actors::registry::LoadRegistry;
use crate::clock::Clock;
use crate::cpu_placement::CpuPlacement;
use crate::server::settings::Settings;
use crate::services::live::LiveHub;
use crate::services::tracking::group_commit::GroupCommitter;
use crate::services::{self, DispatchThread, Services};
use crate::storage::Storage;
use crate::webhooks::client;
use crate::webhooks::directory::Directory;
use crate::webhooks::dispatcher::{DispatchSettings, Dispatcher};
use crate::webhooks::notifier::Notifier;

/// Wires the services: the webhook dispatcher on its own arbiter, the GPS group
/// committer, the load actors' registry, and the services handlers call over
/// them. Must run inside an actix System.
pub(super) async fn start_services(
    storage: Arc<dyn Storage>,
    settings: &Settings,
    placement: Arc<CpuPlacement>,
) -> anyhow::Result<Services> {
    let clock = settings.clock.clone();
    let (actors, dispatch, live) = (settings.actors, settings.webhooks.clone(), settings.live);
    let (gps_queue, device_limits) = (settings.gps_queue, settings.devices);
    let directory = Arc::new(Directory::new(storage.all_webhooks().await?));
    let notifier = Arc::new(Notifier::default());
    let live = LiveHub::new(live);
    let hub = live.clone();
    notifier.also_show(move |events| hub.publish_committed(events));
    let http = client::build(dispatch.url_policy, dispatch.proxy.as_ref());
    let url_policy = dispatch.url_policy;
    // This process among the instances sharing a store (leases, key claims).
    let instance: Arc<str> = crate::actors::load_actor::instance_name().into();
    let background = start_dispatcher(
        &storage,
        &directory,
        &notifier,
        (&http, &clock),
        dispatch,
        instance.clone(),
    )?;
    let (committer, _thread) =
        GroupCommitter::start_placed(storage.clone(), gps_queue, move || {
            placement.place_committer()
        })
        .context("starting the GPS committer thread")?;
    let carriers = Arc::new(crate::actors::carrier_locks::CarrierLocks::default());
    let registry = Arc::new(LoadRegistry::new(ActorDeps {
        storage: storage.clone(),
        notifier: notifier.clone(),
        clock: clock.clone(),
        settings: actors,
        residents: Arc::default(),
        instance: instance.clone(),
        carriers: carriers.clone(),
    }));
    let auth = Arc::new(services::auth::Authenticator::new(
        storage.clone(),
        clock.clone(),
    ));
    let rate_limits = Arc::new(services::rate_limits::RateLimiter::new(clock.clone()));
    let idempotency = Arc::new(services::idempotency::Idempotency::new(
        storage.clone(),
        clock.clone(),
        instance,
    ));
    let webhooks = Arc::new(services::webhooks::WebhookService::new(
        storage.clone(),
        directory.clone(),
        notifier.clone(),
        http,
        clock.clone(),
        url_policy,
    ));
    let users = Arc::new(services::users::UserService::new(
        storage.clone(),
        clock.clone(),
        auth.credential_changes().clone(),
    ));
    let devices = Arc::new(services::devices::DeviceService::new(
        storage.clone(),
        clock.clone(),
        device_limits,
    ));
    let services = Services {
        accounts: Arc::new(services::accounts::AccountService::new(
            storage.clone(),
            clock.clone(),
            auth.clone(),
            devices.clone(),
        )),
        devices,
        device_listeners: Arc::default(),
        share_links: Arc::new(services::share_links::ShareLinkService::new(
            storage.clone(),
            clock.clone(),
        )),
        loads: Arc::new(services::loads::LoadService::new(
            storage.clone(),
            clock.clone(),
            registry.clone(),
            notifier.clone(),
        )),
        carriers: Arc::new(services::carriers::CarrierService::new(
            storage.clone(),
            clock.clone(),
            carriers,
        )),
        tracking: Arc::new(services::tracking::TrackingService::new(
            storage.clone(),
            registry.clone(),
            committer,
            directory.clone(),
            notifier,
            live.clone(),
            clock.clone(),
        )),
        webhooks,
        users,
        auth,
        rate_limits,
        idempotency,
        actors: registry,
        storage,
        clock,
        background: Arc::new(background),
    };
    spawn_housekeeping(&services);
    actix_rt::spawn(services::detention::run(
        Arc::downgrade(services.tracking.detention()),
        Arc::downgrade(&services.storage),
        Arc::downgrade(&services.actors),
        services.clock.clone(),
    ));
    if services.storage.needs_leases() {
        actix_rt::spawn(services::rate_limits::share_counts(
            Arc::downgrade(&services.rate_limits),
            services.storage.clone(),
        ));
        actix_rt::spawn(refresh_directory(
            Arc::downgrade(&directory),
            services.storage.clone(),
        ));
    }
    Ok(services)
}

/// Joins the other instances: registers this one (where its internal
/// listener is) and lets GPS ingest forward fixes of loads they act for.
pub(super) async fn join_cluster(
    services: &Services,
    settings: &super::cluster::ClusterSettings,
) -> anyhow::Result<Arc<super::cluster::Cluster>> {
    if !services.storage.needs_leases() {
        bail!(
            "the cluster settings (--cluster-secret, --internal-listen) are for instances sharing \
             a ScyllaDB keyspace; the embedded store is one process's own"
        );
    }
    let cluster = Arc::new(super::cluster::Cluster::new(
        services.actors.instance().clone(),
        settings,
        services.storage.clone(),
    ));
    cluster.join().await?;
    services.tracking.join(cluster.clone());
    super::cluster::live_taps::start(
        cluster.clone(),
        services.tracking.live(),
        tokio::runtime::Handle::current(),
    );
    Ok(cluster)
}

/// With a store shared by several instances, subscriptions changed on another
/// instance reach this one's directory within this long.
const DIRECTORY_REFRESH: Duration = Duration::from_secs(5);

/// Reads every subscription again every `DIRECTORY_REFRESH`, until the
/// directory is dropped.
async fn refresh_directory(directory: std::sync::Weak<Directory>, storage: Arc<dyn Storage>) {
    let mut tick = tokio::time::interval(DIRECTORY_REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(directory) = directory.upgrade() else {
            return;
        };
        match storage.all_webhooks().await {
            Ok(subscriptions) => directory.replace_all(subscriptions),
            Err(error) => {
                tracing::warn!(error = %crate::telemetry::error_chain(&error), "could not refresh the webhook directory; retrying")
            }
        }
    }
}

/// The periodic chores, holding the services weakly: they end with them.
fn spawn_housekeeping(services: &Services) {
    actix_rt::spawn(services::housekeeping(
        Arc::downgrade(&services.rate_limits),
        Arc::downgrade(&services.idempotency),
        Arc::downgrade(&services.webhooks),
        Arc::downgrade(&services.users),
        Arc::downgrade(&services.devices),
    ));
}

/// Starts the webhook dispatcher on an arbiter of its own (and, if configured,
/// the threads that send its requests) and lets the notifier reach it.
fn start_dispatcher(
    storage: &Arc<dyn Storage>,
    directory: &Arc<Directory>,
    notifier: &Notifier,
    (http, clock): (&reqwest::Client, &Clock),
    dispatch: DispatchSettings,
    instance: Arc<str>,
) -> anyhow::Result<DispatchThread> {
    let arbiter = Arbiter::new();
    // Sending is most of a delivery's work: it may run on threads of its own,
    // so the dispatcher's one thread only keeps the books.
    let send_runtime = match dispatch.send_threads {
        0 => None,
        threads => Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("webhook-send")
                .enable_all()
                .build()
                .context("starting the webhook sender threads")?,
        ),
    };
    let sender = send_runtime.as_ref().map(|r| r.handle().clone());
    let (storage, directory, http, clock) = (
        storage.clone(),
        directory.clone(),
        http.clone(),
        clock.clone(),
    );
    let missed = notifier.missed_flag();
    let dispatcher = Dispatcher::start_in_arbiter(&arbiter.handle(), move |_| {
        Dispatcher::new(storage, directory, http, clock, dispatch, missed, sender)
            .owned_by(instance)
    });
    notifier.attach(dispatcher);
    Ok(DispatchThread {
        arbiter,
        send_runtime,
    })
}
