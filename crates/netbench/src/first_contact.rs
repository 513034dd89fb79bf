//! First contact: one request on a cold connection, timed from the
//! client's connect call to the answer's first byte and to its last, for
//! five ways to ask:
//!
//! - Brisk with the request in its first flight (Noise IK early data, the
//!   server's key pinned), and Brisk sending it after the handshake;
//! - TLS 1.3 (rustls) over kernel TCP, a full handshake: TCP's round trip,
//!   TLS's round trip, then the request's;
//! - quinn after its 1-RTT handshake, and quinn resuming a session with
//!   the request as 0-RTT data (the client made one connection before, so
//!   it holds a ticket; that first connection is not timed).
//!
//! Every peer is left at its library's defaults except where a cold start
//! needs it said: TCP_NODELAY on both TCP ends (a small request must not
//! wait for Nagle) and no TLS session tickets over TCP (the first contact
//! has none to use). The servers answer every request the same way:
//! read one line, send [`answer`]'s bytes, finish. They live in whichever
//! network namespace the calling thread is in (the live lab runs them in
//! its server namespace, the client in its client namespace).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisk_io::{Endpoint, Idempotent, KEY_LEN, Keypair, ServerConfig, keys};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::BenchError;
use crate::quic::SERVER_NAME;

/// The request every client sends: one line.
pub const REQUEST: &[u8] = b"GET /first-contact\n";

/// The longest request line a server reads before giving up on it.
const MAX_REQUEST_BYTES: usize = 1024;

/// How long a server keeps an answered connection open for the client's
/// close, and a client waits for its close to leave.
const LINGER: Duration = Duration::from_secs(2);

/// One way of asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Peer {
    /// Brisk, the request in the first flight.
    BriskEarly,
    /// Brisk, the request after the handshake (`brisk get --no-early`).
    BriskAfterHandshake,
    /// TLS 1.3 over kernel TCP, full handshake.
    TcpTls,
    /// quinn, the request after the 1-RTT handshake.
    Quinn,
    /// quinn resuming a session, the request as 0-RTT data.
    Quinn0Rtt,
}

impl Peer {
    /// Every peer, in the order a report lists them.
    pub const ALL: [Peer; 5] = [
        Peer::BriskEarly,
        Peer::BriskAfterHandshake,
        Peer::TcpTls,
        Peer::Quinn,
        Peer::Quinn0Rtt,
    ];
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Peer::BriskEarly => "Brisk, early data",
            Peer::BriskAfterHandshake => "Brisk, no early data",
            Peer::TcpTls => "TLS 1.3 over TCP",
            Peer::Quinn => "quinn, 1-RTT",
            Peer::Quinn0Rtt => "quinn, 0-RTT resumption",
        })
    }
}

/// The ports the three servers listen on (Brisk and quinn on UDP, TLS on
/// TCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub brisk: u16,
    pub quinn: u16,
    pub tcp_tls: u16,
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            brisk: 4433,
            quinn: 4434,
            tcp_tls: 8443,
        }
    }
}

/// The servers' secrets: Brisk's static key, and a self-signed
/// certificate for [`SERVER_NAME`] that TLS and quinn both present.
pub struct Credentials {
    brisk: Keypair,
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

/// What a client needs to know: where the servers are and what they
/// prove (Brisk's public key, the certificate to trust).
#[derive(Debug, Clone)]
pub struct Target {
    pub ip: IpAddr,
    pub ports: Ports,
    brisk_key: [u8; KEY_LEN],
    cert: CertificateDer<'static>,
}

impl Credentials {
    /// A fresh Brisk key and certificate.
    pub fn generate() -> Result<Credentials, BenchError> {
        let (_, brisk) = keys::generate().map_err(BenchError::transport("brisk: server key"))?;
        let certified = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
            .map_err(BenchError::transport("tls: self-signed certificate"))?;
        Ok(Credentials {
            brisk,
            cert: certified.cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()),
        })
    }

    /// Where a client finds the servers at `ip` on `ports`.
    pub fn target(&self, ip: IpAddr, ports: Ports) -> Target {
        Target {
            ip,
            ports,
            brisk_key: self.brisk.public(),
            cert: self.cert.clone(),
        }
    }
}

