//! What can go wrong on a stream, and which errors close the connection.

use super::id::StreamId;

/// A stream operation failed.
///
/// The first four variants mean the peer broke the protocol: the connection
/// must close with [`StreamError::transport_error_code`]. The rest are the
/// local application's problem and leave the connection intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("stream {id}: peer sent beyond the flow control limit")]
    FlowControl { id: StreamId },
    #[error("stream {id}: peer used a stream beyond the advertised stream limit")]
    StreamLimit { id: StreamId },
    #[error("stream {id}: frame not allowed in the stream's state")]
    StreamState { id: StreamId },
    #[error("stream {id}: final size changed or exceeded")]
    FinalSize { id: StreamId },
    #[error("cannot open a stream (bidi: {bidi}): the peer's stream limit is reached")]
    StreamsBlocked { bidi: bool },
    #[error("stream {id} was never opened")]
    UnknownStream { id: StreamId },
    #[error("stream {id} is closed in this direction")]
    Closed { id: StreamId },
    #[error("stream {id} does not carry data in this direction")]
    WrongDirection { id: StreamId },
    #[error("stream {id} was stopped by the peer (code {error_code})")]
    Stopped { id: StreamId, error_code: u64 },
    #[error("stream {id} was reset by the peer (code {error_code})")]
    Reset { id: StreamId, error_code: u64 },
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
