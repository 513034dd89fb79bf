//! Stream identifiers: who opened a stream and which way its data flows.
//!
//! Brisk numbers streams like QUIC (RFC 9000 §2.1): the two low bits of the
//! id say who initiated the stream (bit 0: 0 client, 1 server) and whether
//! it is bidirectional (bit 1: 0 bidi, 1 uni); the rest is a per-type index,
//! so each endpoint opens its streams in order without coordination.

use std::fmt;

/// Which end of the connection this endpoint is; decides which ids it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Opened the connection; opens even-numbered streams.
    Client,
    /// Accepted the connection; opens odd-numbered streams.
    Server,
}

impl Side {
    /// The other end of the connection.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    fn bit(self) -> u64 {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }
}

/// A stream id as carried in STREAM, RESET_STREAM and the like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The number of streams of one type an endpoint can ever open: the
    /// largest MAX_STREAMS value RFC 9000 §19.11 allows.
    pub const MAX_COUNT: u64 = 1 << 60;

    /// The `index`-th stream of its type opened by `initiator`.
    pub fn new(initiator: Side, bidi: bool, index: u64) -> Self {
        StreamId((index << 2) | (u64::from(!bidi) << 1) | initiator.bit())
    }

    /// The endpoint that opened the stream.
    pub fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// Whether data flows both ways.
    pub fn is_bidi(self) -> bool {
        self.0 & 2 == 0
    }

    /// Position among the streams of the same initiator and direction.
    pub fn index(self) -> u64 {
        self.0 >> 2
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_bits_follow_rfc_9000() {
        // RFC 9000 Table 1: 0x00 client bidi, 0x01 server bidi,
        // 0x02 client uni, 0x03 server uni.
        assert_eq!(StreamId::new(Side::Client, true, 0).0, 0);
        assert_eq!(StreamId::new(Side::Server, true, 0).0, 1);
        assert_eq!(StreamId::new(Side::Client, false, 0).0, 2);
        assert_eq!(StreamId::new(Side::Server, false, 0).0, 3);
        let id = StreamId::new(Side::Server, false, 7);
        assert_eq!(id.0, 31);
        assert_eq!(id.index(), 7);
        assert_eq!(id.initiator(), Side::Server);
        assert!(!id.is_bidi());
        assert!(StreamId(4).is_bidi());
        assert_eq!(StreamId(4).initiator(), Side::Client);
        assert_eq!(Side::Client.peer(), Side::Server);
    }
}
