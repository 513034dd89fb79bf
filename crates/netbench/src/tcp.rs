//! Kernel TCP through tokio: the baseline every transport is held to.
//!
//! One TCP connection is one stream. `TCP_NODELAY` is set for the RPC test
//! (a 512-byte request must not wait for Nagle); bulk keeps the defaults.

use std::net::{IpAddr, SocketAddr};

use tokio::net::{TcpListener, TcpStream};

use crate::{BenchError, Contender, Test};

/// Kernel TCP via `tokio::net::TcpStream`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelTcp;

/// A listening TCP server.
#[derive(Debug)]
pub struct TcpServer {
    listener: TcpListener,
    nodelay: bool,
}

/// A TCP client: the connection made by `connect`, until a stream takes it.
#[derive(Debug)]
pub struct TcpClient {
    addr: SocketAddr,
    nodelay: bool,
    ready: Option<TcpStream>,
}

fn with_nodelay(stream: TcpStream, nodelay: bool) -> Result<TcpStream, BenchError> {
    stream
        .set_nodelay(nodelay)
        .map_err(BenchError::io("tcp: set TCP_NODELAY"))?;
    Ok(stream)
}

impl Contender for KernelTcp {
    type Server = TcpServer;
    type Client = TcpClient;
    type Ticket = SocketAddr;
    type Stream = TcpStream;

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn stream_per_request(&self) -> bool {
        false
    }

    async fn listen(&self, ip: IpAddr, test: Test) -> Result<(TcpServer, SocketAddr), BenchError> {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .map_err(BenchError::io("tcp: bind"))?;
        let addr = listener
            .local_addr()
            .map_err(BenchError::io("tcp: local address"))?;
        let server = TcpServer {
            listener,
            nodelay: test == Test::Rpc,
        };
        Ok((server, addr))
    }

    async fn accept_stream(&self, server: &mut TcpServer) -> Result<Option<TcpStream>, BenchError> {
        let (stream, _) = server
            .listener
            .accept()
            .await
            .map_err(BenchError::io("tcp: accept"))?;
        with_nodelay(stream, server.nodelay).map(Some)
    }

    async fn connect(&self, addr: SocketAddr, test: Test) -> Result<TcpClient, BenchError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(BenchError::io("tcp: connect"))?;
        Ok(TcpClient {
            addr,
            nodelay: test == Test::Rpc,
            ready: Some(stream),
        })
    }

    async fn open_stream(&self, client: &mut TcpClient) -> Result<TcpStream, BenchError> {
        let stream = match client.ready.take() {
            Some(stream) => stream,
            None => TcpStream::connect(client.addr)
                .await
                .map_err(BenchError::io("tcp: connect"))?,
        };
        with_nodelay(stream, client.nodelay)
    }

    async fn close(&self, client: TcpClient) {
        drop(client);
    }
}
