//! Brisk downloads of fixed sizes through a running lab, on real UDP
//! sockets (`brisk-io`), one after another, each on a fresh connection
//! and timed by the client from its connect call to the last byte: the
//! Brisk side of [`super::sized_tcp`]'s kernel TCP downloads, so both can
//! be compared on one live path.
//!
//! Forward error correction is on or off for both ends. On, every stream
//! is protected from the first flight (`FecPolicy::On`): objects of a
//! few packets cannot wait for a loss rate to be measured, and a lost
//! packet at the tail otherwise costs a probe timeout.
//!
//! The request is the object's size, 8 bytes big-endian; the server
//! answers with that many bytes and ends the stream.

use super::{Background, RecipeError, block_on_in};
use crate::lab::Lab;
use brisk_io::{Endpoint, Keypair, ServerConfig};
use brisk_proto::congestion::CcAlgorithm;
use brisk_proto::fec::{FecConfig, FecPolicy};
use brisk_proto::{ClientConfig, TransportConfig};
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The port the fetch server listens on (UDP).
pub const FETCH_PORT: u16 = 4434;
const CHUNK_BYTES: usize = 64 * 1024;
/// The largest object the server sends: a request for more is refused,
/// so a stray client cannot keep it sending.
const MAX_OBJECT_BYTES: u64 = 64 << 20;
/// How long the client lets its close leave before its runtime ends.
const CLOSE_WAIT: Duration = Duration::from_millis(100);
/// How long the server keeps a connection after its answer's end.
const LINGER: Duration = Duration::from_secs(30);

/// One series of downloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriskFetchConfig {
    /// Congestion controller of both ends by name ("bbr", "cubic", ...).
    pub cc: String,
    /// Forward error correction on both ends (every stream protected).
    pub fec: bool,
    /// Bytes of each download, in order.
    pub sizes: Vec<u64>,
    /// Each download must end within this.
    pub limit: Duration,
    /// The server's static key is derived from this, so runs repeat.
    pub key_seed: u8,
}

/// One completed download.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BriskFetch {
    pub bytes: u64,
    /// From the client's connect call to the last byte read, in seconds.
    pub completion_s: f64,
    /// Packets the client rebuilt from repair symbols.
    pub packets_rebuilt: u64,
    /// Packets the client's connection saw arrive, repair included.
    pub packets_received: u64,
}

/// The transport configuration of both ends.
fn transport(config: &BriskFetchConfig) -> Result<TransportConfig, RecipeError> {
    let cc = CcAlgorithm::from_str(&config.cc)
        .map_err(|e| RecipeError::Unsupported(format!("brisk-proto in this build: {e}")))?;
    Ok(TransportConfig {
        cc,
        fec: FecConfig {
            enabled: config.fec,
            default_policy: FecPolicy::On,
            ..FecConfig::default()
        },
        ..TransportConfig::default()
    })
}

/// Runs `config`'s downloads in order in `lab`, each on a new connection
/// from the client to a server that lives for the whole series.
pub fn run(lab: &Lab, config: &BriskFetchConfig) -> Result<Vec<BriskFetch>, RecipeError> {
    let transport = transport(config)?;
    let keypair = Keypair::from_private([config.key_seed; 32]);
    let server_key = keypair.public();
    let bind = SocketAddr::new(lab.server_bind_addr(), FETCH_PORT);
    let server_transport = transport.clone();
    let _server = Background::start(lab.server_ns(), "brisk-fetch-server", move |ready| {
        serve(bind, keypair, server_transport, ready)
    })?;
    let target = SocketAddr::new(lab.server_addr(), FETCH_PORT);
    let mut out = Vec::with_capacity(config.sizes.len());
    for &bytes in &config.sizes {
        let mut client = ClientConfig::new(Some(server_key));
        client.transport = transport.clone();
        let limit = config.limit;
        let fetched = block_on_in(lab.client_ns(), move || async move {
            tokio::time::timeout(limit, fetch(target, client, bytes))
                .await
                .map_err(|_| io::Error::other(format!("not done within {} s", limit.as_secs_f64())))
                .and_then(|r| r)
        })?;
        let f =
            fetched.map_err(|e| RecipeError::failed(format!("brisk download of {bytes} B"), e))?;
        out.push(f);
    }
    Ok(out)
}

