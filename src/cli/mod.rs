//! The `freight` command line: `serve`, `migrate` (the ScyllaDB schema), and
//! operator commands that talk to a running server's admin listener.

mod config_file;
mod device_listeners;
mod migrate;
mod operator;
mod serve;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::domain::account::PlanKind;

/// Freight load and GPS tracking service.
///
/// `freight serve` runs the HTTPS API. The other commands manage accounts and API
/// keys on a running server, through its loopback admin listener.
#[derive(Debug, Parser)]
#[command(name = "freight", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTPS API (and the loopback admin listener).
    // Boxed: its settings are most of the enum's size, and it is made once.
    Serve(Box<ServeArgs>),
    /// Manage accounts (tenants) on a running server.
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// Manage API keys on a running server.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Dashboard users on a running server: create one (a one-time link to
    /// choose a password), list them, reset a password.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Create or update the ScyllaDB schema: applies the schema files built
    /// into this binary (cql/) in order, skipping those already applied.
    Migrate(MigrateArgs),
    /// Simulate a fleet against a running service (trucks posting GPS fixes,
    /// dashboards polling, clients moving loads) and report throughput and
    /// latency; `--ramp` finds the highest fix rate whose p99 stays under a bound.
    Loadgen(freight_loadgen::LoadgenArgs),
}

/// `serve`'s data directory, and where the operator's commands look for it.
pub const DEFAULT_DATA_DIR: &str = "./data";

/// `serve`'s admin listener; the operator's `--admin-url` is `http://` this.
pub const DEFAULT_ADMIN_ADDR: &str = "127.0.0.1:9464";

/// Which store `serve` keeps its data in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageKind {
    /// In the data directory (fjall): one machine, nothing else to run.
    Embedded,
    /// A ScyllaDB cluster (--scylla-nodes): several instances, one schema.
    Scylla,
}

/// How to reach the ScyllaDB cluster.
#[derive(Debug, Clone, Args)]
pub struct ScyllaArgs {
    /// Contact points of the ScyllaDB cluster, host:port[,host:port...]; the
    /// driver discovers the other nodes.
    #[arg(long, env = "FREIGHT_SCYLLA_NODES", value_delimiter = ',')]
    pub scylla_nodes: Vec<String>,
    /// The keyspace freight's tables are in.
    #[arg(long, env = "FREIGHT_SCYLLA_KEYSPACE", default_value = "freight")]
    pub scylla_keyspace: String,
    /// The datacenter whose replicas LOCAL_QUORUM counts and whose nodes are
    /// preferred; unset: any (a single-datacenter cluster).
    #[arg(long, env = "FREIGHT_SCYLLA_LOCAL_DC")]
    pub scylla_local_dc: Option<String>,
    /// ScyllaDB user (password authentication).
    #[arg(long, env = "FREIGHT_SCYLLA_USER", requires = "scylla_password")]
    pub scylla_user: Option<String>,
    #[arg(
        long,
        env = "FREIGHT_SCYLLA_PASSWORD",
        requires = "scylla_user",
        hide_env_values = true
    )]
    pub scylla_password: Option<String>,
}

impl ScyllaArgs {
    pub fn config(&self) -> anyhow::Result<crate::storage::scylla::ScyllaConfig> {
        let nodes: Vec<String> = self
            .scylla_nodes
            .iter()
            .flat_map(|list| crate::storage::scylla::ScyllaConfig::parse_nodes(list))
            .collect();
        anyhow::ensure!(
            !nodes.is_empty(),
            "--scylla-nodes (FREIGHT_SCYLLA_NODES) is required with ScyllaDB"
        );
        crate::storage::scylla::schema::check_keyspace(&self.scylla_keyspace)?;
        Ok(crate::storage::scylla::ScyllaConfig {
            nodes,
            keyspace: self.scylla_keyspace.clone(),
            local_dc: self.scylla_local_dc.clone(),
            credentials: self.scylla_user.clone().zip(self.scylla_password.clone()),
        })
    }
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub scylla: ScyllaArgs,
    /// Replication of the keyspace (a CQL map) [default: {'class':
    /// 'NetworkTopologyStrategy', 'replication_factor': 3}]. An existing
    /// keyspace is never changed: given, it must match, or migrate stops and
    /// says what differs (change it with ALTER KEYSPACE).
    #[arg(long, env = "FREIGHT_SCYLLA_REPLICATION")]
    pub replication: Option<String>,
    /// Days of GPS history to keep (time-window compaction with that TTL);
    /// 0: forever (size-tiered). Not given: as the table is now. Applies to
    /// fixes written from then on.
    #[arg(long, env = "FREIGHT_GPS_RETENTION_DAYS", value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub gps_retention_days: Option<u32>,
    /// Set every load and carrier list's total, and every webhook delivery
    /// log's, to its count (totals kept as counters drift after some failures;
    /// docs/design.md). Reads every list and log once; run again, it changes
    /// nothing. Run it when writes are quiet: a list that changes during the
    /// recount can be left off by those changes.
    #[arg(long)]
    pub recount_list_totals: bool,
}

