//! First contact (OK.ru): how many round trips a cold client waits for
//! the first byte of its first answer. The talk's table: TCP+TLS 4-5
//! round trips, QUIC 2.5, its own UDP protocol 1. Five peers, one after
//! another through the lab's link, each a fresh client on fresh sockets
//! (`brisk_netbench::first_contact`): Brisk with the request in its first
//! flight and after its handshake, TLS 1.3 over kernel TCP (full
//! handshake), quinn 1-RTT and quinn 0-RTT resumption. The servers run in
//! the server's namespace for the whole experiment, the clients in the
//! client's.
//!
//! Times run from the client's connect call to the answer's first and
//! last byte, and are also given in multiples of the network's base round
//! trip, the unit of the talk's table.

use super::{Background, RecipeError, block_on_in, ms};
use crate::lab::Lab;
use brisk_netbench::first_contact::{self, Credentials, Peer, Ports, Servers};
use serde::Serialize;
use std::time::Duration;

/// The pause between two fetches, so each starts on an idle path.
const GAP: Duration = Duration::from_millis(200);

/// What to fetch, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstContactExperiment {
    pub peers: Vec<Peer>,
    /// The answer's length: 10 KB, a small API answer or page shell.
    pub answer_bytes: usize,
    /// The network's base round trip, the unit of the multiples.
    pub base_rtt: Duration,
}

impl FirstContactExperiment {
    /// Every peer, a 10 KB answer.
    pub fn new(base_rtt: Duration) -> FirstContactExperiment {
        FirstContactExperiment {
            peers: Peer::ALL.to_vec(),
            answer_bytes: 10_000,
            base_rtt,
        }
    }

    /// The longest a fetch may take: 20 round trips (quinn's 0-RTT fetch
    /// makes an untimed connection first) and 5 s for start-up.
    fn limit(&self) -> Duration {
        self.base_rtt * 20 + Duration::from_secs(5)
    }
}

/// One peer's fetch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerFetch {
    pub peer: Peer,
    pub label: String,
    pub first_byte_ms: f64,
    pub complete_ms: f64,
    /// The same in base round trips.
    pub first_byte_rtts: f64,
    pub complete_rtts: f64,
    /// quinn 0-RTT only: whether the server took the early data.
    pub early_accepted: Option<bool>,
    /// Why the fetch failed (its times are then NaN).
    pub error: Option<String>,
}

/// What one lab measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstContactOutcome {
    pub base_rtt_ms: f64,
    pub answer_bytes: usize,
    pub fetches: Vec<PeerFetch>,
}

impl FirstContactOutcome {
    /// `peer`'s fetch, if it was run.
    pub fn fetch(&self, peer: Peer) -> Option<&PeerFetch> {
        self.fetches.iter().find(|f| f.peer == peer)
    }
}

/// Starts the three servers in the server's namespace and runs each
/// peer's fetch in turn from the client's.
pub fn run(lab: &Lab, exp: &FirstContactExperiment) -> Result<FirstContactOutcome, RecipeError> {
    let credentials =
        Credentials::generate().map_err(|e| RecipeError::failed("first contact: keys", e))?;
    let ports = Ports::default();
    let target = credentials.target(lab.server_addr(), ports);
    let bind = lab.server_bind_addr();
    let answer_bytes = exp.answer_bytes;
    let _servers = Background::start(lab.server_ns(), "first-contact", move |ready| async move {
        match Servers::bind(bind, ports, credentials, answer_bytes).await {
            Ok(servers) => {
                ready.ok();
                servers.run().await;
            }
            Err(e) => ready.fail(e),
        }
    })?;
    let rtt_ms = ms(exp.base_rtt);
    let limit = exp.limit();
    let mut fetches = Vec::new();
    for &peer in &exp.peers {
        let target = target.clone();
        let result = block_on_in(lab.client_ns(), move || async move {
            first_contact::fetch(peer, &target, answer_bytes, limit).await
        })?;
        let fetch = match result {
            Ok(f) => PeerFetch {
                peer,
                label: peer.to_string(),
                first_byte_ms: ms(f.first_byte),
                complete_ms: ms(f.complete),
                first_byte_rtts: ms(f.first_byte) / rtt_ms,
                complete_rtts: ms(f.complete) / rtt_ms,
                early_accepted: f.early_accepted,
                error: None,
            },
            Err(e) => PeerFetch {
                peer,
                label: peer.to_string(),
                first_byte_ms: f64::NAN,
                complete_ms: f64::NAN,
                first_byte_rtts: f64::NAN,
                complete_rtts: f64::NAN,
                early_accepted: None,
                error: Some(e.to_string()),
            },
        };
        fetches.push(fetch);
        std::thread::sleep(GAP);
    }
    Ok(FirstContactOutcome {
        base_rtt_ms: rtt_ms,
        answer_bytes,
        fetches,
    })
}
