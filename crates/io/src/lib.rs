//! Brisk on real UDP sockets: a tokio driver for the sans-IO transport in
//! `brisk-proto`, and the async API applications use (docs/IO.md).
//!
//! Layer: the edge, beside the simulator. The core decides everything
//! (what to send, when, with which ECN codepoint); this crate moves bytes
//! between it and a socket, tells it the time, and wakes the tasks waiting
//! on it.
//!
//! Modules:
//! - [`endpoint`]: [`Endpoint`] (`server`, `client`, `connect`,
//!   `connect_with_request` (a request in the first flight), `accept`,
//!   `close`, `abort`, `stats`);
//! - [`connection`]: [`Connection`] (streams, `writable`, `stats`, `close`);
//! - [`datagram`]: unreliable datagrams on a [`Connection`]
//!   (`send_datagram` with a deadline, `recv_datagram`);
//! - [`stream`]: [`Stream`], a tokio `AsyncRead` + `AsyncWrite`;
//! - [`race`]: connecting over several local addresses (a phone's Wi-Fi
//!   and cellular) at once, Happy Eyeballs style ([`Endpoint::connect_racing`]);
//! - [`config`], [`error`], [`keys`] (key files);
//! - [`busy_poll`]: when the task spins on its socket instead of sleeping;
//! - [`connected`]: a server's per-connection sockets, which keep
//!   established traffic out of the listening socket's queue;
//! - internals: `state` (the endpoint's share of what the task and the
//!   handles share) and `conn_state` (each connection's, behind its own
//!   lock), `driver`
//!   (the endpoint task), `migrate` (a client moving to another local
//!   address), [`socket`] (batching, GSO/GRO, ECN control
//!   messages), [`socket_error`] (which socket errors are transient, a
//!   peer's, or fatal; ICMP error kinds), `wall_clock` (where the core's
//!   time zero lies on the wall clock, for early data's replay window)
//!   and `sys`, the one file with `unsafe` system calls.

// System calls live in `sys`, the one module that allows `unsafe`.
#![deny(unsafe_code)]

pub mod busy_poll;
pub mod config;
mod conn_state;
pub mod connected;
pub mod connection;
pub mod datagram;
mod driver;
pub mod endpoint;
pub mod error;
pub mod keys;
mod migrate;
pub mod race;
pub mod socket;
pub mod socket_error;
mod state;
pub mod stream;
mod sys;
mod wall_clock;

pub use brisk_proto::crypto::{KEY_LEN, Keypair};
pub use brisk_proto::{ConnectionStats, Idempotent, TransportConfig};
pub use config::{EndpointConfig, ServerConfig, SocketConfig};
pub use connection::Connection;
pub use datagram::DatagramSendError;
pub use endpoint::{Endpoint, EndpointStats};
pub use error::{ConnectError, ConnectionError, EndpointError};
pub use race::{RacePolicy, Raced};
pub use stream::Stream;
