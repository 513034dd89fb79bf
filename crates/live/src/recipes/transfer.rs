//! A fixed-size Brisk download through a running lab, checked end to end:
//! the server sends `bytes` of seeded pseudo-random data on one stream,
//! then the SHA-256 of what it sent; the client hashes what it read and
//! compares. A transfer either completes with matching hashes, or reports
//! why not (the connection's error, a mismatch, or the time limit).
//!
//! This is what a user of `brisk get` sees, through the lab's impaired
//! links: the fault matrix (tests/fault_matrix.rs) runs it under loss,
//! bursts, reordering, duplication, outages, a slow long path and a NAT
//! rebinding.

use super::{Background, RecipeError, block_on_in};
use crate::lab::Lab;
use brisk_io::{Endpoint, Keypair, ServerConfig};
use brisk_proto::ClientConfig;
use brisk_proto::congestion::CcAlgorithm;
use sha2::{Digest, Sha256};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The port the server listens on (UDP).
pub const TRANSFER_PORT: u16 = 4434;
const CHUNK_BYTES: usize = 64 * 1024;

/// One download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferConfig {
    /// The server's congestion controller by name.
    pub cc: String,
    pub bytes: u64,
    /// The whole transfer, handshake included, must end within this.
    pub limit: Duration,
    /// Seeds the data and the server's key, so runs repeat.
    pub seed: u64,
    /// The client moves its endpoint to a new local UDP port this long
    /// after it started (`Endpoint::rebind`, as a phone changing network
    /// does): the connection follows by client-initiated migration.
    pub client_rebind_at: Option<Duration>,
}

/// A download that completed with matching hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferReport {
    pub bytes: u64,
    /// From the client's connect to the last byte read.
    pub completion: Duration,
    /// The SHA-256 both ends computed, in hex.
    pub sha256: String,
    /// Times the server saw the client arrive from a new address.
    pub server_migrations: u64,
    /// Where the client moved to (`client_rebind_at`), if it moved
    /// before the transfer ended.
    pub client_moved_to: Option<SocketAddr>,
    /// The longest wait between two reads that brought the client new
    /// bytes, from the first byte on: the transfer's worst stall (wall
    /// clock, so the host's scheduling delays count too).
    pub longest_read_gap: Duration,
}

/// The data: a xorshift stream from `seed`, so the server need not hold
/// it and a wrong byte anywhere changes the hash.
fn fill(state: &mut u64, buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
}

/// Runs one download in `lab`, server to client.
pub fn run(lab: &Lab, config: &TransferConfig) -> Result<TransferReport, RecipeError> {
    let cc = CcAlgorithm::from_str(&config.cc)
        .map_err(|e| RecipeError::Unsupported(format!("brisk-proto in this build: {e}")))?;
    let keypair = Keypair::from_private([config.seed as u8 | 1; 32]);
    let server_key = keypair.public();
    let bind = SocketAddr::new(lab.server_bind_addr(), TRANSFER_PORT);
    let sent = config.clone();
    let migrations = Arc::new(AtomicU64::new(0));
    let server = {
        let migrations = migrations.clone();
        Background::start(lab.server_ns(), "brisk-transfer-server", move |ready| {
            serve(bind, keypair, cc, sent, migrations, ready)
        })?
    };
    let target = SocketAddr::new(lab.server_addr(), TRANSFER_PORT);
    let limit = config.limit;
    let rebind_at = config.client_rebind_at;
    let got = block_on_in(lab.client_ns(), move || async move {
        tokio::time::timeout(limit, receive(target, server_key, cc, rebind_at)).await
    })?;
    drop(server);
    let r = got
        .map_err(|_| RecipeError::failed("brisk transfer", format!("not done in {limit:?}")))?
        .map_err(|e| RecipeError::failed("brisk transfer", e))?;
    if r.bytes != config.bytes {
        return Err(RecipeError::failed(
            "brisk transfer",
            format!("received {} of {} bytes", r.bytes, config.bytes),
        ));
    }
    if r.actual != r.expected {
        return Err(RecipeError::failed(
            "brisk transfer",
            format!(
                "SHA-256 mismatch: server sent {}, received data hashes to {}",
                r.expected, r.actual
            ),
        ));
    }
    Ok(TransferReport {
        bytes: r.bytes,
        completion: r.completion,
        sha256: r.actual,
        server_migrations: migrations.load(Ordering::Relaxed),
        client_moved_to: r.moved_to,
        longest_read_gap: r.longest_gap,
    })
}

