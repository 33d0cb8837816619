//! Criterion micro-benchmarks of the pieces every request pays for: parsing and
//! validating a body (and what a refused body costs now that every problem is
//! listed), authenticating a cached key and checking its quota, a message to a
//! load's actor and back, the group commit of GPS points (one fdatasync shared
//! by whoever waits for it), signing a webhook delivery, formatting a
//! timestamp. Statistical, with warm-up and outlier analysis; compare runs of
//! one machine, not absolute figures.
//!
//! Run: `cargo bench --bench micro` (about two minutes; `-- --quick` for a
//! glance, `-- sign` for one group).

#[path = "../tests/storage/fixtures.rs"]
mod fixtures;

use std::hint::black_box;
use std::sync::Arc;

use chrono::Utc;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use freight::actors::load_actor::{ActorDeps, ActorSettings, ReadTracking};
use freight::actors::registry::LoadRegistry;
use freight::api::extract::parse_json;
use freight::api::input::load::NewLoadInput;
use freight::api::input::tracking::FixInput;
use freight::clock::Clock;
use freight::domain::account::{Account, PlanKind};
use freight::domain::api_key::{ApiKey, NewKey, Permission};
use freight::domain::ids::AccountId;
use freight::domain::ids::LoadId;
use freight::domain::load::LoadStatus;
use freight::domain::timestamp;
use freight::domain::tracking::{FixSource, GpsFix, TrackingPoint};
use freight::domain::validation::ValidationErrors;
use freight::services::auth::Authenticator;
use freight::services::rate_limits::RateLimiter;
use freight::services::tracking::group_commit::GroupCommitter;
use freight::storage::Storage;
use freight::storage::embedded::EmbeddedStore;
use freight::webhooks::notifier::Notifier;
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
        custom_max_streams: None,
        created_at: Utc::now(),
        disabled: false,
        stop_settings: Default::default(),
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

/// A load's actor on an arbiter thread of its own, as in the server: a
/// message there and its answer back (two thread hops), against the read a
/// handler makes without a message while the actor is resident.
fn actor_round_trip(c: &mut Criterion) {
    let system = actix_rt::System::new();
    let dir = tempfile::tempdir().unwrap();
    let (registry, load) = system.block_on(async {
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStore::open(dir.path()).await.unwrap());
        let mut load = fixtures::sample_load(&AccountId::generate(), "TX", "GA");
        load.status = LoadStatus::InTransit;
        storage.insert_load(&load, &[]).await.unwrap();
        let registry = LoadRegistry::new(ActorDeps {
            storage,
            notifier: Arc::new(Notifier::default()),
            clock: Clock::system(),
            settings: ActorSettings {
                threads: 1,
                idle_timeout: std::time::Duration::from_secs(3600),
                delivered_linger: std::time::Duration::from_secs(60),
                lease_ttl: freight::actors::load_actor::LEASE_TTL,
            },
            residents: Arc::default(),
            instance: "bench".into(),
            carriers: Arc::default(),
        });
        (registry, load)
    });
    let read = ReadTracking {
        account: load.account_id.clone(),
    };
    // The first message starts the actor (a storage read); then it is resident.
    system
        .block_on(registry.send(&load.id, read.clone()))
        .unwrap()
        .unwrap();
    let mut group = c.benchmark_group("actor");
    group.bench_function("message to a resident actor and back", |b| {
        b.iter(|| {
            black_box(
                system
                    .block_on(registry.send(&load.id, read.clone()))
                    .unwrap()
                    .unwrap(),
            )
        })
    });
    group.bench_function("read of a resident actor's state, no message", |b| {
        b.iter(|| {
            black_box(
                system
                    .block_on(registry.read_tracking(&load.id, &load.account_id))
                    .unwrap(),
            )
        })
    });
    group.finish();
}

/// GPS points through the group committer into the embedded store on this
/// machine's disk: alone, each pays a whole fdatasync; 64 waiting together
/// share one or two (per point figures).
fn group_commit(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(runtime.block_on(EmbeddedStore::open(dir.path())).unwrap());
    let (committer, _thread) = GroupCommitter::start(storage).unwrap();
    let loads: Vec<LoadId> = (0..64).map(|_| LoadId::generate()).collect();
    let start = Utc::now() - chrono::Duration::hours(1);
    let mut next = 0i64;
    // Every point new: a later time each, so none is a duplicate.
    let mut point = |load: &LoadId| {
        next += 1;
        TrackingPoint {
            load_id: load.clone(),
            fix: GpsFix {
                timestamp: start + chrono::Duration::microseconds(next),
                lat: 32.7767,
                lng: -96.797,
                speed_mph: Some(61.5),
                heading_deg: Some(92.0),
                source: FixSource::Api,
            },
            event: None,
            stops: None,
        }
    };
    let mut group = c.benchmark_group("group commit");
    group.throughput(Throughput::Elements(1));
    group.bench_function("one point, durable", |b| {
        b.iter(|| {
            let submitted = committer.append(vec![point(&loads[0])]);
            black_box(runtime.block_on(submitted).unwrap())
        })
    });
    group.throughput(Throughput::Elements(loads.len() as u64));
    group.bench_function("64 submissions of a point waiting together", |b| {
        b.iter(|| {
            let submitted: Vec<_> = loads
                .iter()
                .map(|load| committer.append(vec![point(load)]))
                .collect();
            black_box(runtime.block_on(futures_util::future::join_all(submitted)))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bodies,
    auth_and_quota,
    actor_round_trip,
    group_commit,
    signing
);
criterion_main!(benches);
