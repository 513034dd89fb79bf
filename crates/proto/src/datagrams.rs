//! Unreliable datagrams (RFC 9221) with an application deadline: the
//! connection's queues of datagrams to send and datagrams received, their
//! limits and counters (docs/PROTOCOL.md §4.4).
//!
//! A datagram is sent at most once, in a DATAGRAM frame of its own that is
//! never split over packets and never retransmitted; its packet counts
//! against the congestion window like any other. What the application
//! queues waits in order until a packet has room; one still waiting past
//! its deadline is dropped at the sender, as a late video frame is worth
//! less than the room it would take. Both queues are bounded: a full queue
//! drops its oldest datagram, counted, since the newest is the one the
//! application most wants delivered.
//!
//! The connection glue (the frame source in the packet builder, the
//! receive path, the public calls) is in `connection/datagrams.rs`.

use crate::fec::FecPolicy;
use brisk_time::Instant;
use bytes::Bytes;
use std::collections::VecDeque;

/// Datagram knobs of one connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatagramConfig {
    /// The largest DATAGRAM frame (type, length and data) this side takes,
    /// announced as `max_datagram_frame_size`; `None`: this side takes no
    /// datagrams and does not announce the parameter.
    pub max_frame_bytes: Option<u64>,
    /// Received datagrams the application has not read yet, at most; a
    /// full queue drops its oldest.
    pub receive_queue_datagrams: usize,
    /// Datagrams waiting to be sent, at most; a full queue drops its
    /// oldest.
    pub send_queue_datagrams: usize,
    /// How much forward error correction protects packets that carry
    /// datagrams, once FEC is negotiated: datagrams are never
    /// retransmitted, so repair is their only way back from a loss.
    pub fec_policy: FecPolicy,
}

impl Default for DatagramConfig {
    fn default() -> Self {
        DatagramConfig {
            max_frame_bytes: None,
            receive_queue_datagrams: 256,
            send_queue_datagrams: 1024,
            fec_policy: FecPolicy::Adaptive,
        }
    }
}

/// What happened to datagrams on one connection, in datagrams unless the
/// name says bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatagramStats {
    /// Sent in a DATAGRAM frame (each once: none is retransmitted).
    pub sent: u64,
    /// Application bytes of those.
    pub bytes_sent: u64,
    /// Dropped at the sender, unsent, because their deadline passed.
    pub expired: u64,
    /// Dropped at the sender, unsent, because the send queue was full.
    pub send_queue_dropped: u64,
    /// Received and queued for the application.
    pub received: u64,
    /// Application bytes of those.
    pub bytes_received: u64,
    /// Received but dropped, unread, because the receive queue was full.
    pub receive_queue_dropped: u64,
    /// DATAGRAM frames from the peer that broke a rule (datagrams not
    /// announced, or a frame above the announced size); each ends the
    /// connection with PROTOCOL_VIOLATION.
    pub rejected: u64,
}

/// Why [`crate::Connection::send_datagram`] refused a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    /// The handshake has not finished, so whether the peer takes
    /// datagrams is not known yet.
    #[error("the connection is not established: the peer's datagram support is not known yet")]
    NotEstablished,
    /// The peer did not announce `max_datagram_frame_size`.
    #[error("the peer does not take datagrams: it did not announce max_datagram_frame_size")]
    UnsupportedByPeer,
    /// Larger than one packet, or than the peer takes.
    #[error(
        "datagram of {len} bytes is larger than the {max} bytes one packet carries to this peer"
    )]
    TooLarge {
        /// Bytes offered.
        len: usize,
        /// The largest datagram that can be sent now.
        max: usize,
    },
    /// Its deadline was already past when it was offered.
    #[error("the datagram's deadline has already passed")]
    DeadlinePassed,
}

/// A datagram waiting to be sent.
#[derive(Debug)]
struct Outgoing {
    data: Bytes,
    deadline: Option<Instant>,
}

/// The two queues and their counters.
#[derive(Debug)]
pub(crate) struct DatagramQueues {
    config: DatagramConfig,
    send: VecDeque<Outgoing>,
    /// Bytes of the datagrams in `send`.
    send_bytes: u64,
    recv: VecDeque<Bytes>,
    stats: DatagramStats,
}

impl DatagramQueues {
    pub(crate) fn new(config: DatagramConfig) -> Self {
        DatagramQueues {
            config,
            send: VecDeque::new(),
            send_bytes: 0,
            recv: VecDeque::new(),
            stats: DatagramStats::default(),
        }
    }

    pub(crate) fn config(&self) -> &DatagramConfig {
        &self.config
    }

    pub(crate) fn set_fec_policy(&mut self, policy: FecPolicy) {
        self.config.fec_policy = policy;
    }

