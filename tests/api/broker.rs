//! A real MQTT broker for the tests: Debian's Mosquitto on a free loopback
//! port, its own configuration in a temporary directory, stopped on drop;
//! devices publish with Mosquitto's own client (`mosquitto_pub`). Without
//! them a test is skipped, with the reason printed; under `CI=true` it fails
//! (`.ci/run` installs both).

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::helpers::free_port;

pub(crate) struct Broker {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
    /// One MQTT test at a time: freight's MQTT metrics are the process's,
    /// and every test server in this process shares them.
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The MQTT tests' turn, for a test that configures a broker without one.
pub(crate) async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    TURN.lock().await
}

/// Where Debian puts the broker (not on a non-root user's PATH).
fn mosquitto() -> Option<&'static str> {
    ["mosquitto", "/usr/sbin/mosquitto"]
        .into_iter()
        .find(|bin| Command::new(bin).arg("-h").output().is_ok())
}

impl Broker {
    /// A broker listening, or `None` (skip) when Mosquitto is not installed
    /// outside CI.
    pub(crate) async fn start() -> Option<Broker> {
        let missing = match (
            mosquitto(),
            Command::new("mosquitto_pub").arg("--help").output(),
        ) {
            (Some(bin), Ok(_)) => return Some(Self::start_with(bin).await),
            (None, _) => "mosquitto is not installed (Debian: apt-get install mosquitto)",
            (_, Err(_)) => {
                "mosquitto_pub is not installed (Debian: apt-get install mosquitto-clients)"
            }
        };
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI must run the MQTT tests, but {missing}");
        }
        eprintln!("skipping an MQTT test: {missing}");
        None
    }

    async fn start_with(bin: &str) -> Broker {
        let turn = TURN.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("mosquitto.conf");
        // Sessions kept in memory (the broker outlives every freight the tests
        // stop and kill); queues deep enough for a test's backlog.
        std::fs::write(
            &config,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n\
                 max_queued_messages 100000\nlog_dest stderr\nlog_type error\nlog_type warning\n"
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("mosquitto starts");
        let mut broker = Broker {
            child,
            port,
            _dir: dir,
            _turn: turn,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return broker;
            }
            if let Ok(Some(status)) = broker.child.try_wait() {
                panic!("mosquitto exited at start: {status}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("mosquitto did not listen on {port} within 5 s");
    }

    pub(crate) fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// Publishes each of `messages` to `topic` with QoS 1, as a device does,
    /// returning once the broker acknowledged them all.
    pub(crate) async fn publish(&self, topic: &str, messages: &[String]) {
        let port = self.port;
        let topic = topic.to_owned();
        let body = messages.join("\n") + "\n";
        assert!(
            messages.iter().all(|m| !m.contains('\n')),
            "one line a message"
        );
        tokio::task::spawn_blocking(move || {
            let mut publisher = Command::new("mosquitto_pub")
                .args(["-h", "127.0.0.1", "-p", &port.to_string()])
                .args(["-q", "1", "-t", &topic, "-l"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("mosquitto_pub starts");
            publisher
                .stdin
                .take()
                .unwrap()
                .write_all(body.as_bytes())
                .unwrap();
            let status = publisher.wait().unwrap();
            assert!(status.success(), "mosquitto_pub failed: {status}");
        })
        .await
        .unwrap();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An OwnTracks location message (`vel` km/h), as the app publishes it.
pub(crate) fn location(tst: i64, lat: f64, lon: f64) -> String {
    serde_json::json!({
        "_type": "location", "tst": tst, "lat": lat, "lon": lon,
        "vel": 80, "cog": 90, "acc": 10, "batt": 70, "tid": "t7"
    })
    .to_string()
}
