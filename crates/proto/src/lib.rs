//! The Brisk transport: an encrypted, multiplexed, L4S-capable protocol
//! over UDP, as a sans-IO state machine (the wire contract is
//! docs/PROTOCOL.md).
//!
//! Layer: above `brisk-wire` and `brisk-time`, below the socket driver and
//! the simulator, which feed it datagrams and the time and carry out what
//! it returns. Nothing here reads a clock, opens a socket or spawns a
//! thread; all randomness comes from seeds.
//!
//! Entry points: [`Endpoint`] (many connections behind one socket: routing
//! by connection ID, accepting, version negotiation) and [`Connection`]
//! (`handle_datagram` / `handle_timeout` in, `poll_transmit` /
//! `poll_timeout` / `poll_event` out, plus the stream API), configured by
//! [`ClientConfig`], [`ServerConfig`] and [`TransportConfig`].
//!
//! Public modules, for what the other crates name: [`congestion`] (the
//! controller choice, [`congestion::CcAlgorithm`]), [`crypto`] (static
//! keys), [`ecn_validation`] (the path's ECN state), [`fec`] (the
//! per-stream repair policy and the erasure code its bench measures),
//! [`packet`] (header peeking for the socket driver's routing), [`qlog`]
//! (events for `brisk-trace`'s qlog writer) and [`streams`] (stream IDs,
//! priorities, events and errors).
//!
//! Private to the crate, by layer:
//! - wire format: `varint`, `packet` (headers, packet numbers), `frame`,
//!   `transport_params`;
//! - security: `crypto` (keys, 1-RTT packet protection), `handshake`
//!   (Noise IK / XX);
//! - recovery: `ack_tracker` (what we received, when to ACK, ECN counts),
//!   `ack_frequency`, `sent_packets`, `loss` (RACK, tail-loss probes,
//!   persistent congestion), `rtt`;
//! - congestion: `congestion` (NewReno, CUBIC, Prague, BBR), `pacing`,
//!   `ecn_validation`;
//! - recovery without a round trip: `fec` (repair symbols, rebuilt packets);
//! - `datagrams`: unreliable datagrams with deadlines, bounded queues;
//! - `streams`: multiplexing, flow control, priorities;
//! - `connection`, `endpoint`, `config`, `stats`, `error`, `schedule`;
//! - under attack: `admission` (retry or refuse before any key agreement,
//!   half-open and rate budgets), `retry` (tokens, Retry and Refuse
//!   packets), `rate_limit`, `amplification` (the 3x limit per address),
//!   `stateless_reset`, `anti_replay` (early data of a first flight used
//!   once, within a time window, in bounded memory);
//! - migration: `cid` (connection IDs issued and received, and the keyed
//!   map that routes issued IDs), with path validation in
//!   `connection/migration.rs`.
//!
//! The crate warns on `missing_docs` and `unreachable_pub`: what other
//! crates do not name stays `pub(crate)`.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod ack_frequency;
mod ack_tracker;
mod admission;
mod amplification;
mod anti_replay;
mod cid;
mod config;
pub mod congestion;
mod connection;
pub mod crypto;
mod datagrams;
pub mod ecn_validation;
mod endpoint;
mod error;
pub mod fec;
mod frame;
mod handshake;
mod loss;
mod pacing;
pub mod packet;
mod pmtu;
pub mod qlog;
mod rate_limit;
mod retry;
mod retry_sources;
mod rtt;
mod schedule;
mod sent_packets;
mod small_set;
mod stateless_reset;
mod stats;
pub mod streams;
mod transport_params;
mod varint;

pub use anti_replay::AntiReplayConfig;
pub use config::{AdmissionConfig, ClientConfig, RetryPolicy, ServerConfig, TransportConfig};
pub use connection::{ConnState, Connection, Event, Idempotent, MAX_TRAIN_BYTES, Transmit};
pub use datagrams::{DatagramConfig, DatagramError, DatagramStats};
pub use endpoint::{ConnectionHandle, Delivery, Endpoint, EndpointStats};
pub use error::{ConnectError, ConnectionError, EarlyDataError};
pub use handshake::Pattern;
pub use loss::LossConfig;
pub use pmtu::PmtuStats;
pub use rtt::RttEstimator;
pub use stateless_reset::{MAX_RESET_LEN, MIN_RESET_LEN};
pub use stats::{ConnectionStats, DropStats, PacingStats};
