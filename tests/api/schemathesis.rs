//! schemathesis against the served OpenAPI document: generated requests for
//! every operation (examples, boundary values, random data, and sequences that
//! reuse what earlier answers returned), failing on any 5xx, any answer whose
//! status, headers or body the document does not allow, and any request the
//! document forbids but the server accepts. The seed is fixed, so a run makes
//! the same cases each time.
//!
//! It needs `tests/python/.venv` (`python3 -m venv tests/python/.venv
//! && tests/python/.venv/bin/pip install -r tests/python/requirements.txt`,
//! which `.ci/run` does) or `FREIGHT_SCHEMATHESIS` naming an `st` executable;
//! without one it is skipped with the reason printed, except under `CI=true`.
//!
//! Left out: `positive_data_acceptance` (a request the document allows that the
//! server refuses). Run alone (`st run … --checks positive_data_acceptance
//! --max-examples 30 --seed 1`, 24 November 2026) it reports 12 cases, each a
//! rule a JSON schema cannot state, refused as documented: the example
//! `Idempotency-Key` sent again with another body (422
//! `IDEMPOTENCY_KEY_REUSED`, six operations), the example webhook host
//! `hooks.example.com` not resolving on a machine without DNS (400, twice), a
//! fix older than 30 days and a leap-second time (400), and the example
//! `carrier_id`, which names no carrier in a fresh server (400
//! `UNKNOWN_CARRIER`).

use std::path::PathBuf;

use reqwest::Method;
use serde_json::json;

use crate::helpers::spawn_app;

fn schemathesis() -> Result<PathBuf, String> {
    let st = std::env::var_os("FREIGHT_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/.venv/bin/st")
        });
    if st.exists() {
        Ok(st)
    } else {
        Err(format!(
            "{} is not installed (see tests/api/schemathesis.rs)",
            st.display()
        ))
    }
}

#[actix_web::test]
async fn the_api_keeps_to_its_openapi_document_under_schemathesis() {
    let st = match schemathesis() {
        Ok(st) => st,
        Err(reason) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping schemathesis: {reason}");
            return;
        }
        Err(reason) => panic!("CI must run schemathesis, but {reason}"),
    };
    let app = spawn_app().await;
    // A quota large enough that no generated request is answered 429.
    let (status, account) = app
        .admin(
            Method::POST,
            "/accounts",
            Some(json!({"name": "Schemathesis", "plan": "enterprise", "requests_per_hour": 100_000_000})),
        )
        .await;
    assert_eq!(status, 201, "{account}");
    let key = app
        .new_key(
            account["data"]["id"].as_str().unwrap(),
            &["read", "write"],
            None,
        )
        .await;
    let origin = app.base.trim_end_matches("/v1").to_owned();
    let output = tokio::process::Command::new(&st)
        .args(["run", &format!("{}/openapi.json", app.base)])
        .args(["--url", &origin, "--tls-verify", "false"])
        .args(["-H", &format!("Authorization: Bearer {key}")])
        .args([
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
        ])
        .args(["--max-examples", "30", "--seed", "1"])
        .args(["--no-color"])
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&output.stdout);
    let summary: Vec<&str> = report
        .lines()
        .filter(|line| line.contains("generated") || line.contains("failures"))
        .collect();
    println!("schemathesis: {}", summary.join(" | "));
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
