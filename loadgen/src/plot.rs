//! The ramp's picture: achieved fix rate and p99 latency against the offered
//! rate, as a small SVG written by hand (no font or drawing library needed).

use std::fmt::Write;

/// One step of a ramp.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Step {
    pub offered_per_sec: f64,
    pub achieved_per_sec: f64,
    pub p99_ms: f64,
    pub errors: u64,
}

/// A ramp's steps, as run, and what they found.
#[derive(serde::Serialize)]
pub struct Ramp {
    pub steps: Vec<Step>,
    /// The highest offered rate whose p99 stayed under the bound with no
    /// errors; null if even the first step did not.
    pub capacity_per_sec: Option<f64>,
    pub p99_bound_ms: f64,
    pub plot: String,
}

impl Ramp {
    pub fn new(p99_bound_ms: f64, plot: &std::path::Path) -> Self {
        Ramp {
            steps: Vec::new(),
            capacity_per_sec: None,
            p99_bound_ms,
            plot: plot.display().to_string(),
        }
    }

    /// Adds a step; whether the ramp goes on (its p99 under the bound, no errors).
    pub fn step(&mut self, offered: f64, achieved: f64, p99_ms: f64, errors: u64) -> bool {
        self.push(Step {
            offered_per_sec: offered,
            achieved_per_sec: achieved,
            p99_ms,
            errors,
        })
    }

    fn push(&mut self, step: Step) -> bool {
        let kept = step.p99_ms <= self.p99_bound_ms && step.errors == 0;
        if kept {
            self.capacity_per_sec = Some(step.offered_per_sec);
        }
        self.steps.push(step);
        kept
    }

    /// Writes the plot.
    pub fn finish(&self, path: &std::path::Path) -> anyhow::Result<()> {
        use anyhow::Context;
        std::fs::write(path, svg(&self.steps, self.p99_bound_ms))
            .with_context(|| format!("writing the plot {}", path.display()))
    }

