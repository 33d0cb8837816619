//! `freight loadgen`: a fleet simulator that tells an operator how many trucks
//! one node carries. Trucks drive between real US cities and post GPS fixes
//! (some twice, some late, some offline and uploaded later in a batch),
//! dispatch dashboards poll positions and lists, and API clients walk loads
//! through their life, against any base URL, as an outside client.
//!
//! Open loop by default: each request has an intended send time from the
//! offered rate, and its latency counts from then, so a stalled server shows
//! in the percentiles instead of slowing the generator down (coordinated
//! omission). `--closed-loop` sends as fast as answers come, as wrk does.
//! `--ramp` raises the fix rate step by step to find the highest whose p99
//! stays under a bound, and draws it.
//!
//! Where each part lives: `scenario` (what a run simulates), `fleet` (trucks
//! and cities), `target` (the service and its requests), `traffic` (what the
//! fleet sends), `trackers` (trucks as hardware trackers over TCP), `report`
//! (histograms and errors), `plot` (the ramp's SVG).

mod client;
mod fleet;
mod plot;
mod report;
mod scenario;
mod setup;
mod target;
mod trackers;
mod traffic;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use tokio::time::Instant;

use self::report::{Recorder, Summary, counted};
pub use self::scenario::Scenario;
use self::traffic::Target;

/// `freight loadgen`: flags override the scenario file, which overrides the defaults.
#[derive(Debug, clap::Args)]
pub struct LoadgenArgs {
    /// The service's base URL (without /v1).
    #[arg(long, env = "FREIGHT_URL", default_value = "https://localhost:8443")]
    pub base_url: String,
    /// An API key with read and write (better: of an enterprise account with a
    /// quota the run cannot use up).
    #[arg(long, env = "FREIGHT_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// A file holding the API key (instead of --key).
    #[arg(long, conflicts_with = "key")]
    pub key_file: Option<PathBuf>,
    /// A CA certificate (PEM) to trust, such as the server's data/tls/cert.pem.
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// Trust any certificate (testing only).
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    /// A scenario built in by name (dashboard-heavy, find-capacity,
    /// ingest-heavy, mixed-realistic, wrk-shape: benches/scenarios/), or a
    /// scenario file.
    #[arg(long)]
    pub scenario: Option<String>,
    #[arg(long)]
    pub trucks: Option<u32>,
    /// Seconds between a truck's fixes.
    #[arg(long)]
    pub fix_every: Option<f64>,
    /// Seconds to run.
    #[arg(long)]
    pub duration: Option<u64>,
    #[arg(long)]
    pub dashboards: Option<u32>,
    /// Dashboards holding the account's live tracking stream.
    #[arg(long)]
    pub streams: Option<u32>,
    #[arg(long)]
    pub clients: Option<u32>,
    /// Connections to the service at most (default 64; closed loop: its N).
    #[arg(long)]
    pub connections: Option<u32>,
    /// Closed loop with this many requests in flight.
    #[arg(long)]
    pub closed_loop: Option<u32>,
    /// Find the capacity: raise the fix rate until p99 passes --p99-bound-ms.
    #[arg(long)]
    pub ramp: bool,
    #[arg(long)]
    pub p99_bound_ms: Option<f64>,
    /// Where the ramp's plot goes.
    #[arg(long, default_value = "loadgen-ramp.svg")]
    pub plot: PathBuf,
    /// Print one JSON object (the report) instead of text and progress.
    #[arg(long)]
    pub json: bool,
    /// Skip the set-up (a carrier, and a load per truck, assigned and in
    /// transit) and post each truck's fixes to a made-up load id: for a
    /// reference server that only takes fixes (benches/bare_handler.rs), so a
    /// ramp can find its capacity in the same shape as freight's. Fixes only:
    /// a ramp, or no dashboards, streams or clients. No key is needed.
    #[arg(long)]
    pub invent_loads: bool,
    /// Seconds to wait between the set-up and the measured run, so that the
    /// server's own work after creating the fleet's loads (flushes,
    /// compactions) is not measured as the first step's latency.
    #[arg(long, default_value_t = 0)]
    pub settle: u64,
    /// How the trucks send positions: the API's fixes over HTTPS, or as
    /// hardware trackers on TCP connections of their own (needs
    /// --tracker-addr; fixes only; a --ramp's rates are then records a second).
    #[arg(long, value_enum, default_value_t = trackers::Protocol::Http)]
    pub protocol: trackers::Protocol,
    /// The service's tracker listener for --protocol (`host:port`).
    #[arg(long)]
    pub tracker_addr: Option<String>,
    /// Positions per tracker packet (1 to 255).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..))]
    pub records: u8,
}

