//! The Brisk transport: a sans-IO protocol state machine (being built).

pub mod ack_tracker;
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
pub mod rtt;
pub mod sent_packets;
pub mod stats;
pub mod streams;
pub mod transport_params;
pub mod varint;

pub use config::{ClientConfig, ServerConfig, TransportConfig};
pub use connection::{ConnState, Connection, Event, Idempotent, Transmit};
pub use endpoint::{ConnectionHandle, Endpoint, EndpointStats};
pub use error::{ConnectError, ConnectionError, EarlyDataError};
pub use stats::{ConnectionStats, DropStats};
