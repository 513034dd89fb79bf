//! The Brisk transport: a sans-IO protocol state machine (being built).

pub mod congestion;
pub mod ecn_validation;
pub mod frame;
pub mod pacing;
pub mod packet;
pub mod rtt;
pub mod streams;
pub mod varint;
