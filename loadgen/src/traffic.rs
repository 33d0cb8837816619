//! The requests a run sends once the fleet is set up (`setup`): GPS fixes,
//! dashboard polls, live streams and load lifecycles, each timed and recorded.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use rand::Rng;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::fleet::Truck;
use super::report::{Outcome, Recorder};
use super::scenario::Scenario;
pub use super::setup::Fleet;
use super::setup::load_body;
use super::target::Method;
pub use super::target::Target;

/// Requests of one kind in flight at most (open loop): past this, the pacer
/// waits, and the wait counts in the latency of what it delays.
const MAX_IN_FLIGHT: usize = 20_000;

/// Runs fixes, polls and lifecycles as the scenario says until `until`.
pub async fn drive(
    target: &Target,
    fleet: &Arc<Fleet>,
    scenario: &Scenario,
    recorder: &Arc<Recorder>,
    until: Instant,
) {
    let fixes = async {
        match scenario.closed_loop {
            true => closed_loop_fixes(target, fleet, scenario, recorder, until).await,
            false => {
                open_loop(scenario.fix_rate(), until, |_| {
                    send_fix(target, fleet, scenario, recorder)
                })
                .await
            }
        }
    };
    let polls = open_loop(
        f64::from(scenario.dashboards) / scenario.poll_every_secs,
        until,
        |slot| poll(target, fleet, recorder, slot),
    );
    let lifecycles = open_loop(
        f64::from(scenario.clients) / scenario.lifecycle_every_secs,
        until,
        |_| lifecycle(target, fleet, recorder),
    );
    let streams = futures_util::future::join_all(
        (0..scenario.streams).map(|_| hold_stream(target, recorder, until)),
    );
    tokio::join!(fixes, polls, lifecycles, streams);
}

/// A dispatch board's live feed: the account's tracking stream, held until
/// `until` and resumed (`Last-Event-ID`) if it ends. Each event is recorded
/// with the age of its position on arrival; a refusal or a broken stream is
/// recorded as an error of `stream_event`.
async fn hold_stream(target: &Target, recorder: &Arc<Recorder>, until: Instant) {
    let mut events = EventStream::default();
    while Instant::now() < until {
        let opened = Instant::now();
        let resume = events.last_id.clone();
        let ended = target
            .http
            .stream("/v1/tracking/stream", resume.as_deref(), until, |bytes| {
                events.feed(bytes, recorder)
            })
            .await;
        let outcome = match ended {
            Ok(200) => continue,
            Ok(status) => Outcome::Refused(status, "-".into()),
            Err(failure) => Outcome::Failed(failure.kind().into()),
        };
        recorder.record("stream_event", opened.elapsed(), outcome);
        // Not at once: a refused stream would be asked for in a tight loop.
        tokio::time::sleep_until((Instant::now() + Duration::from_secs(1)).min(until)).await;
    }
}

/// Reads server-sent events from a stream's bytes, as they come.
#[derive(Default)]
struct EventStream {
    /// The unfinished line.
    pending: Vec<u8>,
    event: String,
    data: String,
    id: Option<String>,
    last_id: Option<String>,
}

impl EventStream {
    fn feed(&mut self, bytes: &[u8], recorder: &Recorder) {
        for &byte in bytes {
            if byte != b'\n' {
                self.pending.push(byte);
                continue;
            }
            let line = String::from_utf8_lossy(&self.pending)
                .trim_end_matches('\r')
                .to_owned();
            self.pending.clear();
            if line.is_empty() {
                self.dispatch(recorder);
            } else if let Some(value) = line.strip_prefix("event:") {
                self.event = value.trim_start().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data.push_str(value.trim_start());
            } else if let Some(value) = line.strip_prefix("id:") {
                self.id = Some(value.trim_start().to_owned());
            }
        }
    }

    /// An event is complete (a blank line).
    fn dispatch(&mut self, recorder: &Recorder) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if let Some(id) = self.id.take() {
            self.last_id = Some(id);
        }
        if event != "tracking.updated" {
            // `reset` and `overflow` say what was missed; positions come again.
            return;
        }
        let age = serde_json::from_str::<Value>(&data)
            .ok()
            .and_then(|d| d["position"]["timestamp"].as_str().map(str::to_owned))
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|at| Utc::now().signed_duration_since(at));
        match age {
            Some(age) => recorder.record(
                "stream_event",
                age.to_std().unwrap_or(Duration::ZERO),
                Outcome::Ok,
            ),
            None => recorder.record(
                "stream_event",
                Duration::ZERO,
                Outcome::Failed("malformed event".into()),
            ),
        }
    }
}

