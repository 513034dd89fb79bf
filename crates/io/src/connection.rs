//! [`Connection`]: a handle to one connection of an endpoint. Cloning is
//! cheap; the connection closes (code 0) when the last handle, streams
//! included, is dropped.

use crate::conn_state::{ConnCell, ConnIo, ConnSlot};
use crate::error::ConnectionError;
use crate::state::Shared;
use crate::stream::Stream;
use brisk_proto::crypto::KEY_LEN;
use brisk_proto::qlog::QlogSink;
use brisk_proto::streams::{Priority, SendState, StreamError, StreamId};
use brisk_proto::{Connection as CoreConnection, ConnectionHandle, ConnectionStats};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;

pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) cell: Arc<ConnCell>,
    pub(crate) handle: ConnectionHandle,
}

impl Connection {
    /// Takes one reference on connection `cell`.
    pub(crate) fn new(shared: Arc<Shared>, cell: Arc<ConnCell>) -> Connection {
        cell.lock().io.refs += 1;
        let handle = cell.handle;
        Connection {
            shared,
            cell,
            handle,
        }
    }

    /// Runs `f` on the connection's application state and core
    /// connection (`None` once the core forgot it), and marks the
    /// connection for the endpoint task's next look. Once established the
    /// connection has its own lock and `f` runs under it alone; a
    /// handshake still lives in the core endpoint, behind its lock.
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&mut ConnIo, Option<&mut CoreConnection>) -> R,
    ) -> R {
        {
            let mut slot = self.cell.lock();
            if slot.core.is_some() || slot.io.closed {
                let ConnSlot { io, core } = &mut *slot;
                let r = f(io, core.as_deref_mut());
                if slot.core.is_some() {
                    self.shared.touch_detached(&mut slot, self.handle);
                }
                return r;
            }
        }
        let mut st = self.shared.lock();
        st.touch(self.handle);
        let mut slot = self.cell.lock();
        let ConnSlot { io, core } = &mut *slot;
        match core {
            Some(c) => {
                let r = f(io, Some(c));
                self.shared.touch_detached(&mut slot, self.handle);
                r
            }
            None => f(io, st.ep.connection_mut(self.handle)),
        }
    }

    /// Like [`Connection::with`], reading only: nothing is marked.
    pub(crate) fn peek<R>(&self, f: impl FnOnce(&ConnIo, Option<&CoreConnection>) -> R) -> R {
        {
            let slot = self.cell.lock();
            if slot.core.is_some() || slot.io.closed {
                return f(&slot.io, slot.core.as_deref());
            }
        }
        let st = self.shared.lock();
        let slot = self.cell.lock();
        match slot.core.as_deref() {
            Some(c) => f(&slot.io, Some(c)),
            None => f(&slot.io, st.ep.connection(self.handle)),
        }
    }

    /// Resolves when the handshake completed.
    pub(crate) async fn established(&self) -> Result<(), ConnectionError> {
        poll_fn(|cx| {
            self.with(|io, _| {
                if let Some(e) = &io.error {
                    return Poll::Ready(Err(e.clone()));
                }
                if io.connected {
                    return Poll::Ready(Ok(()));
                }
                io.connect_waker = Some(cx.waker().clone());
                Poll::Pending
            })
        })
        .await
    }

    pub fn remote_address(&self) -> Option<SocketAddr> {
        self.peek(|_, c| c.map(|c| c.remote_address()))
    }

    /// The peer's static key (a server's, or a client's own identity).
    pub fn remote_static_key(&self) -> Option<[u8; KEY_LEN]> {
        self.peek(|_, c| c.and_then(|c| c.remote_static_key()))
    }

    /// RTT, min RTT, cwnd, ECN validation state, ECT/CE counts sent and
    /// received, losses and bytes; `None` once the connection is gone.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.peek(|_, c| c.map(|c| c.stats()))
    }

    /// The path MTU the network last reported for the peer's address (an
    /// ICMP "fragmentation needed" or ICMPv6 "packet too big" about a
    /// datagram sent there), for path MTU discovery. Anyone can forge
    /// such a report: a hint to probe, not a limit to trust.
    pub fn reported_path_mtu(&self) -> Option<u32> {
        self.peek(|io, _| io.reported_path_mtu)
    }

    /// Sends the connection's qlog events to `sink` from now on.
    pub fn set_qlog(&self, sink: Box<dyn QlogSink>) {
        self.with(|_, c| {
            if let Some(c) = c {
                c.set_qlog(sink);
            }
        });
    }

    /// Opens a bidirectional stream at the default priority, waiting while
    /// the peer's stream limit is reached.
    pub async fn open_stream(&self) -> Result<Stream, ConnectionError> {
        self.open_stream_with(Priority::default()).await
    }

    /// Opens a bidirectional stream; lower priority values go first.
    pub async fn open_stream_with(&self, priority: Priority) -> Result<Stream, ConnectionError> {
        poll_fn(|cx| {
            self.with(|io, c| {
                if let Some(e) = &io.error {
                    return Poll::Ready(Err(e.clone()));
                }
                match c.map(|c| c.open_stream(true, priority)) {
                    Some(Ok(id)) => Poll::Ready(Ok(id)),
                    Some(Err(_)) => {
                        io.open_waker = Some(cx.waker().clone());
                        Poll::Pending
                    }
                    None => Poll::Ready(Err(ConnectionError::LocallyClosed)),
                }
            })
        })
        .await
        .map(|id| Stream::new(self.clone(), id))
    }

    /// The next stream the peer opened.
    pub async fn accept_stream(&self) -> Result<Stream, ConnectionError> {
        poll_fn(|cx| {
            self.with(|io, c| {
                if let Some(id) = c.and_then(|c| c.accept_stream()) {
                    return Poll::Ready(Ok(id));
                }
                if let Some(e) = &io.error {
                    return Poll::Ready(Err(e.clone()));
                }
                io.accept_waker = Some(cx.waker().clone());
                Poll::Pending
            })
        })
        .await
        .map(|id| Stream::new(self.clone(), id))
    }

    /// Bytes worth writing to `id` now (the low-water-mark rule: what the
    /// window lets out within about a round trip, minus what waits unsent).
    pub fn writable_bytes(&self, id: StreamId) -> u64 {
        self.peek(|_, c| c.map_or(0, |c| c.writable_bytes(id)))
    }

    /// Resolves with [`Connection::writable_bytes`] once it is non-zero:
    /// the moment to write one more fresh unit.
    pub async fn writable(&self, id: StreamId) -> Result<u64, ConnectionError> {
        poll_fn(|cx| {
            self.with(|io, c| {
                if let Some(e) = &io.error {
                    return Poll::Ready(Err(e.clone()));
                }
                let Some(c) = c else {
                    return Poll::Ready(Err(ConnectionError::LocallyClosed));
                };
                let bytes = c.writable_bytes(id);
                if bytes > 0 {
                    return Poll::Ready(Ok(bytes));
                }
                // Only a sending half that is still open can become writable.
                let still_open = matches!(
                    c.streams().send_state(id),
                    Some(SendState::Ready | SendState::Send)
                );
                if !still_open {
                    return Poll::Ready(Err(ConnectionError::LocallyClosed));
                }
                io.low_water.insert(id, cx.waker().clone());
                Poll::Pending
            })
        })
        .await
    }

    /// Closes the connection with an application error code; pending
    /// stream data is abandoned.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let now = self.shared.now();
        self.with(|_, c| {
            if let Some(c) = c {
                c.close(now, code, reason);
            }
        });
        self.shared.wake_driver();
    }

    /// Resolves with the reason once the connection has ended.
    pub async fn closed(&self) -> ConnectionError {
        poll_fn(|cx| {
            self.with(|io, _| {
                if let Some(e) = &io.error {
                    return Poll::Ready(e.clone());
                }
                if !io.closed_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    io.closed_wakers.push(cx.waker().clone());
                }
                Poll::Pending
            })
        })
        .await
    }

    /// Runs `f` on the core connection and wakes the driver afterwards.
    pub(crate) fn with_core<R>(
        &self,
        f: impl FnOnce(&mut CoreConnection) -> Result<R, StreamError>,
    ) -> Result<R, StreamOpError> {
        let r = self.with(|io, c| {
            if let Some(e) = &io.error {
                return Err(StreamOpError::Connection(e.clone()));
            }
            match c {
                Some(c) => f(c).map_err(StreamOpError::Stream),
                None => Err(StreamOpError::Connection(ConnectionError::LocallyClosed)),
            }
        });
        self.shared.wake_driver();
        r
    }
}

/// A stream operation failed on the stream or on the whole connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamOpError {
    #[error(transparent)]
    Stream(StreamError),
    #[error(transparent)]
    Connection(ConnectionError),
}

impl Clone for Connection {
    fn clone(&self) -> Self {
        Connection::new(self.shared.clone(), self.cell.clone())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.shared.lock().release(self.handle) {
            self.shared.wake_driver();
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}
