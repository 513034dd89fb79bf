//! The tokio driver for [`HappyEyeballs`]: resolves, races real sockets,
//! keeps the first connection and drops (closes) the others.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Nat64Prefix;
use serde::Serialize;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::happy_eyeballs::{
    Action, AttemptId, Candidate, Config, ConfigError, Family, HappyEyeballs, Source,
};
use crate::nat64::{self, Nat64Error};
use crate::resolve::{self, Resolver};
use crate::sockopt;

/// When to synthesize NAT64 addresses for IPv4 answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Nat64Policy {
    /// Never.
    Off,
    /// When the host has no IPv4 route, with the prefix discovered through
    /// `ipv4only.arpa` (RFC 7050).
    #[default]
    Auto,
    /// When the host has no IPv4 route, with this prefix.
    Prefix(Nat64Prefix),
    /// Always, with this prefix (testing a NAT64 path from a dual-stack
    /// host).
    Always(Nat64Prefix),
}

/// Everything [`connect`] needs besides the destination.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Happy Eyeballs timing and family preference (RFC 8305).
    pub config: Config,
    /// Local paths in preference order; empty means any.
    pub sources: Vec<Source>,
    /// How host names are looked up.
    pub resolver: Resolver,
    /// When IPv4 literals are synthesized into the NAT64 prefix.
    pub nat64: Nat64Policy,
    /// Give up on a single attempt after this long (the kernel's own SYN
    /// retries take about two minutes).
    pub attempt_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            config: Config::default(),
            sources: Vec::new(),
            resolver: Resolver::System,
            nat64: Nat64Policy::Auto,
            attempt_timeout: Duration::from_secs(10),
        }
    }
}

/// What became of one attempt, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRecord {
    /// Destination address and local path the attempt used.
    pub candidate: Candidate,
    /// Milliseconds from the start of the race to this attempt's SYN.
    pub started_ms: f64,
    /// Milliseconds from the start to its end; `None` while pending.
    pub ended_ms: Option<f64>,
    /// How it ended.
    pub outcome: AttemptOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
/// How an attempt ended.
pub enum AttemptOutcome {
    /// Still connecting.
    Pending,
    /// Connected (the winner).
    Connected,
    /// Failed; carries the OS error text.
    Failed(String),
    /// Stopped because another attempt won.
    Cancelled,
}