/// Starts `work(slot)` at `rate` per second until `until`, each at its
/// intended time whatever the earlier ones are doing; returns when all are done.
async fn open_loop<F, Fut>(rate: f64, until: Instant, work: F)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    if rate <= 0.0 {
        return;
    }
    let start = Instant::now();
    let mut running = futures_util::stream::FuturesUnordered::new();
    let mut slot = 0u64;
    loop {
        let intended = start + Duration::from_secs_f64(slot as f64 / rate);
        if intended >= until {
            break;
        }
        // Keep answers flowing while waiting for the next slot.
        let wait = tokio::time::sleep_until(intended);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                _ = &mut wait => break,
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
        while running.len() >= MAX_IN_FLIGHT {
            running.next().await;
        }
        running.push(timed_from(intended, work(slot)));
        slot += 1;
    }
    while running.next().await.is_some() {}
}

/// `work`, with its intended start time set for the requests it records.
async fn timed_from<Fut: std::future::Future<Output = ()>>(intended: Instant, work: Fut) {
    INTENDED.scope(intended, work).await
}

tokio::task_local! {
    /// When the request being made was meant to be sent (open loop).
    static INTENDED: Instant;
}

fn intended_or_now() -> Instant {
    INTENDED
        .try_with(|at| *at)
        .unwrap_or_else(|_| Instant::now())
}

/// `concurrency` senders, each sending the next truck's fix once its last was
/// answered.
async fn closed_loop_fixes(
    target: &Target,
    fleet: &Arc<Fleet>,
    scenario: &Scenario,
    recorder: &Arc<Recorder>,
    until: Instant,
) {
    let senders = (0..scenario.concurrency).map(|_| async {
        while Instant::now() < until {
            send_fix(target, fleet, scenario, recorder).await;
        }
    });
    futures_util::future::join_all(senders).await;
}

