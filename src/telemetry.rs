//! Logging and metrics set-up.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// An error with every source under it, `outer: inner: innermost`, for one log
/// line (tracing's `%error` shows only the outermost).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// What is logged unless `RUST_LOG` says otherwise: `info`, storage engine
/// internals at `warn`, and nothing from two libraries that log what clients
/// and webhook receivers do wrong as errors of their own: actix-http's
/// dispatcher (a malformed request, already answered 400) and rustls's
/// platform verifier (a receiver's bad certificate, which the delivery log
/// records against the webhook, and the attempt logs at debug with its id).
/// Anyone who sends a request or runs a receiver could otherwise fill the
/// error log. actix-server's own start-up lines ("starting N workers", "Tokio
/// runtime found") are at `warn`: freight logs its listeners itself.
pub const DEFAULT_LOG_FILTER: &str = "info,fjall=warn,lsm_tree=warn,actix_server=warn,\
    actix_http::h1::dispatcher=off,rustls_platform_verifier=off";

/// Logs to stderr at `RUST_LOG` (default [`DEFAULT_LOG_FILTER`]). Safe to call
/// more than once.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    // Colour only for a person at a terminal: escape codes in a log file or a
    // collector are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(|| LossyStderr)
        // A failed write would otherwise be reported with `eprintln!`, which
        // panics when stderr cannot be written: the request being handled
        // lost its connection (a log file on a full disk did that to 190 of
        // 200 requests). `LossyStderr` never fails; this is the second guard.
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Log lines that could not be written (stderr's file on a full disk, a
/// closed pipe): counted, and otherwise dropped.
pub const LOG_LINES_LOST_METRIC: &str = "freight_log_lines_lost_total";

/// Stderr for log lines, where a write that fails is counted
/// ([`LOG_LINES_LOST_METRIC`]) and dropped instead of failing: an answer
/// matters more than its log line, and the service must keep answering
/// while the disk holding its log is full.
struct LossyStderr;

impl std::io::Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if std::io::stderr().lock().write_all(buf).is_err() {
            metrics::counter!(LOG_LINES_LOST_METRIC).increment(1);
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

tokio::task_local! {
    static REQUEST_ID: bytes::Bytes;
}

/// Runs `work` (one request's handling) with `id` as the id its log lines carry
/// (see [`request_id`]). A task-local rather than a tracing span: a span costs
/// the subscriber a formatting pass and a registry entry per request, on every
/// request, to serve the few that log anything.
pub async fn with_request_id<F: std::future::Future>(id: bytes::Bytes, work: F) -> F::Output {
    REQUEST_ID.scope(id, work).await
}

/// The id of the request being handled, for a log line's `request_id` field
/// (`-` outside a request, or in a task it spawned).
pub fn request_id() -> impl std::fmt::Display {
    struct Current;
    impl std::fmt::Display for Current {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            REQUEST_ID
                .try_with(|id| f.write_str(&String::from_utf8_lossy(id)))
                .unwrap_or_else(|_| f.write_str("-"))
        }
    }
    Current
}

/// Identifies the resource that answered a request, for its metrics: the
/// `resources!` macro gives each API resource one, with its path as written.
/// Finding the route's pattern otherwise means matching the path against the
/// whole route table again.
pub struct RouteId(pub &'static str);

/// rustls and reqwest need one process-wide crypto provider; this project uses ring.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Latency buckets (seconds): from a cached read to a slow fsync.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// GPS group-commit batch sizes (points).
const BATCH_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
];

/// The process-wide Prometheus recorder every `metrics::` call reports to,
/// installed on first use (several servers in one test process share it).
pub fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Suffix("_points".into()), BATCH_BUCKETS)
            })
            .expect("bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (a test harness): then metrics
        // go there and this handle renders an empty page.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// This host's name: `$HOSTNAME`, else `/etc/hostname`.
pub fn host_name() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer that keeps what the subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_default_filter_drops_what_clients_and_receivers_cause() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_LOG_FILTER))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "actix_http::h1::dispatcher", "stream error: malformed request");
            tracing::error!(target: "rustls_platform_verifier", "failed to verify TLS certificate");
            tracing::warn!(target: "fjall", "engine chatter below warn is dropped, warn is kept");
            tracing::info!(target: "lsm_tree", "compaction done");
            tracing::error!(target: "freight::storage", "storage unavailable");
            tracing::info!(target: "freight", "listening");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("malformed request"), "{text}");
        assert!(!text.contains("TLS certificate"), "{text}");
        assert!(!text.contains("compaction done"), "{text}");
        assert!(text.contains("warn is kept"), "{text}");
        assert!(text.contains("storage unavailable"), "{text}");
        assert!(text.contains("listening"), "{text}");
    }
}
