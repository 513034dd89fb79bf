//! The endpoint's share of the state, behind the endpoint lock: the
//! sans-IO endpoint (routing, admission, handshakes), the map of
//! connections, and the driver's schedule of the connections it detached
//! from the core endpoint; plus, behind a small lock of its own, how
//! application handles wake the endpoint task. Each connection's own state
//! lives in `conn_state`, behind its own lock.

use crate::busy_poll::ConnView;
use crate::conn_state::{ConnCell, ConnIo, ConnSlot};
use crate::error::ConnectionError;
use crate::socket::{DatagramError, Socket, SocketStats};
use crate::sys;
use brisk_proto::{
    Connection as CoreConnection, ConnectionHandle, Delivery, Endpoint as ProtoEndpoint, Event,
};
use brisk_time::{Deadlines, Instant};
use brisk_wire::Ecn;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

/// Datagrams pulled from one connection per visit, at most, while the
/// send queue has room.
pub(crate) const MAX_QUEUED_DATAGRAMS: usize = 256;

pub(crate) struct Shared {
    state: Mutex<State>,
    wake: Mutex<DriverWake>,
    /// `CLOCK_MONOTONIC` at the endpoint's start: the core's time zero.
    base_ns: u64,
}

/// How application handles reach the endpoint task without the endpoint
/// lock: its waker, and the detached connections they acted on.
#[derive(Default)]
pub(crate) struct DriverWake {
    pub waker: Option<Waker>,
    /// An application handle asked the task for work (a write, a read, a
    /// close) since the task last let woken readers run first.
    pub app_woke: bool,
    /// Detached connections an application handle acted on since the
    /// task last looked (each once: `ConnIo::queued`).
    pub touched: Vec<ConnectionHandle>,
}

impl Shared {
    pub fn new(state: State) -> Arc<Shared> {
        let base_ns = state.base_ns;
        Arc::new(Shared {
            state: Mutex::new(state),
            wake: Mutex::new(DriverWake::default()),
            base_ns,
        })
    }

    /// A panic while holding the lock leaves consistent-enough state (the
    /// core never panics half-way on input), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The wake-up channel to the task (a leaf lock: nothing else is
    /// taken while it is held).
    pub fn wake_state(&self) -> MutexGuard<'_, DriverWake> {
        self.wake.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Now on the core's clock (nanoseconds since the endpoint started).
    pub fn now(&self) -> Instant {
        Instant::from_nanos(sys::monotonic_ns().saturating_sub(self.base_ns))
    }

    /// Tells the endpoint task there is work (a write, a close, a read
    /// that frees flow-control credit).
    pub fn wake_driver(&self) {
        let mut w = self.wake_state();
        w.app_woke = true;
        if let Some(waker) = w.waker.take() {
            waker.wake();
        }
    }

    /// Queues detached connection `h` (its cell locked by the caller as
    /// `slot`) for the task to look at in its next turn.
    pub fn touch_detached(&self, slot: &mut ConnSlot, h: ConnectionHandle) {
        if !slot.io.queued {
            slot.io.queued = true;
            self.wake_state().touched.push(h);
        }
    }
}

