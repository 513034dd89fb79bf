//! quinn 0.11 (the Rust QUIC baseline) with rustls on ring.
//!
//! Everything is left at quinn's defaults, as an application would get it:
//! transport windows, congestion control (CUBIC), path MTU discovery and
//! UDP GSO/GRO where the kernel has them. The server presents a fresh
//! self-signed certificate for `localhost` (rcgen), which the client trusts.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use quinn::{
    ClientConfig, Connection, ConnectionError, Endpoint, RecvStream, SendStream, ServerConfig,
};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use tokio::io::Join;

use crate::{BenchError, Contender, Test};

/// The server name in the certificate and in the client's connect call.
pub(crate) const SERVER_NAME: &str = "localhost";

/// How long `close` waits for the close frame to go out.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// quinn with default settings.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quinn;

/// The server endpoint and the connection it is serving.
#[derive(Debug)]
pub struct QuinnServer {
    endpoint: Endpoint,
    connection: Option<Connection>,
}

/// The client endpoint and its connection.
#[derive(Debug)]
pub struct QuinnClient {
    endpoint: Endpoint,
    connection: Connection,
}

/// Where the server listens and the certificate it presents.
#[derive(Debug, Clone)]
pub struct QuinnTicket {
    addr: SocketAddr,
    cert: CertificateDer<'static>,
}

/// A closed connection ends the server; anything else is a failure.
fn gone(error: &ConnectionError) -> bool {
    matches!(
        error,
        ConnectionError::ApplicationClosed(_)
            | ConnectionError::ConnectionClosed(_)
            | ConnectionError::LocallyClosed
            | ConnectionError::Reset
    )
}

impl Contender for Quinn {
    type Server = QuinnServer;
    type Client = QuinnClient;
    type Ticket = QuinnTicket;
    type Stream = Join<RecvStream, SendStream>;

    fn name(&self) -> &'static str {
        "quinn"
    }

    fn stream_per_request(&self) -> bool {
        true
    }

    async fn listen(
        &self,
        ip: IpAddr,
        _test: Test,
    ) -> Result<(QuinnServer, QuinnTicket), BenchError> {
        let (config, cert) = server_config()?;
        let endpoint = Endpoint::server(config, SocketAddr::new(ip, 0))
            .map_err(BenchError::io("quinn: server endpoint"))?;
        let addr = endpoint
            .local_addr()
            .map_err(BenchError::io("quinn: local address"))?;
        let server = QuinnServer {
            endpoint,
            connection: None,
        };
        Ok((server, QuinnTicket { addr, cert }))
    }

    async fn accept_stream(
        &self,
        server: &mut QuinnServer,
    ) -> Result<Option<Join<RecvStream, SendStream>>, BenchError> {
        let connection = match &server.connection {
            Some(connection) => connection.clone(),
            None => {
                let Some(incoming) = server.endpoint.accept().await else {
                    return Ok(None);
                };
                let connection = incoming
                    .await
                    .map_err(BenchError::transport("quinn: server handshake"))?;
                server.connection = Some(connection.clone());
                connection
            }
        };
        match connection.accept_bi().await {
            Ok((send, recv)) => Ok(Some(tokio::io::join(recv, send))),
            Err(error) if gone(&error) => Ok(None),
            Err(error) => Err(BenchError::transport("quinn: accept stream")(error)),
        }
    }

    async fn connect(&self, ticket: QuinnTicket, _test: Test) -> Result<QuinnClient, BenchError> {
        let config = client_config(ticket.cert)?;
        let local = SocketAddr::new(ticket.addr.ip(), 0);
        let endpoint = Endpoint::client(local).map_err(BenchError::io("quinn: client endpoint"))?;
        let connection = endpoint
            .connect_with(config, ticket.addr, SERVER_NAME)
            .map_err(BenchError::transport("quinn: connect"))?
            .await
            .map_err(BenchError::transport("quinn: client handshake"))?;
        Ok(QuinnClient {
            endpoint,
            connection,
        })
    }

    async fn open_stream(
        &self,
        client: &mut QuinnClient,
    ) -> Result<Join<RecvStream, SendStream>, BenchError> {
        let (send, recv) = client
            .connection
            .open_bi()
            .await
            .map_err(BenchError::transport("quinn: open stream"))?;
        Ok(tokio::io::join(recv, send))
    }

    async fn close(&self, client: QuinnClient) {
        client.connection.close(0u32.into(), b"done");
        // Best effort: the result is already measured.
        let _ = tokio::time::timeout(CLOSE_WAIT, client.endpoint.wait_idle()).await;
    }
}

/// A server configuration with a fresh self-signed certificate for
/// [`SERVER_NAME`], and that certificate.
pub(crate) fn server_config() -> Result<(ServerConfig, CertificateDer<'static>), BenchError> {
    let certified = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
        .map_err(BenchError::transport("quinn: self-signed certificate"))?;
    let cert = certified.cert.der().clone();
    let key = PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der());
    let config = ServerConfig::with_single_cert(vec![cert.clone()], key.into())
        .map_err(BenchError::transport("quinn: server TLS config"))?;
    Ok((config, cert))
}

/// A client configuration that trusts exactly `cert`.
pub(crate) fn client_config(cert: CertificateDer<'static>) -> Result<ClientConfig, BenchError> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(cert)
        .map_err(BenchError::transport("quinn: trust the server certificate"))?;
    ClientConfig::with_root_certificates(Arc::new(roots))
        .map_err(BenchError::transport("quinn: client TLS config"))
}
