//! What the endpoint hands a connection from packets that carry no
//! connection state: a server's Retry and Refuse (client side, during the
//! handshake), a stateless reset (client side, any time), and the
//! half-open book-keeping the server's endpoint reads.

use super::{ConnState, Connection, Event, with_initial_token};
use crate::error::ConnectionError;
use crate::loss::LossDetection;
use crate::packet::{ConnectionId, LongType};
use crate::stateless_reset::RESET_TOKEN_LEN;
use crate::streams::Side;
use brisk_time::Instant;

/// Retries a client follows per connection: one is the norm; a second
/// covers a token that expired while the Initial was being resent.
const MAX_RETRIES: u8 = 2;
/// The longest retry token a client echoes: the Initial must still fit in
/// one datagram with its largest early data.
pub(super) const MAX_RETRY_TOKEN_LEN: usize = 64;

impl Connection {
    /// The client still waits for the server's first message: only then
    /// may a Retry or Refuse (unauthenticated) be believed, and only if it
    /// echoes the first destination ID the client chose.
    fn awaits_first_reply(&self, echoed_dcid: &ConnectionId) -> bool {
        self.side == Side::Client
            && self.state == ConnState::Handshake
            && *echoed_dcid == self.initial_dcid
            && matches!(self.hs.last_msg, Some((LongType::Initial, _)))
    }

    /// A Retry: the same Initial goes out again at once with `token` in
    /// front of its handshake message; the Noise state is untouched, as
    /// the prologue binds only the connection IDs, which stay.
    pub(crate) fn handle_retry(&mut self, now: Instant, echoed_dcid: &ConnectionId, token: &[u8]) {
        if !self.awaits_first_reply(echoed_dcid)
            || self.hs.retries >= MAX_RETRIES
            || token.len() > MAX_RETRY_TOKEN_LEN
        {
            self.stats.dropped.unexpected += 1;
            return;
        }
        let Some((_, payload)) = self.hs.last_msg.as_ref() else {
            return;
        };
        let Some(with_token) = with_initial_token(payload, token) else {
            self.stats.dropped.malformed += 1;
            return;
        };
        self.hs.last_msg = Some((LongType::Initial, with_token));
        self.hs.retries += 1;
        self.hs.send_pending = true;
        self.hs.pto_count = 0;
        self.sample_rtt_from_retry(now);
        // The next RTT sample comes from the exchange that follows.
        self.hs.first_sent_at = None;
        self.hs.resent = false;
        self.update_timers(now);
    }

    /// The time from our first Initial to the Retry that answers it is a
    /// round trip to the server (RFC 9002 §6.3 lets a client take it as
    /// its first RTT estimate), counted only if that Initial went out
    /// once. A server sends Retry when it is under load, which is when its
    /// listening socket drops datagrams: without the sample, the Initial
    /// with the token is resent at the initial one-second probe timeout,
    /// and a newcomer whose copies were dropped a few times in a row ran
    /// out of its connect timeout during a handshake flood.
    fn sample_rtt_from_retry(&mut self, now: Instant) {
        let (Some(sent), false) = (self.hs.first_sent_at, self.hs.resent) else {
            return;
        };
        self.rtt.update(now - sent, std::time::Duration::ZERO, now);
        self.loss.on_rtt_sample(now);
        self.ecn
            .set_pto(LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay));
    }

    /// A Refuse: the server will not take this connection; the
    /// application hears why at once.
    pub(crate) fn handle_refusal(&mut self, echoed_dcid: &ConnectionId, code: u64, reason: &str) {
        if !self.awaits_first_reply(echoed_dcid) {
            self.stats.dropped.unexpected += 1;
            return;
        }
        self.events
            .push_back(Event::ConnectionLost(ConnectionError::Refused {
                code,
                reason: reason.to_owned(),
            }));
        self.drain_now();
    }

    /// A datagram ending in the server's reset token: the server no
    /// longer knows this connection. Nothing more is sent. The endpoint
    /// calls this itself, or reports it as `Delivery::DetachedReset` for a
    /// connection its caller detached.
    pub fn handle_stateless_reset(&mut self) {
        if matches!(self.state, ConnState::Draining | ConnState::Drained) {
            return;
        }
        self.events
            .push_back(Event::ConnectionLost(ConnectionError::StatelessReset));
        self.drain_now();
    }

    /// Client: the reset token the server announced for this connection.
    pub(crate) fn peer_reset_token(&self) -> Option<[u8; RESET_TOKEN_LEN]> {
        if self.side != Side::Client {
            return None;
        }
        self.peer_params.as_ref()?.stateless_reset_token
    }

    /// Whether the peer's address is proved: on a server, by a Retry
    /// token the client echoed or by the client's answer to our handshake
    /// message; a client trusts the address it dialled. Only a peer that
    /// receives at that address gets here, so a driver may give such a
    /// handshake resources of its own (a socket) before it completes
    /// without letting forged Initials claim any.
    pub fn is_address_validated(&self) -> bool {
        self.validated
    }

    /// Server: the handshake is not yet both complete and proved to come
    /// from the client's address, so it counts against the half-open
    /// budget and lives only for the half-open timeout. A driver trusts
    /// the peer's address (gives it resources of its own) only after.
    pub fn is_half_open(&self) -> bool {
        self.side == Side::Server
            && match self.state {
                ConnState::Handshake => true,
                ConnState::Established => !self.validated,
                _ => false,
            }
    }

    /// Server: drops a half-open handshake to make room for a newer one;
    /// the application sees it time out.
    pub(crate) fn abandon_half_open(&mut self) {
        if !self.is_half_open() {
            return;
        }
        self.events
            .push_back(Event::ConnectionLost(ConnectionError::TimedOut));
        self.drain_now();
    }
}
