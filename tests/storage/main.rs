//! The storage conformance suite (`conformance`), instantiated per backend, and
//! checks particular to a backend.

mod carrier_holds;
mod conformance;
#[path = "../common/cql_keyspace.rs"]
mod cql_keyspace;
mod fixtures;
mod late_points;

use cql_keyspace::{ScratchKeyspace, cql_cluster, test_replication};

/// What a missing CQL cluster keeps from running.
const SUITE: &str = "the storage conformance suite";

use std::sync::Arc;

use freight::domain::ids::AccountId;
use freight::storage::embedded::EmbeddedStore;
use freight::storage::scylla::{self, ScyllaStore};
use freight::storage::secret_box::{self, SecretBox};
use freight::storage::{
    CarrierStore, LoadFilter, LoadStore, PageRequest, Storage, StorageError, WebhookStore,
};

/// One test per conformance check for a backend made by `$open`, in a module
/// named `$backend`; each test opens its own store (`$open` answers `None`,
/// having said why, when the backend cannot run here: the test then passes
/// without checking anything).
macro_rules! conformance_tests {
    ($backend:ident, $open:expr) => {
        conformance_tests!(
            $backend,
            $open,
            accounts_and_keys,
            loads_round_trip_and_move_between_indexes,
            load_lists_filter_order_and_paginate,
            carriers_are_unique_by_mc_number_per_account,
            carriers_are_changed_and_deleted_freeing_their_number,
            reference_claims_are_swapped_only_from_the_holder_seen,
            a_stale_reference_claim_is_taken_over_and_a_live_one_is_not,
            identifier_claims_are_one_per_identifier_across_accounts,
            a_device_carrying_its_identifier_keeps_it_and_a_stale_claim_is_taken_over,
            points_are_ordered_deduplicated_and_ranged,
            late_fixes_over_many_batches_are_told_apart_exactly,
            stop_progress_is_written_with_its_point,
            stop_timers_follow_their_points,
            outbox_fan_out_and_delivery_schedule,
            outbox_reads_waiting_events_near_and_far_apart,
            idempotency_answers_are_kept_and_purged,
            webhook_history_is_pruned_but_nothing_pending,
            webhook_secrets_come_back_as_put,
            delivery_log_pages_across_hours_and_keeps_its_total,
            users_are_unique_by_email_and_bring_their_account,
            sessions_end_and_expire,
            users_are_changed_and_removed_with_their_sessions,
            password_links_are_taken_once,
            devices_and_their_loads,
            share_links_are_found_by_token_and_listed_by_load,
            leases_give_a_load_one_owner_at_a_time,
            idempotency_keys_are_claimed_by_one_instance,
            request_counts_add_up_across_instances,
            instances_register_and_leases_name_their_holder,
            answers_ping,
        );
    };
    ($backend:ident, $open:expr, $($check:ident),+ $(,)?) => {
        mod $backend {
            use super::*;

            $(
                #[tokio::test]
                async fn $check() {
                    let Some((_guard, store)) = $open.await else {
                        return;
                    };
                    conformance::$check(&*store).await;
                }
            )+
        }
    };
}

/// A key of its own for each store, as `storage::open` gives one.
fn secret_box() -> Arc<SecretBox> {
    let mut key = [0u8; secret_box::KEY_BYTES];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    Arc::new(SecretBox::new(&key))
}

async fn open_embedded() -> Option<(tempfile::TempDir, Arc<dyn Storage>)> {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    Some((dir, Arc::new(store.sealing_secrets_with(secret_box()))))
}

conformance_tests!(embedded, open_embedded());

/// A CQL store (ScyllaDB or Cassandra) in a fresh keyspace, migrated from `cql/`.
async fn open_scylla() -> Option<(ScratchKeyspace, Arc<dyn Storage>)> {
    let keyspace = cql_keyspace::migrated(SUITE).await?;
    let store = ScyllaStore::open(&keyspace.0)
        .await
        .expect("opening the store");
    Some((keyspace, Arc::new(store.sealing_secrets_with(secret_box()))))
}

conformance_tests!(scylla_cluster, open_scylla());

