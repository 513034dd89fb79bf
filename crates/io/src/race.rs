//! Connecting over several local addresses at once, as Happy Eyeballs
//! (RFC 8305) races a server's addresses: a phone whose Wi-Fi is
//! associated but passes nothing should not wait out a handshake timeout
//! there before it tries cellular.
//!
//! Each path is an [`Endpoint`] of its own, bound to one local address
//! (one interface), in the order the caller prefers them. The first
//! path's handshake starts at once; each next one starts when the one
//! before it has had the attempt delay without connecting, or at once
//! when every attempt started so far failed (an ICMP error, say). The
//! first to connect wins; the others are closed at once and their
//! endpoints let go, so the server keeps nothing of them that its own
//! half-open and idle timeouts do not remove. The attempts are
//! independent connections: the transport core knows nothing of the race.

use crate::connection::Connection;
use crate::endpoint::Endpoint;
use crate::error::ConnectError;
use brisk_proto::crypto::KEY_LEN;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// When to start the next path's attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RacePolicy {
    /// How long an attempt has alone before the next path's starts.
    pub attempt_delay: Duration,
    /// Keep the best path that lost as the winner's standby
    /// ([`Endpoint::set_standby`], on a new port of the same address), so
    /// a later stall moves the connection there (with
    /// `TransportConfig::failover`).
    pub keep_standby: bool,
}

impl RacePolicy {
    /// RFC 8305's recommended connection attempt delay: a healthy path's
    /// handshake (one round trip) is almost always done well within it,
    /// and a user barely notices it when the first path is dead.
    pub const DEFAULT_ATTEMPT_DELAY: Duration = Duration::from_millis(250);
    /// The shortest and longest delays RFC 8305 allows.
    pub const MIN_ATTEMPT_DELAY: Duration = Duration::from_millis(100);
    pub const MAX_ATTEMPT_DELAY: Duration = Duration::from_secs(2);

    /// A policy for a first path whose handshake round trip is known to be
    /// about `rtt` (a previous connection's): twice that, at least the
    /// default 250 ms and at most 2 s, so a slow but healthy path is not
    /// raced for nothing.
    pub fn for_round_trip(rtt: Duration) -> RacePolicy {
        RacePolicy {
            attempt_delay: (2 * rtt).clamp(Self::DEFAULT_ATTEMPT_DELAY, Self::MAX_ATTEMPT_DELAY),
            ..RacePolicy::default()
        }
    }
}

impl Default for RacePolicy {
    fn default() -> Self {
        RacePolicy {
            attempt_delay: Self::DEFAULT_ATTEMPT_DELAY,
            keep_standby: true,
        }
    }
}

/// The winner of a race.
#[derive(Debug)]
pub struct Raced {
    /// The endpoint whose path connected first: keep it as long as the
    /// connection.
    pub endpoint: Endpoint,
    pub connection: Connection,
    /// Its place in the list the race was given (0: the preferred path).
    pub path: usize,
    /// Attempts started, the winner's included.
    pub attempts: usize,
    /// From the call to the winner's handshake done.
    pub elapsed: Duration,
}

impl Endpoint {
    /// Connects to the server at `addr` (static public key `server_key`)
    /// over each of `paths` (client endpoints, one per local address, the
    /// preferred first), starting each next attempt when the one before
    /// has had `policy.attempt_delay` without connecting or every attempt
    /// so far failed. Returns the first to connect; the other attempts are
    /// closed and their endpoints dropped. If all fail, the preferred
    /// path's error.
    pub async fn connect_racing(
        paths: Vec<Endpoint>,
        addr: SocketAddr,
        server_key: [u8; KEY_LEN],
        policy: RacePolicy,
    ) -> Result<Raced, ConnectError> {
        if paths.is_empty() {
            return Err(ConnectError::NoPaths { addr });
        }
        let began = Instant::now();
        let mut attempts = JoinSet::new();
        let mut errors: Vec<Option<ConnectError>> = vec![None; paths.len()];
        let mut started = 0;
        let mut running = 0;
        let mut next_at = began;
        let winner = loop {
            if started < paths.len() && (running == 0 || Instant::now() >= next_at) {
                let ep = paths[started].clone();
                let i = started;
                attempts.spawn(async move { (i, ep.connect(addr, server_key).await) });
                started += 1;
                running += 1;
                next_at = Instant::now() + policy.attempt_delay;
                continue;
            }
            let more = started < paths.len();
            tokio::select! {
                done = attempts.join_next() => match done {
                    Some(Ok((i, Ok(conn)))) => break Some((i, conn)),
                    Some(Ok((i, Err(e)))) => {
                        running -= 1;
                        errors[i] = Some(e);
                    }
                    // An attempt's task panicked or was cancelled: as failed.
                    Some(Err(_)) => running -= 1,
                    None => running = 0,
                },
                () = tokio::time::sleep_until(next_at), if more => {}
            }
            if running == 0 && started == paths.len() {
                break None;
            }
        };
        attempts.abort_all();
        let Some((path, connection)) = winner else {
            let first = errors.into_iter().flatten().next();
            return Err(first.unwrap_or(ConnectError::NoPaths { addr }));
        };
        let mut paths = paths;
        let endpoint = paths.remove(path);
        // The losers: whatever they started is closed (a peer that already
        // answered hears so), and their sockets go once it has drained.
        for ep in &paths {
            ep.close(0, b"another path connected first");
        }
        if policy.keep_standby
            && let Some(loser) = paths.first()
        {
            let standby = SocketAddr::new(loser.local_addr().ip(), 0);
            // Best effort: without it the connection still runs, only
            // without a path to fail over to.
            let _ = endpoint.set_standby(standby);
        }
        Ok(Raced {
            endpoint,
            connection,
            path,
            attempts: started,
            elapsed: began.elapsed(),
        })
    }
}
