//! Happy Eyeballs past a blackholed IPv6 path (WWDC 2015, RFC 8305): the
//! server listens on both families, then its IPv6 address is removed from
//! its device, so SYNs to it still cross the router but the server's
//! kernel drops them without a word (it does not forward): a blackhole,
//! not a refusal. An IPv6-first client that tries addresses one at a time
//! waits out its connect timeout before trying IPv4; a racing client
//! starts IPv4 one attempt delay (250 ms) after IPv6 and connects then.

use super::{Background, RecipeError, block_on_in, ms, server_bind};
use crate::lab::Lab;
use brisk_tcp::connect::{self, AttemptOutcome, ConnectOptions, Nat64Policy};
use brisk_tcp::happy_eyeballs::Config;
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// How the client connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// RFC 8305 racing with this connection attempt delay.
    Racing { attempt_delay: Duration },
    /// IPv6 first, then IPv4, each with this connect timeout (the kernel's
    /// own gives up only after about two minutes of SYN retries).
    Sequential { per_address_timeout: Duration },
}

/// One attempt, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub addr: SocketAddr,
    pub started_ms: f64,
    pub ended_ms: Option<f64>,
    pub outcome: String,
}

/// What one connection measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeOutcome {
    pub strategy: Strategy,
    /// IPv6 handshake before the blackhole, as a control: the path works.
    pub control_v6_ms: f64,
    /// From the start to a connected socket.
    pub connect_ms: f64,
    pub winner: SocketAddr,
    pub attempts: Vec<Attempt>,
}

/// Connects once with `strategy` after blackholing the server's IPv6.
pub fn run(lab: &Lab, strategy: Strategy) -> Result<HeOutcome, RecipeError> {
    let v6 = lab.addressing().server_v6.ok_or_else(|| {
        RecipeError::failed("Happy Eyeballs", "the lab must be dual-stack (IP mode v4)")
    })?;
    let v4 = lab
        .addressing()
        .server_v4
        .ok_or_else(|| RecipeError::failed("Happy Eyeballs", "the server has no IPv4"))?;
    let port = server_bind(lab).port();
    let any = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port);
    let _server = Background::start(lab.server_ns(), "he-server", move |ready| async move {
        // [::] takes both families (IPv4 as mapped addresses).
        let listener = match TcpListener::bind(any).await {
            Ok(l) => l,
            Err(e) => return ready.fail(format!("bind {any}: {e}")),
        };
        ready.ok();
        let mut open = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            open.push(s);
        }
    })?;
    let v6_addr = SocketAddr::new(v6.into(), port);
    let v4_addr = SocketAddr::new(v4.into(), port);
    let control = block_on_in(lab.client_ns(), || async move {
        let t = Instant::now();
        tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(v6_addr))
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
        Ok::<f64, io::Error>(ms(t.elapsed()))
    })?
    .map_err(|e| RecipeError::failed("IPv6 control connection", e))?;
    lab.server_ns().ip(&[
        "-6",
        "addr",
        "del",
        &format!("{v6}/64"),
        "dev",
        &lab.names().server,
    ])?;
    let (connect_ms, winner, attempts) = match strategy {
        Strategy::Racing { attempt_delay } => {
            let config = Config::with_attempt_delay(attempt_delay)
                .map_err(|e| RecipeError::failed("attempt delay", e))?;
            let options = ConnectOptions {
                config,
                nat64: Nat64Policy::Off,
                ..ConnectOptions::default()
            };
            let addrs = [IpAddr::V6(v6), IpAddr::V4(v4)];
            let c = block_on_in(lab.client_ns(), || async {
                let t = Instant::now();
                connect::connect_addrs(&addrs, port, &options)
                    .await
                    .map(|c| (ms(t.elapsed()), c))
            })?
            .map_err(|e| RecipeError::failed("racing connect", e))?;
            let attempts =
                c.1.attempts
                    .iter()
                    .map(|a| Attempt {
                        addr: a.candidate.addr,
                        started_ms: a.started_ms,
                        ended_ms: a.ended_ms,
                        outcome: match &a.outcome {
                            AttemptOutcome::Failed(e) => format!("failed: {e}"),
                            other => format!("{other:?}").to_lowercase(),
                        },
                    })
                    .collect();
            (c.0, c.1.candidate.addr, attempts)
        }
        Strategy::Sequential {
            per_address_timeout,
        } => block_on_in(lab.client_ns(), || {
            sequential(v6_addr, v4_addr, per_address_timeout)
        })?
        .map_err(|e| RecipeError::failed("sequential connect", e))?,
    };
    Ok(HeOutcome {
        strategy,
        control_v6_ms: control,
        connect_ms,
        winner,
        attempts,
    })
}

/// Tries each address in turn, each for up to `limit`.
async fn sequential(
    first: SocketAddr,
    second: SocketAddr,
    limit: Duration,
) -> io::Result<(f64, SocketAddr, Vec<Attempt>)> {
    let start = Instant::now();
    let mut attempts = Vec::new();
    for addr in [first, second] {
        let started_ms = ms(start.elapsed());
        let result = tokio::time::timeout(limit, TcpStream::connect(addr)).await;
        let ended_ms = Some(ms(start.elapsed()));
        let outcome = match &result {
            Ok(Ok(_)) => "connected".to_string(),
            Ok(Err(e)) => format!("failed: {e}"),
            Err(_) => format!("timed out after {} ms", limit.as_millis()),
        };
        attempts.push(Attempt {
            addr,
            started_ms,
            ended_ms,
            outcome,
        });
        if let Ok(Ok(_)) = result {
            return Ok((ms(start.elapsed()), addr, attempts));
        }
    }
    Err(io::Error::other("no address connected"))
}
