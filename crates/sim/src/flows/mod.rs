//! Traffic: the applications that run on the simulated hosts.
//!
//! A flow is a pair of endpoints, one on a sender host and one on a
//! receiver host, behind one sans-IO interface ([`FlowApp`]). The built-in
//! sources need no transport; a transport plugs in the same way, wrapping
//! its own state machines ([`brisk`]: the Brisk transport and its
//! applications; `udp_prague`, with the `reference-prague` feature: the
//! L4S team's reference UDP Prague controller as a peer).

pub mod brisk;
mod cbr;
mod ping;
mod send_clock;
mod template;
#[cfg(feature = "reference-prague")]
pub mod udp_prague;

pub use brisk::{BriskConfig, BriskFlow, BriskWorkload, SendPath, TransportReport};
pub use cbr::ConstantRate;
pub use ping::Ping;
pub use send_clock::SendJitter;

use brisk_time::Instant;
use std::net::SocketAddr;
use std::time::Duration;

/// Which end of a flow a datagram belongs to. A word wide: beside a
/// datagram's buffer a one-byte end left seven bytes of padding, which
/// each move copied in two overlapping halves that the processor cannot
/// forward from the stores just made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum End {
    /// The host that sends data; its packets cross the down direction.
    Sender,
    /// The host that receives data; its packets cross the up direction.
    Receiver,
}

/// The addresses of a flow's two hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowAddrs {
    pub sender: SocketAddr,
    pub receiver: SocketAddr,
}

/// A flow's two endpoints as one sans-IO state machine. Datagrams are whole
/// IP datagrams (header included), as a host's network stack would see them.
///
/// The engine drains `poll_transmit` at time zero and after every
/// `handle_datagram` (unless [`FlowApp::answers_datagrams`] says no) and
/// `handle_timeout`, and wakes the flow only at `poll_timeout`: anything a
/// flow will send later without new input (a paced packet, the next CBR
/// datagram) must show in `poll_timeout`.
pub trait FlowApp {
    /// A datagram arrived at `end` at `now`.
    fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]);

    /// The next datagram either end wants to send at `now`.
    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)>;

    /// Whether a datagram arriving at `end` can make the flow send at once
    /// or move its `poll_timeout` (a reply, an acknowledgement). `false`
    /// lets the engine skip draining the flow after each such datagram: a
    /// one-way source's receiver never answers, and asking it after every
    /// packet was a few percent of a saturated run. By default it can.
    fn answers_datagrams(&self, end: End) -> bool {
        let _ = end;
        true
    }

    /// When the flow next wants `handle_timeout`, if ever.
    fn poll_timeout(&self) -> Option<Instant>;

    fn handle_timeout(&mut self, now: Instant);

    /// What the application saw, for results.
    fn report(&self) -> AppReport;

    /// Takes back a datagram this flow sent once the network is done with
    /// it (delivered, dropped or lost), as the network last had it: the
    /// simulated network rewrites at most IP header fields (ECN and the
    /// IPv4 checksum), never a payload byte. A source can build its next
    /// datagram there instead of in a fresh allocation; by default the
    /// buffer is freed.
    fn recycle(&mut self, datagram: Vec<u8>) {
        drop(datagram);
    }

    /// The sender's host moved to another network (`migrate_every`): a
    /// transport that can should move its connection. By default nothing.
    fn on_moved(&mut self, now: Instant) {
        let _ = now;
    }
}

/// Application-level outcome of a flow.
#[derive(Debug, Clone, Default)]
pub struct AppReport {
    /// Payload bytes the sending application handed to the network.
    pub sent_bytes: u64,
    /// Payload bytes the receiving application got.
    pub delivered_bytes: u64,
    /// Round-trip samples the application measured itself, with the time
    /// of each. Empty for one-way kinds.
    pub rtt_samples: Vec<(Instant, Duration)>,
    /// Requests or probes that never got an answer.
    pub unanswered: u64,
    /// A transport flow's own view and its application's measurements;
    /// `None` for the built-in sources.
    pub transport: Option<TransportReport>,
}

/// A tiny payload header shared by the built-in sources: sequence number
/// and send time, so receivers can measure without help from the engine.
pub(crate) mod stamp {
    use brisk_time::Instant;

    pub const LEN: usize = 16;

    pub fn write(buf: &mut [u8], seq: u64, sent: Instant) {
        if buf.len() >= LEN {
            buf[..8].copy_from_slice(&seq.to_be_bytes());
            buf[8..16].copy_from_slice(&sent.as_nanos().to_be_bytes());
        }
    }

    pub fn read(buf: &[u8]) -> Option<(u64, Instant)> {
        let seq = u64::from_be_bytes(buf.get(..8)?.try_into().ok()?);
        let t = u64::from_be_bytes(buf.get(8..16)?.try_into().ok()?);
        Some((seq, Instant::from_nanos(t)))
    }
}

/// A flow that does nothing: a placeholder while a real one is built.
#[derive(Debug, Default)]
pub struct Idle;

impl FlowApp for Idle {
    fn handle_datagram(&mut self, _now: Instant, _end: End, _datagram: &[u8]) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<(End, Vec<u8>)> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn report(&self) -> AppReport {
        AppReport::default()
    }
}