/// `freight migrate` twice on one keyspace: the second run applies nothing and
/// changes nothing, on whichever engine the cluster runs; the store opens after both.
#[tokio::test(flavor = "multi_thread")]
async fn migrating_twice_applies_nothing_the_second_time() {
    let Some(config) = cql_cluster(SUITE) else {
        return;
    };
    let replication = test_replication();
    let first = scylla::schema::migrate(&config, Some(&replication), Some(Some(30)), false)
        .await
        .expect("the first migration");
    let _guard = ScratchKeyspace(config.clone());
    assert_eq!(
        first.applied.len(),
        scylla::schema::FILES.len(),
        "{first:?}"
    );
    let second = scylla::schema::migrate(&config, Some(&replication), Some(Some(30)), false)
        .await
        .expect("the second migration");
    assert!(second.applied.is_empty(), "{second:?}");
    assert!(
        second.notes.iter().any(|n| n.starts_with("engine: ")),
        "{second:?}"
    );
    ScyllaStore::open(&config).await.expect("the store opens");
}

/// A data directory from before secrets were sealed: its plain secrets are
/// read as they are by a store that seals, and sealed by
/// `reseal_webhook_secrets` (once); a store with another key, or none, then
/// cannot read them and says so.
#[tokio::test(flavor = "multi_thread")]
async fn embedded_plain_secrets_are_sealed_once_and_need_their_key() {
    use freight::domain::event::EventType;
    use freight::domain::ids::WebhookId;
    use freight::domain::webhook::Subscription;

    let dir = tempfile::tempdir().unwrap();
    let now = fixtures::now();
    let webhook = Subscription {
        id: WebhookId::generate(),
        account_id: AccountId::generate(),
        url: "https://hooks.example.com/freight".into(),
        events: vec![EventType::LoadCreated],
        secret: "written-before-sealing-0123".into(),
        enabled: true,
        disabled_reason: None,
        created_at: now,
        updated_at: now,
    };
    {
        let plain = EmbeddedStore::open(dir.path()).await.unwrap();
        plain.put_webhook(&webhook).await.unwrap();
    }
    let key = secret_box();
    {
        let store = EmbeddedStore::open(dir.path())
            .await
            .unwrap()
            .sealing_secrets_with(key.clone());
        assert_eq!(
            store.get_webhook(&webhook.id).await.unwrap(),
            Some(webhook.clone()),
            "a plain secret reads as it is"
        );
        assert_eq!(store.reseal_webhook_secrets().await.unwrap(), 1);
        assert_eq!(store.reseal_webhook_secrets().await.unwrap(), 0);
        assert_eq!(store.all_webhooks().await.unwrap(), vec![webhook.clone()]);
    }
    {
        let without_key = EmbeddedStore::open(dir.path()).await.unwrap();
        assert!(
            matches!(
                without_key.get_webhook(&webhook.id).await,
                Err(StorageError::Corrupt { .. })
            ),
            "the secret is stored sealed now"
        );
    }
    let other_key = EmbeddedStore::open(dir.path())
        .await
        .unwrap()
        .sealing_secrets_with(secret_box());
    let refused = other_key.reseal_webhook_secrets().await.unwrap_err();
    let chain = freight::telemetry::error_chain(&refused);
    assert!(chain.contains("does not open with this key"), "{chain}");
    assert!(other_key.all_webhooks().await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn embedded_writes_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let carrier = conformance::carrier(&AccountId::generate(), "31337");
    {
        let store = EmbeddedStore::open(dir.path()).await.unwrap();
        store.insert_carrier(&carrier).await.unwrap();
    }
    let reopened = EmbeddedStore::open(dir.path()).await.unwrap();
    assert_eq!(
        reopened
            .get_carrier(&carrier.account_id, &carrier.id)
            .await
            .unwrap(),
        Some(carrier.clone())
    );
    let page = reopened
        .list_carriers(
            &carrier.account_id,
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.items, vec![carrier]);
    let no_loads = reopened
        .list_loads(
            &page.items[0].account_id,
            &LoadFilter::default(),
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(no_loads.total, 0);
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// `None` (having said why) where mounting is not allowed (not root).
    fn mount(megabytes: u32) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(Tmpfs(dir)),
            Ok(output) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs to fill ({}); run as root to test a full disk",
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                None
            }
            Err(error) => {
                eprintln!("skipped: cannot run mount ({error}); run as root to test a full disk");
                None
            }
        }
    }

    fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

/// Every carrier in `carriers` is stored as it was written.
async fn assert_all_stored(
    store: &EmbeddedStore,
    carriers: &[freight::domain::carrier::Carrier],
    why: &str,
) {
    for carrier in carriers {
        let stored = store
            .get_carrier(&carrier.account_id, &carrier.id)
            .await
            .unwrap();
        assert_eq!(stored.as_ref(), Some(carrier), "{why}");
    }
}

