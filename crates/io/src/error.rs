//! Errors of the async API.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a connection stopped working.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// The transport ended it: peer close, idle timeout, protocol error.
    #[error(transparent)]
    Lost(#[from] brisk_proto::ConnectionError),
    #[error("the connection was closed locally")]
    LocallyClosed,
    /// The endpoint's socket task ended (aborted, or a socket error).
    #[error("the endpoint stopped: {0}")]
    EndpointStopped(String),
    /// The kernel refused to send to the peer (no route, network down), or
    /// an ICMP error came back (port unreachable: nothing listening).
    #[error("{addr} is unreachable: {reason}")]
    Unreachable { addr: SocketAddr, reason: String },
}

impl From<ConnectionError> for io::Error {
    fn from(e: ConnectionError) -> io::Error {
        let kind = match &e {
            ConnectionError::Lost(brisk_proto::ConnectionError::TimedOut) => {
                io::ErrorKind::TimedOut
            }
            ConnectionError::Lost(brisk_proto::ConnectionError::Refused { .. }) => {
                io::ErrorKind::ConnectionRefused
            }
            ConnectionError::Lost(_) => io::ErrorKind::ConnectionReset,
            ConnectionError::LocallyClosed => io::ErrorKind::NotConnected,
            ConnectionError::EndpointStopped(_) => io::ErrorKind::BrokenPipe,
            ConnectionError::Unreachable { .. } => io::ErrorKind::HostUnreachable,
        };
        io::Error::new(kind, e)
    }
}

/// Why an endpoint's task stopped on its own: its socket or timer can no
/// longer be used (a bad descriptor, not a socket, bad arguments). No
/// packet from a peer causes this; see [`crate::socket_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the endpoint's socket failed: {operation}: {message}")]
pub struct EndpointError {
    /// What the task was doing ("receive", "send", "arm the timer").
    pub operation: &'static str,
    /// The kernel's error number, if it gave one.
    pub errno: Option<i32>,
    pub message: String,
}

impl EndpointError {
    pub fn new(operation: &'static str, e: &io::Error) -> EndpointError {
        EndpointError {
            operation,
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }
}

/// Why [`crate::Endpoint::connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The transport refused to start (bad address, bad configuration).
    #[error(transparent)]
    Invalid(#[from] brisk_proto::ConnectError),
    /// The server answered a key-less (XX) probe with another static key
    /// than the one we pinned: the IK handshake could never succeed.
    #[error("wrong server key: {addr} presented {presented}, expected {expected}")]
    WrongServerKey {
        addr: SocketAddr,
        expected: String,
        presented: String,
    },
    #[error(
        "no answer from {addr} within {} ms (nothing listening there, host unreachable, or filtered)",
        after.as_millis()
    )]
    TimedOut { addr: SocketAddr, after: Duration },
    /// The request cannot ride in the first flight (too large, or the
    /// configuration does not allow early data).
    #[error("early data refused before sending: {0}")]
    EarlyData(#[from] brisk_proto::EarlyDataError),
    /// A racing connect was given no local endpoint to connect from.
    #[error("no local address to connect to {addr} from")]
    NoPaths { addr: SocketAddr },
    #[error("connection to {addr} failed: {reason}")]
    Failed {
        addr: SocketAddr,
        reason: ConnectionError,
    },
}
