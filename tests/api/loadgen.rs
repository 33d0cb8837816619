//! `freight loadgen` against a real server process: stalled on purpose
//! (SIGSTOP) for part of an open-loop run, the stall must show in the
//! latencies, measured from each request's intended send time, instead of
//! vanishing because the generator waited too (coordinated omission); and a
//! ramp of hardware trackers over its TCP listener.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::free_port;

/// `freight serve` on `data` with `flags`: the process, its API port and the
/// first start's key (from its file: stdout is not a terminal).
async fn serve(data: &std::path::Path, flags: &[&str]) -> (tokio::process::Child, u16, String) {
    let (api, admin) = (free_port(), free_port());
    let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["serve", "--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .args(flags)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let key = crate::helpers::first_key_in(data)
        .await
        .expect("the first start wrote its key");
    (server, api, key)
}

#[actix_web::test]
async fn a_stalled_server_shows_in_the_open_loop_p99() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (server, api, key) = serve(&data, &[]).await;
    let loadgen = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args(["loadgen", "--json", "--trucks", "20", "--fix-every", "0.2"])
        .args(["--duration", "4", "--dashboards", "0", "--clients", "0"])
        .args(["--base-url", &format!("https://localhost:{api}")])
        .arg("--cacert")
        .arg(data.join("tls/cert.pem"))
        .env("FREIGHT_API_KEY", &key)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // A second into the run, the server stops for 1.5 s.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pid = server.id().unwrap().to_string();
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("-STOP");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    signal("-CONT");
    let out = loadgen.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fixes = report["summary"]["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == "fix")
        .unwrap_or_else(|| panic!("no fixes: {report}"))
        .clone();
    // 100 fixes/s offered: about 150 were due during the stall, far more than
    // 1% of the run's ~400, each waiting up to 1.5 s from its intended time.
    let p99 = fixes["p99_ms"].as_f64().unwrap();
    assert!(p99 >= 700.0, "the stall vanished: p99 {p99} ms in {fixes}");
    assert!(fixes["requests"].as_u64().unwrap() >= 300, "{fixes}");
    assert!(fixes["errors"].as_object().unwrap().is_empty(), "{fixes}");
}

/// `--protocol teltonika --ramp`: trucks as trackers on their own
/// connections, the record rate stepped up; every step is acknowledged at
/// the rate offered (a slow server would show as a lower achieved rate or a
/// p99 past the bound), and the records are the loads' fixes.
#[actix_web::test]
async fn a_tracker_ramp_steps_the_record_rate_over_real_connections() {
    let teltonika = free_port();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let listener = format!("teltonika=127.0.0.1:{teltonika}");
    // A unit here sends faster than a truck's allowance (1 a second).
    let flags = [
        "--tcp-ingest",
        &listener,
        "--device-positions-per-second",
        "1000",
    ];
    let (_server, api, key) = serve(&data, &flags).await;
    let scenario = dir.path().join("ramp.toml");
    std::fs::write(
        &scenario,
        "trucks = 10\nramp = true\nramp_start_per_sec = 50.0\nramp_step_per_sec = 50.0\n\
         ramp_steps = 2\nramp_step_secs = 3\np99_bound_ms = 2000.0\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_freight"))
        .args([
            "loadgen",
            "--json",
            "--protocol",
            "teltonika",
            "--records",
            "5",
        ])
        .args(["--tracker-addr", &format!("127.0.0.1:{teltonika}")])
        .arg("--scenario")
        .arg(&scenario)
        .arg("--plot")
        .arg(dir.path().join("ramp.svg"))
        .args(["--base-url", &format!("https://localhost:{api}")])
        .arg("--cacert")
        .arg(data.join("tls/cert.pem"))
        .env("FREIGHT_API_KEY", &key)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = report["ramp"]["steps"].as_array().expect("steps").clone();
    assert_eq!(steps.len(), 2, "{report}");
    for (step, offered) in steps.iter().zip([50.0, 100.0]) {
        assert_eq!(step["offered_per_sec"], offered, "{report}");
        assert_eq!(step["errors"], 0, "{report}");
        // Open loop over 3 s, the units' first packets spread over an interval.
        let achieved = step["achieved_per_sec"].as_f64().unwrap();
        assert!(achieved >= offered * 0.5, "{step} in {report}");
    }
    assert_eq!(report["ramp"]["capacity_per_sec"], 100.0, "{report}");
    assert!(dir.path().join("ramp.svg").exists());
}
