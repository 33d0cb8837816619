//! The fleet's set-up: a carrier, and for each truck a load between its
//! cities, assigned and in transit (or, for a reference server, made-up ids).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use anyhow::anyhow;
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use rand::Rng;
use serde_json::{Value, json};

use super::fleet::{CITIES, Truck};
use super::scenario::Scenario;
use super::target::{Method, Target};

/// Requests in flight while setting the fleet up.
const SETUP_CONCURRENCY: usize = 32;

/// One truck: where it is, its load, and what it has sent.
pub(crate) struct TruckState {
    pub(crate) truck: Truck,
    pub(crate) load_id: String,
    /// The last fix sent (its body, for duplicates), and its time.
    pub(crate) last: Option<(String, DateTime<Utc>)>,
    /// Fixes kept while offline (batch points, with their load), and how many
    /// more to keep before the upload.
    pub(crate) buffered: Vec<String>,
    pub(crate) offline_left: u32,
}

/// The simulated fleet: one load in transit per truck.
pub struct Fleet {
    pub(crate) trucks: Vec<Mutex<TruckState>>,
    pub(crate) next: AtomicU64,
    pub(crate) carrier_id: String,
}

impl Fleet {
    pub async fn set_up(target: &Target, scenario: &Scenario) -> anyhow::Result<Self> {
        let mc = rand::rng().random_range(100_000_000u64..999_999_999);
        let carrier = target
            .must(
                Method::Post,
                "/carriers",
                json!({"name": format!("Loadgen Carrier {mc}"), "mc_number": mc.to_string(),
                       "equipment_types": ["dry_van"]}),
            )
            .await?;
        let carrier_id = carrier["data"]["id"]
            .as_str()
            .ok_or_else(|| anyhow!("the carrier answer has no id: {carrier}"))?
            .to_owned();
        let made = futures_util::stream::iter(0..scenario.trucks)
            .map(|_| {
                let carrier_id = carrier_id.clone();
                async move {
                    let truck = Truck::new(&mut rand::rng());
                    let load_id = new_load(target, &truck, &carrier_id).await?;
                    Ok::<_, anyhow::Error>(Mutex::new(TruckState {
                        truck,
                        load_id,
                        last: None,
                        buffered: Vec::new(),
                        offline_left: 0,
                    }))
                }
            })
            .buffer_unordered(SETUP_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let trucks = made.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Fleet {
            trucks,
            next: AtomicU64::new(0),
            carrier_id,
        })
    }

    /// A fleet on made-up load ids, nothing created (`--invent-loads`): each
    /// id is shaped as freight's (`load_` and 26 Crockford characters).
    pub fn invented(scenario: &Scenario) -> Self {
        const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let mut rng = rand::rng();
        let trucks = (0..scenario.trucks)
            .map(|_| {
                let suffix: String = (0..26)
                    .map(|i| {
                        // The first character carries 3 bits of a 128-bit id.
                        let range = if i == 0 { 8 } else { 32 };
                        char::from(CROCKFORD[rng.random_range(0..range)])
                    })
                    .collect();
                Mutex::new(TruckState {
                    truck: Truck::new(&mut rng),
                    load_id: format!("load_{suffix}"),
                    last: None,
                    buffered: Vec::new(),
                    offline_left: 0,
                })
            })
            .collect();
        Fleet {
            trucks,
            next: AtomicU64::new(0),
            carrier_id: String::new(),
        }
    }

    /// Each truck's load, in the fleet's order.
    pub fn load_ids(&self) -> Vec<String> {
        self.trucks
            .iter()
            .map(|t| t.lock().unwrap_or_else(|p| p.into_inner()).load_id.clone())
            .collect()
    }

    pub(crate) fn any_load(&self) -> usize {
        rand::rng().random_range(0..self.trucks.len())
    }
}

/// A load between the truck's cities, assigned to the carrier and picked up.
async fn new_load(target: &Target, truck: &Truck, carrier_id: &str) -> anyhow::Result<String> {
    let load = target
        .must(Method::Post, "/loads", load_body(truck))
        .await?;
    let id = load["data"]["id"]
        .as_str()
        .ok_or_else(|| anyhow!("the load answer has no id: {load}"))?
        .to_owned();
    let path = format!("/loads/{id}/status");
    target
        .must(
            Method::Patch,
            &path,
            json!({"status": "assigned", "carrier_id": carrier_id}),
        )
        .await?;
    target
        .must(Method::Patch, &path, json!({"status": "in_transit"}))
        .await?;
    Ok(id)
}

pub(crate) fn load_body(truck: &Truck) -> Value {
    let place = |i: usize| {
        let (city, state, zip, _, _) = CITIES[i];
        json!({"city": city, "state": state, "zip": zip})
    };
    json!({
        "origin": place(truck.from),
        "destination": place(truck.to),
        "weight": rand::rng().random_range(10_000..44_000),
        "equipment_type": "dry_van",
    })
}
