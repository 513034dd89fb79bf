//! "Soft FEC" for the handshake: a connection that asks for forward error
//! correction sends each of its handshake messages twice, the copy right
//! behind the first transmission.
//!
//! Repair symbols protect only 1-RTT packets, so before this a lost
//! handshake packet cost the client's handshake timeout: with no RTT
//! sample yet, that is the initial probe timeout, about one second (three
//! times the 333 ms initial RTT), whatever the path's real round trip. On
//! a 220 ms path with 5% loss one fetch in twenty lost the server's reply
//! and took a second longer, which set the 95th percentile of a small
//! fetch. Two copies are both lost with the square of the loss rate
//! (0.25% at 5% random loss), for one more small datagram per message.
//!
//! The client copies its Initial when its own FEC is enabled (it cannot
//! know yet whether the server supports it); the server, and the client's
//! third XX message, copy only once both sides announced FEC. The copy is
//! the same message in a new packet number, so the peer treats it as any
//! retransmission: a duplicate is dropped (a server answers a duplicate
//! Initial with its reply again, as it does for a client's resend).
//! Copies go back to back: they survive independent (random) loss, not a
//! burst that spans both.

use super::Connection;

/// Where the current handshake message is in its first transmission and
/// its copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HandshakeCopy {
    /// The message is new: its next transmission is the first.
    First,
    /// The first transmission left and the copy is due.
    Due,
    /// Nothing more to copy: the copy left, or none was wanted.
    Done,
}

impl Connection {
    /// Whether this connection sends its handshake messages twice.
    fn copies_handshake(&self) -> bool {
        // No peer parameters yet: the client's Initial.
        let fec = &self.config.fec;
        fec.enabled && fec.handshake_copies && (self.peer_params.is_none() || self.fec_rx.is_some())
    }

    /// A handshake message just left: after its first transmission, the
    /// copy is queued for the next datagram; after the copy, it is counted.
    pub(super) fn on_handshake_message_sent(&mut self) {
        self.hs.copy = match self.hs.copy {
            HandshakeCopy::First if self.copies_handshake() => {
                self.hs.send_pending = true;
                HandshakeCopy::Due
            }
            HandshakeCopy::Due => {
                self.stats.handshake_copies_sent += 1;
                HandshakeCopy::Done
            }
            HandshakeCopy::First | HandshakeCopy::Done => HandshakeCopy::Done,
        };
    }
}