async fn serve(
    bind: SocketAddr,
    keypair: Keypair,
    cc: CcAlgorithm,
    config: TransferConfig,
    migrations: Arc<AtomicU64>,
    ready: super::Ready,
) {
    let mut server_config = ServerConfig::new(bind, keypair);
    server_config.endpoint.transport.cc = cc;
    server_config.endpoint.transport.migration = true;
    let server = match Endpoint::server(server_config) {
        Ok(s) => s,
        Err(e) => return ready.fail(format!("brisk server on {bind}: {e}")),
    };
    ready.ok();
    let Some(conn) = server.accept().await else {
        return;
    };
    let send = async {
        let mut stream = conn.accept_stream().await.map_err(io::Error::from)?;
        let mut request = [0u8; 1];
        stream.read_exact(&mut request).await?;
        let mut hasher = Sha256::new();
        let mut state = config.seed | 1;
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut left = config.bytes;
        while left > 0 {
            let n = left.min(CHUNK_BYTES as u64) as usize;
            fill(&mut state, &mut buf[..n]);
            hasher.update(&buf[..n]);
            stream.write_all(&buf[..n]).await?;
            left -= n as u64;
        }
        stream.write_all(&hasher.finalize()).await?;
        stream.finish()?;
        io::Result::Ok(())
    };
    // The writes above end once the data is queued, long before it is
    // delivered on a slow or lossy path: the connection stays up until the
    // client closes it, having read and checked everything (its own result
    // says whether the transfer worked), or until the transfer's time limit.
    if send.await.is_ok() {
        let _ = tokio::time::timeout(config.limit, conn.closed()).await;
    }
    if let Some(s) = conn.stats() {
        migrations.store(s.migrations, Ordering::Relaxed);
    }
}

struct Received {
    bytes: u64,
    completion: Duration,
    moved_to: Option<SocketAddr>,
    longest_gap: Duration,
    expected: String,
    actual: String,
}

async fn receive(
    target: SocketAddr,
    server_key: [u8; 32],
    cc: CcAlgorithm,
    rebind_at: Option<Duration>,
) -> io::Result<Received> {
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
        .connect_with(target, {
            let mut c = ClientConfig::new(Some(server_key)).with_cc(cc);
            c.transport.migration = true;
            c
        })
        .await
        .map_err(io::Error::other)?;
    let mut stream = conn.open_stream().await.map_err(io::Error::from)?;
    stream.write_all(b"G").await?;
    stream.flush().await?;
    let mut all = Vec::new();
    let mut longest_gap = Duration::ZERO;
    let read = async {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut last_read = None;
        let r = loop {
            match stream.read(&mut buf).await {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    let now = Instant::now();
                    if let Some(last) = last_read {
                        longest_gap = longest_gap.max(now - last);
                    }
                    last_read = Some(now);
                    all.extend_from_slice(&buf[..n]);
                }
                Err(e) => break Err(e),
            }
        };
        (r, started.elapsed())
    };
    let mut moved_to = None;
    let (read, completion) = match rebind_at {
        None => read.await,
        Some(at) => {
            tokio::pin!(read);
            tokio::select! {
                done = &mut read => done,
                () = tokio::time::sleep_until((started + at).into()) => {
                    moved_to = Some(client.rebind(bind)?);
                    read.await
                }
            }
        }
    };
    read?;
    let Some(split) = all.len().checked_sub(32) else {
        return Err(io::Error::other(format!(
            "stream ended after {} bytes, before the hash",
            all.len()
        )));
    };
    let (data, hash) = all.split_at(split);
    conn.close(0, b"done");
    drop(stream);
    let _ = tokio::time::timeout(Duration::from_millis(300), client.wait_idle()).await;
    Ok(Received {
        bytes: data.len() as u64,
        completion,
        moved_to,
        longest_gap,
        expected: hex(hash),
        actual: hex(&Sha256::digest(data)),
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_depends_on_the_seed_and_not_on_how_it_is_cut() {
        let (mut a, mut b) = (5u64, 5u64);
        let mut whole = vec![0u8; 64];
        fill(&mut a, &mut whole);
        let mut parts = vec![0u8; 64];
        let (x, y) = parts.split_at_mut(24);
        fill(&mut b, x);
        fill(&mut b, y);
        assert_eq!(whole, parts);
        let mut other = vec![0u8; 64];
        fill(&mut 7u64, &mut other);
        assert_ne!(whole, other);
    }
}
