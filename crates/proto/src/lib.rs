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
//! `poll_timeout` / `poll_event` out, plus the stream API).
//!
//! Modules:
//! - wire format: [`varint`], [`packet`] (headers, packet numbers),
//!   [`frame`], [`transport_params`];
//! - security: [`crypto`] (keys, 1-RTT packet protection), [`handshake`]
//!   (Noise IK / XX);
//! - recovery: [`ack_tracker`] (what we received, when to ACK, ECN counts),
//!   [`sent_packets`], [`loss`] (RACK, tail-loss probes, persistent
//!   congestion), [`rtt`];
//! - congestion: [`congestion`] (NewReno, CUBIC, Prague, BBR), [`pacing`],
//!   [`ecn_validation`];
//! - [`streams`]: multiplexing, flow control, priorities;
//! - [`connection`], [`endpoint`], [`config`], [`stats`], [`error`];
//! - under attack: `admission` (retry or refuse before any key agreement,
//!   half-open and rate budgets), [`retry`] (tokens, Retry and Refuse
//!   packets), [`rate_limit`], [`amplification`] (the 3x limit per
//!   address), [`stateless_reset`];
//! - [`qlog`]: events for `brisk-trace`'s qlog writer.

#![forbid(unsafe_code)]

pub mod ack_frequency;
pub mod ack_tracker;
mod admission;
pub mod amplification;
pub mod config;
pub mod congestion;
pub mod connection;
pub mod crypto;
pub mod ecn_validation;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod handshake;
pub mod loss;
pub mod pacing;
pub mod packet;
pub mod qlog;
pub mod rate_limit;
pub mod retry;
pub mod rtt;
mod schedule;
pub mod sent_packets;
pub mod stateless_reset;
pub mod stats;
pub mod streams;
pub mod transport_params;
pub mod varint;

pub use config::{AdmissionConfig, ClientConfig, RetryPolicy, ServerConfig, TransportConfig};
pub use connection::{ConnState, Connection, Event, Idempotent, MAX_TRAIN_BYTES, Transmit};
pub use endpoint::{ConnectionHandle, Delivery, Endpoint, EndpointStats};
pub use error::{ConnectError, ConnectionError, EarlyDataError};
pub use stats::{ConnectionStats, DropStats};
