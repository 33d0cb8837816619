//! The driving speed an account's own trucks keep: each delivered load's
//! average moving speed, and the speed its next ETAs plan with once enough
//! loads are delivered (per lane where the lane has enough, else over all).

use chrono::Duration;

use super::fix::GpsFix;
use super::location::UsState;
use super::stop_etas::{EtaBasis, Speed};
use crate::geo::haversine_miles;

/// Delivered loads an account needs before its own speed is used.
pub const MIN_LOADS: usize = 5;
/// The newest delivered loads the speed is averaged over.
pub const LAST_LOADS: usize = 50;
/// Over this a fix shows the truck moving.
pub const MOVING_MPH: f64 = 5.0;
/// Consecutive fixes further apart than this say nothing of the speed
/// between them (the truck may have stopped in the gap).
pub const SPEED_GAP: Duration = Duration::minutes(15);
/// A learned speed outside this is taken as a device's error, not a fleet's.
pub const PLAUSIBLE_MPH: std::ops::RangeInclusive<f64> = 20.0..=80.0;

/// One delivered load's lane and average moving speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeliveredSpeed {
    pub origin: UsState,
    pub destination: UsState,
    pub mph: f64,
}

/// The mean moving speed over `fixes` (in any order): each fix's reported
/// speed where it is over 5 mph, else (no speed reported) the speed from the
/// fix before it when they are at most 15 minutes apart. `None` when the
/// fixes never show the truck moving.
pub fn moving_mph(fixes: &[GpsFix]) -> Option<f64> {
    let mut sorted: Vec<&GpsFix> = fixes.iter().collect();
    sorted.sort_by_key(|f| f.timestamp);
    let mut sum = 0.0;
    let mut count = 0u32;
    for (i, fix) in sorted.iter().enumerate() {
        let speed = fix.speed_mph.or_else(|| {
            let before = sorted.get(i.checked_sub(1)?)?;
            let gap = fix.timestamp - before.timestamp;
            if gap <= Duration::zero() || gap > SPEED_GAP {
                return None;
            }
            let hours = gap.num_milliseconds() as f64 / 3.6e6;
            Some(haversine_miles(before.lat, before.lng, fix.lat, fix.lng) / hours)
        });
        if let Some(mph) = speed.filter(|mph| *mph > MOVING_MPH) {
            sum += mph;
            count += 1;
        }
    }
    (count > 0).then(|| sum / f64::from(count))
}

/// The speed a load on `lane` plans with: the mean of the account's own
/// delivered loads on that lane when it has at least 5 of them among the
/// newest 50, else of all 50 when there are at least 5, else the account's
/// setting. `delivered` is newest first.
pub fn learned(delivered: &[DeliveredSpeed], setting: Speed, lane: (UsState, UsState)) -> Speed {
    let newest = &delivered[..delivered.len().min(LAST_LOADS)];
    if newest.len() < MIN_LOADS {
        return setting;
    }
    let mean = |speeds: &mut dyn Iterator<Item = f64>| {
        let (sum, n) = speeds.fold((0.0, 0usize), |(s, n), mph| (s + mph, n + 1));
        (n >= MIN_LOADS).then(|| sum / n as f64)
    };
    let on_lane = mean(
        &mut newest
            .iter()
            .filter(|d| (d.origin, d.destination) == lane)
            .map(|d| d.mph),
    );
    let (mph, basis) = match on_lane {
        Some(mph) => (mph, EtaBasis::LaneHistory),
        None => match mean(&mut newest.iter().map(|d| d.mph)) {
            Some(mph) => (mph, EtaBasis::AccountHistory),
            None => return setting,
        },
    };
    Speed {
        mph: mph.clamp(*PLAUSIBLE_MPH.start(), *PLAUSIBLE_MPH.end()),
        circuity: setting.circuity,
        basis,
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;
    use crate::domain::fix::FixSource;

    fn fix(minute: i64, lat: f64, mph: Option<f64>) -> GpsFix {
        GpsFix {
            timestamp: DateTime::from_timestamp(1_790_000_000 + minute * 60, 0).unwrap(),
            lat,
            lng: -96.0,
            speed_mph: mph,
            heading_deg: None,
            source: FixSource::Api,
        }
    }

    fn state(code: &str) -> UsState {
        UsState::parse(code).unwrap()
    }

    #[test]
    fn the_moving_speed_leaves_out_stops_and_long_gaps() {
        let fixes = [
            fix(0, 32.0, Some(60.0)),
            fix(10, 32.1, Some(0.0)), // stopped: not counted
            fix(20, 32.2, Some(50.0)),
        ];
        assert_eq!(moving_mph(&fixes), Some(55.0));
        // No speeds: from positions, 1 degree of latitude (69 mi) an hour,
        // except across the two-hour gap.
        let derived = [
            fix(0, 32.0, None),
            fix(10, 32.0 + 1.0 / 6.0, None),
            fix(130, 34.0, None),
        ];
        let mph = moving_mph(&derived).unwrap();
        assert!((mph - 69.1).abs() < 0.5, "{mph}");
        assert_eq!(moving_mph(&[fix(0, 32.0, Some(2.0))]), None);
        assert_eq!(moving_mph(&[]), None);
    }

    #[test]
    fn five_loads_on_a_lane_make_its_speed_else_the_accounts_else_the_setting() {
        let setting = Speed::DEFAULT;
        let tx_ga = (state("TX"), state("GA"));
        let load = |o: &str, d: &str, mph: f64| DeliveredSpeed {
            origin: state(o),
            destination: state(d),
            mph,
        };
        let four: Vec<_> = (0..4).map(|_| load("TX", "GA", 60.0)).collect();
        assert_eq!(learned(&four, setting, tx_ga), setting);
        let mut some = four.clone();
        some.push(load("CA", "NV", 40.0));
        let account = learned(&some, setting, tx_ga);
        assert_eq!(account.basis, EtaBasis::AccountHistory);
        assert!((account.mph - 56.0).abs() < 1e-9);
        some.push(load("TX", "GA", 54.0));
        let lane = learned(&some, setting, tx_ga);
        assert_eq!(lane.basis, EtaBasis::LaneHistory);
        assert!((lane.mph - 58.8).abs() < 1e-9);
        assert_eq!(lane.circuity, setting.circuity);
        // Only the newest 50 count: older loads on the lane fall away.
        let mut long: Vec<_> = (0..50).map(|_| load("CA", "NV", 45.0)).collect();
        long.extend(some);
        let old = learned(&long, setting, tx_ga);
        assert_eq!((old.basis, old.mph), (EtaBasis::AccountHistory, 45.0));
        // A wild average is held to what a truck can keep.
        let wild: Vec<_> = (0..5).map(|_| load("TX", "GA", 140.0)).collect();
        assert_eq!(learned(&wild, setting, tx_ga).mph, 80.0);
    }
}