    /// The steps as a table, and the capacity in `what` a second.
    pub fn table(&self, what: &str) -> String {
        let mut out = format!(
            "{:>12} {:>12} {:>9} {:>7}\n",
            "offered/s", "achieved/s", "p99 ms", "errors"
        );
        for s in &self.steps {
            let _ = writeln!(
                out,
                "{:>12.0} {:>12.1} {:>9.2} {:>7}",
                s.offered_per_sec, s.achieved_per_sec, s.p99_ms, s.errors
            );
        }
        let _ = match self.capacity_per_sec {
            Some(c) => writeln!(
                out,
                "capacity: {c:.0} {what}/s with p99 under {} ms; plot: {}",
                self.p99_bound_ms, self.plot
            ),
            None => writeln!(
                out,
                "no step kept p99 under {} ms; plot: {}",
                self.p99_bound_ms, self.plot
            ),
        };
        out
    }
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 70.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// The smallest of 1, 2, 2.5 and 5 times a power of ten that is at least
/// `at_least`: an axis step a reader can add up.
fn nice_step(at_least: f64) -> f64 {
    let magnitude = 10f64.powf(at_least.max(f64::MIN_POSITIVE).log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= at_least)
        .unwrap_or(10.0 * magnitude)
}

/// A round step for an axis reaching `max`, and how many steps it takes.
fn axis(max: f64) -> (f64, u32) {
    let step = nice_step(max / 6.0);
    (step, ((max / step).ceil() as u32).max(1))
}

/// The SVG: offered rate across; achieved rate (blue, left axis) and p99 (red,
/// right axis) up; the bound as a dashed red line.
pub fn svg(steps: &[Step], p99_bound_ms: f64) -> String {
    // Each axis in round steps (2,500, 5,000, … rather than 2,940, 5,880, …),
    // at most six of them, ending at the first step past the data.
    let (rate_step, rate_ticks) = axis(
        steps
            .iter()
            .map(|s| s.offered_per_sec.max(s.achieved_per_sec))
            .fold(1.0, f64::max),
    );
    let (ms_step, ms_ticks) = axis(steps.iter().map(|s| s.p99_ms).fold(p99_bound_ms, f64::max));
    let (max_rate, max_ms) = (
        rate_step * f64::from(rate_ticks),
        ms_step * f64::from(ms_ticks),
    );
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x = |rate: f64| LEFT + rate / max_rate * plot_w;
    let y_rate = |rate: f64| TOP + plot_h - rate / max_rate * plot_h;
    let y_ms = |ms: f64| TOP + plot_h - ms / max_ms * plot_h;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">GPS fixes: achieved rate and p99 latency against offered rate</text>"#,
        WIDTH / 2.0
    );
    // Axes and ticks.
    let _ = write!(
        out,
        r#"<path d="M{LEFT},{TOP} V{} H{}" stroke="black" fill="none"/>"#,
        TOP + plot_h,
        LEFT + plot_w
    );
    let _ = write!(
        out,
        r#"<path d="M{},{TOP} V{}" stroke="black" fill="none"/>"#,
        LEFT + plot_w,
        TOP + plot_h
    );
    for i in 0..=rate_ticks {
        let rate = rate_step * f64::from(i);
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{rate:.0}</text>"#,
            x(rate),
            TOP + plot_h + 18.0
        );
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#1f5fbf">{rate:.0}</text>"##,
            LEFT - 6.0,
            y_rate(rate) + 4.0
        );
    }
    for i in 0..=ms_ticks {
        let ms = ms_step * f64::from(i);
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#c0392b">{}</text>"##,
            LEFT + plot_w + 6.0,
            y_ms(ms) + 4.0,
            // At most two decimals, none when whole (steps of 0.25 ms and up).
            format!("{ms:.2}")
                .trim_end_matches('0')
                .trim_end_matches('.')
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">offered fixes per second</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0
    );
    let _ = write!(
        out,
        r##"<text x="16" y="{}" fill="#1f5fbf" transform="rotate(-90 16 {})" text-anchor="middle">achieved fixes per second</text>"##,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" fill="#c0392b" transform="rotate(90 {} {})" text-anchor="middle">p99 latency, ms</text>"##,
        WIDTH - 14.0,
        TOP + plot_h / 2.0,
        WIDTH - 14.0,
        TOP + plot_h / 2.0
    );
    let _ = write!(
        out,
        r##"<path d="M{LEFT},{} H{}" stroke="#c0392b" stroke-dasharray="6 4" fill="none"/>"##,
        y_ms(p99_bound_ms),
        LEFT + plot_w
    );
    let line = |points: Vec<(f64, f64)>, colour: &str| {
        let path: Vec<String> = points
            .iter()
            .map(|(px, py)| format!("{px:.1},{py:.1}"))
            .collect();
        let dots: String = points
            .iter()
            .map(|(px, py)| format!(r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{colour}"/>"#))
            .collect();
        format!(
            r#"<polyline points="{}" stroke="{colour}" stroke-width="2" fill="none"/>{dots}"#,
            path.join(" ")
        )
    };
    out.push_str(&line(
        steps
            .iter()
            .map(|s| (x(s.offered_per_sec), y_rate(s.achieved_per_sec)))
            .collect(),
        "#1f5fbf",
    ));
    out.push_str(&line(
        steps
            .iter()
            .map(|s| (x(s.offered_per_sec), y_ms(s.p99_ms)))
            .collect(),
        "#c0392b",
    ));
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_just_past_the_data() {
        assert_eq!(axis(14_700.0), (2500.0, 6));
        assert_eq!(axis(204.3), (50.0, 5));
        assert_eq!(axis(50.0), (10.0, 5));
        assert_eq!(axis(3.6), (1.0, 4));
    }

    #[test]
    fn axis_steps_are_round() {
        assert_eq!(nice_step(588.0), 1000.0);
        assert_eq!(nice_step(2940.0), 5000.0);
        assert_eq!(nice_step(1800.0), 2000.0);
        assert_eq!(nice_step(44.2), 50.0);
        assert_eq!(nice_step(11.0), 20.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(100.0), 100.0);
    }

    #[test]
    fn the_plot_has_both_lines_and_the_bound() {
        let steps = vec![
            Step {
                offered_per_sec: 500.0,
                achieved_per_sec: 499.0,
                p99_ms: 4.0,
                errors: 0,
            },
            Step {
                offered_per_sec: 1000.0,
                achieved_per_sec: 990.0,
                p99_ms: 80.0,
                errors: 0,
            },
        ];
        let svg = svg(&steps, 50.0);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("stroke-dasharray"));
    }
}
