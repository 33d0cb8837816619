//! The shared state's admissions, reads and views.

use super::*;

fn active(account: &AccountId, status: LoadStatus) -> SharedState {
    let load = Load {
        account_id: account.clone(),
        ..crate::domain::load::sample(status)
    };
    let shared = SharedState::loading();
    shared.lock().state = State::Active(Tracked::from_load(load, &[], 7, StopsProgress::default()));
    shared
}

/// `n` fixes (far from either stop) to admit.
fn some(n: i64) -> Vec<GpsFix> {
    (0..n).map(|s| fix(1_000 + s)).collect()
}

fn fix(second: i64) -> GpsFix {
    GpsFix {
        timestamp: chrono::DateTime::from_timestamp(1_780_000_000 + second, 0).unwrap(),
        lat: 33.0,
        lng: -96.0,
        speed_mph: None,
        heading_deg: None,
        source: crate::domain::tracking::FixSource::Api,
    }
}

#[tokio::test]
async fn callers_admit_only_what_the_actor_would_and_defer_the_rest_to_it() {
    let account = AccountId::generate();
    let shared = active(&account, LoadStatus::InTransit);

    let admitted = shared
        .try_admit(&account, &some(3), &Wanted::ALL)
        .unwrap()
        .unwrap();
    assert_eq!(admitted.first_sequence, Some(7));
    // The load's first ETA is sent, one per stop ahead (in transit, the
    // pickup is behind: the delivery's), with the newest fix, numbered after
    // the three fixes' events.
    let [eta] = &admitted.stops[..] else {
        panic!("one ETA change: {:?}", admitted.stops);
    };
    assert_eq!((eta.index, eta.milestones.len()), (2, 0));
    let sequences: Vec<u64> = eta.eta_changed.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, [10]);
    assert_eq!(eta.eta_changed[0].stop.sequence, 2);
    assert!(
        eta.progress.stops[1].1.eta_sent.is_some(),
        "stored with the fix"
    );
    assert_eq!(shared.lock().in_flight, 1);
    let again = shared
        .try_admit(&account, &some(1), &Wanted::ALL)
        .unwrap()
        .unwrap();
    assert_eq!(
        again.first_sequence,
        Some(11),
        "sequence numbers are reserved"
    );
    assert!(
        again.stops.is_empty(),
        "a second later: not looked at again"
    );

    // Another account's key sees no such load.
    let stranger = shared
        .try_admit(&AccountId::generate(), &some(1), &Wanted::default())
        .unwrap();
    assert!(matches!(stranger, Err(LoadError::NotFound)));

    // While the actor loads, changes status or stops, the mailbox decides.
    for flag in ["changing", "stopping"] {
        let mut guard = shared.lock();
        match flag {
            "changing" => guard.changing = true,
            _ => guard.stopping = true,
        }
        drop(guard);
        assert!(
            shared
                .try_admit(&account, &some(1), &Wanted::default())
                .is_none(),
            "{flag}"
        );
        let mut guard = shared.lock();
        guard.changing = false;
        guard.stopping = false;
    }
    assert!(
        SharedState::loading()
            .try_admit(&account, &some(1), &Wanted::default())
            .is_none()
    );
    assert!(SharedState::loading().try_read(&account).is_none());

    // Each admission's outcome is recorded once; only stored fixes move the
    // latest position.
    let fixes = [fix(1), fix(3), fix(2)];
    let outcomes = [Appended::Stored, Appended::Duplicate, Appended::Stored];
    let state = shared
        .record_stored(&fixes, Some(&outcomes), true, None)
        .unwrap();
    assert_eq!(state.recent, vec![fix(2), fix(1)]);
    assert!(shared.record_stored(&[fix(9)], None, true, None).is_none());
    assert_eq!(shared.lock().in_flight, 0);
    assert_eq!(shared.try_read(&account).unwrap().unwrap().recent.len(), 2);
}