#[derive(Debug, Args)]
#[command(
    after_long_help = "Settings come from, highest first: these flags, FREIGHT_* environment \
variables, the --config file, the defaults shown. The file is TOML whose keys are these flags' \
long names, e.g.\n\n    listen = \"0.0.0.0:8443\"\n    data-dir = \"/var/lib/freight\"\n    webhooks-allow-http = false"
)]
pub struct ServeArgs {
    /// A TOML file of settings (keys are the long flag names); flags and FREIGHT_* variables override it.
    #[arg(long, env = "FREIGHT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where the store, the TLS certificate and the admin token live.
    #[arg(long, env = "FREIGHT_DATA_DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Address of the HTTPS API.
    #[arg(long, env = "FREIGHT_LISTEN", default_value = "127.0.0.1:8443")]
    pub listen: SocketAddr,
    /// Address of the admin listener (health, readiness, metrics, operator commands); loopback only.
    #[arg(long, env = "FREIGHT_ADMIN_LISTEN", default_value = DEFAULT_ADMIN_ADDR)]
    pub admin_listen: SocketAddr,
    /// PEM certificate chain; without it a self-signed certificate is generated into the data dir.
    #[arg(long, env = "FREIGHT_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, env = "FREIGHT_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP to a TLS-terminating proxy; requests must carry X-Forwarded-Proto: https.
    #[arg(long, env = "FREIGHT_BEHIND_TLS_PROXY", conflicts_with_all = ["tls_cert", "tls_key"],
          value_parser = clap::builder::BoolishValueParser::new())]
    pub behind_tls_proxy: bool,
    /// HTTP worker threads [default: one per CPU core].
    #[arg(long, env = "FREIGHT_WORKERS", value_parser = clap::value_parser!(u16).range(1..=512))]
    pub workers: Option<u16>,
    /// With fewer workers than CPUs, keep each worker on a CPU of its own and
    /// the GPS committer on the others (`off`: the scheduler places them).
    #[arg(long, env = "FREIGHT_CPU_PINNING", value_enum, default_value = "auto")]
    pub cpu_pinning: crate::cpu_placement::CpuPinning,
    /// Microseconds an HTTP worker with a CPU of its own (see --cpu-pinning)
    /// keeps polling for work after a request begins or ends before it sleeps;
    /// 0: sleep at once (less CPU under steady load, slower ingest on virtual
    /// machines).
    #[arg(long, env = "FREIGHT_IDLE_POLL_US", default_value_t = crate::server::idle_poll::DEFAULT_WINDOW.as_micros() as u32,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub idle_poll_us: u32,
    /// Do not create an account and API key on first start.
    #[arg(long, env = "FREIGHT_NO_BOOTSTRAP_KEY", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_bootstrap_key: bool,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "FREIGHT_MAX_BODY_BYTES", default_value_t = crate::api::extract::DEFAULT_BODY_LIMIT)]
    pub max_body_bytes: usize,
    /// Threads the load actors run on [default: one per CPU core].
    #[arg(long, env = "FREIGHT_ACTOR_THREADS", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub actor_threads: Option<u16>,
    /// Seconds without a message after which a load's actor stops (it restarts from storage on demand).
    #[arg(long, env = "FREIGHT_ACTOR_IDLE_SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub actor_idle_secs: u64,
    /// GPS submissions (a fix, or a batch) waiting for the group commit at most;
    /// beyond them ingest answers 503 with Retry-After rather than queueing
    /// without bound.
    #[arg(long, env = "FREIGHT_GPS_QUEUE", default_value_t = crate::services::tracking::group_commit::QUEUE_CAPACITY as u32, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub gps_queue: u32,
    /// Let webhook URLs use plain http:// (for receivers on a trusted network or in tests).
    #[arg(long, env = "FREIGHT_WEBHOOKS_ALLOW_HTTP", value_parser = clap::builder::BoolishValueParser::new())]
    pub webhooks_allow_http: bool,
    /// Let webhook URLs reach loopback, private and link-local addresses (SSRF protection off).
    #[arg(long, env = "FREIGHT_WEBHOOKS_ALLOW_PRIVATE", value_parser = clap::builder::BoolishValueParser::new())]
    pub webhooks_allow_private: bool,
    /// Send webhook deliveries through this proxy (http://host:port). Without
    /// it, none is used, whatever HTTP(S)_PROXY says. The proxy must refuse
    /// private and loopback addresses itself: through it, freight cannot check
    /// where a delivery lands.
    #[arg(long, env = "FREIGHT_WEBHOOKS_PROXY")]
    pub webhooks_proxy: Option<reqwest::Url>,
    /// The key (64 hex digits) that seals webhook secrets at rest [default:
    /// secrets.key in the data dir, created on first start]; a file named here
    /// must exist. Every instance sharing a ScyllaDB keyspace needs the same one.
    #[arg(long, env = "FREIGHT_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,
    /// Tiles for the dashboard's maps, as a URL template
    /// (`https://tile.example.org/{z}/{x}/{y}.png`; `{s}` for subdomains).
    /// Without it the maps draw a built-in outline of the states, which works
    /// offline. Mind the source's usage policy (docs/operations.md, "Map tiles").
    #[arg(long, env = "FREIGHT_MAP_TILES", requires = "map_attribution")]
    pub map_tiles: Option<String>,
    /// The attribution the tile source requires, shown on the maps (HTML, e.g.
    /// `&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors`).
    #[arg(long, env = "FREIGHT_MAP_ATTRIBUTION", requires = "map_tiles")]
    pub map_attribution: Option<String>,
    /// The service's public address (https://freight.example.com): the links
    /// it hands out (share links, devices' ingest URLs, invitations) start
    /// with it. Without it they use the address the client reached; set it
    /// behind a load balancer and whenever phones must reach the service by a
    /// name of its own.
    #[arg(long, env = "FREIGHT_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Positions a second each device may send, sustained (a position fed to
    /// several loads counts once per load); beyond it 429 with Retry-After.
    #[arg(long, env = "FREIGHT_DEVICE_POSITIONS_PER_SECOND", default_value_t = 1.0,
          value_parser = positive_rate)]
    pub device_positions_per_second: f64,
    /// Positions a device may send at once after a quiet spell.
    #[arg(long, env = "FREIGHT_DEVICE_BURST", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub device_burst: u32,
    /// Loads (not delivered or cancelled) one device may feed at once; a
    /// further attachment is refused with 409 DEVICE_LOAD_LIMIT.
    #[arg(long, env = "FREIGHT_DEVICE_MAX_LOADS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub device_max_loads: u32,
    #[command(flatten)]
    pub device_listeners: device_listeners::DeviceListenerArgs,
    /// Log format.
    #[arg(long, env = "FREIGHT_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: crate::telemetry::LogFormat,
    /// Where the data lives: the data directory, or a ScyllaDB cluster (run
    /// `freight migrate` first).
    #[arg(long, env = "FREIGHT_STORAGE", value_enum, default_value = "embedded")]
    pub storage: StorageKind,
    #[command(flatten)]
    pub scylla: ScyllaArgs,
    /// Let --admin-listen bind a non-loopback address (a container, scraped by
    /// Prometheus over a private network). Its operator API needs the admin
    /// token; /metrics, /health and /ready do not. Never expose it publicly.
    #[arg(long, env = "FREIGHT_ADMIN_ALLOW_REMOTE", value_parser = clap::builder::BoolishValueParser::new())]
    pub admin_allow_remote: bool,
    /// With --storage scylla: the secret all instances of the cluster share
    /// (32 characters or more, e.g. `openssl rand -hex 32`). Requests one
    /// instance forwards to another are signed with it.
    #[arg(long, env = "FREIGHT_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// With --storage scylla: where this instance takes the requests other
    /// instances forward to it (plain HTTP, signed; keep it on a private
    /// network, never the public one).
    #[arg(long, env = "FREIGHT_INTERNAL_LISTEN", default_value = "0.0.0.0:9445")]
    pub internal_listen: SocketAddr,
    /// host:port at which the other instances reach --internal-listen
    /// [default: this host's name and that port].
    #[arg(long, env = "FREIGHT_INTERNAL_ADDRESS")]
    pub internal_address: Option<String>,
}

