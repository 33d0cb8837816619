//! The `data` of each event type: the API's own representations, so a receiver
//! parses what a client of the API already parses.

use serde_json::{Value, json};

use crate::domain::load::Load;
use crate::domain::tracking::GpsFix;
use crate::views::load::LoadView;
use crate::views::tracking::PointView;

pub fn load(load: &Load) -> Value {
    json!({ "load": LoadView::new(load) })
}

pub fn status_changed(previous: &Load, load: &Load) -> Value {
    json!({
        "previous_status": previous.status.as_str(),
        "status": load.status.as_str(),
        "load": LoadView::new(load),
    })
}

/// `delivery.completed`: the delivered load with its carrier and final position.
pub fn delivered(load: &Load, final_position: Option<&GpsFix>) -> Value {
    json!({
        "load": LoadView::new(load),
        "carrier": load.carrier,
        "final_position": final_position.map(PointView::new),
    })
}

pub fn tracking(status: &str, fix: &GpsFix) -> Value {
    json!({ "status": status, "position": PointView::new(fix) })
}
