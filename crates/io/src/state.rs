//! The state the endpoint task and the application handles share behind
//! one mutex: the sans-IO endpoint, the clock, and the wakers of every
//! task waiting on a connection or stream.

use crate::busy_poll::ConnView;
use crate::error::ConnectionError;
use crate::socket::{DatagramError, SocketStats};
use crate::sys;
use brisk_proto::Event;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_proto::{ConnectionHandle, Endpoint as ProtoEndpoint};
use brisk_time::Instant;
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

pub(crate) struct Shared {
    state: Mutex<State>,
}

impl Shared {
    pub fn new(state: State) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(state),
        })
    }

    /// A panic while holding the lock leaves consistent-enough state (the
    /// core never panics half-way on input), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the application side knows about one connection.
#[derive(Default)]
pub(crate) struct ConnIo {
    /// Live `Connection` and `Stream` handles; at zero the connection is
    /// closed with code 0.
    pub refs: usize,
    pub connected: bool,
    pub error: Option<ConnectionError>,
    /// The core forgot the connection (after closing or draining).
    pub closed: bool,
    pub connect_waker: Option<Waker>,
    pub accept_waker: Option<Waker>,
    pub open_waker: Option<Waker>,
    pub closed_wakers: Vec<Waker>,
    pub readers: HashMap<StreamId, Waker>,
    /// Blocked writes and shutdowns waiting for acknowledgement.
    pub writers: HashMap<StreamId, Waker>,
    /// `writable()` callers, re-checked after every driver turn.
    pub low_water: HashMap<StreamId, Waker>,
    /// Error codes of the peer's RESET_STREAM / STOP_SENDING, kept for the
    /// stream handles (the core reports each once, as an event).
    pub resets: HashMap<StreamId, u64>,
    pub stops: HashMap<StreamId, u64>,
    /// The path MTU the last "too big" error about a datagram to the peer
    /// named (ICMP "fragmentation needed", ICMPv6 "packet too big").
    pub reported_path_mtu: Option<u32>,
}

impl ConnIo {
    fn wake_all(&mut self) {
        let wakers = self
            .connect_waker
            .take()
            .into_iter()
            .chain(self.accept_waker.take())
            .chain(self.open_waker.take())
            .chain(self.closed_wakers.drain(..))
            .chain(self.readers.drain().map(|(_, w)| w))
            .chain(self.writers.drain().map(|(_, w)| w))
            .chain(self.low_water.drain().map(|(_, w)| w));
        for w in wakers {
            w.wake();
        }
    }

    /// Records why the connection ended (the first reason wins).
    pub fn fail(&mut self, error: ConnectionError) {
        self.error.get_or_insert(error);
        self.wake_all();
    }
}

pub(crate) struct State {
    pub ep: ProtoEndpoint,
    /// `CLOCK_MONOTONIC` at the endpoint's start: the core's time zero.
    base_ns: u64,
    pub conns: HashMap<ConnectionHandle, ConnIo>,
    /// Connections that may have a parked writer or an answer on its way:
    /// marked when an application handle acts on one or the core reports
    /// an event for it, dropped by the driver once it has neither. The
    /// per-turn writer sweep and the busy-poll decision visit only these,
    /// so a turn costs the same however many connections sit idle.
    active: HashSet<ConnectionHandle>,
    /// Server connections not yet handed to `accept`.
    pub incoming: VecDeque<ConnectionHandle>,
    pub accept_wakers: Vec<Waker>,
    pub driver_waker: Option<Waker>,
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
    /// An application handle asked the task for work (a write, a read, a
    /// close) since the task last let woken readers run first.
    pub app_woke_driver: bool,
    pub socket_stats: SocketStats,
    pub local_addr: SocketAddr,
    /// Connections the core forgot since the driver last looked: their
    /// own sockets, if any, are closed.
    pub ended: Vec<ConnectionHandle>,
}

impl State {
    /// The connection a stream operation acts on: its recorded failure if
    /// it has one, `LocallyClosed` once the core has forgotten it.
    pub fn usable_connection(
        &mut self,
        h: ConnectionHandle,
    ) -> Result<&mut brisk_proto::Connection, ConnectionError> {
        self.active.insert(h);
        if let Some(e) = self.conns.get(&h).and_then(|io| io.error.clone()) {
            return Err(e);
        }
        self.ep
            .connection_mut(h)
            .ok_or(ConnectionError::LocallyClosed)
    }