/// The server: every connection's streams each get the object they ask
/// for.
async fn serve(
    bind: SocketAddr,
    keypair: Keypair,
    transport: TransportConfig,
    ready: super::Ready,
) {
    let mut config = ServerConfig::new(bind, keypair);
    config.endpoint.transport = transport;
    let server = match Endpoint::server(config) {
        Ok(s) => s,
        Err(e) => return ready.fail(format!("brisk fetch server on {bind}: {e}")),
    };
    ready.ok();
    while let Some(conn) = server.accept().await {
        tokio::spawn(async move {
            // A client that goes away mid-answer ends its task with an
            // error; its own measurement reports what it saw.
            let _: io::Result<()> = async {
                let mut stream = conn.accept_stream().await.map_err(io::Error::from)?;
                let mut request = [0u8; 8];
                stream.read_exact(&mut request).await?;
                let bytes = u64::from_be_bytes(request);
                if bytes > MAX_OBJECT_BYTES {
                    return Err(io::Error::other(format!("asked for {bytes} B")));
                }
                let chunk = vec![0x5a_u8; CHUNK_BYTES];
                let mut left = bytes;
                while left > 0 {
                    let n = usize::try_from(left).map_or(CHUNK_BYTES, |l| l.min(CHUNK_BYTES));
                    stream.write_all(&chunk[..n]).await?;
                    left -= n as u64;
                }
                stream.shutdown().await?;
                // Keep the connection until the client closes it (or a
                // while), so the last packets' repair and retransmissions
                // can go out.
                let _ = tokio::time::timeout(LINGER, conn.closed()).await;
                Ok(())
            }
            .await;
        });
    }
}

/// Connects to `target`, asks for `bytes`, reads to the end of the stream
/// and checks the count.
async fn fetch(target: SocketAddr, config: ClientConfig, bytes: u64) -> io::Result<BriskFetch> {
    let bind = SocketAddr::new(
        match target.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        },
        0,
    );
    let started = Instant::now();
    let client = Endpoint::client(bind)?;
    let conn = client
        .connect_with(target, config)
        .await
        .map_err(io::Error::other)?;
    let mut stream = conn.open_stream().await.map_err(io::Error::from)?;
    stream.write_all(&bytes.to_be_bytes()).await?;
    stream.flush().await?;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut got = 0u64;
    loop {
        match stream.read(&mut buf).await? {
            0 => break,
            n => got += n as u64,
        }
    }
    let completion = started.elapsed();
    if got != bytes {
        return Err(io::Error::other(format!(
            "the server ended the object after {got} of {bytes} B"
        )));
    }
    let (packets_rebuilt, packets_received) = conn
        .stats()
        .map_or((0, 0), |s| (s.packets_rebuilt, s.packets_received));
    conn.close(0, b"done");
    drop(stream);
    let _ = tokio::time::timeout(CLOSE_WAIT, client.wait_idle()).await;
    Ok(BriskFetch {
        bytes,
        completion_s: completion.as_secs_f64(),
        packets_rebuilt,
        packets_received,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fec_is_on_for_every_stream_or_off_and_the_controller_is_checked() {
        let mut c = BriskFetchConfig {
            cc: "bbr".into(),
            fec: true,
            sizes: vec![10_000],
            limit: Duration::from_secs(1),
            key_seed: 1,
        };
        let t = transport(&c).unwrap();
        assert!(t.fec.enabled);
        assert_eq!(t.fec.default_policy, FecPolicy::On);
        c.fec = false;
        assert!(!transport(&c).unwrap().fec.enabled);
        c.cc = "vegas".into();
        assert!(matches!(transport(&c), Err(RecipeError::Unsupported(_))));
    }
}