/// How operator commands find the server.
#[derive(Debug, Clone, Args)]
pub struct AdminConnection {
    /// The server's data directory (its admin.token authorises these commands).
    #[arg(
        long,
        env = "FREIGHT_DATA_DIR",
        default_value = DEFAULT_DATA_DIR,
        global = true
    )]
    pub data_dir: PathBuf,
    /// The server's admin listener.
    #[arg(
        long,
        env = "FREIGHT_ADMIN_URL",
        default_value = "http://127.0.0.1:9464",
        global = true
    )]
    pub admin_url: String,
    /// Print one JSON object instead of text (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Create an account.
    Create {
        /// Display name of the account.
        #[arg(long)]
        name: String,
        #[arg(long, value_enum, default_value = "standard")]
        plan: PlanKind,
        /// Quota of an enterprise account [default: 100000].
        #[arg(long)]
        requests_per_hour: Option<u32>,
        /// Live streams an enterprise account may hold open [default: 200].
        #[arg(long)]
        max_streams: Option<u32>,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// List accounts.
    List {
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Show one account: its plan, quota and whether it is disabled.
    Get {
        /// The account (acct_...).
        account: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Disable an account: its API keys are refused (403 ACCOUNT_DISABLED) and
    /// its users cannot use the dashboard; its data is kept.
    Disable {
        /// The account (acct_...).
        account: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Enable a disabled account again: its keys that are not revoked or
    /// expired work again.
    Enable {
        /// The account (acct_...).
        account: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Move an account to another plan; its quota changes with the next request.
    SetPlan {
        /// The account (acct_...).
        account: String,
        #[arg(long, value_enum)]
        plan: PlanKind,
        /// Quota of an enterprise account [default: 100000].
        #[arg(long)]
        requests_per_hour: Option<u32>,
        /// Live streams an enterprise account may hold open [default: 200].
        #[arg(long)]
        max_streams: Option<u32>,
        #[command(flatten)]
        connection: AdminConnection,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key; the key is printed once and never again.
    Create {
        /// Account the key acts for (acct_...).
        #[arg(long)]
        account: String,
        /// Comma-separated permissions, required: read, write, or read,write.
        #[arg(long, value_delimiter = ',', required = true)]
        permissions: Vec<String>,
        /// When the key stops working: a date (2027-01-01, the start of that
        /// day in UTC) or an RFC 3339 UTC time (2027-01-01T12:00:00Z).
        #[arg(long, value_parser = operator::parse_expiry)]
        expires: Option<String>,
        /// What the key is for.
        #[arg(long)]
        description: Option<String>,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Revoke a key at once.
    Revoke {
        /// The key: its id (key_…), the token's printed start (frk_<…>, the
        /// part before the second underscore), or the whole token.
        id: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// List an account's keys (never their secrets).
    List {
        #[arg(long)]
        account: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// List an account's dashboard users.
    List {
        #[arg(long)]
        account: String,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Give someone a way into an account's dashboard: prints a one-time link
    /// (valid as an invitation is) for `--email` to join `--account` as a
    /// user and choose a password. The first start's account has no user
    /// until one is made this way. Hand the link over yourself.
    Create {
        /// The account (acct_…).
        #[arg(long)]
        account: String,
        /// The new user's email address (their sign-in name).
        #[arg(long)]
        email: String,
        /// The dashboard's public address, which the printed link starts with
        /// (https://freight.example.com); without it the link is printed as
        /// a path.
        #[arg(long, env = "FREIGHT_PUBLIC_URL")]
        public_url: Option<String>,
        #[command(flatten)]
        connection: AdminConnection,
    },
    /// Reset a user's password: it stops working and every session of the
    /// user ends at once; prints a one-time link (valid 24 hours) for the user
    /// to choose a new one. Hand it over yourself: freight sends no email.
    ResetPassword {
        /// The user's email address.
        #[arg(long)]
        email: String,
        /// The dashboard's public address, which the printed link starts with
        /// (https://freight.example.com); without it the link is printed as
        /// a path.
        #[arg(long, env = "FREIGHT_PUBLIC_URL")]
        public_url: Option<String>,
        #[command(flatten)]
        connection: AdminConnection,
    },
}

/// A rate of positions a second: a positive number, at most 1,000.
fn positive_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate > 0.0 && rate <= 1000.0 => Ok(rate),
        _ => Err(format!(
            "must be a number above 0 and at most 1000, not {text}"
        )),
    }
}

/// Runs the parsed command; the process exit code follows the result.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Accounts(command) => operator::accounts(command).await,
        Command::Keys(command) => operator::keys(command).await,
        Command::Users(command) => operator::users(command).await,
        Command::Migrate(args) => migrate::run(args).await,
        Command::Loadgen(args) => freight_loadgen::run(args).await,
    }
}

/// Parses the command line, with `serve`'s `--config` file filled in under the
/// flags and environment (see `config_file`). Exits with clap's message on a
/// usage error, like `Cli::parse`.
pub fn parse() -> anyhow::Result<Cli> {
    use clap::{CommandFactory, FromArgMatches};

    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let command = Cli::command();
    let matches = command.clone().get_matches_from(&args);
    let extra = match matches.subcommand() {
        Some(("serve", given)) => match given.get_one::<PathBuf>("config") {
            Some(path) => {
                let serve = command
                    .find_subcommand("serve")
                    .expect("serve is a subcommand");
                config_file::flags_from_file(path, serve, given)?
            }
            None => Vec::new(),
        },
        _ => Vec::new(),
    };
    if extra.is_empty() {
        return Ok(Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit()));
    }
    let merged = command.get_matches_from(args.into_iter().chain(extra));
    Ok(Cli::from_arg_matches(&merged).unwrap_or_else(|e| e.exit()))
}
