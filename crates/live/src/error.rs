//! What can go wrong when building or running a lab.

use std::io;

/// Why a lab could not be built, run or torn down.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(
        "the live lab needs root (or CAP_NET_ADMIN) to create network namespaces and TUN devices; run it with sudo"
    )]
    NotPrivileged,
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("cannot run `{command}`: {source}")]
    Spawn { command: String, source: io::Error },
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("{0}")]
    Config(String),
    #[error("the router stopped: {0}")]
    Router(String),
    #[error("capture: {0}")]
    Capture(#[from] brisk_trace::pcap::PcapError),
}

impl LiveError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> LiveError {
        let what = what.into();
        move |source| LiveError::Io { what, source }
    }
}