    pub(crate) fn stats(&self) -> DatagramStats {
        self.stats
    }

    /// Queues a datagram to send, dropping the oldest waiting one if the
    /// queue is full.
    pub(crate) fn push_send(&mut self, data: Bytes, deadline: Option<Instant>) {
        while self.send.len() >= self.config.send_queue_datagrams.max(1) {
            if let Some(o) = self.send.pop_front() {
                self.send_bytes -= o.data.len() as u64;
            }
            self.stats.send_queue_dropped += 1;
        }
        self.send_bytes += data.len() as u64;
        self.send.push_back(Outgoing { data, deadline });
    }

    /// Drops every waiting datagram whose deadline is before `now`.
    pub(crate) fn drop_expired(&mut self, now: Instant) {
        let before = self.send.len();
        self.send
            .retain(|o| o.deadline.is_none_or(|deadline| now <= deadline));
        if self.send.len() != before {
            self.stats.expired += (before - self.send.len()) as u64;
            self.send_bytes = self.send.iter().map(|o| o.data.len() as u64).sum();
        }
    }

    /// Whether a datagram waits to be sent (expired ones included until
    /// [`DatagramQueues::drop_expired`] runs).
    pub(crate) fn has_queued(&self) -> bool {
        !self.send.is_empty()
    }

    /// Bytes of the datagrams waiting to be sent.
    pub(crate) fn queued_bytes(&self) -> u64 {
        self.send_bytes
    }

    /// The length of the next datagram to send.
    pub(crate) fn next_len(&self) -> Option<usize> {
        self.send.front().map(|o| o.data.len())
    }

    /// Takes the next datagram out to be sent, counting it as sent.
    pub(crate) fn pop_send(&mut self) -> Option<Bytes> {
        let o = self.send.pop_front()?;
        self.send_bytes -= o.data.len() as u64;
        self.stats.sent += 1;
        self.stats.bytes_sent += o.data.len() as u64;
        Some(o.data)
    }

    /// Queues a received datagram for the application, dropping the
    /// oldest unread one if the queue is full; true if the queue was empty
    /// (the application should hear of it).
    pub(crate) fn on_received(&mut self, data: &[u8]) -> bool {
        let was_empty = self.recv.is_empty();
        while self.recv.len() >= self.config.receive_queue_datagrams.max(1) {
            self.recv.pop_front();
            self.stats.receive_queue_dropped += 1;
        }
        // A copy: a slice would pin the whole receive buffer.
        self.recv.push_back(Bytes::copy_from_slice(data));
        self.stats.received += 1;
        self.stats.bytes_received += data.len() as u64;
        was_empty
    }

    pub(crate) fn pop_recv(&mut self) -> Option<Bytes> {
        self.recv.pop_front()
    }

    pub(crate) fn on_rejected(&mut self) {
        self.stats.rejected += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn deadlines_drop_only_what_is_late() {
        let mut q = DatagramQueues::new(DatagramConfig::default());
        q.push_send(Bytes::from_static(b"a"), Some(at(10)));
        q.push_send(Bytes::from_static(b"b"), None);
        q.push_send(Bytes::from_static(b"c"), Some(at(30)));
        q.drop_expired(at(10));
        assert_eq!(q.stats().expired, 0, "on its deadline it may still go");
        q.drop_expired(at(11));
        assert_eq!(q.stats().expired, 1);
        assert_eq!(q.pop_send().as_deref(), Some(&b"b"[..]));
        q.drop_expired(at(31));
        assert_eq!((q.stats().expired, q.stats().sent), (2, 1));
        assert!(!q.has_queued());
    }

    #[test]
    fn full_queues_drop_their_oldest() {
        let mut q = DatagramQueues::new(DatagramConfig {
            receive_queue_datagrams: 2,
            send_queue_datagrams: 2,
            ..DatagramConfig::default()
        });
        for d in [&b"1"[..], b"2", b"3"] {
            q.push_send(Bytes::copy_from_slice(d), None);
        }
        assert_eq!(q.stats().send_queue_dropped, 1);
        assert_eq!((q.next_len(), q.queued_bytes()), (Some(1), 2));
        assert_eq!(q.pop_send().as_deref(), Some(&b"2"[..]));
        assert!(q.on_received(b"x"));
        assert!(!q.on_received(b"y"));
        assert!(!q.on_received(b"z"));
        let s = q.stats();
        assert_eq!((s.received, s.receive_queue_dropped), (3, 1));
        assert_eq!(q.pop_recv().as_deref(), Some(&b"y"[..]));
        assert_eq!(q.pop_recv().as_deref(), Some(&b"z"[..]));
        assert_eq!(q.pop_recv(), None);
    }
}
