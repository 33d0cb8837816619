//! `freight serve`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use crate::actors::load_actor::ActorSettings;
use crate::clock::Clock;
use crate::dashboard::MapSource;
use crate::dashboard::map_tiles::MapTiles;
use crate::domain::webhook::UrlPolicy;
use crate::server::admin_token;
use crate::server::bootstrap::{BootstrapKey, FIRST_KEY_FILE};
use crate::server::cluster::ClusterSettings;
use crate::server::cluster::signing::ClusterSecret;
use crate::server::settings::{ApiTransport, Settings};
use crate::server::startup::Application;
use crate::server::tls::TlsSource;
use crate::services::device_meter::DeviceLimits;
use crate::services::live::LiveSettings;
use crate::webhooks::dispatcher::DispatchSettings;

use super::{DEFAULT_ADMIN_ADDR, DEFAULT_DATA_DIR, ServeArgs, StorageKind};

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::telemetry::init(args.log_format);
    let transport = match (args.behind_tls_proxy, args.tls_cert, args.tls_key) {
        (true, _, _) => ApiTransport::BehindTlsProxy,
        (false, Some(cert), Some(key)) => ApiTransport::Tls(TlsSource::Files { cert, key }),
        (false, _, _) => ApiTransport::Tls(TlsSource::SelfSigned),
    };
    let defaults = ActorSettings::default();
    let scylla = match args.storage {
        StorageKind::Embedded => None,
        StorageKind::Scylla => Some(args.scylla.config()?),
    };
    let map = match (&args.map_tiles, &args.map_attribution) {
        (Some(template), Some(attribution)) => {
            MapSource(Some(MapTiles::parse(template, attribution)?))
        }
        _ => MapSource::default(),
    };
    let internal_address = match &args.internal_address {
        Some(address) => address.clone(),
        None => default_internal_address(args.internal_listen),
    };
    if args.storage == StorageKind::Scylla
        && !crate::server::cluster::peers::is_host_and_port(&internal_address)
    {
        anyhow::bail!(
            "--internal-address must be host:port, nothing more (not {internal_address:?})"
        );
    }
    let cluster = match (&args.storage, &args.cluster_secret) {
        (StorageKind::Scylla, Some(secret)) => Some(ClusterSettings {
            internal_listen: args.internal_listen,
            internal_address,
            secret: ClusterSecret::parse(secret)
                .map_err(|e| anyhow::anyhow!("--cluster-secret: {e}"))?,
        }),
        (StorageKind::Scylla, None) => anyhow::bail!(
            "--storage scylla needs --cluster-secret (FREIGHT_CLUSTER_SECRET), the same on \
             every instance: instances forward requests for the loads they do not act for to \
             the one that does"
        ),
        (StorageKind::Embedded, Some(_)) => anyhow::bail!(
            "--cluster-secret is for instances sharing a ScyllaDB keyspace (--storage scylla); \
             the embedded store belongs to one process"
        ),
        (StorageKind::Embedded, None) => None,
    };
    let settings = Settings {
        data_dir: args.data_dir,
        listen: args.listen,
        admin_listen: args.admin_listen,
        admin_allow_remote: args.admin_allow_remote,
        scylla,
        transport,
        workers: args.workers.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            usize::from,
        ),
        cpu_pinning: args.cpu_pinning,
        idle_poll: Duration::from_micros(args.idle_poll_us.into()),
        bootstrap_key: !args.no_bootstrap_key,
        body_limit: args.max_body_bytes,
        gps_queue: args.gps_queue as usize,
        clock: Clock::system(),
        actors: ActorSettings {
            threads: args.actor_threads.map_or(defaults.threads, usize::from),
            idle_timeout: Duration::from_secs(args.actor_idle_secs),
            ..defaults
        },
        webhooks: DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: args.webhooks_allow_http,
                allow_private: args.webhooks_allow_private,
            },
            proxy: args.webhooks_proxy,
            secrets_key_file: args.secrets_key_file,
            ..DispatchSettings::default()
        },
        live: LiveSettings::default(),
        map,
        cluster,
        public_url: match args.public_url {
            Some(url) => {
                crate::api::origin::check_public_url(&url).map_err(anyhow::Error::msg)?;
                Some(url)
            }
            None => None,
        },
        devices: DeviceLimits {
            positions_per_second: args.device_positions_per_second,
            burst: args.device_burst,
            max_loads: args.device_max_loads as usize,
        },
        trackers: args.device_listeners.trackers(),
        mqtt: args.device_listeners.mqtt(),
    };
    let scheme = match settings.transport {
        ApiTransport::Tls(_) => "https",
        ApiTransport::BehindTlsProxy => "http (behind a TLS proxy)",
    };
    warn_about_dangerous_switches(&settings);
    let app = Application::build(settings.clone()).await?;
    if let Some(first) = app.bootstrap_key() {
        hand_over_first_key(first, &settings.data_dir, app.admin_addr());
    }
    let storage = match &settings.scylla {
        None => format!("embedded ({})", settings.data_dir.join("store").display()),
        Some(scylla) => format!("scylla (keyspace {})", scylla.keyspace),
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        api = %format!("{scheme}://{}/v1", app.api_addr()),
        dashboard = %format!("{scheme}://{}/dashboard", app.api_addr()),
        admin = %format!("http://{}", app.admin_addr()),
        %storage,
        workers = settings.workers,
        "freight is serving"
    );
    app.run_until_stopped().await?;
    tracing::info!("freight stopped");
    Ok(())
}

