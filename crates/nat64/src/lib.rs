//! The protocol heart of Brisk's IPv6-only test network: stateful NAT64,
//! IPv6/IPv4 header translation and DNS64, as pure functions of
//! `(now, datagram)`.
//!
//! Layer: beside the simulator's queue models, below the live lab. Nothing
//! here opens a socket or a TUN device: the live router (`brisk-live`)
//! hands each IP datagram it reads to [`Nat64::handle_v6`] or
//! [`Nat64::handle_v4`] and writes back what comes out, and serves
//! [`Dns64::handle_query`] on UDP port 53 inside the IPv6-only namespace.
//! An app under test sees only IPv6; names of IPv4-only servers resolve to
//! synthesized addresses under the NAT64 prefix (RFC 6147), and the NAT
//! carries the traffic to the IPv4 side (RFC 6146). An app that uses IPv4
//! literals or AF_INET sockets fails there, which is the point.
//!
//! Modules:
//! - [`translate`]: RFC 7915 header translation (IP, TCP, UDP, ICMP echo
//!   and errors with the quoted packet), stateless: the caller picks the
//!   addresses and ports.
//! - [`icmp`]: ICMP/ICMPv6 numbers, the RFC 7915 error mapping, and errors
//!   the NAT originates.
//! - [`nat`]: the stateful NAT64 (RFC 6146): bindings, sessions, pool,
//!   filtering, timeouts, limits, hairpinning.
//! - [`tcp_state`]: the RFC 6146 TCP session state machine.
//! - [`dns`]: a bounded DNS message parser and builder (RFC 1035).
//! - [`dns64`]: the DNS64 responder for a scenario's names, including
//!   `ipv4only.arpa` (RFC 7050, RFC 8880).
//!
//! Address synthesis itself (RFC 6052) lives in
//! [`brisk_wire::nat64_prefix`], shared with the client side.
//!
//! Tests: fixed-byte and round-trip tests beside each module (outputs are
//! re-read by brisk-wire's checksum-verifying parsers); `tests/` holds the
//! never-panic property tests; `fuzz/` is a cargo-fuzz crate outside the
//! workspace sharing the same checks.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod dns;
pub mod dns64;
pub mod icmp;
pub mod nat;
pub mod tcp_state;
pub mod translate;

pub use brisk_wire::Nat64Prefix;
pub use dns64::Dns64;
pub use nat::{
    ConfigError, Filtering, Nat64, Nat64Config, Nat64Drop, Nat64Stats, Timeouts, Transmit,
};
pub use tcp_state::Side;
pub use translate::{TranslateConfig, TranslateError};