/// The next truck's next fix: usually a new one; sometimes its last one
/// again, or one a little late; or kept while it is offline, then uploaded
/// with the others in one batch.
async fn send_fix(
    target: &Target,
    fleet: &Arc<Fleet>,
    scenario: &Scenario,
    recorder: &Arc<Recorder>,
) {
    let index = fleet.next.fetch_add(1, Ordering::Relaxed) as usize % fleet.trucks.len();
    let intended = intended_or_now();
    let (operation, path, body) = {
        let mut state = fleet.trucks[index]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut rng = rand::rng();
        let roll: f64 = rng.random();
        if let Some((last, _)) = state.last.clone()
            && roll < scenario.duplicate_share
        {
            (
                "fix_duplicate",
                format!("/loads/{}/tracking", state.load_id),
                last,
            )
        } else {
            state.truck.drive(scenario.fix_every_secs);
            let (lat, lng, heading) = state.truck.position();
            let previous = state.last.as_ref().map(|(_, at)| *at);
            let now = Utc::now();
            let late =
                previous.is_some() && roll < scenario.duplicate_share + scenario.out_of_order_share;
            let at = match previous {
                // Between the last two fixes: late, but no repeat of either.
                Some(last) if late => {
                    let gap = (scenario.fix_every_secs * 1000.0 / 2.0).max(2.0) as i64;
                    last - chrono::Duration::milliseconds(rng.random_range(1..gap))
                }
                Some(last) if now <= last => last + chrono::Duration::milliseconds(1),
                _ => now,
            };
            // Written by hand, not through a `Value`: this runs for every
            // fix, and the generator's CPU is taken from the server's.
            let fields = format!(
                r#""lat":{lat},"lng":{lng},"timestamp":"{}","speed":{},"heading":{}}}"#,
                timestamp(&at),
                (state.truck.speed_mph * 10.0).round() / 10.0,
                (heading * 10.0).round() / 10.0,
            );
            let fix = format!("{{{fields}");
            if !late {
                state.last = Some((fix.clone(), at));
            }
            let offline = state.offline_left > 0 || rng.random::<f64>() < scenario.offline_share;
            if offline {
                if state.offline_left == 0 {
                    state.offline_left = scenario.offline_fixes;
                }
                let point = format!(r#"{{"load_id":"{}",{fields}"#, state.load_id);
                state.buffered.push(point);
                state.offline_left -= 1;
                if state.offline_left > 0 {
                    return;
                }
                let points = std::mem::take(&mut state.buffered);
                (
                    "batch",
                    "/tracking/batch".to_owned(),
                    format!(r#"{{"points":[{}]}}"#, points.join(",")),
                )
            } else {
                let operation = if late { "fix_late" } else { "fix" };
                (operation, format!("/loads/{}/tracking", state.load_id), fix)
            }
        }
    };
    target
        .timed(
            recorder,
            operation,
            intended,
            Method::Post,
            &path,
            Some(body),
        )
        .await;
}

/// A dashboard's look: a load's live position, or the list of loads in transit.
async fn poll(target: &Target, fleet: &Arc<Fleet>, recorder: &Arc<Recorder>, slot: u64) {
    let intended = intended_or_now();
    if slot.is_multiple_of(2) {
        let load = {
            let state = fleet.trucks[fleet.any_load()]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            state.load_id.clone()
        };
        let path = format!("/loads/{load}/tracking");
        target
            .timed(
                recorder,
                "poll_tracking",
                intended,
                Method::Get,
                &path,
                None,
            )
            .await;
    } else {
        target
            .timed(
                recorder,
                "list_loads",
                intended,
                Method::Get,
                "/loads?status=in_transit&limit=50",
                None,
            )
            .await;
    }
}

/// An API client's load from creation to delivery.
async fn lifecycle(target: &Target, fleet: &Arc<Fleet>, recorder: &Arc<Recorder>) {
    let intended = intended_or_now();
    let truck = Truck::new(&mut rand::rng());
    let Some(created) = target
        .timed(
            recorder,
            "create_load",
            intended,
            Method::Post,
            "/loads",
            Some(load_body(&truck).to_string()),
        )
        .await
    else {
        return;
    };
    let Some(id) = created["data"]["id"].as_str() else {
        return;
    };
    let path = format!("/loads/{id}/status");
    let steps: [(&'static str, Value); 3] = [
        (
            "assign",
            json!({"status": "assigned", "carrier_id": fleet.carrier_id}),
        ),
        ("pick_up", json!({"status": "in_transit"})),
        ("deliver", json!({"status": "delivered"})),
    ];
    for (operation, body) in steps {
        let sent = Instant::now();
        if target
            .timed(
                recorder,
                operation,
                sent,
                Method::Patch,
                &path,
                Some(body.to_string()),
            )
            .await
            .is_none()
        {
            return;
        }
    }
}

/// A fix's timestamp as the API writes them (RFC 3339, UTC, to the
/// microsecond at most).
fn timestamp(at: &DateTime<Utc>) -> String {
    use chrono::{SecondsFormat, Timelike};
    let digits = match at.nanosecond() {
        0 => SecondsFormat::Secs,
        n if n % 1_000_000 == 0 => SecondsFormat::Millis,
        _ => SecondsFormat::Micros,
    };
    at.to_rfc3339_opts(digits, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_loads_are_distinct_and_shaped_as_freights_ids() {
        let scenario = Scenario {
            trucks: 500,
            ..Scenario::default()
        };
        let fleet = Fleet::invented(&scenario);
        let ids: std::collections::HashSet<String> = fleet
            .trucks
            .iter()
            .map(|t| t.lock().unwrap().load_id.clone())
            .collect();
        assert_eq!(ids.len(), 500);
        for id in &ids {
            let suffix = id.strip_prefix("load_").expect("a load id");
            assert_eq!(suffix.len(), 26, "{id}");
            assert!(suffix.as_bytes()[0] <= b'7', "{id}: over 128 bits");
            assert!(
                suffix
                    .bytes()
                    .all(|b| b"0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains(&b)),
                "{id}"
            );
        }
    }

    #[test]
    fn events_split_anywhere_are_read_whole_and_only_positions_count() {
        let recorder = Recorder::default();
        let mut events = EventStream::default();
        let at = timestamp(&Utc::now());
        let text = format!(
            "retry: 2000\n\n: keep-alive\n\nid: e-1\r\nevent: tracking.updated\r\ndata: {{\"load_id\":\"load_1\",\"position\":{{\"timestamp\":\"{at}\"}}}}\r\n\r\n\
             id: e-2\nevent: reset\ndata: {{\"reason\":\"too_old\"}}\n\n\
             id: e-3\nevent: tracking.updated\ndata: not json\n\n"
        );
        // Byte by byte: chunk boundaries fall anywhere.
        for byte in text.as_bytes() {
            events.feed(std::slice::from_ref(byte), &recorder);
        }
        let counts = recorder.counts();
        // Two position events: one read (its age recorded), one malformed (an error).
        assert_eq!(counts, [("stream_event", 2, 1)]);
        assert_eq!(events.last_id.as_deref(), Some("e-3"));
        let summary = recorder.summary(Duration::from_secs(1), false);
        let age = summary.operation("stream_event").expect("recorded").max_ms;
        assert!(age < 60_000.0, "a fresh position is young: {age} ms");
    }
}
