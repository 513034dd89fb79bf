//! Unreliable datagrams on a [`Connection`] (RFC 9221 semantics, see
//! `brisk_proto::DatagramConfig`): send with a deadline, receive with an
//! async call. Each is delivered whole or not at all, never retransmitted;
//! one still waiting past its deadline is dropped at the sender.

use crate::connection::Connection;
use crate::error::ConnectionError;
use brisk_proto::{DatagramError, DatagramStats};
use bytes::Bytes;
use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

/// Why a datagram was not queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatagramSendError {
    /// The transport refused it (the peer takes none, it is too large...).
    #[error(transparent)]
    Datagram(#[from] DatagramError),
    /// The connection is gone.
    #[error(transparent)]
    Connection(ConnectionError),
}

impl Connection {
    /// The largest datagram [`Connection::send_datagram`] takes now;
    /// `None` before the handshake finished, once the connection is gone,
    /// and for a peer that takes no datagrams.
    pub fn max_datagram_size(&self) -> Option<usize> {
        self.peek(|_, c| c.and_then(|c| c.max_datagram_size()))
    }

    /// Queues an unreliable datagram, to be dropped unsent if it has not
    /// left within `within` (`None`: no deadline). It goes ahead of stream
    /// data, inside the congestion window.
    pub fn send_datagram(
        &self,
        data: impl Into<Bytes>,
        within: Option<Duration>,
    ) -> Result<(), DatagramSendError> {
        let now = self.shared.now();
        let data = data.into();
        let r = self.with(|io, c| {
            if let Some(e) = &io.error {
                return Err(DatagramSendError::Connection(e.clone()));
            }
            let Some(c) = c else {
                return Err(DatagramSendError::Connection(
                    ConnectionError::LocallyClosed,
                ));
            };
            Ok(c.send_datagram(now, data, within.map(|d| now + d))?)
        });
        self.shared.wake_driver();
        r
    }

    /// The next datagram from the peer, waiting for one to arrive.
    pub async fn recv_datagram(&self) -> Result<Bytes, ConnectionError> {
        poll_fn(|cx| {
            self.with(|io, c| {
                if let Some(d) = c.and_then(|c| c.recv_datagram()) {
                    return Poll::Ready(Ok(d));
                }
                if let Some(e) = &io.error {
                    return Poll::Ready(Err(e.clone()));
                }
                io.datagram_waker = Some(cx.waker().clone());
                Poll::Pending
            })
        })
        .await
    }

    /// Datagrams sent, received, and dropped by deadline or queue bound;
    /// `None` once the connection is gone.
    pub fn datagram_stats(&self) -> Option<DatagramStats> {
        self.peek(|_, c| c.map(|c| c.datagram_stats()))
    }
}