    /// The application state of connection `h`, for a handle about to
    /// act on it (park a waker, write, read): the connection becomes one
    /// the driver looks at each turn until it is quiet again.
    pub fn io_mut(&mut self, h: ConnectionHandle) -> Option<&mut ConnIo> {
        self.active.insert(h);
        self.conns.get_mut(&h)
    }

    /// Marks connection `h` for the driver's per-turn checks (a read that
    /// may free flow-control credit, a stream opened).
    pub fn touch(&mut self, h: ConnectionHandle) {
        self.active.insert(h);
    }

    pub fn new(ep: ProtoEndpoint, local_addr: SocketAddr) -> State {
        State {
            ep,
            base_ns: sys::monotonic_ns(),
            conns: HashMap::new(),
            active: HashSet::new(),
            incoming: VecDeque::new(),
            accept_wakers: Vec::new(),
            driver_waker: None,
            endpoint_refs: 1,
            stopped: None,
            failure: None,
            idle_wakers: Vec::new(),
            readers_woken: false,
            app_woke_driver: false,
            socket_stats: SocketStats::default(),
            local_addr,
            ended: Vec::new(),
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

    /// Tells the endpoint task there is work (a write, a close, a read
    /// that frees flow-control credit).
    pub fn wake_driver(&mut self) {
        self.app_woke_driver = true;
        if let Some(w) = self.driver_waker.take() {
            w.wake();
        }
    }

    /// Moves newly accepted server connections to the accept queue.
    pub fn take_accepted(&mut self) {
        while let Some(h) = self.ep.accept() {
            self.conns.entry(h).or_default();
            self.incoming.push_back(h);
            for w in self.accept_wakers.drain(..) {
                w.wake();
            }
        }
        // Nobody will ever accept these: close them.
        if self.endpoint_refs == 0 {
            let now = self.now();
            while let Some(h) = self.incoming.pop_front() {
                if let Some(c) = self.ep.connection_mut(h) {
                    c.close(now, 0, b"server shutting down");
                }
            }
        }
    }

    /// Hands the core's events to the tasks waiting for them.
    pub fn dispatch_events(&mut self) {
        while let Some((h, event)) = self.ep.poll_event() {
            self.active.insert(h);
            if matches!(event, Event::Closed) {
                self.ended.push(h);
            }
            let Some(io) = self.conns.get_mut(&h) else {
                continue;
            };
            match event {
                Event::Connected => {
                    io.connected = true;
                    if let Some(w) = io.connect_waker.take() {
                        w.wake();
                    }
                }
                Event::Stream(se) => self.readers_woken |= dispatch_stream_event(io, se),
                Event::EarlyData { .. } => {}
                Event::ConnectionLost(e) => io.fail(ConnectionError::Lost(e)),
                Event::Closed => {
                    io.closed = true;
                    io.fail(ConnectionError::LocallyClosed);
                    if io.refs == 0 {
                        self.forget(h);
                    }
                }
            }
        }
    }

    /// Drops connection `h`'s application state. The map gives back its
    /// room once three quarters of it are empty, so a burst of thousands
    /// of connections does not pin its slots after they are gone.
    fn forget(&mut self, h: ConnectionHandle) {
        self.conns.remove(&h);
        if self.conns.len() < self.conns.capacity() / 4 {
            self.conns.shrink_to(self.conns.len() * 2);
        }
    }

    /// Wakes `writable()` callers whose stream can take bytes now; the
    /// window the answer depends on moves with every ACK, not only with
    /// the core's Writable events.
    /// Blocked writers are re-checked the same way: acknowledgements free
    /// buffer room without a Writable event.
    pub fn sweep_writers(&mut self) {
        for h in &self.active {
            let Some(io) = self.conns.get_mut(h) else {
                continue;
            };
            if io.low_water.is_empty() && io.writers.is_empty() {
                continue;
            }
            let Some(c) = self.ep.connection(*h) else {
                continue;
            };
            io.writers.retain(|id, w| {
                if c.streams().is_writable(*id) {
                    w.wake_by_ref();
                    false
                } else {
                    true
                }
            });
            io.low_water.retain(|id, w| {
                if c.writable_bytes(*id) > 0 {
                    w.wake_by_ref();
                    false
                } else {
                    true
                }
            });
        }
    }

    /// Drops from the active set the connections with no parked writer
    /// and nothing in flight: neither the sweep nor the busy-poll policy
    /// has anything to find there until a handle or an event marks them
    /// again.
    pub fn forget_quiet(&mut self) {
        let (conns, ep) = (&self.conns, &self.ep);
        self.active.retain(|h| {
            let Some(io) = conns.get(h) else {
                return false;
            };
            let Some(c) = ep.connection(*h) else {
                return false;
            };
            !io.writers.is_empty() || !io.low_water.is_empty() || c.bytes_in_flight() > 0
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
            let io = self.conns.get(h)?;
            let c = self.ep.connection(*h)?;
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
    }

    /// The handshake that sent the datagram `e` is about fails: the kernel
    /// will not deliver there. The datagram's source connection ID says
    /// whose it was; an error about any other datagram (an ended
    /// connection's, an established one's short header) fails nothing.
    pub fn fail_unreachable(&mut self, e: &DatagramError) {
        let Some(source) = brisk_proto::packet::long_header_source_cid(&e.head) else {
            return;
        };
        for (h, io) in self.conns.iter_mut() {
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

    /// The endpoint task ended: every waiter learns why.
    pub fn stop(&mut self, reason: &str) {
        self.stopped.get_or_insert_with(|| reason.to_owned());
        for io in self.conns.values_mut() {
            io.closed = true;
            io.fail(ConnectionError::EndpointStopped(reason.to_owned()));
        }
        for w in self
            .accept_wakers
            .drain(..)
            .chain(self.idle_wakers.drain(..))
        {
            w.wake();
        }
    }

    /// No handle is left and the core holds no connection: the task may
    /// end and release the socket.
    pub fn is_finished(&self) -> bool {
        self.endpoint_refs == 0 && self.conns.is_empty() && self.ep.handles().next().is_none()
    }

    /// Wakes `wait_idle` callers once no connection is left.
    pub fn check_idle(&mut self) {
        if self.ep.handles().next().is_none() {
            for w in self.idle_wakers.drain(..) {
                w.wake();
            }
        }
    }

    /// One handle fewer; at zero the connection closes with code 0.
    pub fn release(&mut self, h: ConnectionHandle) {
        let Some(io) = self.conns.get_mut(&h) else {
            return;
        };
        io.refs = io.refs.saturating_sub(1);
        if io.refs > 0 {
            return;
        }
        if io.closed {
            self.forget(h);
            return;
        }
        let now = self.now();
        if let Some(c) = self.ep.connection_mut(h) {
            c.close(now, 0, b"");
        }
        self.wake_driver();
    }
}

/// Wakes the task waiting for `event`; true if it was a reader or an
/// acceptor (a task likely to answer).
fn dispatch_stream_event(io: &mut ConnIo, event: StreamEvent) -> bool {
    let reader = matches!(event, StreamEvent::Opened(_) | StreamEvent::Readable(_));
    let waker = match event {
        StreamEvent::Opened(_) => io.accept_waker.take(),
        StreamEvent::Readable(id) => io.readers.remove(&id),
        StreamEvent::Reset(id, code) => {
            io.resets.insert(id, code);
            io.readers.remove(&id)
        }
        StreamEvent::Stopped(id, code) => {
            io.stops.insert(id, code);
            io.writers.remove(&id)
        }
        StreamEvent::Writable(id) | StreamEvent::Finished(id) => {
            if let Some(w) = io.low_water.remove(&id) {
                w.wake();
            }
            io.writers.remove(&id)
        }
        StreamEvent::Available { .. } => io.open_waker.take(),
    };
    let Some(w) = waker else {
        return false;
    };
    w.wake();
    reader
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_proto::ClientConfig;
    use std::io;

    /// Starts a handshake to `to` and returns its first datagram.
    fn hello(st: &mut State, to: SocketAddr) -> (ConnectionHandle, Vec<u8>) {
        let now = st.now();
        let h = st.ep.connect(now, to, ClientConfig::new(None)).unwrap();
        st.conns.entry(h).or_default();
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
            let failed = |st: &State, h| st.conns[&h].error.is_some();
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
                    &st.conns[&a].error,
                    Some(ConnectionError::Unreachable { addr, reason })
                        if *addr == to && reason.contains("refused")
                ),
                "{:?}",
                st.conns[&a].error
            );
            assert!(!failed(&st, b));
        }
    }
}
