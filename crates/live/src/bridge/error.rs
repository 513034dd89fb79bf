//! Why a bridge could not start or had to stop, in words an operator can
//! act on.

use std::io;

/// What went wrong opening or running a bridge.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("{0}")]
    Settings(String),
    #[error(
        "reading and writing raw frames needs root (or CAP_NET_RAW and CAP_NET_ADMIN); run it with sudo"
    )]
    NotPermitted,
    #[error("there is no interface named {0:?} here (`ip link` lists them)")]
    NoSuchInterface(String),
    #[error("interface {0} is down: bring it up with `ip link set {0} up`")]
    InterfaceDown(String),
    #[error(
        "interface {radio} carries {radio_mtu}-byte packets and {internet} {internet_mtu}-byte ones: \
         a bridge passes packets as they are, so set both MTUs alike (`ip link set DEV mtu N`)"
    )]
    MtuMismatch {
        radio: String,
        radio_mtu: u32,
        internet: String,
        internet_mtu: u32,
    },
    #[error("interface {0} went away or down while bridging")]
    InterfaceLost(String),
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
}

impl BridgeError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> BridgeError {
        let what = what.into();
        move |source| BridgeError::Io { what, source }
    }
}
