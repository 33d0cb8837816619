use super::*;

fn change(status: LoadStatus, carrier: Option<CarrierId>) -> StatusChange {
    StatusChange {
        status,
        carrier_id: carrier,
        location: None,
        notes: None,
        source: ChangeSource::Api,
    }
}

#[test]
fn every_pair_of_statuses_is_decided() {
    use LoadStatus::*;
    let carrier = CarrierId::generate();
    for from in LoadStatus::ALL {
        for to in LoadStatus::ALL {
            let carrier_id = (to == Assigned).then(|| carrier.clone());
            let mut load = sample(from);
            if from != Posted && from != Delivered {
                load.carrier = Some(CarrierSummary {
                    id: carrier.clone(),
                    name: "X".into(),
                    mc_number: "1".into(),
                });
            }
            let plan = load.plan_transition(&change(to, carrier_id));
            let allowed = matches!(
                (from, to),
                (Posted, Assigned)
                    | (Assigned, InTransit)
                    | (InTransit, Delivered)
                    | (Assigned, Posted)
                    | (Posted, Cancelled)
                    | (Assigned, Cancelled)
            );
            match plan {
                Ok(Transition::Unchanged) => assert_eq!(from, to),
                Ok(_) => assert!(allowed, "{from} -> {to} should be refused"),
                Err(e) => assert!(!allowed && from != to, "{from} -> {to} refused: {e}"),
            }
        }
    }
}

#[test]
fn an_edit_is_refused_by_status_and_names_what_changed() {
    let mut edit = LoadEdit {
        weight: Some(40_000.0),
        notes: Some(Some("Dock 7".into())),
        ..LoadEdit::default()
    };
    let posted = sample(LoadStatus::Posted);
    let (edited, changed) = posted.plan_edit(&edit, &[], Utc::now()).unwrap();
    assert_eq!(changed, ["weight", "notes"]);
    assert_eq!(edited.version, posted.version + 1);
    // The same again changes nothing.
    let (same, none) = edited.plan_edit(&edit, &[], Utc::now()).unwrap();
    assert!(none.is_empty());
    assert_eq!(same.version, edited.version);

    edit.destination = Some(posted.origin.clone());
    let assigned = sample(LoadStatus::Assigned);
    assert_eq!(
        assigned.plan_edit(&edit, &[], Utc::now()),
        Err(EditError::NotEditable {
            status: LoadStatus::Assigned,
            fields: vec!["destination"],
        })
    );
    for status in [LoadStatus::Delivered, LoadStatus::Cancelled] {
        let refused = sample(status)
            .plan_edit(&edit, &[], Utc::now())
            .unwrap_err();
        assert!(
            matches!(refused, EditError::NotEditable { ref fields, .. } if fields.len() == 3),
            "{refused:?}"
        );
    }
    let dates = LoadEdit {
        pickup_date: Some(Some(Utc::now())),
        delivery_date: Some(Some(Utc::now() - chrono::Duration::hours(1))),
        ..LoadEdit::default()
    };
    assert_eq!(
        posted.plan_edit(&dates, &[], Utc::now()),
        Err(EditError::DatesOutOfOrder {
            moved: DateMoved::Delivery
        })
    );
    let late_pickup = LoadEdit {
        pickup_date: Some(Some(Utc::now() + chrono::Duration::days(30))),
        ..LoadEdit::default()
    };
    let mut scheduled = posted.clone();
    scheduled.pickup_date = Some(Utc::now());
    scheduled.delivery_date = Some(Utc::now() + chrono::Duration::days(1));
    assert_eq!(
        scheduled.plan_edit(&late_pickup, &[], Utc::now()),
        Err(EditError::DatesOutOfOrder {
            moved: DateMoved::Pickup
        })
    );
}

#[test]
fn assignment_needs_a_carrier_and_unassign_clears_it() {
    let load = sample(LoadStatus::Posted);
    assert_eq!(
        load.plan_transition(&change(LoadStatus::Assigned, None)),
        Err(TransitionError::CarrierRequired)
    );
    let carrier = CarrierSummary {
        id: CarrierId::generate(),
        name: "Acme".into(),
        mc_number: "123".into(),
    };
    let request = change(LoadStatus::Assigned, Some(carrier.id.clone()));
    let assigned = load.apply(LoadStatus::Assigned, Some(carrier), &request, Utc::now());
    assert_eq!(assigned.version, 2);
    assert!(assigned.carrier.is_some());
    let posted = assigned.apply(
        LoadStatus::Posted,
        None,
        &change(LoadStatus::Posted, None),
        Utc::now(),
    );
    assert!(posted.carrier.is_none());
    let other = CarrierId::generate();
    assert!(matches!(
        assigned.plan_transition(&change(LoadStatus::Assigned, Some(other))),
        Err(TransitionError::AlreadyAssigned { .. })
    ));
}

#[test]
fn rates_keep_cents_exactly() {
    assert_eq!(parse_rate(1500.55), Ok(150_055));
    assert_eq!(parse_rate(0.0), Ok(0));
    assert!(parse_rate(1.005).is_err());
    assert!(parse_rate(-1.0).is_err());
    assert!(parse_rate(f64::INFINITY).is_err());
}
