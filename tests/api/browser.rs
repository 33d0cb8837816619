//! The dashboard in a real browser: `tests/browser/walk.mjs` drives Debian's
//! headless Chromium with playwright-core against the real server. Skipped, with
//! the reason printed, where the browser or the npm packages are missing; never
//! skipped under `CI=true` (`.ci/run` installs both).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use chrono::SecondsFormat;
use serde_json::json;

use freight::dashboard::MapSource;
use freight::dashboard::map_tiles::MapTiles;

use crate::helpers::{TestApp, free_port, spawn_app_with};

/// What the walk needs, or why it cannot run here.
fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    let chromium = std::env::var_os("FREIGHT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        return Err(format!(
            "no browser at {} (apt-get install chromium)",
            chromium.display()
        ));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    if !dir.join("node_modules/playwright-core").exists() {
        return Err("playwright-core is not installed (cd tests/browser && npm ci)".into());
    }
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Err("node is not on the PATH".into());
    }
    Ok((chromium, dir))
}

#[actix_web::test]
async fn a_new_user_walks_through_the_dashboard_in_chromium() {
    let (chromium, dir) = match prerequisites() {
        Ok(found) => found,
        Err(reason) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the browser walk: {reason}");
            return;
        }
        Err(reason) => panic!("CI must run the browser walk, but {reason}"),
    };
    // Webhooks to a receiver the walk runs on this machine (plain HTTP); every
    // tracker listener and a broker, so the Devices page shows all its setup
    // cards in the screenshots (the broker is never reached: the MQTT tests'
    // turn is held, their metrics being the process's).
    let _turn = crate::broker::turn().await;
    let app = spawn_app_with(|s| {
        s.webhooks.url_policy = freight::domain::webhook::UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        s.trackers.listeners = ["teltonika", "gt06", "queclink", "h02"]
            .iter()
            .map(|p| format!("{p}=127.0.0.1:0").parse().unwrap())
            .collect();
        s.mqtt.broker = Some("mqtt://127.0.0.1:1".parse().unwrap());
    })
    .await;
    let stdout = run_script(&app, &chromium, &dir, "walk.mjs", &[]).await;
    assert!(stdout.contains("walk complete"), "{stdout}");
}

/// Runs `tests/browser/<script>` against `app`, with `env` beside the usual
/// variables; panics with its output (and where the screenshots are) if it fails.
async fn run_script(
    app: &TestApp,
    chromium: &Path,
    dir: &Path,
    script: &str,
    env: &[(&str, String)],
) -> String {
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let run = tokio::process::Command::new("node")
        .arg(dir.join(script))
        .current_dir(dir)
        .env("FREIGHT_URL", format!("https://localhost:{}", app.api_port))
        .env("FREIGHT_CHROMIUM", chromium)
        .env("FREIGHT_ARTIFACTS", &artifacts)
        .env(
            "NODE_EXTRA_CA_CERTS",
            app.data_dir.path().join("tls/cert.pem"),
        )
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the script finishes within three minutes")
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed\n{stdout}\n{stderr}\nscreenshots: {}",
        artifacts.display()
    );
    eprintln!("{script} screenshots: {}", artifacts.display());
    stdout
}

/// A city name that is markup (the tester's): Leaflet writes strings as HTML.
const HOSTILE_CITY: &str = "<b>Dallas</b><img src=x onerror=alert(1)>";

/// With `--map-tiles`, the board and a load's page draw Leaflet over the
/// operator's tiles: `tests/browser/map.mjs` serves them from a local HTTPS
/// server and checks they are drawn, the marker moves and opens the load, and
/// the load's trail is a line.
#[actix_web::test]
async fn the_maps_draw_the_operators_tiles_in_chromium() {
    let (chromium, dir) = match prerequisites() {
        Ok(found) => found,
        Err(reason) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the map walk: {reason}");
            return;
        }
        Err(reason) => panic!("CI must run the map walk, but {reason}"),
    };
    let tile_port = free_port();
    let template = format!("https://localhost:{tile_port}/tiles/{{z}}/{{x}}/{{y}}.svg");
    let app = spawn_app_with(|settings| {
        let tiles = MapTiles::parse(&template, "&copy; Test tiles").expect("a valid template");
        settings.map = MapSource(Some(tiles));
    })
    .await;
    // An assigned load near Dallas with a short trail heading east, from a
    // pickup whose city is written as markup: its tooltip must show it as text.
    let carrier = app.create_carrier("778812").await;
    let mut body = crate::helpers::load_body("TX", "OK");
    body["origin"]["city"] = json!(HOSTILE_CITY);
    let load = app.create_load(body).await;
    let load_id = load["id"].as_str().unwrap().to_owned();
    let (status, body) = app
        .patch(
            &format!("/loads/{load_id}/status"),
            json!({"status": "assigned", "carrier_id": carrier["id"]}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let now = app.clock.now();
    for (minute, lng) in [(-30, -96.9), (-20, -96.7), (-10, -96.5)] {
        let at = now + chrono::Duration::minutes(minute);
        let fix = json!({"lat": 32.8, "lng": lng, "heading": 90.0, "speed": 55.0,
            "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true)});
        let (status, body) = app.post(&format!("/loads/{load_id}/tracking"), fix).await;
        assert!(status.is_success(), "{body}");
    }
    let (status, user) = app
        .admin(
            reqwest::Method::POST,
            &format!("/accounts/{}/users", app.account_id),
            Some(json!({"email": "maps@example.com"})),
        )
        .await;
    assert!(status.is_success(), "{user}");
    let data = app.data_dir.path();
    let stdout = run_script(
        &app,
        &chromium,
        &dir,
        "map.mjs",
        &[
            ("TILE_PORT", tile_port.to_string()),
            ("TILE_CERT", data.join("tls/cert.pem").display().to_string()),
            ("TILE_KEY", data.join("tls/key.pem").display().to_string()),
            ("FREIGHT_KEY", app.key.clone()),
            ("LOAD_ID", load_id),
            (
                "LINK_PATH",
                user["data"]["link_path"].as_str().unwrap().to_owned(),
            ),
            ("FIX_TIME", now.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ("HOSTILE_CITY", HOSTILE_CITY.to_owned()),
        ],
    )
    .await;
    assert!(stdout.contains("map walk complete"), "{stdout}");
}

/// The map's outline and the projection of `board.js` agree (known cities land
/// in their own states): `tests/browser/projection-check.mjs`, which needs only node.
#[test]
fn the_board_projection_puts_cities_in_their_states() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let output = match std::process::Command::new("node")
        .arg(dir.join("projection-check.mjs"))
        .output()
    {
        Ok(output) => output,
        Err(error) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the projection check: node cannot run ({error})");
            return;
        }
        Err(error) => panic!("CI must run the projection check, but node cannot run: {error}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}
