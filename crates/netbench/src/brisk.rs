//! Brisk through `brisk-io`: the sans-IO core driven on UDP sockets by
//! tokio.
//!
//! Left at `brisk-io`'s defaults, as an application gets them: CUBIC, ECN
//! on, UDP GSO/GRO where the kernel has them, 1452-byte datagrams over IPv4
//! and 1432 over IPv6. The server has a fresh static key; the client pins
//! it (Noise IK).
//!
//! [`Brisk::with_busy_poll`] overrides one setting, brisk-io's busy-poll
//! limit, to compare it on and off in one run (`--only brisk,brisk-bp`).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use brisk_io::{
    Connection, ConnectionError, Endpoint, EndpointConfig, KEY_LEN, ServerConfig, Stream, keys,
};

use crate::{BenchError, Contender, Test};

/// Environment variable: when set, each Brisk endpoint prints its socket
/// counters (sends, receives, busy polls) to stderr as it ends.
pub const STATS_ENV: &str = "NETBENCH_BRISK_STATS";

/// Prints `endpoint`'s socket counters if [`STATS_ENV`] is set.
fn report_stats(side: &str, endpoint: &Endpoint) {
    if std::env::var_os(STATS_ENV).is_some() {
        eprintln!("brisk {side}: {:?}", endpoint.stats().socket);
    }
}

/// How long `close` waits for the close to reach the server.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Brisk with default settings, or with one busy-poll limit set.
#[derive(Debug, Clone, Copy)]
pub struct Brisk {
    name: &'static str,
    busy_poll: Option<Duration>,
}

impl Default for Brisk {
    fn default() -> Self {
        Brisk {
            name: "brisk",
            busy_poll: None,
        }
    }
}

impl Brisk {
    /// Brisk named `name` whose endpoints (both ends) busy-poll for at
    /// most `limit` (zero: never).
    pub fn with_busy_poll(name: &'static str, limit: Duration) -> Self {
        Brisk {
            name,
            busy_poll: Some(limit),
        }
    }

    fn endpoint_config(&self) -> EndpointConfig {
        let mut config = EndpointConfig::default();
        if let Some(limit) = self.busy_poll {
            config.busy_poll = limit;
        }
        config
    }
}

/// The server endpoint and the connection it is serving.
#[derive(Debug)]
pub struct BriskServer {
    endpoint: Endpoint,
    connection: Option<Connection>,
}

impl Drop for BriskServer {
    fn drop(&mut self) {
        report_stats("server", &self.endpoint);
    }
}

/// The client endpoint and its connection.
#[derive(Debug)]
pub struct BriskClient {
    endpoint: Endpoint,
    connection: Connection,
}

/// Where the server listens and the static key it proves.
#[derive(Debug, Clone, Copy)]
pub struct BriskTicket {
    addr: SocketAddr,
    server_key: [u8; KEY_LEN],
}

/// The client closing or going away ends the server; that is no failure.
fn gone(error: &ConnectionError) -> bool {
    matches!(
        error,
        ConnectionError::Lost(_)
            | ConnectionError::LocallyClosed
            | ConnectionError::EndpointStopped(_)
    )
}

impl Contender for Brisk {
    type Server = BriskServer;
    type Client = BriskClient;
    type Ticket = BriskTicket;
    type Stream = Stream;

    fn name(&self) -> &'static str {
        self.name
    }

    fn stream_per_request(&self) -> bool {
        true
    }

    async fn listen(
        &self,
        ip: IpAddr,
        _test: Test,
    ) -> Result<(BriskServer, BriskTicket), BenchError> {
        let (_, keypair) = keys::generate().map_err(BenchError::transport("brisk: server key"))?;
        let server_key = keypair.public();
        let mut config = ServerConfig::new(SocketAddr::new(ip, 0), keypair);
        config.endpoint = self.endpoint_config();
        let endpoint =
            Endpoint::server(config).map_err(BenchError::io("brisk: server endpoint"))?;
        let ticket = BriskTicket {
            addr: endpoint.local_addr(),
            server_key,
        };
        let server = BriskServer {
            endpoint,
            connection: None,
        };
        Ok((server, ticket))
    }

    async fn accept_stream(&self, server: &mut BriskServer) -> Result<Option<Stream>, BenchError> {
        let connection = match &server.connection {
            Some(connection) => connection.clone(),
            None => {
                let Some(connection) = server.endpoint.accept().await else {
                    return Ok(None);
                };
                server.connection = Some(connection.clone());
                connection
            }
        };
        match connection.accept_stream().await {
            Ok(stream) => Ok(Some(stream)),
            Err(error) if gone(&error) => Ok(None),
            Err(error) => Err(BenchError::transport("brisk: accept stream")(error)),
        }
    }

    async fn connect(&self, ticket: BriskTicket, _test: Test) -> Result<BriskClient, BenchError> {
        let endpoint =
            Endpoint::client_with(SocketAddr::new(ticket.addr.ip(), 0), self.endpoint_config())
                .map_err(BenchError::io("brisk: client endpoint"))?;
        let connection = endpoint
            .connect(ticket.addr, ticket.server_key)
            .await
            .map_err(BenchError::transport("brisk: connect"))?;
        Ok(BriskClient {
            endpoint,
            connection,
        })
    }

    async fn open_stream(&self, client: &mut BriskClient) -> Result<Stream, BenchError> {
        client
            .connection
            .open_stream()
            .await
            .map_err(BenchError::transport("brisk: open stream"))
    }

    /// FIN without waiting for its acknowledgement (`shutdown` waits),
    /// as quinn's and TCP's `shutdown` do.
    async fn finish(&self, stream: &mut Stream) -> std::io::Result<()> {
        stream.finish()
    }

    async fn close(&self, client: BriskClient) {
        report_stats("client", &client.endpoint);
        client.connection.close(0, b"done");
        // Best effort: the result is already measured.
        let _ = tokio::time::timeout(CLOSE_WAIT, client.endpoint.wait_idle()).await;
    }
}