pub(crate) struct State {
    pub ep: ProtoEndpoint,
    /// `CLOCK_MONOTONIC` at the endpoint's start: the core's time zero.
    base_ns: u64,
    pub conns: HashMap<ConnectionHandle, Arc<ConnCell>>,
    /// Connections that may have a parked writer or an answer on its way:
    /// marked when an application handle acts on one or the core reports
    /// an event for it, dropped by the driver once it has neither. The
    /// per-turn writer sweep and the busy-poll decision visit only these,
    /// so a turn costs the same however many connections sit idle.
    active: HashSet<ConnectionHandle>,
    /// Server connections not yet handed to `accept`.
    pub incoming: VecDeque<ConnectionHandle>,
    pub accept_wakers: Vec<Waker>,
    /// Live `Endpoint` handles.
    pub endpoint_refs: usize,
    /// Set by `abort`, or when the socket failed: the task ends.
    pub stopped: Option<String>,
    /// Why the task stopped, when its socket failed.
    pub failure: Option<crate::error::EndpointError>,
    pub idle_wakers: Vec<Waker>,
    /// A reader or acceptor was woken since the driver last looked: its
    /// answer may go out with the ACK the core would send now.
    pub readers_woken: bool,
    pub socket_stats: SocketStats,
    pub local_addr: SocketAddr,
    /// Connections the core forgot since the driver last looked: their
    /// own sockets, if any, are closed.
    pub ended: Vec<ConnectionHandle>,
    /// Handshakes that read a datagram or raised an event this turn: the
    /// driver detaches those now established.
    maybe_detach: Vec<ConnectionHandle>,
    /// Detached connections that may have something to send or report.
    pub ready: BTreeSet<ConnectionHandle>,
    /// Where the round robin over `ready` goes on.
    pub cursor: u64,
    /// Detached connections' deadlines, earliest first, so a turn finds
    /// the due ones without visiting the rest.
    timers: Deadlines<ConnectionHandle>,
    /// Client: the socket [`crate::Endpoint::rebind`] bound, for the task
    /// to move to at its next turn.
    pub rebind: Option<crate::socket::Socket>,
    /// Client: a socket on another local address (a second interface),
    /// to move to when a connection's path stalls
    /// ([`crate::Endpoint::set_standby`]).
    pub standby: Option<crate::socket::Socket>,
    /// A connection reported a stall while a standby socket waits: the
    /// task moves at its next turn.
    pub fail_over_due: bool,
    /// A test's stalled link: every datagram sent or received is dropped
    /// ([`crate::Endpoint::set_black_hole`]).
    pub black_hole: bool,
}

impl State {
    pub fn new(ep: ProtoEndpoint, local_addr: SocketAddr) -> State {
        State {
            ep,
            base_ns: sys::monotonic_ns(),
            conns: HashMap::new(),
            active: HashSet::new(),
            incoming: VecDeque::new(),
            accept_wakers: Vec::new(),
            endpoint_refs: 1,
            stopped: None,
            failure: None,
            idle_wakers: Vec::new(),
            readers_woken: false,
            socket_stats: SocketStats::default(),
            local_addr,
            ended: Vec::new(),
            maybe_detach: Vec::new(),
            ready: BTreeSet::new(),
            cursor: 0,
            timers: Deadlines::default(),
            rebind: None,
            standby: None,
            fail_over_due: false,
            black_hole: false,
        }
    }

    /// Now on the core's clock (nanoseconds since the endpoint started).
    pub fn now(&self) -> Instant {
        Instant::from_nanos(sys::monotonic_ns().saturating_sub(self.base_ns))
    }

    /// `CLOCK_MONOTONIC` nanoseconds of a core instant, for the timer.
    pub fn to_monotonic_ns(&self, t: Instant) -> u64 {
        self.base_ns.saturating_add(t.as_nanos())
    }

    /// The cell of connection `h`, made on first use.
    pub fn cell(&mut self, h: ConnectionHandle) -> Arc<ConnCell> {
        self.conns
            .entry(h)
            .or_insert_with(|| Arc::new(ConnCell::new(h)))
            .clone()
    }

    /// Marks connection `h` for the driver's per-turn checks (a read that
    /// may free flow-control credit, a parked writer).
    pub fn touch(&mut self, h: ConnectionHandle) {
        self.active.insert(h);
    }

    /// Runs `f` on connection `h`'s application state and core
    /// connection, wherever the latter lives now.
    pub fn with_conn<R>(
        &mut self,
        h: ConnectionHandle,
        f: impl FnOnce(&mut ConnIo, Option<&mut CoreConnection>) -> R,
    ) -> Option<R> {
        let cell = self.conns.get(&h)?;
        let mut slot = cell.lock();
        let ConnSlot { io, core } = &mut *slot;
        Some(match core {
            Some(c) => f(io, Some(c)),
            None => f(io, self.ep.connection_mut(h)),
        })
    }

    /// Like [`State::with_conn`], reading only.
    pub fn peek<R>(
        &self,
        h: ConnectionHandle,
        f: impl FnOnce(&mut ConnIo, Option<&CoreConnection>) -> R,
    ) -> Option<R> {
        let cell = self.conns.get(&h)?;
        let mut slot = cell.lock();
        let ConnSlot { io, core } = &mut *slot;
        Some(match core {
            Some(c) => f(io, Some(c)),
            None => f(io, self.ep.connection(h)),
        })
    }

