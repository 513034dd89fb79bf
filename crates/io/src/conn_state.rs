//! One connection's share of the state: the wakers of the tasks waiting on
//! it and, once it is established with its peer's address proved, the
//! core connection itself, each behind the connection's own lock.
//!
//! The endpoint (routing, admission, handshakes) lives behind the
//! endpoint lock in `state`; a handshake stays there too. Once the
//! handshake is done the driver takes the connection out of the core
//! endpoint (`Endpoint::detach`) into its cell: from then on application
//! calls on it (reads, writes, stats) take only this lock, so they wait
//! neither for a turn busy with a handshake flood nor for other
//! connections. Lock order: the endpoint lock, then a cell's; a cell's
//! lock is never held while the endpoint lock is taken.

use crate::error::ConnectionError;
use brisk_proto::Event;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_proto::{Connection as CoreConnection, ConnectionHandle};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

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
    /// A `recv_datagram` caller waiting for a datagram.
    pub datagram_waker: Option<Waker>,
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
    /// Already in the driver's list of detached connections to look at.
    pub queued: bool,
}

impl ConnIo {
    fn wake_all(&mut self) {
        let wakers = self
            .connect_waker
            .take()
            .into_iter()
            .chain(self.accept_waker.take())
            .chain(self.open_waker.take())
            .chain(self.datagram_waker.take())
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

    /// Hands one core event to the task waiting for it; true if a reader
    /// or acceptor was woken (a task likely to answer at once).
    pub fn dispatch(&mut self, event: Event) -> bool {
        match event {
            Event::Connected => {
                self.connected = true;
                if let Some(w) = self.connect_waker.take() {
                    w.wake();
                }
                false
            }
            Event::Stream(se) => self.dispatch_stream_event(se),
            Event::EarlyData { .. } => false,
            Event::DatagramsReadable => match self.datagram_waker.take() {
                Some(w) => {
                    w.wake();
                    true
                }
                None => false,
            },
            Event::ConnectionLost(e) => {
                self.fail(ConnectionError::Lost(e));
                false
            }
            Event::Closed => {
                self.closed = true;
                self.fail(ConnectionError::LocallyClosed);
                false
            }
        }
    }

    /// Wakes the task waiting for `event`; true if it was a reader or an
    /// acceptor.
    fn dispatch_stream_event(&mut self, event: StreamEvent) -> bool {
        let reader = matches!(event, StreamEvent::Opened(_) | StreamEvent::Readable(_));
        let waker = match event {
            StreamEvent::Opened(_) => self.accept_waker.take(),
            StreamEvent::Readable(id) => self.readers.remove(&id),
            StreamEvent::Reset(id, code) => {
                self.resets.insert(id, code);
                self.readers.remove(&id)
            }
            StreamEvent::Stopped(id, code) => {
                self.stops.insert(id, code);
                self.writers.remove(&id)
            }
            StreamEvent::Writable(id) | StreamEvent::Finished(id) => {
                if let Some(w) = self.low_water.remove(&id) {
                    w.wake();
                }
                self.writers.remove(&id)
            }
            StreamEvent::Available { .. } => self.open_waker.take(),
        };
        let Some(w) = waker else {
            return false;
        };
        w.wake();
        reader
    }

    /// Wakes blocked writers and `writable()` callers whose stream can
    /// take bytes now: acknowledgements free room and move the window
    /// without a Writable event.
    pub fn sweep_writers(&mut self, c: &CoreConnection) {
        self.writers.retain(|id, w| {
            if c.streams().is_writable(*id) {
                w.wake_by_ref();
                false
            } else {
                true
            }
        });
        self.low_water.retain(|id, w| {
            if c.writable_bytes(*id) > 0 {
                w.wake_by_ref();
                false
            } else {
                true
            }
        });
    }

    /// Whether a writer is parked (the driver keeps looking at the
    /// connection each turn while one is).
    pub fn has_parked_writer(&self) -> bool {
        !self.writers.is_empty() || !self.low_water.is_empty()
    }
}

/// A connection's lock and what it guards.
pub(crate) struct ConnCell {
    pub handle: ConnectionHandle,
    slot: Mutex<ConnSlot>,
}

/// The state behind a connection's lock.
#[derive(Default)]
pub(crate) struct ConnSlot {
    pub io: ConnIo,
    /// The core connection once detached from the core endpoint; `None`
    /// while it is a handshake there (or after it ended).
    pub core: Option<Box<CoreConnection>>,
}

impl ConnCell {
    pub fn new(handle: ConnectionHandle) -> ConnCell {
        ConnCell {
            handle,
            slot: Mutex::new(ConnSlot::default()),
        }
    }

    /// A panic while holding the lock leaves consistent-enough state (the
    /// core never panics half-way on input), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, ConnSlot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}
