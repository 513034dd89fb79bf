//! The Brisk transport: a sans-IO protocol state machine (being built).

pub mod congestion;
pub mod crypto;
pub mod ecn_validation;
pub mod frame;
pub mod handshake;
pub mod pacing;
pub mod packet;
pub mod rtt;
pub mod streams;
pub mod transport_params;
pub mod varint;
