//! The two stacks of the many-connections case: a server that answers
//! every stream of every connection ([`rpc::serve_stream`]) and a client
//! endpoint that holds many connections and opens streams on them.
//!
//! The server runs in a process of its own ([`super::server`]), so what
//! it tells the client (address and key or certificate) travels as one
//! line of text: [`Fleet::ticket_line`] and [`Fleet::parse_ticket`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use super::CONNECT_IN_FLIGHT;
use crate::{BenchError, rpc};

/// How long a client waits for its close frames to go out.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Pause between two batches of [`CONNECT_IN_FLIGHT`] closes.
const CLOSE_PAUSE: Duration = Duration::from_millis(5);

/// Closes `conns` a batch at a time, as independent clients would, rather
/// than in one burst of N datagrams: on loopback such a burst overflows
/// the server's receive buffer, and a server that misses a close keeps
/// that connection until its idle timeout, long after the benchmark reads
/// its memory.
async fn close_in_batches<C>(conns: &[C], close: impl Fn(&C)) {
    for batch in conns.chunks(CONNECT_IN_FLIGHT) {
        batch.iter().for_each(&close);
        tokio::time::sleep(CLOSE_PAUSE).await;
    }
}

/// Idle timeout of both stacks, both ends, in place of their 30 s
/// default: opening 10,000 connections takes longer than that, and the
/// first ones would time out before the requests reach them.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// quinn's transport settings: its defaults with [`IDLE_TIMEOUT`].
fn quinn_transport() -> Result<Arc<quinn::TransportConfig>, BenchError> {
    let idle = quinn::IdleTimeout::try_from(IDLE_TIMEOUT)
        .map_err(BenchError::transport("quinn: idle timeout"))?;
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(Some(idle));
    Ok(Arc::new(transport))
}

/// One transport stack, both ends.
pub trait Fleet: Send + Sync + 'static {
    /// What a client needs to reach the server.
    type Ticket: Send + Sync + 'static;
    type Client;
    type Conn: Clone + Send + Sync + 'static;
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    fn name(&self) -> &'static str;

    /// Serves on `ip` for up to `connections` clients until `stop`;
    /// hands the ticket out once listening.
    fn serve(
        &self,
        ip: IpAddr,
        connections: usize,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        stop: watch::Receiver<bool>,
    ) -> impl Future<Output = Result<(), BenchError>>;

    /// The ticket as one line of text without spaces.
    fn ticket_line(ticket: &Self::Ticket) -> String;

    fn parse_ticket(line: &str) -> Result<Self::Ticket, BenchError>;

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError>;

    fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> impl Future<Output = Result<Self::Conn, BenchError>>;

    fn open(conn: &Self::Conn) -> impl Future<Output = Result<Self::Stream, BenchError>>;

    /// Ends the request's sending side without waiting for its ACK.
    fn finish(stream: &mut Self::Stream) -> impl Future<Output = std::io::Result<()>>;

    /// Closes every connection and waits (briefly) for the close frames
    /// to leave.
    fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) -> impl Future<Output = ()>;
}

/// Serves every stream `next` yields in a task of its own until it ends.
async fn serve_streams<S, Fut>(mut next: impl FnMut() -> Fut)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Fut: Future<Output = Option<S>>,
{
    while let Some(stream) = next().await {
        tokio::spawn(async move {
            // A client that leaves mid-request is not the server's failure.
            let _ = rpc::serve_stream(stream).await;
        });
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// `addr/hex` split back into its parts.
fn split_ticket(line: &str) -> Result<(SocketAddr, Vec<u8>), BenchError> {
    let bad = BenchError::Protocol("many: the server's ticket is not <address>/<hex>");
    let (addr, key) = line.trim().split_once('/').ok_or(bad)?;
    let addr = addr
        .parse()
        .map_err(|_| BenchError::Protocol("many: the server's address does not parse"))?;
    let key = unhex(key).ok_or(BenchError::Protocol("many: the server's key is not hex"))?;
    Ok((addr, key))
}

/// Brisk through `brisk-io`, the server configured as `brisk serve` is
/// by default (a 2 GiB memory budget) but admitting every connection of
/// the run; [`IDLE_TIMEOUT`] at both ends.
#[derive(Debug, Default, Clone, Copy)]
pub struct BriskFleet;

/// `brisk serve`'s default memory budget.
const BRISK_MEMORY_BUDGET_BYTES: u64 = 2048 << 20;
/// Environment variable: the Brisk server's limit on per-connection
/// sockets (`SocketConfig::connected_sockets`; 0 switches them off), to
/// compare both ways in one build.
pub const CONNECTED_SOCKETS_ENV: &str = "BRISK_NETBENCH_CONNECTED_SOCKETS";

impl Fleet for BriskFleet {
    type Ticket = (SocketAddr, [u8; brisk_io::KEY_LEN]);
    type Client = brisk_io::Endpoint;
    type Conn = brisk_io::Connection;
    type Stream = brisk_io::Stream;

    fn name(&self) -> &'static str {
        "brisk"
    }

    async fn serve(
        &self,
        ip: IpAddr,
        connections: usize,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), BenchError> {
        let (_, keypair) =
            brisk_io::keys::generate().map_err(BenchError::transport("brisk: server key"))?;
        let key = keypair.public();
        let mut config = brisk_io::ServerConfig::new(SocketAddr::new(ip, 0), keypair);
        config.max_connections = connections.max(1);
        config.memory_budget_bytes = Some(BRISK_MEMORY_BUDGET_BYTES);
        config.endpoint.transport.max_idle_timeout = IDLE_TIMEOUT;
        if let Some(n) = std::env::var(CONNECTED_SOCKETS_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config.endpoint.socket.connected_sockets = n;
        }
        let endpoint =
            brisk_io::Endpoint::server(config).map_err(BenchError::io("brisk: server endpoint"))?;
        let _ = ticket.send((endpoint.local_addr(), key));
        let accepting = async {
            while let Some(conn) = endpoint.accept().await {
                tokio::spawn(async move {
                    serve_streams(|| {
                        let conn = conn.clone();
                        async move { conn.accept_stream().await.ok() }
                    })
                    .await;
                });
            }
        };
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            () = accepting => {}
        }
        endpoint.abort();
        Ok(())
    }

    fn ticket_line(ticket: &Self::Ticket) -> String {
        format!("{}/{}", ticket.0, hex(&ticket.1))
    }

    fn parse_ticket(line: &str) -> Result<Self::Ticket, BenchError> {
        let (addr, key) = split_ticket(line)?;
        let key = key
            .try_into()
            .map_err(|_| BenchError::Protocol("many: the server's key is not 32 bytes"))?;
        Ok((addr, key))
    }

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError> {
        let mut config = brisk_io::EndpointConfig::default();
        config.transport.max_idle_timeout = IDLE_TIMEOUT;
        brisk_io::Endpoint::client_with(SocketAddr::new(ticket.0.ip(), 0), config)
            .map_err(BenchError::io("brisk: client endpoint"))
    }

    async fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> Result<Self::Conn, BenchError> {
        client
            .connect(ticket.0, ticket.1)
            .await
            .map_err(BenchError::transport("brisk: connect"))
    }

    async fn open(conn: &Self::Conn) -> Result<Self::Stream, BenchError> {
        conn.open_stream()
            .await
            .map_err(BenchError::transport("brisk: open stream"))
    }

    async fn finish(stream: &mut Self::Stream) -> std::io::Result<()> {
        stream.finish()
    }

    async fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) {
        close_in_batches(&conns, |c| c.close(0, b"done")).await;
        drop(conns);
        let _ = tokio::time::timeout(CLOSE_WAIT, client.wait_idle()).await;
    }
}

