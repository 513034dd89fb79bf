//! [`Stream`]: one bidirectional stream as a tokio `AsyncRead` +
//! `AsyncWrite` (use `tokio::io::split` for separate halves).
//!
//! Writes buffer up to the core's send buffer and wait when it is full;
//! `shutdown` sends FIN and resolves once the peer has acknowledged every
//! byte, so dropping the connection after it loses nothing; `finish` sends
//! FIN and returns at once. Reads end
//! (`Ok(0)`) at the peer's FIN; a peer reset reads as `ConnectionReset`.

use crate::connection::{Connection, StreamOpError};
use crate::error::ConnectionError;
use brisk_proto::streams::{Priority, SendState, StreamError, StreamId};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Stream {
    conn: Connection,
    id: StreamId,
    /// The peer's FIN was read.
    eof: bool,
    fin_sent: bool,
}

fn stream_error(e: StreamError) -> io::Error {
    let kind = match e {
        StreamError::Reset { .. } => io::ErrorKind::ConnectionReset,
        StreamError::Stopped { .. } => io::ErrorKind::BrokenPipe,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

fn op_error(e: StreamOpError) -> io::Error {
    match e {
        StreamOpError::Stream(e) => stream_error(e),
        StreamOpError::Connection(e) => e.into(),
    }
}

impl Stream {
    pub(crate) fn new(conn: Connection, id: StreamId) -> Stream {
        Stream {
            conn,
            id,
            eof: false,
            fin_sent: false,
        }
    }

    pub fn id(&self) -> StreamId {
        self.id
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Bytes worth writing now under the low-water-mark rule.
    pub fn writable_bytes(&self) -> u64 {
        self.conn.writable_bytes(self.id)
    }

    /// Waits until [`Stream::writable_bytes`] is non-zero and returns it:
    /// write one fresh unit of at most that size, then wait again.
    pub async fn writable(&self) -> Result<u64, ConnectionError> {
        self.conn.writable(self.id).await
    }

    pub fn set_priority(&self, priority: Priority) -> io::Result<()> {
        self.conn
            .with_core(|c| c.set_priority(self.id, priority))
            .map_err(op_error)
    }

    /// Abandons the sending half: the peer's reads fail with `code`.
    pub fn reset(&self, code: u64) -> io::Result<()> {
        self.conn
            .with_core(|c| c.reset_stream(self.id, code))
            .map_err(op_error)
    }

    /// Ends the sending half (FIN after the bytes written) and returns at
    /// once, as TCP's and quinn's `shutdown` do: a request/response client
    /// goes straight on to read the answer, which acknowledges the request.
    /// Unlike `shutdown`, it does not wait for the peer's acknowledgement,
    /// so dropping the last connection handle right after it may lose the
    /// tail. Finishing twice is no error.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.fin_sent {
            return Ok(());
        }
        let id = self.id;
        self.conn.with_core(|c| c.finish(id)).map_err(op_error)?;
        self.fin_sent = true;
        Ok(())
    }

    /// Asks the peer to stop sending, with `code`.
    pub fn stop(&self, code: u64) -> io::Result<()> {
        self.conn
            .with_core(|c| c.stop_sending(self.id, code))
            .map_err(op_error)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.eof || buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let id = this.id;
        let (poll, read) = this.conn.with(|io, c| {
            let Some(c) = c else {
                let e = io.error.clone().unwrap_or(ConnectionError::LocallyClosed);
                return (Poll::Ready(Err(e.into())), None);
            };
            match c.read(id, buf.initialize_unfilled()) {
                Ok(r) if r.bytes > 0 || r.fin => {
                    buf.advance(r.bytes);
                    (Poll::Ready(Ok(())), Some(r.fin))
                }
                Ok(_) => {
                    if let Some(e) = io.error.clone() {
                        return (Poll::Ready(Err(e.into())), None);
                    }
                    io.readers.insert(id, cx.waker().clone());
                    (Poll::Pending, None)
                }
                Err(StreamError::Closed { .. }) if io.resets.contains_key(&id) => {
                    let error_code = io.resets.get(&id).copied().unwrap_or_default();
                    let e = stream_error(StreamError::Reset { id, error_code });
                    (Poll::Ready(Err(e)), None)
                }
                Err(e) => (Poll::Ready(Err(stream_error(e))), None),
            }
        });
        if let Some(fin) = read {
            this.eof = fin;
            // Reading frees flow-control credit the peer may need.
            this.conn.shared.wake_driver();
        }
        poll
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let id = this.id;
        let poll = this.conn.with(|io, c| {
            if let Some(e) = io.error.clone() {
                return Poll::Ready(Err(e.into()));
            }
            let Some(c) = c else {
                return Poll::Ready(Err(ConnectionError::LocallyClosed.into()));
            };
            match c.write(id, buf) {
                Ok(0) => {
                    io.writers.insert(id, cx.waker().clone());
                    Poll::Pending
                }
                Ok(n) => Poll::Ready(Ok(n)),
                Err(e) => Poll::Ready(Err(stream_error(e))),
            }
        });
        if matches!(poll, Poll::Ready(Ok(_))) {
            this.conn.shared.wake_driver();
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Sends FIN, then waits until the peer acknowledged everything.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (id, fin_sent) = (this.id, this.fin_sent);
        let (poll, queued_fin) = this.conn.with(|io, c| {
            // A connection that failed while we waited reports why.
            if let Some(e) = io.error.clone() {
                return (Poll::Ready(Err(e.into())), false);
            }
            let Some(c) = c else {
                return (
                    Poll::Ready(Err(ConnectionError::LocallyClosed.into())),
                    false,
                );
            };
            let mut queued_fin = false;
            if !fin_sent {
                if let Err(e) = c.finish(id) {
                    return (Poll::Ready(Err(stream_error(e))), false);
                }
                queued_fin = true;
            }
            let poll = match c.streams().send_state(id) {
                // Gone: both halves finished and were forgotten.
                None | Some(SendState::DataRecvd) => Poll::Ready(Ok(())),
                Some(SendState::ResetSent | SendState::ResetRecvd) => {
                    Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
                }
                Some(_) => {
                    io.writers.insert(id, cx.waker().clone());
                    Poll::Pending
                }
            };
            (poll, queued_fin)
        });
        if queued_fin {
            this.fin_sent = true;
            this.conn.shared.wake_driver();
        }
        poll
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