/// The answer to every request: `len` bytes of a pattern the client
/// checks.
pub fn answer(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// rustls with the provider the workspace builds (aws-lc-rs), TLS 1.3 only.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The three servers, bound and ready to answer.
pub struct Servers {
    brisk: Endpoint,
    quinn: quinn::Endpoint,
    tcp: TcpListener,
    tls: TlsAcceptor,
    answer: Arc<Vec<u8>>,
    brisk_key: [u8; KEY_LEN],
    cert: CertificateDer<'static>,
}

impl Servers {
    /// Binds all three servers on `ip` and `ports`, each answering with
    /// `answer_bytes` bytes.
    pub async fn bind(
        ip: IpAddr,
        ports: Ports,
        credentials: Credentials,
        answer_bytes: usize,
    ) -> Result<Servers, BenchError> {
        let brisk_key = credentials.brisk.public();
        let Credentials { brisk, cert, key } = credentials;
        let brisk = Endpoint::server(ServerConfig::new(SocketAddr::new(ip, ports.brisk), brisk))
            .map_err(BenchError::io("brisk: server endpoint"))?;
        // quinn's own TLS set-up accepts 0-RTT data (max_early_data_size).
        let quinn_config =
            quinn::ServerConfig::with_single_cert(vec![cert.clone()], key.clone_key().into())
                .map_err(BenchError::transport("quinn: server TLS config"))?;
        let quinn = quinn::Endpoint::server(quinn_config, SocketAddr::new(ip, ports.quinn))
            .map_err(BenchError::io("quinn: server endpoint"))?;
        let mut tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(BenchError::transport("tls: protocol versions"))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], PrivateKeyDer::Pkcs8(key))
            .map_err(BenchError::transport("tls: server config"))?;
        // A first contact has no ticket to use; sending some would only
        // add bytes after the handshake.
        tls.send_tls13_tickets = 0;
        let tcp = TcpListener::bind(SocketAddr::new(ip, ports.tcp_tls))
            .await
            .map_err(BenchError::io("tcp: bind"))?;
        Ok(Servers {
            brisk,
            quinn,
            tcp,
            tls: TlsAcceptor::from(Arc::new(tls)),
            answer: Arc::new(answer(answer_bytes)),
            brisk_key,
            cert,
        })
    }

    /// Where a client finds these servers at `ip` (the ports they are
    /// bound to, which port 0 left to the system).
    pub fn target(&self, ip: IpAddr) -> Result<Target, BenchError> {
        let port = |addr: std::io::Result<SocketAddr>| {
            addr.map(|a| a.port())
                .map_err(BenchError::io("server: local address"))
        };
        Ok(Target {
            ip,
            ports: Ports {
                brisk: self.brisk.local_addr().port(),
                quinn: port(self.quinn.local_addr())?,
                tcp_tls: port(self.tcp.local_addr())?,
            },
            brisk_key: self.brisk_key,
            cert: self.cert.clone(),
        })
    }

    /// Answers every request on all three until dropped; a connection's
    /// failure ends that connection only (the client's measurement says
    /// what it saw).
    pub async fn run(self) {
        let Servers {
            brisk,
            quinn,
            tcp,
            tls,
            answer,
            ..
        } = self;
        let brisk_loop = {
            let answer = answer.clone();
            async move {
                while let Some(conn) = brisk.accept().await {
                    let answer = answer.clone();
                    tokio::spawn(async move {
                        let Ok(mut stream) = conn.accept_stream().await else {
                            return;
                        };
                        if serve(&mut stream, &answer).await.is_ok() {
                            let _ = stream.finish();
                        }
                        // Wait for the client's close (or give up).
                        let _ = tokio::time::timeout(LINGER, conn.accept_stream()).await;
                    });
                }
            }
        };
        let quinn_loop = {
            let answer = answer.clone();
            async move {
                while let Some(incoming) = quinn.accept().await {
                    let answer = answer.clone();
                    tokio::spawn(async move {
                        let Ok(connecting) = incoming.accept() else {
                            return;
                        };
                        // Serve 0-RTT requests at once (0.5-RTT data); a
                        // 1-RTT request arrives after the handshake anyway.
                        let conn = match connecting.into_0rtt() {
                            Ok((conn, _)) => conn,
                            Err(connecting) => match connecting.await {
                                Ok(conn) => conn,
                                Err(_) => return,
                            },
                        };
                        let Ok((mut send, mut recv)) = conn.accept_bi().await else {
                            return;
                        };
                        if serve(&mut tokio::io::join(&mut recv, &mut send), &answer)
                            .await
                            .is_ok()
                        {
                            let _ = send.finish();
                        }
                        let _ = tokio::time::timeout(LINGER, conn.closed()).await;
                    });
                }
            }
        };
        let tcp_loop = async move {
            loop {
                let Ok((stream, _)) = tcp.accept().await else {
                    // Out of descriptors or memory: let it pass.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let (tls, answer) = (tls.clone(), answer.clone());
                tokio::spawn(async move {
                    if stream.set_nodelay(true).is_err() {
                        return;
                    }
                    let Ok(mut stream) = tls.accept(stream).await else {
                        return;
                    };
                    if serve(&mut stream, &answer).await.is_ok() {
                        let _ = stream.shutdown().await;
                    }
                });
            }
        };
        tokio::join!(brisk_loop, quinn_loop, tcp_loop);
    }
}

