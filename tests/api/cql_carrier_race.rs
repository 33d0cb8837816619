//! A carrier deleted through one instance while a load is assigned to it
//! through another, on the three-node cluster (see `cql_cluster`): the
//! process-local lock of each instance cannot see the other's, the hold and
//! the deletion mark in the carrier's row (`carrier_holds`) can. Whatever
//! the interleaving, never both: a deleted carrier with a load assigned to it.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::cql_cluster::{NODES, cluster3, two_instances};

#[actix_web::test]
async fn a_carrier_deletion_racing_an_assignment_on_another_instance_never_both_succeed() {
    let Some(cluster) = cluster3() else {
        return;
    };
    // No node is killed under it.
    let _alone = NODES.lock().await;
    let (_dir, a, b, key, _) = two_instances(&cluster, 0).await;
    let (mut deleted, mut assigned) = (0, 0);
    for round in 0..16u64 {
        let (status, carrier) = a
            .call(
                &key,
                Method::POST,
                "/carriers",
                Some(crate::helpers::carrier_body(&format!(
                    "{}",
                    800_100 + round
                ))),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{carrier}");
        let carrier = carrier["data"]["id"].as_str().unwrap().to_owned();
        let (status, load) = a
            .call(
                &key,
                Method::POST,
                "/loads",
                Some(crate::helpers::load_body("TX", "GA")),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{load}");
        let load = load["data"]["id"].as_str().unwrap().to_owned();

        // The load's actor is on A (which created it); the deletion runs on B,
        // starting 0, 10, ... 150 ms after the assignment: the early ones find
        // no load assigned yet, the late ones find the assignment done, and
        // those between meet it midway.
        let assign = async {
            a.call(
                &key,
                Method::PATCH,
                &format!("/loads/{load}/status"),
                Some(json!({"status": "assigned", "carrier_id": carrier})),
            )
            .await
        };
        let delete = async {
            tokio::time::sleep(std::time::Duration::from_millis(round * 10)).await;
            b.call(&key, Method::DELETE, &format!("/carriers/{carrier}"), None)
                .await
        };
        let ((assign_status, assign_body), (delete_status, delete_body)) =
            tokio::join!(assign, delete);
        for (status, body) in [(assign_status, &assign_body), (delete_status, &delete_body)] {
            assert!(
                status.is_success() || status.is_client_error(),
                "round {round}: {status} {body}"
            );
        }
        assert!(
            !(assign_status.is_success() && delete_status.is_success()),
            "round {round}: the load was assigned to a carrier deleted meanwhile: \
             {assign_body} {delete_body}"
        );
        // What stands afterwards agrees with the answers.
        let (carrier_status, _) = b
            .call(&key, Method::GET, &format!("/carriers/{carrier}"), None)
            .await;
        let (_, stored) = b
            .call(&key, Method::GET, &format!("/loads/{load}"), None)
            .await;
        if delete_status.is_success() {
            deleted += 1;
            assert_eq!(carrier_status, StatusCode::NOT_FOUND);
            assert_eq!(stored["data"]["status"], "posted", "{stored}");
        }
        if assign_status.is_success() {
            assigned += 1;
            assert_eq!(carrier_status, StatusCode::OK);
            assert_eq!(stored["data"]["carrier"]["id"], carrier, "{stored}");
        }
    }
    eprintln!("16 races: {deleted} deletions won, {assigned} assignments won");
    assert!(
        assigned > 0,
        "no assignment came first: the races were not run"
    );
    assert_eq!(deleted + assigned, 16, "one of the two succeeds each round");
}
