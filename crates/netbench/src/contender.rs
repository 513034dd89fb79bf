//! The [`Contender`] trait: one transport, as a server and a client on
//! loopback, handing out byte streams.
//!
//! The measurement code ([`crate::bulk`], [`crate::rpc`]) only sees tokio's
//! `AsyncRead`/`AsyncWrite`, so every contender is driven by the same loop
//! with the same buffer sizes.

use std::future::Future;
use std::io;
use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::BenchError;

/// Which of the two tests a server or client is set up for.
///
/// Contenders may tune for it the way an application would (kernel TCP
/// turns on `TCP_NODELAY` for request/response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// One stream, many bytes from client to server.
    Bulk,
    /// Sequential small requests, each answered by a small response.
    Rpc,
}

/// A transport under test.
///
/// The harness calls `listen` on the server's thread and `connect` on the
/// client's, each inside its own current-thread tokio runtime; the futures
/// therefore need not be `Send`. The server serves each stream in a task
/// of its own, so streams must be `Send`.
pub trait Contender: Send + Sync + 'static {
    /// A listening server (and the connections it has accepted).
    type Server;
    /// A connected client.
    type Client;
    /// What a client needs to reach the server: address and credentials.
    type Ticket: Send + 'static;
    /// A bidirectional byte stream. `shutdown` ends the sending side.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// Short name for tables and JSON.
    fn name(&self) -> &'static str;

    /// Whether each request takes a fresh stream (QUIC-like multiplexed
    /// transports) or all requests share one byte stream (TCP).
    fn stream_per_request(&self) -> bool;

    /// Binds a server on `ip` with a kernel-chosen port.
    fn listen(
        &self,
        ip: IpAddr,
        test: Test,
    ) -> impl Future<Output = Result<(Self::Server, Self::Ticket), BenchError>>;

    /// The next stream a client opened; `None` once the client has gone.
    fn accept_stream(
        &self,
        server: &mut Self::Server,
    ) -> impl Future<Output = Result<Option<Self::Stream>, BenchError>>;

    /// Connects to the server described by `ticket` (handshake included).
    fn connect(
        &self,
        ticket: Self::Ticket,
        test: Test,
    ) -> impl Future<Output = Result<Self::Client, BenchError>>;

    /// Opens a new stream to the server.
    fn open_stream(
        &self,
        client: &mut Self::Client,
    ) -> impl Future<Output = Result<Self::Stream, BenchError>>;

    /// Ends the sending side of a request stream and returns as soon as
    /// the end is queued, without waiting for the peer to acknowledge it,
    /// so every contender's clock runs from request sent to response read.
    /// The default is `shutdown`, which does exactly that for quinn and
    /// kernel TCP.
    fn finish(&self, stream: &mut Self::Stream) -> impl Future<Output = io::Result<()>> {
        stream.shutdown()
    }

    /// Closes the client gracefully so the server sees it leave.
    fn close(&self, client: Self::Client) -> impl Future<Output = ()>;
}