    /// Hands a received datagram to the connection it is for: the core
    /// endpoint routes it (and reads it, for a handshake), a detached
    /// connection reads it under its own lock. Names the connection.
    pub fn deliver(
        &mut self,
        now: Instant,
        from: SocketAddr,
        ecn: Ecn,
        data: &[u8],
    ) -> Option<ConnectionHandle> {
        if self.black_hole {
            return None;
        }
        match self.ep.handle_datagram_routed(now, from, ecn, data) {
            Delivery::Handled(Some(h)) => {
                if self.maybe_detach.last() != Some(&h) {
                    self.maybe_detach.push(h);
                }
                Some(h)
            }
            Delivery::Handled(None) => None,
            Delivery::Detached(h) => {
                if let Some(cell) = self.conns.get(&h)
                    && let Some(c) = cell.lock().core.as_deref_mut()
                {
                    c.handle_datagram(now, from, ecn, data);
                }
                self.ready.insert(h);
                Some(h)
            }
            Delivery::DetachedReset(h) => {
                if let Some(cell) = self.conns.get(&h)
                    && let Some(c) = cell.lock().core.as_deref_mut()
                {
                    c.handle_stateless_reset();
                }
                self.ready.insert(h);
                None
            }
        }
    }

    /// Takes the handshakes that finished (established, address proved)
    /// out of the core endpoint into their own cells.
    pub fn detach_established(&mut self) {
        let mut candidates = std::mem::take(&mut self.maybe_detach);
        for h in candidates.drain(..) {
            let Some(cell) = self.conns.get(&h) else {
                continue;
            };
            let mut slot = cell.lock();
            if slot.core.is_some() || slot.io.closed {
                continue;
            }
            if let Some(c) = self.ep.detach(h) {
                slot.core = Some(Box::new(c));
                drop(slot);
                self.ready.insert(h);
                self.active.insert(h);
            }
        }
        candidates.shrink_to(MAX_KEPT_HANDLES);
        self.maybe_detach = candidates;
    }

    /// Moves the detached connections application handles acted on into
    /// the set the turn looks at.
    pub fn take_touched(&mut self, touched: Vec<ConnectionHandle>) {
        for h in touched {
            if let Some(cell) = self.conns.get(&h) {
                cell.lock().io.queued = false;
                self.ready.insert(h);
                self.active.insert(h);
            }
        }
    }

    /// Marks the detached connections whose deadline came as ready.
    pub fn take_due(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(h) = self.timers.pop_due(now) {
            self.ready.insert(h);
            any = true;
        }
        any
    }

    /// The earliest deadline of any connection, attached or detached.
    pub fn next_deadline(&self) -> Option<Instant> {
        let detached = self.timers.first();
        self.ep.poll_timeout().into_iter().chain(detached).min()
    }

    /// Records detached connection `h`'s deadline (none: no timer).
    fn rearm(&mut self, h: ConnectionHandle, deadline: Option<Instant>) {
        self.timers.rearm(h, deadline);
    }