/// quinn 0.11 at its defaults but for [`IDLE_TIMEOUT`].
#[derive(Debug, Default, Clone, Copy)]
pub struct QuinnFleet;

impl Fleet for QuinnFleet {
    type Ticket = (SocketAddr, rustls::pki_types::CertificateDer<'static>);
    type Client = (quinn::Endpoint, quinn::ClientConfig);
    type Conn = quinn::Connection;
    type Stream = tokio::io::Join<quinn::RecvStream, quinn::SendStream>;

    fn name(&self) -> &'static str {
        "quinn"
    }

    async fn serve(
        &self,
        ip: IpAddr,
        _connections: usize,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), BenchError> {
        let (mut config, cert) = crate::quic::server_config()?;
        config.transport_config(quinn_transport()?);
        let endpoint = quinn::Endpoint::server(config, SocketAddr::new(ip, 0))
            .map_err(BenchError::io("quinn: server endpoint"))?;
        let addr = endpoint
            .local_addr()
            .map_err(BenchError::io("quinn: local address"))?;
        let _ = ticket.send((addr, cert));
        let accepting = async {
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else {
                        return;
                    };
                    serve_streams(|| {
                        let conn = conn.clone();
                        async move {
                            let (send, recv) = conn.accept_bi().await.ok()?;
                            Some(tokio::io::join(recv, send))
                        }
                    })
                    .await;
                });
            }
        };
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            () = accepting => {}
        }
        endpoint.close(0u32.into(), b"done");
        Ok(())
    }

    fn ticket_line(ticket: &Self::Ticket) -> String {
        format!("{}/{}", ticket.0, hex(&ticket.1))
    }

    fn parse_ticket(line: &str) -> Result<Self::Ticket, BenchError> {
        let (addr, cert) = split_ticket(line)?;
        Ok((addr, cert.into()))
    }

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError> {
        let mut config = crate::quic::client_config(ticket.1.clone())?;
        config.transport_config(quinn_transport()?);
        let endpoint = quinn::Endpoint::client(SocketAddr::new(ticket.0.ip(), 0))
            .map_err(BenchError::io("quinn: client endpoint"))?;
        Ok((endpoint, config))
    }

    async fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> Result<Self::Conn, BenchError> {
        client
            .0
            .connect_with(client.1.clone(), ticket.0, crate::quic::SERVER_NAME)
            .map_err(BenchError::transport("quinn: connect"))?
            .await
            .map_err(BenchError::transport("quinn: client handshake"))
    }

    async fn open(conn: &Self::Conn) -> Result<Self::Stream, BenchError> {
        let (send, recv) = conn
            .open_bi()
            .await
            .map_err(BenchError::transport("quinn: open stream"))?;
        Ok(tokio::io::join(recv, send))
    }

    async fn finish(stream: &mut Self::Stream) -> std::io::Result<()> {
        stream.shutdown().await
    }

    async fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) {
        close_in_batches(&conns, |c| c.close(0u32.into(), b"done")).await;
        drop(conns);
        let _ = tokio::time::timeout(CLOSE_WAIT, client.0.wait_idle()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_survives_its_line() {
        let ticket: <BriskFleet as Fleet>::Ticket = ("[::1]:4433".parse().unwrap(), [0xa5; 32]);
        let line = BriskFleet::ticket_line(&ticket);
        assert!(!line.contains(' '));
        assert_eq!(BriskFleet::parse_ticket(&line).unwrap(), ticket);
        assert!(BriskFleet::parse_ticket("127.0.0.1:1/abc").is_err());
        assert!(BriskFleet::parse_ticket("127.0.0.1:1/zz").is_err());
        assert!(BriskFleet::parse_ticket("127.0.0.1:1/00").is_err());
        assert!(BriskFleet::parse_ticket("nowhere/00").is_err());
    }
}
