//! Packets as typed views over real bytes.
//!
//! Layer: the bottom of Brisk. The simulator, the live lab and pcap output all
//! carry real IP datagrams, so queues classify by the real ECN field and a
//! capture opens in Wireshark. Each format follows one pattern: a view
//! `XPacket<T: AsRef<[u8]>>` whose `new_checked` validates lengths before any
//! getter runs (so no getter can panic afterwards), and a `XRepr` that is the
//! parsed, validated form with `parse` and `emit`.
//!
//! Modules: [`ecn`] the two-bit ECN codepoint; [`checksum`] the Internet
//! checksum; [`ipv4`], [`ipv6`], [`udp`] the formats; [`ip`] version-agnostic
//! helpers (summarize a datagram, rewrite its ECN field, build a UDP datagram).

pub mod checksum;
pub mod ecn;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;

#[cfg(test)]
mod fixtures;

pub use ecn::Ecn;
pub use ip::{FlowKey, IpSummary, tcp_datagram, udp_datagram};

/// Why bytes could not be read as the format asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("bad version {0}")]
    BadVersion(u8),
    #[error("malformed header: {0}")]
    Malformed(&'static str),
    #[error("bad checksum")]
    BadChecksum,
    #[error("address families differ")]
    FamilyMismatch,
}

pub type Result<T> = core::result::Result<T, WireError>;