impl LoadgenArgs {
    fn scenario(&self) -> anyhow::Result<Scenario> {
        let mut s = match &self.scenario {
            Some(given) => Scenario::named(given)?,
            None => Scenario::default(),
        };
        if let Some(v) = self.trucks {
            s.trucks = v;
        }
        if let Some(v) = self.fix_every {
            s.fix_every_secs = v;
        }
        if let Some(v) = self.duration {
            s.duration_secs = v;
        }
        if let Some(v) = self.dashboards {
            s.dashboards = v;
        }
        if let Some(v) = self.streams {
            s.streams = v;
        }
        if let Some(v) = self.clients {
            s.clients = v;
        }
        if let Some(v) = self.closed_loop {
            s.closed_loop = true;
            s.concurrency = v;
        }
        if let Some(v) = self.connections {
            s.connections = v;
        }
        if self.ramp {
            s.ramp = true;
        }
        if let Some(v) = self.p99_bound_ms {
            s.p99_bound_ms = v;
        }
        s.check()?;
        Ok(s)
    }

    fn key(&self) -> anyhow::Result<String> {
        let key = match (&self.key, &self.key_file) {
            (Some(key), _) => key.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the key file {}", path.display()))?,
            (None, None) => {
                return Err(anyhow!(
                    "an API key is needed: --key, FREIGHT_API_KEY or --key-file \
                     (`freight keys create --account acct_… --permissions read,write`)"
                ));
            }
        };
        Ok(key.trim().to_owned())
    }
}

/// The whole report of a run, as `--json` prints it.
#[derive(serde::Serialize)]
struct Report<'a> {
    base_url: &'a str,
    scenario: &'a ScenarioEcho,
    setup_seconds: f64,
    summary: Option<Summary>,
    ramp: Option<Ramp>,
}

/// The scenario as run, for the report.
type ScenarioEcho = serde_json::Value;

use plot::Ramp;

