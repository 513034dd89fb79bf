//! Why a connection ended or could not start, and the error codes that go
//! on the wire in CONNECTION_CLOSE.

use crate::handshake::HandshakeError;

/// Transport error codes (the RFC 9000 §20.1 values, so tools know them).
/// The whole table stays, including codes no path sends yet.
#[allow(dead_code)]
pub(crate) mod code {
    pub(crate) const NO_ERROR: u64 = 0x00;
    pub(crate) const INTERNAL_ERROR: u64 = 0x01;
    pub(crate) const CONNECTION_REFUSED: u64 = 0x02;
    pub(crate) const FLOW_CONTROL_ERROR: u64 = 0x03;
    pub(crate) const STREAM_LIMIT_ERROR: u64 = 0x04;
    pub(crate) const STREAM_STATE_ERROR: u64 = 0x05;
    pub(crate) const FINAL_SIZE_ERROR: u64 = 0x06;
    pub(crate) const FRAME_ENCODING_ERROR: u64 = 0x07;
    pub(crate) const TRANSPORT_PARAMETER_ERROR: u64 = 0x08;
    pub(crate) const PROTOCOL_VIOLATION: u64 = 0x0a;
    pub(crate) const AEAD_LIMIT_REACHED: u64 = 0x0f;
}

/// Why a connection was lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// Nothing heard from the peer for the idle timeout.
    #[error("timed out: nothing heard from the peer for the idle timeout")]
    TimedOut,
    #[error("peer closed the connection (application code {code}): {reason}")]
    /// The peer's application closed the connection.
    ApplicationClosed {
        /// The application's error code.
        code: u64,
        /// The peer's reason phrase.
        reason: String,
    },
    #[error("peer closed the connection with transport error {code:#x}: {reason}")]
    /// The peer closed the connection for a protocol error it saw.
    PeerTransportError {
        /// The RFC 9000 §20.1 error code.
        code: u64,
        /// The peer's reason phrase.
        reason: String,
    },
    #[error("closed: we detected transport error {code:#x}: {reason}")]
    /// We closed the connection for a protocol error the peer made.
    TransportError {
        /// The RFC 9000 §20.1 error code we sent.
        code: u64,
        /// The reason phrase we sent.
        reason: String,
    },
    /// The server answered with Version Negotiation listing none of ours.
    #[error("the server speaks none of our versions")]
    VersionMismatch,
    /// The server answered the handshake with a Refuse packet (for
    /// example because it has as many connections as it takes).
    #[error("server refused the connection: {reason}")]
    Refused {
        /// The refusal code from the Refuse packet.
        code: u64,
        /// The server's reason phrase.
        reason: String,
    },
    /// The server no longer knows the connection (it restarted or dropped
    /// its state) and said so with a stateless reset.
    #[error("the server reset the connection: it no longer knows it (restarted or lost its state)")]
    StatelessReset,
    /// The handshake failed (bad key, bad message, Noise error).
    #[error("handshake failed: {0}")]
    Handshake(#[from] HandshakeError),
}

/// Why [`crate::Endpoint::connect`] refused to start a connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The configured version is not one this implementation speaks.
    #[error("unsupported version {0:#x}")]
    UnsupportedVersion(u32),
    /// The remote address cannot be sent to (unspecified address or port 0).
    #[error("invalid remote address")]
    InvalidRemoteAddress,
    /// The Noise handshake state could not be set up with these keys.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

/// Why early data was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EarlyDataError {
    /// Early data needs a known server key (the IK pattern).
    #[error("early data needs the IK pattern (a known server key)")]
    NotIk,
    /// The first flight already left.
    #[error("the first flight has been sent already")]
    TooLate,
    #[error("early data of {len} bytes exceeds the {max} bytes the first flight holds")]
    /// More early data than the first flight holds.
    TooLarge {
        /// Bytes offered.
        len: usize,
        /// Bytes the first flight holds.
        max: usize,
    },
    /// Only one early-data message per connection.
    #[error("only one early-data message per connection")]
    AlreadySent,
    /// No stream can be opened for it within the peer's stream limit.
    #[error("the server's stream limit allows no stream")]
    StreamsBlocked,
    /// Servers do not send early data.
    #[error("only clients send early data")]
    NotClient,
}