/// The race's result.
#[derive(Debug)]
pub struct Connection {
    /// The connected socket.
    pub stream: TcpStream,
    /// The address and local path that won.
    pub candidate: Candidate,
    /// Time from the start of the race to the winning handshake.
    pub elapsed: Duration,
    /// Every attempt made, the winner included.
    pub attempts: Vec<AttemptRecord>,
}

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    /// The Happy Eyeballs settings are invalid.
    Config(#[from] ConfigError),
    #[error(transparent)]
    /// NAT64 prefix discovery failed.
    Nat64(#[from] Nat64Error),
    #[error("{host} has no addresses{}", if *.ipv6_only { " (this host has no IPv4 route and no NAT64 prefix)" } else { "" })]
    /// The name resolved to no usable address.
    NoAddresses {
        /// The destination host as given.
        host: String,
        /// Whether this host has no IPv4 route and no NAT64 prefix.
        ipv6_only: bool,
    },
    #[error("every attempt to {host} failed: {}", summary(.attempts))]
    /// Every attempt failed or timed out.
    AllFailed {
        /// The destination host as given.
        host: String,
        /// Every attempt and its error.
        attempts: Vec<AttemptRecord>,
    },
}

fn summary(attempts: &[AttemptRecord]) -> String {
    attempts
        .iter()
        .map(|a| match &a.outcome {
            AttemptOutcome::Failed(e) => format!("{} ({e})", a.candidate.addr),
            other => format!("{} ({other:?})", a.candidate.addr),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

enum Event {
    Answer(Family, io::Result<Vec<IpAddr>>),
    Attempt(AttemptId, io::Result<TcpStream>),
}

/// Connects to `host` (a name or an address literal) on `port`, racing
/// addresses and paths per RFC 8305.
pub async fn connect(
    host: &str,
    port: u16,
    options: &ConnectOptions,
) -> Result<Connection, ConnectError> {
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    race(host, literal.map(|ip| vec![ip]), port, options).await
}

/// Races already-resolved addresses (no DNS).
pub async fn connect_addrs(
    addrs: &[IpAddr],
    port: u16,
    options: &ConnectOptions,
) -> Result<Connection, ConnectError> {
    let host = addrs
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",");
    race(&host, Some(addrs.to_vec()), port, options).await
}

async fn nat64_prefix(options: &ConnectOptions) -> Result<Option<Nat64Prefix>, Nat64Error> {
    match options.nat64 {
        Nat64Policy::Off => Ok(None),
        Nat64Policy::Always(p) => Ok(Some(p)),
        Nat64Policy::Prefix(p) => Ok((!nat64::has_ipv4_route()).then_some(p)),
        Nat64Policy::Auto => {
            if nat64::has_ipv4_route() {
                return Ok(None);
            }
            match nat64::discover(options.resolver).await {
                Ok(prefixes) => Ok(prefixes.first().copied()),
                // No DNS64: IPv4 answers stay unreachable; say so only if
                // nothing else works.
                Err(Nat64Error::NoPrefix { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }
}

async fn race(
    host: &str,
    resolved: Option<Vec<IpAddr>>,
    port: u16,
    options: &ConnectOptions,
) -> Result<Connection, ConnectError> {
    let config = options.config.validated()?;
    let prefix = nat64_prefix(options).await?;
    let start = tokio::time::Instant::now();
    let now = || Instant::from_nanos(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let ms = |t: Instant| t.as_nanos() as f64 / 1e6;
    let mut he = HappyEyeballs::new(config, port, options.sources.clone(), prefix);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut lookups = Vec::new();
    match resolved {
        Some(addrs) => he.handle_resolved(now(), &addrs),
        None => {
            for family in [Family::V6, Family::V4] {
                let tx = tx.clone();
                let host = host.to_string();
                let resolver = options.resolver;
                lookups.push(tokio::spawn(async move {
                    let answer = resolve::lookup(resolver, &host, family).await;
                    let _ = tx.send(Event::Answer(family, answer));
                }));
            }
        }
    }
    let mut tasks: HashMap<AttemptId, AbortHandle> = HashMap::new();
    let mut records: Vec<(AttemptId, AttemptRecord)> = Vec::new();
    let mut streams: HashMap<AttemptId, TcpStream> = HashMap::new();
    let record = |records: &mut Vec<(AttemptId, AttemptRecord)>, id, at: Instant, outcome| {
        if let Some((_, r)) = records.iter_mut().find(|(i, _)| *i == id) {
            r.ended_ms = Some(ms(at));
            r.outcome = outcome;
        }
    };
    let result = 'race: loop {
        while let Some(action) = he.poll_action() {
            match action {
                Action::Connect { id, candidate } => {
                    records.push((
                        id,
                        AttemptRecord {
                            candidate: candidate.clone(),
                            started_ms: ms(now()),
                            ended_ms: None,
                            outcome: AttemptOutcome::Pending,
                        },
                    ));
                    let tx = tx.clone();
                    let timeout = options.attempt_timeout;
                    let task = tokio::spawn(async move {
                        let result = match tokio::time::timeout(timeout, attempt(&candidate)).await
                        {
                            Ok(r) => r,
                            Err(_) => Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                format!("no answer within {timeout:?}"),
                            )),
                        };
                        let _ = tx.send(Event::Attempt(id, result));
                    });
                    tasks.insert(id, task.abort_handle());
                }
                Action::Cancel { id } => {
                    if let Some(task) = tasks.remove(&id) {
                        task.abort();
                    }
                    streams.remove(&id);
                    record(&mut records, id, now(), AttemptOutcome::Cancelled);
                }
                Action::Connected { id } => {
                    let Some(stream) = streams.remove(&id) else {
                        continue;
                    };
                    let candidate = records
                        .iter()
                        .find(|(i, _)| *i == id)
                        .map(|(_, r)| r.candidate.clone())
                        .unwrap_or(Candidate {
                            addr: stream
                                .peer_addr()
                                .unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))),
                            source: Source::Any,
                            synthesized: false,
                        });
                    break 'race Ok(Connection {
                        stream,
                        candidate,
                        elapsed: start.elapsed(),
                        attempts: Vec::new(),
                    });
                }
                Action::Failed => {
                    let attempts: Vec<AttemptRecord> =
                        records.iter().map(|(_, r)| r.clone()).collect();
                    break 'race Err(if attempts.is_empty() {
                        ConnectError::NoAddresses {
                            host: host.to_string(),
                            ipv6_only: !nat64::has_ipv4_route() && prefix.is_none(),
                        }
                    } else {
                        ConnectError::AllFailed {
                            host: host.to_string(),
                            attempts,
                        }
                    });
                }
            }
        }
        let deadline = he
            .poll_timeout()
            .map(|t| start + t.saturating_duration_since(Instant::ZERO));
        tokio::select! {
            event = rx.recv() => match event {
                Some(Event::Answer(family, answer)) => {
                    let addrs = answer.unwrap_or_default();
                    match family {
                        Family::V6 => he.handle_aaaa(now(), addrs.into_iter().filter_map(|a| match a {
                            IpAddr::V6(a) => Some(a),
                            IpAddr::V4(_) => None,
                        }).collect::<Vec<Ipv6Addr>>()),
                        Family::V4 => he.handle_a(now(), addrs.into_iter().filter_map(|a| match a {
                            IpAddr::V4(a) => Some(a),
                            IpAddr::V6(_) => None,
                        }).collect()),
                    }
                }
                Some(Event::Attempt(id, Ok(stream))) => {
                    tasks.remove(&id);
                    let t = now();
                    record(&mut records, id, t, AttemptOutcome::Connected);
                    streams.insert(id, stream);
                    he.handle_connected(t, id);
                }
                Some(Event::Attempt(id, Err(e))) => {
                    tasks.remove(&id);
                    let t = now();
                    record(&mut records, id, t, AttemptOutcome::Failed(e.to_string()));
                    he.handle_failed(t, id);
                }
                None => he.handle_timeout(now()),
            },
            _ = sleep_until(deadline) => he.handle_timeout(now()),
        }
    };
    for task in tasks.values() {
        task.abort();
    }
    for lookup in lookups {
        lookup.abort();
    }
    result.map(|mut c| {
        c.attempts = records.into_iter().map(|(_, r)| r).collect();
        c
    })
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// One attempt: a socket bound to the candidate's source, then connect.
async fn attempt(candidate: &Candidate) -> io::Result<TcpStream> {
    let socket = if candidate.addr.is_ipv6() {
        TcpSocket::new_v6()?
    } else {
        TcpSocket::new_v4()?
    };
    match &candidate.source {
        Source::Any => {}
        Source::Ip(ip) => socket.bind(SocketAddr::new(*ip, 0))?,
        Source::Device(name) => sockopt::bind_device(&socket, name)?,
    }
    socket.connect(candidate.addr).await
}
