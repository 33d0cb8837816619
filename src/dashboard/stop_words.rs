//! Stops in words, as a load's page and the public tracking page write
//! them: types, statuses, windows and minutes.

use crate::dashboard::widgets::when_text as when;
use crate::domain::stops::StopKind;
use crate::views::stops::StopStatus;

/// 45 as "45 min", 135 as "2 h 15 min"; a dash for none.
pub fn minutes(m: Option<i64>) -> String {
    match m {
        None => "—".to_owned(),
        Some(m) if m < 60 => format!("{m} min"),
        Some(m) => format!("{} h {:02} min", m / 60, m % 60),
    }
}

pub fn kind_name(kind: StopKind) -> &'static str {
    match kind {
        StopKind::Pickup => "Pickup",
        StopKind::Delivery => "Delivery",
    }
}

pub fn status_name(status: StopStatus) -> &'static str {
    match status {
        StopStatus::Scheduled => "scheduled",
        StopStatus::EnRoute => "en route",
        StopStatus::Arrived => "arrived",
        StopStatus::Departed => "departed",
        StopStatus::Skipped => "skipped",
    }
}

pub fn status_class(status: StopStatus) -> &'static str {
    match status {
        StopStatus::Scheduled => "scheduled",
        StopStatus::EnRoute => "en_route",
        StopStatus::Arrived => "arrived",
        StopStatus::Departed => "departed",
        StopStatus::Skipped => "skipped",
    }
}

/// An appointment time, or a window: "2 Jan 2030, 08:00 UTC", "2 Jan 2030,
/// 08:00 UTC – 12:00 UTC" (the end's date only when it is another day).
pub fn window(start: Option<&String>, end: Option<&String>) -> String {
    let start_text = when(start);
    let Some(end) = end else { return start_text };
    let day = |t: &String| t.get(..10).map(str::to_owned);
    let end_text = when(Some(end));
    match (start.and_then(day), day(end)) {
        (Some(a), Some(b)) if a == b => {
            let time = end_text.rsplit(", ").next().unwrap_or(&end_text);
            format!("{start_text} – {time}")
        }
        _ => format!("{start_text} – {end_text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn a_window_names_its_end_day_only_when_it_differs() {
        let start = "2030-01-02T08:00:00Z".to_owned();
        let same = "2030-01-02T12:00:00Z".to_owned();
        let next = "2030-01-03T06:30:00Z".to_owned();
        assert_eq!(window(Some(&start), None), "2 Jan 2030, 08:00 UTC");
        assert_eq!(
            window(Some(&start), Some(&same)),
            "2 Jan 2030, 08:00 UTC – 12:00 UTC"
        );
        assert_eq!(
            window(Some(&start), Some(&next)),
            "2 Jan 2030, 08:00 UTC – 3 Jan 2030, 06:30 UTC"
        );
        assert_eq!(window(None, None), "—");
    }
}