pub async fn run(args: LoadgenArgs) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let scenario = args.scenario()?;
    // Closed loop: one connection per request in flight, as wrk.
    let connections = match scenario.closed_loop {
        true => scenario.concurrency.max(scenario.connections),
        false => scenario.connections,
    };
    let fixes_only = scenario.ramp
        || (scenario.dashboards == 0 && scenario.streams == 0 && scenario.clients == 0);
    if args.invent_loads && !fixes_only {
        return Err(anyhow!(
            "--invent-loads sends fixes only: use --ramp, or --dashboards 0 --streams 0 --clients 0"
        ));
    }
    let key = match args.invent_loads {
        true => args.key().unwrap_or_else(|_| "none".into()),
        false => args.key()?,
    };
    let target = Target::connect(
        &args.base_url,
        &key,
        (args.cacert.as_deref(), args.insecure),
        connections as usize,
    )?;
    if !args.invent_loads {
        target.check_key().await?;
    }
    let recorder = Arc::new(Recorder::default());
    let progress = Progress::new(!args.json);

    let started = Instant::now();
    let fleet = match args.invent_loads {
        true => traffic::Fleet::invented(&scenario),
        false => {
            progress.say(&format!(
                "setting up {} trucks on loads of their own…",
                scenario.trucks
            ));
            traffic::Fleet::set_up(&target, &scenario).await?
        }
    };
    let fleet = Arc::new(fleet);
    if args.protocol != trackers::Protocol::Http {
        let options = trackers::Options {
            protocol: args.protocol,
            tracker_addr: args.tracker_addr.clone(),
            records: args.records,
            json: args.json,
            invent_loads: args.invent_loads,
            plot: args.plot.clone(),
        };
        settle(&progress, args.settle).await;
        return trackers::run(&options, &scenario, &target, &fleet, &recorder).await;
    }
    settle(&progress, args.settle).await;
    let setup_seconds = started.elapsed().as_secs_f64();
    let echo = scenario_echo(&scenario);

    let (summary, ramp) = if scenario.ramp {
        (
            None,
            Some(ramp(&target, &fleet, &scenario, &recorder, &progress, &args.plot).await?),
        )
    } else {
        let began = Instant::now();
        let until = began + scenario.duration();
        let watch = progress.watch(recorder.clone(), began, until);
        traffic::drive(&target, &fleet, &scenario, &recorder, until).await;
        watch.abort();
        (Some(recorder.summary(began.elapsed(), false)), None)
    };
    progress.finish();
    let report = Report {
        base_url: &args.base_url,
        scenario: &echo,
        setup_seconds,
        summary,
        ramp,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    if scenario.ramp {
        // A ramp runs fixes only (see `ramp`): no dashboards, streams or clients.
        println!(
            "{}, fixes only: from {:.0}/s, {:.0}/s more every {} s, until p99 passes {} ms; set-up {:.1} s",
            counted(scenario.trucks, "truck"),
            scenario.ramp_start_per_sec,
            scenario.ramp_step_per_sec,
            scenario.ramp_step_secs,
            scenario.p99_bound_ms,
            setup_seconds
        );
    } else {
        println!(
            "{}, a fix every {} s ({:.0} fixes/s offered{}), {}, {}, {}; set-up {:.1} s",
            counted(scenario.trucks, "truck"),
            scenario.fix_every_secs,
            scenario.fix_rate(),
            if scenario.closed_loop {
                ", closed loop"
            } else {
                ", open loop"
            },
            counted(scenario.dashboards, "dashboard"),
            counted(scenario.streams, "stream"),
            counted(scenario.clients, "client"),
            setup_seconds
        );
    }
    if let Some(summary) = &report.summary {
        println!("{:.1} s measured\n{}", summary.seconds, summary.table());
    }
    if let Some(ramp) = &report.ramp {
        print!("{}", ramp.table("fixes"));
    }
    Ok(())
}

fn scenario_echo(scenario: &Scenario) -> ScenarioEcho {
    serde_json::json!({
        "trucks": scenario.trucks,
        "fix_every_secs": scenario.fix_every_secs,
        "offered_fixes_per_sec": scenario.fix_rate(),
        "duration_secs": scenario.duration_secs,
        "closed_loop": scenario.closed_loop,
        "concurrency": scenario.concurrency,
        "dashboards": scenario.dashboards,
        "streams": scenario.streams,
        "clients": scenario.clients,
        "duplicate_share": scenario.duplicate_share,
        "out_of_order_share": scenario.out_of_order_share,
        "offline_share": scenario.offline_share,
    })
}

async fn settle(progress: &Progress, seconds: u64) {
    if seconds > 0 {
        progress.say(&format!("settling for {seconds} s…"));
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }
}

