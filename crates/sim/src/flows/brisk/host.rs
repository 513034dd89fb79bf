//! One host's transport: its endpoint, and the flow's connection on it.
//!
//! Once the connection is established (and, at a server, its client's
//! address proved), it is taken out of the endpoint (`Endpoint::detach`)
//! and driven directly: a datagram still goes through the endpoint's
//! routing (which hands it back for the connection, or deals with it
//! itself: a stateless reset, an Initial of another connection), but the
//! connection's datagrams, timers and events are asked of it without the
//! endpoint's schedule in between, which cost about a tenth of a
//! saturated run. The endpoint is asked again only after it was handed
//! something of its own. A connection is detached only in a flow whose
//! endpoints never hold a second connection (no replayed first flight),
//! so no round robin between connections is bypassed.

use brisk_proto::{
    ClientConfig, ConnectError, Connection, ConnectionHandle, Delivery, Endpoint, EndpointStats,
    Event, Transmit,
};
use brisk_time::{Instant, earliest};
use brisk_wire::Ecn;
use std::cell::Cell;
use std::net::SocketAddr;

#[cfg(test)]
thread_local! {
    /// The reference the tests hold the detached path to: connections
    /// stay in their endpoints, as before.
    pub(super) static NEVER_DETACH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// An endpoint and, once established, the flow's connection taken out of
/// it.
pub(super) struct Host {
    ep: Endpoint,
    /// Whether the flow's connection may be taken out (see the module
    /// documentation).
    may_detach: bool,
    /// The flow's connection, taken out of `ep`, with its handle there.
    detached: Option<(ConnectionHandle, Box<Connection>)>,
    /// The detached connection was handed input since its last poll found
    /// nothing to send: it is polled again (as is one whose timer is due),
    /// as the endpoint would have.
    conn_ready: bool,
    /// `ep` was handed something since it last had nothing to send: ask
    /// it before the detached connection (it queues stateless replies, and
    /// any connection still inside it).
    ep_transmit: bool,
    /// `ep`'s own next timer, valid unless `ep_timer_stale`; cells, so
    /// that the flow's timer can be read when the engine asks for it.
    ep_timer: Cell<Option<Instant>>,
    ep_timer_stale: Cell<bool>,
}

impl Host {
    pub(super) fn new(ep: Endpoint, may_detach: bool) -> Host {
        Host {
            ep,
            may_detach,
            detached: None,
            conn_ready: false,
            ep_transmit: true,
            ep_timer: Cell::new(None),
            ep_timer_stale: Cell::new(true),
        }
    }

    /// Marks the endpoint as handed input: its datagrams and timer are
    /// asked again.
    fn touch_ep(&mut self) {
        self.ep_transmit = true;
        self.ep_timer_stale.set(true);
    }

    /// Takes connection `h` out of the endpoint once it is established and
    /// the endpoint's only one; true if it was taken now. Asking is cheap
    /// once it is out. Called right after the endpoint handed `h` a
    /// datagram, when the endpoint would poll it next in any case (its
    /// next poll is asked of it directly).
    pub(super) fn detach(&mut self, h: ConnectionHandle) -> bool {
        #[cfg(test)]
        if NEVER_DETACH.get() {
            return false;
        }
        if self.detached.is_some()
            || !self.may_detach
            || self.ep.handles().nth(1).is_some()
            || !self
                .ep
                .connection(h)
                .is_some_and(|c| c.is_established() && !c.is_half_open())
        {
            return false;
        }
        let Some(c) = self.ep.detach(h) else {
            return false;
        };
        self.detached = Some((h, Box::new(c)));
        self.conn_ready = true;
        self.touch_ep();
        true
    }

    pub(super) fn stats(&self) -> EndpointStats {
        self.ep.stats()
    }

    pub(super) fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        config: ClientConfig,
    ) -> Result<ConnectionHandle, ConnectError> {
        self.touch_ep();
        self.ep.connect(now, remote, config)
    }

    pub(super) fn accept(&mut self) -> Option<ConnectionHandle> {
        self.ep.accept()
    }

    pub(super) fn connection(&self, h: ConnectionHandle) -> Option<&Connection> {
        match &self.detached {
            Some((d, c)) if *d == h => Some(c),
            _ => self.ep.connection(h),
        }
    }

    pub(super) fn connection_mut(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        if self.detached.as_ref().is_some_and(|(d, _)| *d == h) {
            self.conn_ready = true;
            return self.detached.as_mut().map(|(_, c)| &mut **c);
        }
        self.touch_ep();
        self.ep.connection_mut(h)
    }

    pub(super) fn may_have_event(&self) -> bool {
        self.ep.may_have_event()
            || self
                .detached
                .as_ref()
                .is_some_and(|(_, c)| c.may_have_event())
    }

    /// The next event of the endpoint's connections, then of the detached
    /// one; after its `Closed` the detached connection is forgotten, as
    /// the endpoint forgets its own.
    pub(super) fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        if self.ep.may_have_event()
            && let Some(e) = self.ep.poll_event()
        {
            // It may have forgotten a closed connection.
            self.touch_ep();
            return Some(e);
        }
        let (h, c) = self.detached.as_mut()?;
        let (h, e) = (*h, c.poll_event()?);
        if matches!(e, Event::Closed) {
            self.detached = None;
            self.ep.forget_detached(h);
            self.touch_ep();
        }
        Some((h, e))
    }

    /// Hands a datagram to the endpoint, or through its routing to the
    /// detached connection; before any is detached, names the connection
    /// the endpoint gave it to.
    pub(super) fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        ecn: Ecn,
        data: &[u8],
    ) -> Option<ConnectionHandle> {
        let Some((h, c)) = self.detached.as_mut() else {
            self.touch_ep();
            return self.ep.handle_datagram_for(now, from, ecn, data);
        };
        // The endpoint hands the connection its datagram itself, with the
        // header it read to route it.
        match self
            .ep
            .handle_datagram_routed_to(now, from, ecn, data, (*h, &mut **c))
        {
            Delivery::Detached(d) if d == *h => self.conn_ready = true,
            Delivery::DetachedReset(d) if d == *h => {
                c.handle_stateless_reset();
                self.conn_ready = true;
            }
            Delivery::Detached(_) | Delivery::DetachedReset(_) | Delivery::Handled(_) => {
                self.touch_ep();
            }
        }
        None
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        if self.detached.is_none() {
            return self.ep.poll_timeout();
        }
        if self.ep_timer_stale.replace(false) {
            self.ep_timer.set(self.ep.poll_timeout());
        }
        earliest(
            self.ep_timer.get(),
            self.detached.as_ref().and_then(|(_, c)| c.poll_timeout()),
        )
    }

    /// The timer as [`Host::poll_timeout`] gives it, read afresh without
    /// keeping anything (for the tests' check of kept timers).
    pub(super) fn fresh_timeout(&self) -> Option<Instant> {
        earliest(
            self.ep.poll_timeout(),
            self.detached.as_ref().and_then(|(_, c)| c.poll_timeout()),
        )
    }

    pub(super) fn handle_timeout(&mut self, now: Instant) {
        if let Some((_, c)) = self.detached.as_mut()
            && c.poll_timeout().is_some_and(|t| t <= now)
        {
            c.handle_timeout(now);
            self.conn_ready = true;
        }
        if self.detached.is_none()
            || self.ep_timer_stale.get()
            || self.ep_timer.get().is_some_and(|t| t <= now)
        {
            self.touch_ep();
            self.ep.handle_timeout(now);
        }
    }

    /// The next datagram: the endpoint's first (stateless replies, its own
    /// connections), then the detached connection's.
    pub(super) fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.ep_transmit || self.detached.is_none() {
            self.ep_timer_stale.set(true);
            if let Some(t) = self.ep.poll_transmit(now, 1, buf) {
                return Some(t);
            }
            self.ep_transmit = false;
        }
        let (_, c) = self.detached.as_mut()?;
        if !self.conn_ready && c.poll_timeout().is_none_or(|t| t > now) {
            return None;
        }
        let t = c.poll_transmit(now, 1, buf);
        self.conn_ready = t.is_some();
        t
    }

    /// In the tests' reference mode: the endpoint is asked about
    /// everything again.
    #[cfg(test)]
    pub(super) fn touch_all(&mut self) {
        self.touch_ep();
    }
}
