//! Counters an operator reads to see what the optimizer did, and the
//! reasons it left a connection alone.

use std::collections::BTreeMap;

/// Why a connection was never optimized, or stopped being optimized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The SYN or SYN-ACK carried an option the optimizer does not know
    /// (or Fast Open), or data: the endpoints negotiate it themselves.
    UnknownSynOption,
    /// The same SYN was seen in both directions (a routing loop), or the
    /// client sent a second SYN with another sequence number.
    SynSeenTwice,
    /// One direction of the handshake or of the data never passed here.
    AsymmetricRouting,
    /// A packet of the connection arrived on the wrong interface.
    WrongSide,
    /// The endpoints did not both permit SACK, which loss detection needs.
    NoSack,
    /// The connection table was full.
    TableFull,
    /// A segment overlapped held data only in part (resegmentation).
    Overlap,
    /// A segment would have exceeded the connection's or the total buffer.
    BufferFull,
    /// The client acknowledged data the optimizer never delivered.
    UnexpectedAck,
    /// Stopped on request (an operator, memory pressure).
    Requested,
    /// Ended by a RST or a completed FIN.
    Closed,
}

/// Totals since the optimizer started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams forwarded exactly as they arrived.
    pub passed_untouched: u64,
    /// Of those, datagrams that were not TCP (or were IPv4 fragments).
    pub not_tcp: u64,
    /// Of those, datagrams that claimed to be TCP but were cut short,
    /// malformed or failed a checksum.
    pub broken: u64,
    /// Connections whose handshake completed and that were optimized.
    pub optimized_connections: u64,
    /// Connections never optimized, by reason.
    pub refused: BTreeMap<Reason, u64>,
    /// Optimized connections that fell back to pass-through, by reason.
    pub stopped: BTreeMap<Reason, u64>,
    /// ACKs sent to servers in their clients' name.
    pub local_acks: u64,
    /// Client ACKs kept from the server because the optimizer had already
    /// acknowledged what they acknowledge.
    pub client_acks_absorbed: u64,
    /// Client packets forwarded with their acknowledgment moved forward.
    pub client_acks_moved: u64,
    /// Server segments sent toward the client for the first time.
    pub segments_sent: u64,
    /// Server segments sent again (losses and probes).
    pub retransmissions: u64,
    /// Segments RACK declared lost.
    pub rack_losses: u64,
    /// Tail-loss probes sent.
    pub tail_loss_probes: u64,
    /// Server segments dropped as copies of data already held or delivered.
    pub duplicates_dropped: u64,
    /// Connections forgotten after their idle timeout.
    pub idle_expired: u64,
    /// Client handshake ACKs whose window was lowered to what the buffers
    /// hold (the only handshake packets the optimizer changes).
    pub handshake_windows_lowered: u64,
}

impl Stats {
    pub(crate) fn refuse(&mut self, r: Reason) {
        *self.refused.entry(r).or_default() += 1;
    }
    pub(crate) fn stop(&mut self, r: Reason) {
        *self.stopped.entry(r).or_default() += 1;
    }
}
