//! The registry of report sections, one file each.
//!
//! To add a section: write `sections/<name>.rs` with a unit struct that
//! implements [`Section`], add it to [`all`] below, and put its scenario
//! files in `lab/default/<id>/` (see docs/LAB.md).

mod bufferbloat;
mod bufferbloat_flow;
mod l4s_breaks;
mod l4s_call;
mod l4s_queue;
mod lossy_mobile;
mod lossy_mobile_stream;
mod mobile;
mod mobile_feed;
mod moving_phones;
mod reference_peer;
mod send_buffer;
mod tcp_inefficiency;

use crate::section::Section;
use brisk_netmodel::queue::QueueConfig;

/// Every section, in report order.
pub fn all() -> &'static [&'static dyn Section] {
    &[
        &bufferbloat::Bufferbloat,
        &l4s_queue::L4sQueue,
        &l4s_call::L4sCall,
        &l4s_breaks::L4sBreaks,
        &send_buffer::SendBuffer,
        &mobile::Mobile,
        &tcp_inefficiency::TcpInefficiency,
        &lossy_mobile::LossyMobile,
        &moving_phones::MovingPhones,
    ]
}

/// The section with this id.
pub fn by_id(id: &str) -> Option<&'static dyn Section> {
    all().iter().copied().find(|s| s.id() == id)
}

/// A short name for a queue in legends and tables: "FIFO, 200 packets",
/// "CoDel", "FQ-CoDel", "PIE", "DualPI2".
pub(crate) fn queue_label(q: &QueueConfig) -> String {
    match q {
        QueueConfig::Fifo(c) => match c.limit_packets {
            Some(n) => format!("FIFO, {n} packets"),
            None => "FIFO".to_string(),
        },
        QueueConfig::Codel(_) => "CoDel".to_string(),
        QueueConfig::FqCodel(_) => "FQ-CoDel".to_string(),
        QueueConfig::Pie(_) => "PIE".to_string(),
        QueueConfig::DualPi2(_) => "DualPI2".to_string(),
        QueueConfig::Cell(_) => "mobile cell".to_string(),
    }
}