    /// Drives detached connection `h` one step: runs its timers if due,
    /// pulls its datagrams into `socket` if given (while the send queue
    /// has room), hands its events to the waiting tasks and re-arms its
    /// deadline. True if it may have more to send.
    pub fn drive_detached(
        &mut self,
        h: ConnectionHandle,
        now: Instant,
        socket: Option<&mut Socket>,
    ) -> bool {
        let Some(cell) = self.conns.get(&h).cloned() else {
            self.rearm(h, None);
            return false;
        };
        let mut slot = cell.lock();
        let ConnSlot { io, core } = &mut *slot;
        let Some(c) = core.as_deref_mut() else {
            drop(slot);
            self.rearm(h, None);
            return false;
        };
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
            // Probes this turn may still leave by the stalled path; the
            // move at the next turn takes them as lost with the rest.
            if c.poll_path_stall() && self.standby.is_some() {
                self.fail_over_due = true;
            }
        }
        let mut more = false;
        if let Some(socket) = socket {
            let max_datagrams = socket.max_train_datagrams();
            loop {
                if socket.queued_datagrams() >= MAX_QUEUED_DATAGRAMS {
                    more = true;
                    break;
                }
                // The core writes whole GSO trains into the socket's own
                // buffer: nothing is copied on the way to the kernel.
                let mut buf = socket.take_buffer();
                let Some(t) = c.poll_transmit(now, max_datagrams, &mut buf) else {
                    socket.recycle(buf);
                    break;
                };
                socket.queue(t.destination, t.ecn, t.segment_bytes, buf);
            }
        }
        let mut closed = false;
        while let Some(e) = c.poll_event() {
            closed |= e == Event::Closed;
            self.readers_woken |= io.dispatch(e);
        }
        io.sweep_writers(c);
        if io.has_parked_writer() || c.bytes_in_flight() > 0 {
            self.active.insert(h);
        }
        let deadline = c.poll_timeout();
        if closed {
            // Its memory goes now; the handles keep only the reason.
            *core = None;
            let refs = io.refs;
            drop(slot);
            self.ep.forget_detached(h);
            self.ended.push(h);
            self.rearm(h, None);
            self.ready.remove(&h);
            if refs == 0 {
                self.forget(h);
            }
            return false;
        }
        drop(slot);
        self.rearm(h, deadline);
        more
    }

    /// Moves newly accepted server connections to the accept queue.
    pub fn take_accepted(&mut self) {
        while let Some(h) = self.ep.accept() {
            self.cell(h);
            self.incoming.push_back(h);
            for w in self.accept_wakers.drain(..) {
                w.wake();
            }
        }
        // Nobody will ever accept these: close them.
        if self.endpoint_refs == 0 {
            let now = self.now();
            while let Some(h) = self.incoming.pop_front() {
                self.with_conn(h, |_, c| {
                    if let Some(c) = c {
                        c.close(now, 0, b"server shutting down");
                    }
                });
                self.ready.insert(h);
            }
        }
    }

    /// Hands the core endpoint's events (its handshakes') to the tasks
    /// waiting for them.
    pub fn dispatch_events(&mut self) {
        while let Some((h, event)) = self.ep.poll_event() {
            self.active.insert(h);
            let closed = matches!(event, Event::Closed);
            if closed {
                self.ended.push(h);
            } else if self.maybe_detach.last() != Some(&h) {
                self.maybe_detach.push(h);
            }
            let Some(cell) = self.conns.get(&h) else {
                continue;
            };
            let mut slot = cell.lock();
            self.readers_woken |= slot.io.dispatch(event);
            let forget = closed && slot.io.refs == 0;
            drop(slot);
            if forget {
                self.forget(h);
            }
        }
    }

    /// Drops connection `h`'s application state. The connection map gives
    /// back its room once three quarters of it is empty, so a burst of
    /// thousands of connections does not pin its slots after they are gone
    /// (the deadlines are B-trees, which free their nodes as they shrink).
    fn forget(&mut self, h: ConnectionHandle) {
        self.conns.remove(&h);
        self.active.remove(&h);
        if self.conns.len() < self.conns.capacity() / 4 {
            self.conns.shrink_to(self.conns.len() * 2);
        }
    }

    /// Wakes `writable()` callers and blocked writers whose stream can
    /// take bytes now; the window the answer depends on moves with every
    /// ACK, not only with the core's Writable events.
    pub fn sweep_writers(&mut self) {
        for h in &self.active {
            let Some(cell) = self.conns.get(h) else {
                continue;
            };
            let mut slot = cell.lock();
            let ConnSlot { io, core } = &mut *slot;
            if !io.has_parked_writer() {
                continue;
            }
            let c = match core {
                Some(c) => Some(&**c),
                None => self.ep.connection(*h),
            };
            if let Some(c) = c {
                io.sweep_writers(c);
            }
        }
    }

    /// Drops from the active set the connections with no parked writer
    /// and nothing in flight: neither the sweep nor the busy-poll policy
    /// has anything to find there until a handle or an event marks them
    /// again.
    pub fn forget_quiet(&mut self) {
        let (conns, ep) = (&self.conns, &self.ep);
        self.active.retain(|h| {
            let Some(cell) = conns.get(h) else {
                return false;
            };
            let slot = cell.lock();
            let c = match &slot.core {
                Some(c) => Some(&**c),
                None => ep.connection(*h),
            };
            c.is_some_and(|c| slot.io.has_parked_writer() || c.bytes_in_flight() > 0)
        });
        if self.active.len() < self.active.capacity() / 4 {
            self.active.shrink_to(self.active.len() * 2);
        }
    }

    /// Each active connection as the busy-poll policy sees it (one not
    /// active has no writer and nothing in flight, so it neither awaits
    /// an answer nor keeps the endpoint busy).
    pub fn conn_views(&self) -> impl Iterator<Item = ConnView> + '_ {
        self.active.iter().filter_map(|h| {
            self.peek(*h, |io, c| {
                let c = c?;
                let streams = c.streams();
                let reader_waiting = !io.readers.is_empty() || io.accept_waker.is_some();
                let writer_busy = !io.low_water.is_empty()
                    || io.writers.keys().any(|id| streams.unsent_bytes(*id) > 0);
                let bytes_in_flight = if reader_waiting && !writer_busy {
                    c.bytes_in_flight()
                } else {
                    0
                };
                Some(ConnView {
                    bytes_in_flight,
                    reader_waiting,
                    writer_busy,
                    smoothed_rtt: c.rtt().smoothed(),
                    min_rtt: c.rtt().min(),
                })
            })
            .flatten()
        })
    }

    /// The handshake that sent the datagram `e` is about fails: the kernel
    /// will not deliver there. The datagram's source connection ID says
    /// whose it was; an error about any other datagram (an ended
    /// connection's, an established one's short header) fails nothing.
    pub fn fail_unreachable(&mut self, e: &DatagramError) {
        let Some(source) = brisk_proto::packet::long_header_source_cid(&e.head) else {
            return;
        };
        for (h, cell) in &self.conns {
            let mut slot = cell.lock();
            let ConnSlot { io, core } = &mut *slot;
            // A detached connection is established: not a handshake.
            if core.is_some() {
                continue;
            }
            let Some(c) = self.ep.connection(*h) else {
                continue;
            };
            if !io.connected
                && c.remote_address() == e.destination
                && c.local_cid().as_bytes() == source
            {
                io.fail(ConnectionError::Unreachable {
                    addr: e.destination,
                    reason: e.error.to_string(),
                });
            }
        }
    }

    /// Records `mtu` on every connection to `peer` and hands it to their
    /// path MTU discovery, which validates and uses it.
    pub fn record_path_mtu(&mut self, peer: SocketAddr, mtu: u32, quoted: &[u8]) {
        let now = self.now();
        for (h, cell) in &self.conns {
            let mut slot = cell.lock();
            let ConnSlot { io, core } = &mut *slot;
            let detached = core.is_some();
            let c = match core {
                Some(c) => Some(&mut **c),
                None => self.ep.connection_mut(*h),
            };
            if let Some(c) = c.filter(|c| c.remote_address() == peer) {
                io.reported_path_mtu = Some(mtu);
                // Path MTU discovery checks the size is plausible, and
                // resends what was too big.
                c.handle_packet_too_big(now, mtu, quoted);
                if detached {
                    self.ready.insert(*h);
                    self.active.insert(*h);
                }
            }
        }
    }

    /// The kernel refused to send a datagram to `peer` as too big; `head`
    /// is its start. Each connection to `peer` checks whether it was its
    /// path MTU probe, which then counts as lost.
    pub fn record_send_too_big(&mut self, peer: SocketAddr, head: &[u8]) {
        // An error-queue entry of the local stack quotes nothing.
        if head.is_empty() {
            return;
        }
        let now = self.now();
        for (h, cell) in &self.conns {
            let mut slot = cell.lock();
            let ConnSlot { core, .. } = &mut *slot;
            let detached = core.is_some();
            let c = match core {
                Some(c) => Some(&mut **c),
                None => self.ep.connection_mut(*h),
            };
            if let Some(c) = c.filter(|c| c.remote_address() == peer) {
                c.handle_send_too_big(now, head);
                if detached {
                    self.ready.insert(*h);
                    self.active.insert(*h);
                }
            }
        }
    }

    /// The endpoint task ended: every waiter learns why.
    pub fn stop(&mut self, reason: &str) {
        self.stopped.get_or_insert_with(|| reason.to_owned());
        for cell in self.conns.values() {
            let mut slot = cell.lock();
            slot.io.closed = true;
            slot.io
                .fail(ConnectionError::EndpointStopped(reason.to_owned()));
        }
        for w in self
            .accept_wakers
            .drain(..)
            .chain(self.idle_wakers.drain(..))
        {
            w.wake();
        }
    }

    /// Whether any connection is left, in the core endpoint or detached.
    pub fn has_connections(&self) -> bool {
        self.ep.handles().next().is_some() || self.ep.detached_len() > 0
    }

    /// No handle is left and no connection: the task may end and release
    /// the socket.
    pub fn is_finished(&self) -> bool {
        self.endpoint_refs == 0 && self.conns.is_empty() && !self.has_connections()
    }

    /// Wakes `wait_idle` callers once no connection is left.
    pub fn check_idle(&mut self) {
        if !self.has_connections() {
            for w in self.idle_wakers.drain(..) {
                w.wake();
            }
        }
    }

    /// One handle fewer; at zero the connection closes with code 0.
    /// True if the task should look (a close to send).
    pub fn release(&mut self, h: ConnectionHandle) -> bool {
        let Some(cell) = self.conns.get(&h).cloned() else {
            return false;
        };
        let mut slot = cell.lock();
        slot.io.refs = slot.io.refs.saturating_sub(1);
        if slot.io.refs > 0 {
            return false;
        }
        if slot.io.closed {
            drop(slot);
            self.forget(h);
            return false;
        }
        let now = self.now();
        match slot.core.as_deref_mut() {
            Some(c) => {
                c.close(now, 0, b"");
                self.ready.insert(h);
            }
            None => {
                if let Some(c) = self.ep.connection_mut(h) {
                    c.close(now, 0, b"");
                }
            }
        }
        true
    }

    /// Closes every connection, attached or detached, with `code`.
    pub fn close_all(&mut self, code: u64, reason: &[u8]) {
        let now = self.now();
        let handles: Vec<_> = self.ep.handles().collect();
        for h in handles {
            if let Some(c) = self.ep.connection_mut(h) {
                c.close(now, code, reason);
            }
        }
        for (h, cell) in &self.conns {
            if let Some(c) = cell.lock().core.as_deref_mut() {
                c.close(now, code, reason);
                self.ready.insert(*h);
            }
        }
    }
}