/// Steps the fix rate up (fixes only: dashboards and clients would blur what
/// the step measures) until a step's p99 passes the bound.
async fn ramp(
    target: &Target,
    fleet: &Arc<traffic::Fleet>,
    scenario: &Scenario,
    recorder: &Arc<Recorder>,
    progress: &Progress,
    plot_path: &std::path::Path,
) -> anyhow::Result<Ramp> {
    let mut ramp = Ramp::new(scenario.p99_bound_ms, plot_path);
    for step in 0..scenario.ramp_steps {
        let rate = scenario.ramp_rate(step);
        let shape = Scenario {
            fix_every_secs: f64::from(scenario.trucks) / rate,
            duration_secs: scenario.ramp_step_secs,
            dashboards: 0,
            streams: 0,
            clients: 0,
            closed_loop: false,
            ..scenario.clone()
        };
        let began = Instant::now();
        let until = began + shape.duration();
        let watch = progress.watch(recorder.clone(), began, until);
        traffic::drive(target, fleet, &shape, recorder, until).await;
        watch.abort();
        let summary = recorder.summary(began.elapsed(), true);
        let (achieved, p99, errors) = summary
            .operations
            .iter()
            .filter(|o| o.operation.starts_with("fix") || o.operation == "batch")
            .fold((0.0, 0.0f64, 0), |(a, p, e), o| {
                let errs: u64 = o.errors.values().sum();
                (
                    a + (o.ok as f64) / summary.seconds,
                    p.max(o.p99_ms),
                    e + errs,
                )
            });
        progress.say(&format!(
            "step {}: offered {rate:.0}/s, achieved {achieved:.0}/s, p99 {p99:.1} ms, {errors} errors",
            step + 1
        ));
        if !ramp.step(rate, achieved, p99, errors) {
            break;
        }
    }
    ramp.finish(plot_path)?;
    Ok(ramp)
}

/// The live progress line (hidden with `--json`, and when stderr is not a terminal).
struct Progress(indicatif::ProgressBar);

impl Progress {
    fn new(show: bool) -> Self {
        let bar = match show {
            true => indicatif::ProgressBar::new_spinner(),
            false => indicatif::ProgressBar::hidden(),
        };
        Progress(bar)
    }

    fn say(&self, line: &str) {
        self.0.println(line);
    }

    /// Updates the line every second: elapsed, rate per operation over the
    /// last second, errors so far.
    fn watch(
        &self,
        recorder: Arc<Recorder>,
        began: Instant,
        until: Instant,
    ) -> tokio::task::JoinHandle<()> {
        let bar = self.0.clone();
        tokio::spawn(async move {
            let mut last: Vec<(&'static str, u64, u64)> = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let now = recorder.counts();
                let rates: Vec<String> = now
                    .iter()
                    .map(|(name, n, _)| {
                        let before = last.iter().find(|(b, _, _)| b == name).map_or(0, |l| l.1);
                        format!("{name} {}/s", n.saturating_sub(before))
                    })
                    .collect();
                let errors: u64 = now.iter().map(|(_, _, e)| e).sum();
                let left = until.saturating_duration_since(Instant::now()).as_secs();
                bar.set_message(format!(
                    "{:>4} s ({left} s left)  {}  errors {errors}",
                    began.elapsed().as_secs(),
                    rates.join("  ")
                ));
                bar.tick();
                last = now;
            }
        })
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: LoadgenArgs,
    }

    #[tokio::test]
    async fn invented_loads_are_refused_beside_dashboards_streams_or_clients() {
        let args = |extra: &[&str]| {
            let mut argv = vec![
                "loadgen",
                "--invent-loads",
                "--base-url",
                "https://127.0.0.1:9",
            ];
            argv.extend_from_slice(extra);
            Command::parse_from(argv).args
        };
        // The default scenario has dashboards and a client: refused before
        // anything is sent (nothing listens on port 9).
        let refused = run(args(&[])).await.unwrap_err().to_string();
        assert!(
            refused.contains("--invent-loads sends fixes only"),
            "{refused}"
        );
        // Fixes only, it goes on to connect, and fails there instead.
        let fixes_only = [
            "--dashboards",
            "0",
            "--clients",
            "0",
            "--duration",
            "1",
            "--json",
        ];
        let connected = run(args(&fixes_only)).await;
        assert!(
            connected
                .as_ref()
                .err()
                .is_none_or(|e| !e.to_string().contains("fixes only")),
            "{connected:?}"
        );
    }

    #[test]
    fn counts_are_said_in_the_singular_for_one() {
        assert_eq!(super::counted(1u32, "stream"), "1 stream");
        assert_eq!(super::counted(0u32, "client"), "0 clients");
        assert_eq!(super::counted(256u32, "truck"), "256 trucks");
    }
}