/// Where the first start's key goes: to a person at a terminal, printed (to
/// stdout, not the log, so it is not shipped to log storage); otherwise (a
/// service manager, a container, a pipe, whose output is kept and often
/// shipped) into a file only the service's user can read, whose path is logged.
fn hand_over_first_key(first: &BootstrapKey, data_dir: &Path, admin: std::net::SocketAddr) {
    let mut stdout = std::io::stdout();
    if stdout.is_terminal() {
        let command = users_create_command(&first.account.id.to_string(), data_dir, admin);
        // Not with `println!`, which panics when stdout cannot be written: the
        // service starts anyway, and says how to get a key.
        let printed = writeln!(
            stdout,
            "First start: created account {} ({}) and an API key with read,write.\n\
             Your API key (shown once, store it now):\n\n    {}\n\n\
             To open this account in the dashboard, make yourself its user (prints a \
             one-time link to set your password):\n\n    {command}\n\n\
             (run it where this server runs; registering in the dashboard makes a new, \
             separate account)\n",
            first.account.id, first.account.name, first.token
        );
        if let Err(error) = printed {
            tracing::warn!(
                account = %first.account.id,
                %error,
                "the first API key could not be printed; make another with `freight keys create`"
            );
        }
        return;
    }
    let path = data_dir.join(FIRST_KEY_FILE);
    match admin_token::write_private(&path, format!("{}\n", first.token).as_bytes()) {
        Ok(()) => tracing::warn!(
            account = %first.account.id,
            path = %path.display(),
            "first start: created an account and an API key with read,write; standard output \
             is not a terminal, so the key was written to this file (readable by this user \
             only): read it, store it, then delete the file"
        ),
        Err(error) => tracing::warn!(
            account = %first.account.id,
            error = %format!("{error:#}"),
            "the first API key could not be written; make another with `freight keys create`"
        ),
    }
}

/// The `freight users create` that reaches this server: with `--data-dir`
/// and `--admin-url` where they are not the command's defaults.
fn users_create_command(account: &str, data_dir: &Path, admin: std::net::SocketAddr) -> String {
    let mut command = format!("freight users create --account {account} --email you@example.com");
    if data_dir != Path::new(DEFAULT_DATA_DIR) {
        command.push_str(&format!(" --data-dir {}", data_dir.display()));
    }
    if admin.to_string() != DEFAULT_ADMIN_ADDR {
        command.push_str(&format!(" --admin-url http://{admin}"));
    }
    command
}

/// Switches that weaken a protection are for development and tests; each one
/// on is said at every start, so that it is not left on by accident.
fn warn_about_dangerous_switches(settings: &Settings) {
    let policy = settings.webhooks.url_policy;
    if policy.allow_private {
        tracing::warn!(
            "--webhooks-allow-private is on: webhook URLs may name loopback, private and \
             link-local addresses, so any account can make this server call its own network"
        );
    }
    if policy.allow_http {
        tracing::warn!(
            "--webhooks-allow-http is on: webhook deliveries may go over plain http, readable \
             and changeable on the way"
        );
    }
    if let Some(proxy) = &settings.webhooks.proxy {
        tracing::warn!(
            %proxy,
            "webhook deliveries go through a proxy: freight cannot check the address a delivery \
             reaches, so the proxy must refuse loopback, private and link-local addresses itself"
        );
    }
    if settings.admin_allow_remote {
        tracing::warn!(
            admin = %settings.admin_listen,
            "--admin-allow-remote is on: the admin listener answers other machines. Its operator \
             API needs the admin token, but the token then crosses the network in plain HTTP \
             (readable by anyone on the path), and /metrics, /health and /ready answer anyone \
             who can reach it; keep it on a private network behind a firewall"
        );
    }
}

/// The internal listener's address as other hosts name it: this host's name
/// (what container platforms resolve between containers) and the port, or
/// the listen address itself when it names one host.
fn default_internal_address(listen: std::net::SocketAddr) -> String {
    if !listen.ip().is_unspecified() {
        return listen.to_string();
    }
    let host = crate::telemetry::host_name().unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", listen.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_start_hint_names_only_the_settings_that_differ() {
        let default_admin: std::net::SocketAddr = DEFAULT_ADMIN_ADDR.parse().unwrap();
        assert_eq!(
            users_create_command("acct_1", Path::new(DEFAULT_DATA_DIR), default_admin),
            "freight users create --account acct_1 --email you@example.com"
        );
        assert_eq!(
            users_create_command(
                "acct_1",
                Path::new("/var/lib/freight"),
                "127.0.0.1:9500".parse().unwrap()
            ),
            "freight users create --account acct_1 --email you@example.com \
             --data-dir /var/lib/freight --admin-url http://127.0.0.1:9500"
        );
    }
}
