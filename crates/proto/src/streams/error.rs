//! What can go wrong on a stream, and which errors close the connection.

use super::id::StreamId;

/// A stream operation failed.
///
/// The first four variants mean the peer broke the protocol: the connection
/// must close with [`StreamError::transport_error_code`]. The rest are the
/// local application's problem and leave the connection intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The peer sent beyond the flow-control limit (FLOW_CONTROL_ERROR).
    #[error("stream {id}: peer sent beyond the flow control limit")]
    FlowControl {
        /// The stream.
        id: StreamId,
    },
    /// The peer used a stream beyond the advertised limit
    /// (STREAM_LIMIT_ERROR).
    #[error("stream {id}: peer used a stream beyond the advertised stream limit")]
    StreamLimit {
        /// The stream.
        id: StreamId,
    },
    /// A frame the stream's state does not allow (STREAM_STATE_ERROR).
    #[error("stream {id}: frame not allowed in the stream's state")]
    StreamState {
        /// The stream.
        id: StreamId,
    },
    /// The peer changed or exceeded the stream's final size
    /// (FINAL_SIZE_ERROR).
    #[error("stream {id}: final size changed or exceeded")]
    FinalSize {
        /// The stream.
        id: StreamId,
    },
    /// The peer's stream limit leaves no stream to open.
    #[error("cannot open a stream (bidi: {bidi}): the peer's stream limit is reached")]
    StreamsBlocked {
        /// Whether a bidirectional stream was asked for.
        bidi: bool,
    },
    /// The stream was never opened.
    #[error("stream {id} was never opened")]
    UnknownStream {
        /// The stream.
        id: StreamId,
    },
    /// The stream is closed in this direction.
    #[error("stream {id} is closed in this direction")]
    Closed {
        /// The stream.
        id: StreamId,
    },
    /// A unidirectional stream used in the direction it does not carry.
    #[error("stream {id} does not carry data in this direction")]
    WrongDirection {
        /// The stream.
        id: StreamId,
    },
    /// The peer stopped the stream (STOP_SENDING).
    #[error("stream {id} was stopped by the peer (code {error_code})")]
    Stopped {
        /// The stream.
        id: StreamId,
        /// The peer's STOP_SENDING code.
        error_code: u64,
    },
    /// The peer reset the stream (RESET_STREAM).
    #[error("stream {id} was reset by the peer (code {error_code})")]
    Reset {
        /// The stream.
        id: StreamId,
        /// The peer's RESET_STREAM code.
        error_code: u64,
    },
}

impl StreamError {
    /// RFC 9000 §20.1 code to close the connection with, for errors the peer
    /// caused; `None` for local errors.
    pub fn transport_error_code(&self) -> Option<u64> {
        match self {
            StreamError::FlowControl { .. } => Some(0x03),
            StreamError::StreamLimit { .. } => Some(0x04),
            StreamError::StreamState { .. } => Some(0x05),
            StreamError::FinalSize { .. } => Some(0x06),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_errors_carry_rfc_9000_codes() {
        let id = StreamId(4);
        assert_eq!(
            StreamError::FlowControl { id }.transport_error_code(),
            Some(0x03)
        );
        assert_eq!(
            StreamError::StreamLimit { id }.transport_error_code(),
            Some(0x04)
        );
        assert_eq!(
            StreamError::StreamState { id }.transport_error_code(),
            Some(0x05)
        );
        assert_eq!(
            StreamError::FinalSize { id }.transport_error_code(),
            Some(0x06)
        );
        assert_eq!(StreamError::Closed { id }.transport_error_code(), None);
        assert_eq!(
            StreamError::StreamsBlocked { bidi: true }.transport_error_code(),
            None
        );
        assert_eq!(
            StreamError::Stopped { id, error_code: 9 }.to_string(),
            "stream 4 was stopped by the peer (code 9)"
        );
    }
}
