//! What is served across instances without being forwarded: reads of stored
//! state, streams fed by taps, and dashboard forms that run on the holder.

use super::*;

/// Views over many loads (the dashboard's board) are not forwarded: a load
/// held elsewhere is read as stored, as new as its actor's state.
#[actix_rt::test]
async fn a_load_held_elsewhere_is_read_as_stored_where_not_forwarded() {
    let cluster = cluster_of(2).await;
    let carrier = cluster.carrier().await;
    let load = cluster.assigned_load_on(0, &carrier).await;
    let at = Utc::now().trunc_subsecs(0) - chrono::Duration::minutes(1);
    let (status, body) = cluster
        .call(
            0,
            reqwest::Method::POST,
            &format!("/loads/{load}/tracking"),
            Some(json!({"lat": 34.5, "lng": -95.5, "timestamp": at.to_rfc3339()})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = crate::domain::ids::LoadId::parse(&load).unwrap();
    let tracking = &cluster.instances[1].services.tracking;
    let account = cluster.instances[1]
        .services
        .storage
        .get_load(&id)
        .await
        .unwrap()
        .unwrap()
        .account_id;
    match tracking.current(&account, &id).await {
        Err(crate::actors::LoadError::Unavailable(
            crate::unavailable::Unavailable::LeasedElsewhere {
                holder: Some(holder),
                ..
            },
        )) => assert_eq!(holder, cluster.instances[0].name),
        other => panic!("instance 1 does not act for the load: {other:?}"),
    }
    let state = tracking.current_anywhere(&account, &id).await.unwrap();
    assert_eq!(state.status, crate::domain::load::LoadStatus::Assigned);
    assert_eq!(
        state.recent.first().map(|f| (f.lat, f.timestamp)),
        Some((34.5, at))
    );
    // Another account's load is not found, held elsewhere or not.
    let stranger = crate::domain::ids::AccountId::generate();
    assert!(matches!(
        tracking.current_anywhere(&stranger, &id).await,
        Err(crate::actors::LoadError::NotFound)
    ));
}

/// An account whose stream closed, and whose feed expired, streams again:
/// each update from another instance arrives once, not once per tapping task.
#[actix_rt::test]
async fn a_stream_opened_again_after_its_feed_expired_gets_each_fix_once() {
    let cluster = cluster_with(2, |settings| {
        settings.live.resume_window = Duration::from_millis(100);
    })
    .await;
    let carrier = cluster.carrier().await;
    let load = cluster.assigned_load_on(1, &carrier).await;
    let open = || {
        cluster.instances[0]
            .client
            .get(format!("{}/tracking/stream", cluster.instances[0].base))
            .bearer_auth(&cluster.key)
            .send()
    };
    let account = cluster.instances[0]
        .services
        .storage
        .get_load(&crate::domain::ids::LoadId::parse(&load).unwrap())
        .await
        .unwrap()
        .unwrap()
        .account_id;
    let hub = cluster.instances[0].services.tracking.live().clone();
    drop(open().await.unwrap());
    // The feed goes once the stream is gone and its resume window passed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while hub.streaming(&account) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the feed never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut stream = open().await.unwrap();
    let start = Utc::now().trunc_subsecs(0) - chrono::Duration::minutes(5);
    let mut seen = String::new();
    let mut posted = Vec::new();
    for n in 0..40 {
        let at = (start + chrono::Duration::seconds(n))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let (status, body) = cluster
            .call(
                1,
                reqwest::Method::POST,
                &format!("/loads/{load}/tracking"),
                Some(json!({"lat": 33.0, "lng": -97.0, "timestamp": at})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        posted.push(at);
        let deadline = tokio::time::Instant::now() + Duration::from_millis(300);
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, stream.chunk()).await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        if posted
            .iter()
            .filter(|at| seen.contains(at.as_str()))
            .count()
            >= 3
        {
            break;
        }
    }
    let delivered: Vec<&String> = posted
        .iter()
        .filter(|at| seen.contains(at.as_str()))
        .collect();
    assert!(delivered.len() >= 3, "fixes reach the stream again: {seen}");
    for at in delivered {
        assert_eq!(
            seen.matches(at.as_str()).count(),
            1,
            "{at} arrived more than once: {seen}"
        );
    }
}

/// A dashboard form for a load another instance acts for runs there: the
/// session and its form token hold on any instance (they are stored).
#[actix_rt::test]
async fn a_dashboard_form_for_a_load_held_elsewhere_runs_on_its_holder() {
    let mut cluster = cluster_of(2).await;
    let users = &cluster.instances[0].services.users;
    let email = "dispatch@lonestar.example";
    let password = "correct horse battery staple 42".to_owned();
    users
        .register(
            crate::services::users::Registration {
                company: "Lone Star Hauling".into(),
                email: email.into(),
                password: password.clone(),
            },
            "127.0.0.1",
        )
        .await
        .unwrap();
    let signed_in = users.sign_in(email, password, "127.0.0.1").await.unwrap();
    let issued = cluster.instances[0]
        .services
        .accounts
        .create_key(crate::services::accounts::KeyRequest {
            account_id: signed_in.session.account_id.to_string(),
            permissions: vec!["read".into(), "write".into()],
            expires_at: None,
            description: None,
        })
        .await
        .unwrap();
    cluster.key = issued.token;
    let carrier = cluster.carrier().await;
    let load = cluster.assigned_load_on(0, &carrier).await;

    // The form, posted to instance 1, which does not act for the load (the
    // redirect it answers is looked at, not followed).
    let pem = std::fs::read(cluster.instances[1]._dir.path().join("tls/cert.pem")).unwrap();
    let browser = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = browser
        .post(format!(
            "{}/dashboard/loads/{load}/status",
            cluster.instances[1].base.trim_end_matches("/v1")
        ))
        .header(
            "cookie",
            format!("__Host-freight_session={}", signed_in.token),
        )
        .header("origin", cluster.instances[1].base.trim_end_matches("/v1"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            serde_urlencoded::to_string([
                ("csrf", signed_in.session.csrf_token.as_str()),
                ("status", "in_transit"),
            ])
            .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "{}", response.text().await.unwrap());
    assert_eq!(
        response.headers()["location"],
        format!("/dashboard/loads/{load}").as_str()
    );
    // Moved by its holder, whose actor knows it.
    assert_eq!(cluster.holder(&load).await, Some(0));
    let (_, live) = cluster
        .call(
            0,
            reqwest::Method::GET,
            &format!("/loads/{load}/tracking"),
            None,
        )
        .await;
    assert_eq!(live["data"]["status"], "in_transit", "{live}");
    // And the load's page, read through instance 1, renders.
    let page = browser
        .get(format!(
            "{}/dashboard/loads/{load}",
            cluster.instances[1].base.trim_end_matches("/v1")
        ))
        .header(
            "cookie",
            format!("__Host-freight_session={}", signed_in.token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains(load.as_str()), "the load's page: {html}");
}