#[tokio::test]
async fn a_rendered_view_is_kept_until_the_state_changes() {
    let account = AccountId::generate();
    let shared = active(&account, LoadStatus::InTransit);
    let stale_version = |view| match view {
        Some(Ok(View::Stale { version, .. })) => version,
        _ => panic!("expected a stale view"),
    };
    let first = stale_version(shared.try_view(&account));
    shared.keep_view(first, Bytes::from_static(b"v1"));
    assert!(matches!(
        shared.try_view(&account),
        Some(Ok(View::Current(view))) if view == "v1"
    ));

    // A stored fix makes the kept view stale, and a render of the older
    // state that finishes late is not kept.
    shared
        .try_admit(&account, &some(1), &Wanted::default())
        .unwrap()
        .unwrap();
    shared.record_stored(&[fix(5)], Some(&[Appended::Stored]), false, None);
    let second = stale_version(shared.try_view(&account));
    assert_ne!(first, second);
    shared.keep_view(first, Bytes::from_static(b"late"));
    assert_eq!(stale_version(shared.try_view(&account)), second);

    // Once the latest positions are full, a fix older than all of them
    // changes nothing a reader sees.
    shared.keep_view(second, Bytes::from_static(b"v2"));
    let newer: Vec<GpsFix> = (0..RECENT_FIXES as i64 + 1).map(|s| fix(100 + s)).collect();
    shared
        .try_admit(&account, &some(11), &Wanted::default())
        .unwrap()
        .unwrap();
    shared.record_stored(
        &newer,
        Some(&[Appended::Stored; RECENT_FIXES + 1]),
        false,
        None,
    );
    shared
        .try_admit(&account, &some(1), &Wanted::default())
        .unwrap()
        .unwrap();
    let third = stale_version(shared.try_view(&account));
    shared.keep_view(third, Bytes::from_static(b"v3"));
    shared.record_stored(&[fix(0)], Some(&[Appended::Stored]), false, None);
    assert!(matches!(
        shared.try_view(&account),
        Some(Ok(View::Current(view))) if view == "v3"
    ));
    assert!(matches!(
        shared.try_view(&AccountId::generate()),
        Some(Err(LoadError::NotFound))
    ));
}

#[tokio::test]
async fn a_load_that_does_not_take_fixes_refuses_them_without_the_actor() {
    let account = AccountId::generate();
    let delivered = active(&account, LoadStatus::Delivered);
    let refused = delivered
        .try_admit(&account, &some(1), &Wanted::default())
        .unwrap();
    assert!(matches!(
        refused,
        Err(LoadError::NotTrackable(LoadStatus::Delivered))
    ));
    assert_eq!(delivered.lock().in_flight, 0, "a refusal holds nothing");
}

#[tokio::test]
async fn a_loads_eta_speed_is_its_lanes_once_the_account_has_delivered_enough() {
    use crate::domain::location::UsState;
    use crate::domain::speed_history::DeliveredSpeed;
    use crate::domain::stop_etas::EtaBasis;
    let account = AccountId::generate();
    let shared = active(&account, LoadStatus::InTransit);
    let basis = |shared: &SharedState| {
        shared
            .try_read(&account)
            .unwrap()
            .map(|state| (state.speed.basis, state.speed.mph))
            .unwrap()
    };
    let admit = |wanted: Wanted| {
        shared
            .try_admit(&account, &some(1), &wanted)
            .unwrap()
            .unwrap();
        shared.record_stored(&[], Some(&[]), false, None);
    };
    admit(Wanted::default());
    assert_eq!(basis(&shared), (EtaBasis::AccountSetting, 50.0));
    // The sample load runs TX to GA: five delivered loads on that lane.
    let lane = DeliveredSpeed {
        origin: UsState::parse("TX").unwrap(),
        destination: UsState::parse("GA").unwrap(),
        mph: 57.0,
    };
    admit(Wanted {
        delivered: Some(Arc::new(vec![lane; 5])),
        ..Wanted::default()
    });
    assert_eq!(basis(&shared), (EtaBasis::LaneHistory, 57.0));
    // Fewer than five: the setting again.
    admit(Wanted {
        delivered: Some(Arc::new(vec![lane; 4])),
        ..Wanted::default()
    });
    assert_eq!(basis(&shared), (EtaBasis::AccountSetting, 50.0));
}
