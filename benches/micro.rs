//! Criterion micro-benchmarks of the pieces every request pays for: parsing and
//! validating a body (and what a refused body costs now that every problem is
//! listed), authenticating a cached key and checking its quota, signing a
//! webhook delivery, formatting a timestamp. Statistical, with warm-up and
//! outlier analysis; compare runs of one machine, not absolute figures.
//!
//! Run: `cargo bench --bench micro` (about a minute; `-- --quick` for a glance,
//! `-- sign` for one group).

use std::hint::black_box;
use std::sync::Arc;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use freight::api::extract::parse_json;
use freight::api::input::load::NewLoadInput;
use freight::api::input::tracking::FixInput;
use freight::clock::Clock;
use freight::domain::account::{Account, PlanKind};
use freight::domain::api_key::{ApiKey, NewKey, Permission};
use freight::domain::ids::AccountId;
use freight::domain::timestamp;
use freight::domain::validation::ValidationErrors;
use freight::services::auth::Authenticator;
use freight::services::rate_limits::RateLimiter;
use freight::storage::Storage;
use freight::storage::embedded::EmbeddedStore;
use freight::webhooks::signing::Signer;

fn bodies(c: &mut Criterion) {
    let now = Utc::now();
    let fix = format!(
        r#"{{"lat":32.7767,"lng":-96.797,"timestamp":"{}","speed":61.5,"heading":92}}"#,
        timestamp::format(&(now - chrono::Duration::minutes(1)))
    );
    let load = br#"{"origin":{"city":"Dallas","state":"TX","zip":"75201"},
        "destination":{"city":"Atlanta","state":"GA","zip":"30303"},
        "weight":42000,"equipment_type":"dry_van","rate":2850.0}"#;
    let refused = br#"{"origin":{"city":"Dallas","state":"ZZ","zip":75201},
        "weight":"42000","equipment_type":"spaceship","colour":"red"}"#;
    let mut group = c.benchmark_group("body");
    group.bench_function("fix: parse and validate", |b| {
        b.iter(|| {
            let input: FixInput = parse_json(black_box(fix.as_bytes())).unwrap();
            let mut errors = ValidationErrors::new();
            black_box(input.validate("", now, &mut errors))
        })
    });
    group.bench_function("new load: parse and validate", |b| {
        b.iter(|| {
            let input: NewLoadInput = parse_json(black_box(load)).unwrap();
            black_box(input.validate().unwrap())
        })
    });
    group.bench_function("refused load: every problem listed", |b| {
        b.iter(|| black_box(parse_json::<NewLoadInput>(black_box(refused)).unwrap_err()))
    });
    group.finish();
}

fn auth_and_quota(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(runtime.block_on(EmbeddedStore::open(dir.path())).unwrap());
    let account = Account {
        id: AccountId::generate(),
        name: "bench".into(),
        plan: PlanKind::Enterprise,
        custom_requests_per_hour: Some(u32::MAX),
        created_at: Utc::now(),
        disabled: false,
    };
    let issued = ApiKey::issue(
        NewKey {
            account_id: account.id.clone(),
            permissions: vec![Permission::Read, Permission::Write],
            description: None,
            expires_at: None,
        },
        Utc::now(),
    );
    runtime.block_on(async {
        storage.put_account(&account).await.unwrap();
        storage.put_api_key(&issued.record).await.unwrap();
    });
    let auth = Authenticator::new(storage.clone(), Clock::system());
    let limiter = RateLimiter::new(Clock::system());
    let header = format!("Bearer {}", issued.token);
    // The first lookup reads storage; the benchmark measures the cached path
    // every request after it takes.
    runtime
        .block_on(auth.authenticate(Some(&header), Some(Permission::Write)))
        .unwrap();
    c.bench_function("cached key and quota check", |b| {
        b.iter(|| {
            let principal = runtime
                .block_on(auth.authenticate(Some(black_box(&header)), Some(Permission::Write)))
                .unwrap();
            black_box(limiter.check(principal.account_id(), u32::MAX))
        })
    });
}

fn signing(c: &mut Criterion) {
    let signer = Signer::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    let body = vec![b'x'; 600];
    c.bench_function("sign a 600-byte delivery", |b| {
        b.iter(|| {
            black_box(signer.sign(
                black_box("evt_01jd5ex0k3m2v8q4r6t9w1y3z5"),
                b"1795536259",
                black_box(&body),
            ))
        })
    });
    let at = Utc::now();
    c.bench_function("format a timestamp", |b| {
        b.iter(|| black_box(timestamp::format(black_box(&at))))
    });
}

criterion_group!(benches, bodies, auth_and_quota, signing);
criterion_main!(benches);
