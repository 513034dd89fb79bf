//! What can go wrong while running a contender.

use std::error::Error as StdError;
use std::io;

/// A failed benchmark step; `context` names the contender and the step.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A socket or stream operation failed.
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        #[source]
        source: io::Error,
    },
    /// The transport library refused a configuration or a connection.
    #[error("{context}: {source}")]
    Transport {
        context: &'static str,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The server acknowledged a different byte count than the client sent.
    #[error("bulk transfer: the server counted {received_bytes} of {sent_bytes} bytes")]
    ShortTransfer {
        sent_bytes: u64,
        received_bytes: u64,
    },
    /// The peer sent something the test did not ask for.
    #[error("{0}")]
    Protocol(&'static str),
    /// No request finished inside the measured window.
    #[error("rpc: no request completed in the measured window")]
    NoSamples,
    /// The test did not finish in time (a stalled transfer, a lost server).
    #[error("gave up after {} s", limit.as_secs_f64())]
    TimedOut { limit: std::time::Duration },
    /// The server stopped before it told the client where to connect.
    #[error("the server ended before it was listening")]
    ServerGone,
    /// A benchmark thread panicked.
    #[error("the {0} thread panicked")]
    Panicked(&'static str),
}

impl BenchError {
    /// Wraps an I/O error with the step it came from.
    pub fn io(context: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Io { context, source }
    }

    /// Wraps a transport library error with the step it came from.
    pub fn transport<E>(context: &'static str) -> impl FnOnce(E) -> Self
    where
        E: StdError + Send + Sync + 'static,
    {
        move |source| Self::Transport {
            context,
            source: Box::new(source),
        }
    }
}