/// Reads one request line from `stream` and writes `answer`.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    answer: &[u8],
) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(REQUEST.len());
    let mut byte = [0u8; 1];
    while line.len() < MAX_REQUEST_BYTES {
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        line.push(byte[0]);
        if byte[0] == b'\n' {
            stream.write_all(answer).await?;
            return stream.flush().await;
        }
    }
    Err(std::io::ErrorKind::InvalidData.into())
}

/// One timed fetch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fetch {
    /// From the connect call to the answer's first byte.
    pub first_byte: Duration,
    /// From the connect call to the answer's last byte.
    pub complete: Duration,
    pub answer_bytes: usize,
    /// For quinn's 0-RTT fetch: whether the server took the early data.
    pub early_accepted: Option<bool>,
}

/// Fetches one answer of `answer_bytes` bytes from `target` as `peer`
/// does, giving up after `limit`.
pub async fn fetch(
    peer: Peer,
    target: &Target,
    answer_bytes: usize,
    limit: Duration,
) -> Result<Fetch, BenchError> {
    let run = async {
        match peer {
            Peer::BriskEarly => brisk(target, answer_bytes, true).await,
            Peer::BriskAfterHandshake => brisk(target, answer_bytes, false).await,
            Peer::TcpTls => tcp_tls(target, answer_bytes).await,
            Peer::Quinn => quinn_fetch(target, answer_bytes, false).await,
            Peer::Quinn0Rtt => quinn_fetch(target, answer_bytes, true).await,
        }
    };
    tokio::time::timeout(limit, run)
        .await
        .map_err(|_| BenchError::TimedOut { limit })?
}

/// The unspecified address of `ip`'s family, port 0: a client's bind.
fn any_of(ip: IpAddr) -> SocketAddr {
    match ip {
        IpAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        IpAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    }
}

/// Reads the whole answer from `stream`, timing from `start`.
async fn read_answer<R: AsyncRead + Unpin>(
    stream: &mut R,
    start: Instant,
    answer_bytes: usize,
) -> Result<Fetch, BenchError> {
    let expected = answer(answer_bytes);
    let mut buf = vec![0u8; 16 * 1024];
    let (mut got, mut first_byte) = (0usize, None);
    while got < answer_bytes {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(BenchError::io("read the answer"))?;
        if n == 0 {
            return Err(BenchError::Protocol("the answer ended early"));
        }
        first_byte.get_or_insert_with(|| start.elapsed());
        if got + n > answer_bytes || buf[..n] != expected[got..got + n] {
            return Err(BenchError::Protocol(
                "the answer differs from what was sent",
            ));
        }
        got += n;
    }
    let complete = start.elapsed();
    Ok(Fetch {
        first_byte: first_byte.unwrap_or(complete),
        complete,
        answer_bytes,
        early_accepted: None,
    })
}

async fn brisk(target: &Target, answer_bytes: usize, early: bool) -> Result<Fetch, BenchError> {
    let addr = SocketAddr::new(target.ip, target.ports.brisk);
    let endpoint =
        Endpoint::client(any_of(target.ip)).map_err(BenchError::io("brisk: client endpoint"))?;
    let start = Instant::now();
    let (conn, mut stream) = if early {
        endpoint
            .connect_with_request(addr, target.brisk_key, Idempotent::declare(REQUEST))
            .await
            .map_err(BenchError::transport("brisk: connect with the request"))?
    } else {
        let conn = endpoint
            .connect(addr, target.brisk_key)
            .await
            .map_err(BenchError::transport("brisk: connect"))?;
        let mut stream = conn
            .open_stream()
            .await
            .map_err(BenchError::transport("brisk: open stream"))?;
        stream
            .write_all(REQUEST)
            .await
            .map_err(BenchError::io("brisk: send the request"))?;
        stream
            .finish()
            .map_err(BenchError::io("brisk: finish the request"))?;
        (conn, stream)
    };
    let fetch = read_answer(&mut stream, start, answer_bytes).await;
    conn.close(0, b"done");
    let _ = tokio::time::timeout(LINGER, endpoint.wait_idle()).await;
    fetch
}

