//! The dashboard in a real browser: `tests/browser/walk.mjs` drives Debian's
//! headless Chromium with playwright-core against the real server. Skipped, with
//! the reason printed, where the browser or the npm packages are missing; never
//! skipped under `CI=true` (`.ci/run` installs both).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::helpers::spawn_app_with_local_webhooks;

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
    // Webhooks to a receiver the walk runs on this machine (plain HTTP).
    let app = spawn_app_with_local_webhooks().await;
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let walk = tokio::process::Command::new("node")
        .arg(dir.join("walk.mjs"))
        .current_dir(&dir)
        .env("FREIGHT_URL", format!("https://localhost:{}", app.api_port))
        .env("FREIGHT_CHROMIUM", &chromium)
        .env("FREIGHT_ARTIFACTS", &artifacts)
        .env(
            "NODE_EXTRA_CA_CERTS",
            app.data_dir.path().join("tls/cert.pem"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), walk)
        .await
        .expect("the walk finishes within three minutes")
        .expect("node starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the walk failed\n{stdout}\n{stderr}\nscreenshots: {}",
        artifacts.display()
    );
    assert!(stdout.contains("walk complete"), "{stdout}");
    eprintln!("browser walk screenshots: {}", artifacts.display());
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
