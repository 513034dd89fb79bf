//! A transparent mobile TCP optimizer: a "smart piece of wire" between an
//! operator's core (the server side) and its radio network (the client
//! side).
//!
//! Layer: a sans-IO state machine over real IPv4 and IPv6 TCP datagrams,
//! driven by `(now, datagram, side) -> datagrams out`; it reads no clock
//! and owns no socket, so the same code runs in tests, in a simulator and
//! behind a live router.
//!
//! What it does: it passes every handshake untouched and tracks it; once a
//! client-opened connection completes a clean handshake, it acknowledges
//! the server's data in the client's name (the client's sequence number,
//! timestamps and window, never its own), holds each segment and delivers
//! it toward the client itself: paced, within one in-flight budget per
//! subscriber shared fairly by the subscriber's flows, with RACK loss
//! detection and tail-loss probes and no retransmission timer. Sequence
//! numbers and options stay the endpoints', so it can stop optimizing a
//! connection whenever nothing undelivered is held. Anything odd leaves a
//! connection alone. See docs/OPTIMIZER.md.
//!
//! Modules: [`config`] the limits and gains; `segment` reading datagrams
//! and writing local ACKs; `flow` one connection's held data, RACK and
//! probes; `held` the ring its segments are held in; `hash` the
//! connection table's hasher; `subscriber` the per-user budget and pacer; `optimizer` the
//! connection table, handshake tracking and per-subscriber scheduling;
//! [`stats`] counters and reasons.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod config;
mod flow;
mod hash;
mod held;
mod optimizer;
mod segment;
pub mod stats;
mod subscriber;

pub use config::Config;
pub use flow::Phase;
pub use optimizer::{ConnectionInfo, Optimizer, SubscriberInfo};
pub use stats::{Reason, Stats};

use std::net::SocketAddr;

/// The optimizer's two interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// Toward the mobile clients (the radio network).
    Client,
    /// Toward the servers (the internet).
    Server,
}

impl Side {
    /// The opposite interface: where a packet from this side goes.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// A datagram the optimizer sends, and the interface it leaves by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The interface to send it on.
    pub toward: Side,
    /// A whole IP datagram.
    pub datagram: Vec<u8>,
}

/// A connection, named by its client (the side that sent the SYN) and its
/// server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionKey {
    /// The mobile client's address and port.
    pub client: SocketAddr,
    /// The server's address and port.
    pub server: SocketAddr,
}

impl ConnectionKey {
    /// The key of a connection from `client` to `server`.
    pub fn new(client: SocketAddr, server: SocketAddr) -> ConnectionKey {
        ConnectionKey { client, server }
    }
}