/// A full disk: writes fail (and the store refuses writes after that), reads
/// go on; when space returns, the store takes writes again by itself, and
/// every write acknowledged before, during and after is there, also after a
/// fresh open from disk.
#[tokio::test(flavor = "multi_thread")]
async fn embedded_recovers_from_a_full_disk_without_a_restart() {
    use std::io::Write;

    let Some(disk) = Tmpfs::mount(16) else {
        return;
    };
    let path = disk.path().join("store");
    let store = EmbeddedStore::open(&path).await.unwrap();
    let owner = AccountId::generate();
    let mut acknowledged = Vec::new();
    let first = conformance::carrier(&owner, "500000");
    store.insert_carrier(&first).await.unwrap();
    acknowledged.push(first);

    // Fill the disk to the last byte.
    let ballast = disk.path().join("ballast");
    let mut file = std::fs::File::create(&ballast).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    while file.write_all(&chunk).and_then(|_| file.sync_all()).is_ok() {}
    let mut filler = 0u32;
    loop {
        let one = vec![7u8; 1024];
        if file.write_all(&one).and_then(|_| file.sync_all()).is_err() {
            break;
        }
        filler += 1;
        assert!(filler < 100_000);
    }

    // Writes fail now (maybe after a few fit in what the store had left).
    let mut failed = false;
    for n in 0..2_000 {
        let carrier = conformance::carrier(&owner, &format!("{}", 510_000 + n));
        match store.insert_carrier(&carrier).await {
            Ok(_) => acknowledged.push(carrier),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the full disk refused no write");
    // Reads go on.
    assert_eq!(
        store
            .get_carrier(&owner, &acknowledged[0].id)
            .await
            .unwrap(),
        Some(acknowledged[0].clone())
    );
    assert!(
        store
            .insert_carrier(&conformance::carrier(&owner, "520000"))
            .await
            .is_err(),
        "still full: still refused"
    );

    // Space returns: the store takes writes again without being reopened by us.
    drop(file);
    std::fs::remove_file(&ballast).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let after = conformance::carrier(&owner, "530000");
    loop {
        if store.insert_carrier(&after).await.is_ok() {
            acknowledged.push(after.clone());
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the store did not take writes again within 30 s of space returning"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_all_stored(&store, &acknowledged, "acknowledged around the full disk").await;
    drop(store);
    let reopened = EmbeddedStore::open(&path).await.unwrap();
    assert_all_stored(&reopened, &acknowledged, "durable across a fresh open").await;
    println!(
        "full disk: {} writes acknowledged around the full disk, none lost",
        acknowledged.len()
    );
}

/// A journal damaged inside (not a torn last write, which fjall repairs) stops
/// the service from starting, with a line that says what happened and what to
/// do. The real binary, SIGKILLed so that its journal is replayed at the next
/// start (a clean stop leaves nothing to replay).
#[test]
fn a_damaged_journal_is_reported_plainly() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let serve = || {
        let port = |_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        Command::new(env!("CARGO_BIN_EXE_freight"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{}", port(0))])
            .args(["--admin-listen", &format!("127.0.0.1:{}", port(1))])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The first start writes the bootstrap account and key.
    let mut first = serve();
    let token = dir.path().join("admin.token");
    let started = std::time::Instant::now();
    while !token.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "no first start"
        );
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();

    let journal = std::fs::read_dir(dir.path().join("store"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jnl"))
        .expect("a journal file");
    let mut bytes = std::fs::read(&journal).unwrap();
    // Inside the first write's value (the bootstrap account's JSON), with
    // the key's write after it: damage in a write that is not the last, so
    // not one fjall takes for torn and drops. (The file's middle, used
    // before, fell on a write's checksum once the account record grew.)
    let first_value = bytes
        .iter()
        .position(|b| *b == b'{')
        .expect("the journal holds writes");
    let later_write = bytes
        .windows(4)
        .rposition(|w| w == b"key_")
        .expect("the bootstrap key's write");
    assert!(first_value + 28 < later_write, "one write after the damage");
    for byte in &mut bytes[first_value + 20..first_value + 28] {
        *byte ^= 0xff;
    }
    std::fs::write(&journal, bytes).unwrap();

    // A start that opens the damaged journal serves on: give it 30 s to
    // refuse, rather than wait for ever.
    let mut child = serve();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("a damaged journal opened: the service started on it");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = child.wait_with_output().unwrap();
    assert!(!second.status.success(), "a damaged journal opened");
    let stderr = String::from_utf8_lossy(&second.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("journal"), "{stderr}");
    assert!(last.contains("is damaged"), "{stderr}");
    assert!(
        last.contains("restore the data directory from a backup"),
        "{stderr}"
    );
}
