//! One HTTP/2-over-TLS connection, timed: the TCP handshake, the TLS
//! handshake, then a sender for requests. Foreign probes and load-generating
//! connections both start here.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_rustls::TlsConnector;

pub(crate) type RequestBody = BoxBody<Bytes, Infallible>;

/// Where and how to connect: resolved once, used for every connection.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) tls: TlsConnector,
}

impl Target {
    pub(crate) fn new(
        addr: SocketAddr,
        host: &str,
        tls: rustls::ClientConfig,
    ) -> Result<Self, String> {
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("{host:?} is not a valid server name: {e}"))?;
        Ok(Self {
            addr,
            server_name,
            tls: TlsConnector::from(Arc::new(tls)),
        })
    }
}

/// `TCP_NOTSENT_LOWAT` on every client socket, as the draft asks of
/// implementations: an upload keeps at most this much unsent in the kernel,
/// so a request on the same connection is not queued behind seconds of it.
pub(crate) const CLIENT_NOTSENT_LOWAT: u32 = 16 * 1024;

/// A connection ready for requests, with how long each handshake took.
pub(crate) struct Connection {
    pub(crate) sender: SendRequest<RequestBody>,
    pub(crate) tcp: Duration,
    pub(crate) tls: Duration,
    /// A second handle on the TCP socket, to read `TCP_INFO` from.
    pub(crate) socket: Option<std::os::fd::OwnedFd>,
}

/// Opens one connection; its driver task goes into `tasks`, so dropping
/// the set closes it.
pub(crate) async fn open(target: &Target, tasks: &mut JoinSet<()>) -> Result<Connection, String> {
    let start = Instant::now();
    let tcp = TcpStream::connect(target.addr)
        .await
        .map_err(|e| format!("TCP connection to {}: {e}", target.addr))?;
    let tcp_done = Instant::now();
    let _ = tcp.set_nodelay(true);
    // Best effort: kernels without the option still measure, as before 3.12.
    let _ = brisk_tcp::sockopt::set_notsent_lowat(&tcp, CLIENT_NOTSENT_LOWAT);
    let socket = std::os::fd::AsFd::as_fd(&tcp).try_clone_to_owned().ok();
    let mut tls = target
        .tls
        .connect(target.server_name.clone(), tcp)
        .await
        .map_err(|e| format!("TLS handshake with {}: {e}", target.addr))?;
    tls.get_mut()
        .1
        .set_buffer_limit(Some(crate::tls::SEND_BUFFER_LIMIT));
    let tls_done = Instant::now();
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err(format!("{} did not agree to HTTP/2 (ALPN h2)", target.addr));
    }
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(8 << 20)
        .handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("HTTP/2 handshake with {}: {e}", target.addr))?;
    tasks.spawn(async move {
        let _ = conn.await;
    });
    Ok(Connection {
        sender,
        tcp: tcp_done - start,
        tls: tls_done - tcp_done,
        socket,
    })
}