async fn tcp_tls(target: &Target, answer_bytes: usize) -> Result<Fetch, BenchError> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(target.cert.clone())
        .map_err(BenchError::transport("tls: trust the server certificate"))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(BenchError::transport("tls: protocol versions"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // A cold start: nothing to resume.
    config.resumption = rustls::client::Resumption::disabled();
    let connector = TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from(SERVER_NAME)
        .map_err(BenchError::transport("tls: server name"))?
        .to_owned();
    let start = Instant::now();
    let tcp = TcpStream::connect(SocketAddr::new(target.ip, target.ports.tcp_tls))
        .await
        .map_err(BenchError::io("tcp: connect"))?;
    tcp.set_nodelay(true)
        .map_err(BenchError::io("tcp: set TCP_NODELAY"))?;
    let mut stream = connector
        .connect(name, tcp)
        .await
        .map_err(BenchError::io("tls: handshake"))?;
    stream
        .write_all(REQUEST)
        .await
        .map_err(BenchError::io("tls: send the request"))?;
    stream
        .flush()
        .await
        .map_err(BenchError::io("tls: send the request"))?;
    read_answer(&mut stream, start, answer_bytes).await
}

/// quinn's fetch; with `zero_rtt`, after one untimed fetch that leaves a
/// session ticket in the client's configuration.
async fn quinn_fetch(
    target: &Target,
    answer_bytes: usize,
    zero_rtt: bool,
) -> Result<Fetch, BenchError> {
    let config = crate::quic::client_config(target.cert.clone())?;
    if zero_rtt {
        quinn_once(target, &config, answer_bytes, false).await?;
    }
    quinn_once(target, &config, answer_bytes, zero_rtt).await
}

async fn quinn_once(
    target: &Target,
    config: &quinn::ClientConfig,
    answer_bytes: usize,
    zero_rtt: bool,
) -> Result<Fetch, BenchError> {
    let addr = SocketAddr::new(target.ip, target.ports.quinn);
    let endpoint = quinn::Endpoint::client(any_of(target.ip))
        .map_err(BenchError::io("quinn: client endpoint"))?;
    let start = Instant::now();
    let connecting = endpoint
        .connect_with(config.clone(), addr, SERVER_NAME)
        .map_err(BenchError::transport("quinn: connect"))?;
    let (conn, accepted) = if zero_rtt {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => (conn, Some(accepted)),
            Err(_) => return Err(BenchError::Protocol("quinn: no session ticket for 0-RTT")),
        }
    } else {
        let conn = connecting
            .await
            .map_err(BenchError::transport("quinn: handshake"))?;
        (conn, None)
    };
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(BenchError::transport("quinn: open stream"))?;
    send.write_all(REQUEST)
        .await
        .map_err(BenchError::transport("quinn: send the request"))?;
    send.finish()
        .map_err(BenchError::transport("quinn: finish the request"))?;
    let mut fetch = read_answer(&mut recv, start, answer_bytes).await?;
    if let Some(accepted) = accepted {
        fetch.early_accepted = Some(accepted.await);
    }
    conn.close(0u32.into(), b"done");
    let _ = tokio::time::timeout(LINGER, endpoint.wait_idle()).await;
    Ok(fetch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every peer fetches a 10 KB answer on loopback, both families; the
    /// quinn 0-RTT fetch has its early data taken.
    #[test]
    fn every_peer_fetches_the_answer_on_loopback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for ip in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ] {
            rt.block_on(async {
                let credentials = Credentials::generate().unwrap();
                let ports = Ports {
                    brisk: 0,
                    quinn: 0,
                    tcp_tls: 0,
                };
                let servers = Servers::bind(ip, ports, credentials, 10_000).await.unwrap();
                let target = servers.target(ip).unwrap();
                let server = tokio::spawn(servers.run());
                for peer in Peer::ALL {
                    let f = fetch(peer, &target, 10_000, Duration::from_secs(10))
                        .await
                        .unwrap_or_else(|e| panic!("{ip} {peer}: {e}"));
                    assert_eq!(f.answer_bytes, 10_000);
                    assert!(f.first_byte <= f.complete, "{peer}");
                    assert_eq!(
                        f.early_accepted,
                        (peer == Peer::Quinn0Rtt).then_some(true),
                        "{ip} {peer}"
                    );
                }
                server.abort();
            });
        }
    }
}
