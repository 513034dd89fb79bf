//! Why a connection ended or could not start, and the error codes that go
//! on the wire in CONNECTION_CLOSE.

use crate::handshake::HandshakeError;

/// Transport error codes (the RFC 9000 §20.1 values, so tools know them).
pub mod code {
    pub const NO_ERROR: u64 = 0x00;
    pub const INTERNAL_ERROR: u64 = 0x01;
    pub const CONNECTION_REFUSED: u64 = 0x02;
    pub const FLOW_CONTROL_ERROR: u64 = 0x03;
    pub const STREAM_LIMIT_ERROR: u64 = 0x04;
    pub const STREAM_STATE_ERROR: u64 = 0x05;
    pub const FINAL_SIZE_ERROR: u64 = 0x06;
    pub const FRAME_ENCODING_ERROR: u64 = 0x07;
    pub const TRANSPORT_PARAMETER_ERROR: u64 = 0x08;
    pub const PROTOCOL_VIOLATION: u64 = 0x0a;
    pub const AEAD_LIMIT_REACHED: u64 = 0x0f;
}

/// Why a connection was lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    #[error("timed out: nothing heard from the peer for the idle timeout")]
    TimedOut,
    #[error("peer closed the connection (application code {code}): {reason}")]
    ApplicationClosed { code: u64, reason: String },
    #[error("peer closed the connection with transport error {code:#x}: {reason}")]
    PeerTransportError { code: u64, reason: String },
    #[error("closed: we detected transport error {code:#x}: {reason}")]
    TransportError { code: u64, reason: String },
    #[error("the server speaks none of our versions")]
    VersionMismatch,
    /// The server answered the handshake with a Refuse packet (for
    /// example because it has as many connections as it takes).
    #[error("server refused the connection: {reason}")]
    Refused { code: u64, reason: String },
    /// The server no longer knows the connection (it restarted or dropped
    /// its state) and said so with a stateless reset.
    #[error("the server reset the connection: it no longer knows it (restarted or lost its state)")]
    StatelessReset,
    #[error("handshake failed: {0}")]
    Handshake(#[from] HandshakeError),
}

/// Why [`crate::Endpoint::connect`] refused to start a connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    #[error("unsupported version {0:#x}")]
    UnsupportedVersion(u32),
    #[error("invalid remote address")]
    InvalidRemoteAddress,
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

/// Why early data was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EarlyDataError {
    #[error("early data needs the IK pattern (a known server key)")]
    NotIk,
    #[error("the first flight has been sent already")]
    TooLate,
    #[error("early data of {len} bytes exceeds the {max} bytes the first flight holds")]
    TooLarge { len: usize, max: usize },
    #[error("only one early-data message per connection")]
    AlreadySent,
    #[error("the server's stream limit allows no stream")]
    StreamsBlocked,
    #[error("only clients send early data")]
    NotClient,
}
