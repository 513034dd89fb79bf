//! [`Connection`]: a handle to one connection of an endpoint. Cloning is
//! cheap; the connection closes (code 0) when the last handle, streams
//! included, is dropped.

use crate::error::ConnectionError;
use crate::state::{Shared, State};
use crate::stream::Stream;
use brisk_proto::crypto::KEY_LEN;
use brisk_proto::qlog::QlogSink;
use brisk_proto::streams::{Priority, SendState, StreamError, StreamId};
use brisk_proto::{ConnectionHandle, ConnectionStats};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;

pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) handle: ConnectionHandle,
}

impl Connection {
    /// Takes one reference on the connection's bookkeeping, with the
    /// state already locked by the caller.
    pub(crate) fn new_locked(
        shared: Arc<Shared>,
        st: &mut State,
        handle: ConnectionHandle,
    ) -> Connection {
        st.conns.entry(handle).or_default().refs += 1;
        Connection { shared, handle }
    }

    /// The error that ended the connection, if it has ended.
    fn error(st: &State, h: ConnectionHandle) -> Option<ConnectionError> {
        match st.conns.get(&h) {
            Some(io) => io.error.clone(),
            None => Some(ConnectionError::LocallyClosed),
        }
    }

    /// Resolves when the handshake completed.
    pub(crate) async fn established(&self) -> Result<(), ConnectionError> {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(e) = Self::error(&st, self.handle) {
                return Poll::Ready(Err(e));
            }
            let Some(io) = st.io_mut(self.handle) else {
                return Poll::Ready(Err(ConnectionError::LocallyClosed));
            };
            if io.connected {
                return Poll::Ready(Ok(()));
            }
            io.connect_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    pub fn remote_address(&self) -> Option<SocketAddr> {
        let st = self.shared.lock();
        st.ep.connection(self.handle).map(|c| c.remote_address())
    }

    /// The peer's static key (a server's, or a client's own identity).
    pub fn remote_static_key(&self) -> Option<[u8; KEY_LEN]> {
        let st = self.shared.lock();
        st.ep
            .connection(self.handle)
            .and_then(|c| c.remote_static_key())
    }

    /// RTT, min RTT, cwnd, ECN validation state, ECT/CE counts sent and
    /// received, losses and bytes; `None` once the connection is gone.
    pub fn stats(&self) -> Option<ConnectionStats> {
        let st = self.shared.lock();
        st.ep.connection(self.handle).map(|c| c.stats())
    }

    /// The path MTU the network last reported for the peer's address (an
    /// ICMP "fragmentation needed" or ICMPv6 "packet too big" about a
    /// datagram sent there), for path MTU discovery. Anyone can forge
    /// such a report: a hint to probe, not a limit to trust.
    pub fn reported_path_mtu(&self) -> Option<u32> {
        let st = self.shared.lock();
        st.conns.get(&self.handle)?.reported_path_mtu
    }

    /// Sends the connection's qlog events to `sink` from now on.
    pub fn set_qlog(&self, sink: Box<dyn QlogSink>) {
        let mut st = self.shared.lock();
        if let Some(c) = st.ep.connection_mut(self.handle) {
            c.set_qlog(sink);
        }
    }

    /// Opens a bidirectional stream at the default priority, waiting while
    /// the peer's stream limit is reached.
    pub async fn open_stream(&self) -> Result<Stream, ConnectionError> {
        self.open_stream_with(Priority::default()).await
    }

    /// Opens a bidirectional stream; lower priority values go first.
    pub async fn open_stream_with(&self, priority: Priority) -> Result<Stream, ConnectionError> {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(e) = Self::error(&st, self.handle) {
                return Poll::Ready(Err(e));
            }
            st.touch(self.handle);
            let opened = st
                .ep
                .connection_mut(self.handle)
                .map(|c| c.open_stream(true, priority));
            match opened {
                Some(Ok(id)) => Poll::Ready(Ok(id)),
                Some(Err(_)) => {
                    if let Some(io) = st.io_mut(self.handle) {
                        io.open_waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
                None => Poll::Ready(Err(ConnectionError::LocallyClosed)),
            }
        })
        .await
        .map(|id| Stream::new(self.clone(), id))
    }

    /// The next stream the peer opened.
    pub async fn accept_stream(&self) -> Result<Stream, ConnectionError> {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(id) = st
                .ep
                .connection_mut(self.handle)
                .and_then(|c| c.accept_stream())
            {
                return Poll::Ready(Ok(id));
            }
            if let Some(e) = Self::error(&st, self.handle) {
                return Poll::Ready(Err(e));
            }
            if let Some(io) = st.io_mut(self.handle) {
                io.accept_waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
        .map(|id| Stream::new(self.clone(), id))
    }

    /// Bytes worth writing to `id` now (the low-water-mark rule: what the
    /// window lets out within about a round trip, minus what waits unsent).
    pub fn writable_bytes(&self, id: StreamId) -> u64 {
        let st = self.shared.lock();
        st.ep
            .connection(self.handle)
            .map_or(0, |c| c.writable_bytes(id))
    }

    /// Resolves with [`Connection::writable_bytes`] once it is non-zero:
    /// the moment to write one more fresh unit.
    pub async fn writable(&self, id: StreamId) -> Result<u64, ConnectionError> {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(e) = Self::error(&st, self.handle) {
                return Poll::Ready(Err(e));
            }
            let bytes = st
                .ep
                .connection(self.handle)
                .map_or(0, |c| c.writable_bytes(id));
            if bytes > 0 {
                return Poll::Ready(Ok(bytes));
            }
            // Only a sending half that is still open can become writable.
            let still_open = st.ep.connection(self.handle).is_some_and(|c| {
                matches!(
                    c.streams().send_state(id),
                    Some(SendState::Ready | SendState::Send)
                )
            });
            if !still_open {
                return Poll::Ready(Err(ConnectionError::LocallyClosed));
            }
            if let Some(io) = st.io_mut(self.handle) {
                io.low_water.insert(id, cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Closes the connection with an application error code; pending
    /// stream data is abandoned.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let mut st = self.shared.lock();
        let now = st.now();
        if let Some(c) = st.ep.connection_mut(self.handle) {
            c.close(now, code, reason);
        }
        st.wake_driver();
    }

    /// Resolves with the reason once the connection has ended.
    pub async fn closed(&self) -> ConnectionError {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(e) = Self::error(&st, self.handle) {
                return Poll::Ready(e);
            }
            if let Some(io) = st.io_mut(self.handle)
                && !io.closed_wakers.iter().any(|w| w.will_wake(cx.waker()))
            {
                io.closed_wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Runs `f` on the core connection and wakes the driver afterwards.
    pub(crate) fn with_core<R>(
        &self,
        f: impl FnOnce(&mut brisk_proto::Connection) -> Result<R, StreamError>,
    ) -> Result<R, StreamOpError> {
        let mut st = self.shared.lock();
        if let Some(e) = Self::error(&st, self.handle) {
            return Err(StreamOpError::Connection(e));
        }
        let r = match st.ep.connection_mut(self.handle) {
            Some(c) => f(c).map_err(StreamOpError::Stream),
            None => Err(StreamOpError::Connection(ConnectionError::LocallyClosed)),
        };
        st.wake_driver();
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
        let mut st = self.shared.lock();
        Connection::new_locked(self.shared.clone(), &mut st, self.handle)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.lock().release(self.handle);
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}
