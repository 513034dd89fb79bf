//! Packets as typed views over real bytes.
//!
//! Layer: the bottom of Brisk. The simulator, the live lab and pcap output all
//! carry real IP datagrams, so queues classify by the real ECN field and a
//! capture opens in Wireshark. Each format follows one pattern: a view
//! `XPacket<T: AsRef<[u8]>>` whose `new_checked` validates lengths before any
//! getter runs, and a `XRepr` that is the parsed, validated form with `parse`
//! and `emit`. Setters (over `&mut [u8]`) never change a length field, so
//! no accessor can panic after `new_checked`; `emit` refuses values that do
//! not fit their field rather than truncating them.
//!
//! Modules:
//! - [`ecn`]: the two-bit ECN codepoint.
//! - [`checksum`]: the Internet checksum, its incremental update, and the
//!   TCP/UDP pseudo-header sums.
//! - [`ipv4`], [`ipv6`]: network headers (IPv6 extension headers skipped by
//!   [`ipv6::Ipv6Packet::upper_layer`]).
//! - [`udp`]: UDP. [`tcp`]: TCP, with [`tcp::TcpFlags`] (including the
//!   AccECN `AE` bit) and [`tcp::option`] (MSS, window scale, SACK,
//!   timestamps, Fast Open, unknown kinds kept raw).
//! - [`ip`]: version-agnostic helpers: summarize a datagram, rewrite its ECN
//!   field, build and parse whole UDP or TCP datagrams.
//! - [`icmp`]: the Packet Too Big messages (ICMPv4 3/4, ICMPv6 2) a path
//!   reports its MTU with, built and parsed.
//! - [`nat64_prefix`]: IPv4-embedded IPv6 addresses under a NAT64 prefix
//!   (RFC 6052) and prefix discovery from `ipv4only.arpa` (RFC 7050).
//!
//! Tests: fixed-byte tests beside each format use real Linux captures
//! (`fixtures.rs`); `tests/` holds the proptests (round trips, never panic);
//! `fuzz/` is a cargo-fuzz crate (`parse_any`) outside the workspace.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod checksum;
pub mod ecn;
pub mod icmp;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod nat64_prefix;
pub mod tcp;
pub mod udp;

#[cfg(test)]
mod fixtures;

pub use ecn::Ecn;
pub use ip::{FlowKey, IpSummary, tcp_datagram, udp_datagram, udp_datagram_into};
pub use nat64_prefix::Nat64Prefix;

/// Why bytes could not be read as the format asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the header or a length field says it should.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes the format needs.
        need: usize,
        /// Bytes the buffer holds.
        have: usize,
    },
    /// The IP version nibble is neither 4 nor 6 (or not the one the view reads).
    #[error("bad version {0}")]
    BadVersion(u8),
    /// A field holds a value its RFC forbids; the text names the field.
    #[error("malformed header: {0}")]
    Malformed(&'static str),
    /// The Internet checksum over the header (and pseudo-header) does not sum to zero.
    #[error("bad checksum")]
    BadChecksum,
    /// Source and destination, or a datagram and a NAT64 prefix, are not the same IP family.
    #[error("address families differ")]
    FamilyMismatch,
}

/// The result of every parse and emit in this crate.
pub type Result<T> = core::result::Result<T, WireError>;