/// Room kept, in connection handles, by the per-turn lists.
pub(crate) const MAX_KEPT_HANDLES: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_proto::ClientConfig;
    use std::io;

    /// Starts a handshake to `to` and returns its first datagram.
    fn hello(st: &mut State, to: SocketAddr) -> (ConnectionHandle, Vec<u8>) {
        let now = st.now();
        let h = st.ep.connect(now, to, ClientConfig::new(None)).unwrap();
        st.cell(h);
        let mut first = Vec::new();
        st.ep
            .poll_transmit(now, 1, &mut first)
            .expect("the first flight");
        let cid = st.ep.connection(h).unwrap().local_cid();
        assert_eq!(
            brisk_proto::packet::long_header_source_cid(&first),
            Some(cid.as_bytes())
        );
        (h, first)
    }

    fn refused(destination: SocketAddr, datagram: &[u8]) -> DatagramError {
        DatagramError {
            destination,
            error: io::Error::from(io::ErrorKind::ConnectionRefused),
            report: crate::socket_error::Report::local(libc::ECONNREFUSED),
            head: datagram[..datagram.len().min(64)].to_vec(),
        }
    }

    #[test]
    fn an_icmp_error_fails_only_the_handshake_whose_datagram_drew_it() {
        for (local, to, elsewhere) in [
            ("127.0.0.1:1000", "127.0.0.1:4433", "127.0.0.2:4433"),
            ("[::1]:1000", "[::1]:4433", "[::2]:4433"),
        ] {
            let (to, elsewhere) = (to.parse().unwrap(), elsewhere.parse().unwrap());
            let mut st = State::new(ProtoEndpoint::new(7, None), local.parse().unwrap());
            let (a, hello_a) = hello(&mut st, to);
            let (b, _) = hello(&mut st, to);
            let error = |st: &State, h| st.conns[&h].lock().io.error.clone();
            let failed = |st: &State, h| error(st, h).is_some();
            // An established connection's short header names nobody; the
            // same datagram quoted for another address is not about `to`.
            let mut short = hello_a.clone();
            short[0] = 0x40;
            st.fail_unreachable(&refused(to, &short));
            st.fail_unreachable(&refused(elsewhere, &hello_a));
            st.fail_unreachable(&refused(to, &hello_a[..10]));
            assert!(!failed(&st, a) && !failed(&st, b));
            // A's own datagram: A fails at once, B's handshake goes on.
            st.fail_unreachable(&refused(to, &hello_a));
            assert!(
                matches!(
                    &error(&st, a),
                    Some(ConnectionError::Unreachable { addr, reason })
                        if *addr == to && reason.contains("refused")
                ),
                "{:?}",
                error(&st, a)
            );
            assert!(!failed(&st, b));
        }
    }
}
