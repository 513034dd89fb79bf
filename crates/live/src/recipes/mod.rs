//! Before/after proofs of `brisk-tcp`'s recipes with real kernel TCP: each
//! experiment runs the library's client and server on threads inside a
//! running [`Lab`]'s namespaces (sockets belong to the namespace of the
//! thread that made them), through the router's link and queue models,
//! once without the recipe and once with it, and returns the numbers.
//!
//! - [`lowat`]: `TCP_NOTSENT_LOWAT` on an interactive stream behind a bulk
//!   one (WWDC 2015: 120 KB of send buffer at 50 KB/s is about 2.5 s).
//! - [`write_sizing`]: H2O's `TCP_INFO` write sizing at 250 ms RTT (a small
//!   urgent response behind a large one: 511 ms -> 250 ms).
//! - [`fastopen`]: TCP Fast Open saving a round trip on repeat connections.
//! - [`happy_eyeballs`]: racing (RFC 8305) past a blackholed IPv6 path
//!   against IPv6-first sequential connecting.
//! - [`nat64`]: an IPv4 literal on the IPv6-only network, with and without
//!   local synthesis (RFC 7050 discovery, RFC 6052 embedding).
//!
//! And Brisk itself on real UDP sockets (`brisk-io`) beside kernel TCP:
//! - [`brisk_bulk`]: a Brisk bulk download with any of its controllers;
//!   [`steady_bulk`] runs one in a lab of its own and measures its second
//!   half as the simulator does;
//! - [`brisk_fetch`]: Brisk downloads of fixed sizes on fresh
//!   connections, with forward error correction on or off;
//! - [`l4s`]: Prague and kernel CUBIC sharing a DualPI2 (or FIFO)
//!   bottleneck at once (WWDC 2023);
//! - [`loss`]: goodput under random loss, kernel TCP and Brisk one at a
//!   time (OK.ru's "TCP is dead" table);
//! - [`lossy_objects`]: 10, 50 and 200 KB objects and bulk on a lossy
//!   mobile path, kernel TCP beside Brisk with and without FEC;
//! - [`first_contact`]: a cold client's first answer, Brisk with and
//!   without early data beside TLS 1.3 over TCP and quinn 1-RTT and 0-RTT
//!   (OK.ru's 4-5 / 2.5 / 1 round trips);
//! - [`transfer`]: a fixed-size download checked by SHA-256, for the
//!   fault matrix;
//! - [`two_path`]: a phone with Wi-Fi (the router's path) and cellular (a
//!   second interface) downloading when its Wi-Fi stalls: Brisk failing
//!   over by itself beside kernel TCP with Happy Eyeballs and an app's
//!   read timeout (WWDC 2015).
//! - [`pantheon`]: one scheme (kernel TCP or Brisk, any controller)
//!   downloading over a path in a lab of its own, for Pantheon-style
//!   comparisons (`brisk sweep --live`).
//!
//! And kernel TCP alone: [`sized_tcp`], downloads of fixed sizes with the
//! server's initial window and retransmission counters, for the mobile
//! optimizer's section.
//!
//! Everything measured is wall-clock time on the real network stack, so
//! the numbers vary a little from run to run; callers compare them with
//! margins, never for equality.

pub mod brisk_bulk;
pub mod brisk_fetch;
pub mod fastopen;
pub mod first_contact;
pub mod happy_eyeballs;
pub mod l4s;
pub mod loss;
pub mod lossy_objects;
pub mod lowat;
pub mod nat64;
pub mod pantheon;
pub mod sized_tcp;
pub mod steady_bulk;
pub mod transfer;
pub mod two_path;
pub mod write_sizing;

use crate::error::LiveError;
use crate::lab::Lab;
use crate::netns::Netns;
use serde::Serialize;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// The port every experiment's server listens on.
pub const RECIPE_PORT: u16 = 8080;

/// How long a background server may take to bind.
const READY_WAIT: Duration = Duration::from_secs(5);

/// Why an experiment could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The kernel refuses something the experiment needs (a sysctl, a
    /// socket option): the experiment cannot show its effect here.
    #[error("unsupported here: {0}")]
    Unsupported(String),
    #[error("{what}: {message}")]
    Failed { what: String, message: String },
}

impl RecipeError {
    pub fn failed(what: impl Into<String>, message: impl ToString) -> RecipeError {
        RecipeError::Failed {
            what: what.into(),
            message: message.to_string(),
        }
    }
}

/// The server's socket address for an experiment in `lab`: what it binds.
pub fn server_bind(lab: &Lab) -> SocketAddr {
    SocketAddr::new(lab.server_bind_addr(), RECIPE_PORT)
}

/// Runs the future `make()` returns on a current-thread tokio runtime, on
/// a thread inside `ns`, and returns its output.
pub fn block_on_in<T, F, Fut>(ns: &Netns, make: F) -> Result<T, RecipeError>
where
    T: Send,
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = T>,
{
    let out = ns.run(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(make()))
    })?;
    out.map_err(|e| RecipeError::failed("start a tokio runtime", e))
}

/// What a background task reports once it is listening (or cannot).
pub struct Ready(mpsc::Sender<Result<(), String>>);

impl Ready {
    pub fn ok(&self) {
        let _ = self.0.send(Ok(()));
    }

    pub fn fail(&self, message: impl ToString) {
        let _ = self.0.send(Err(message.to_string()));
    }
}

/// A task running on its own thread inside a namespace until dropped
/// (typically a server).
pub struct Background {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), LiveError>>>,
}

impl Background {
    /// Starts `task` on a thread inside `ns` and waits until it calls
    /// [`Ready::ok`] (or fails, or 5 s pass).
    pub fn start<F, Fut>(ns: &Netns, name: &str, task: F) -> Result<Background, RecipeError>
    where
        F: FnOnce(Ready) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = ns.spawn(name, move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("tokio runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                tokio::select! {
                    _ = task(Ready(ready_tx)) => {}
                    _ = stop_rx => {}
                }
            });
        })?;
        let mut bg = Background {
            stop: Some(stop_tx),
            thread: Some(thread),
        };
        match ready_rx.recv_timeout(READY_WAIT) {
            Ok(Ok(())) => Ok(bg),
            Ok(Err(message)) => {
                bg.stop();
                Err(RecipeError::failed(format!("start {name}"), message))
            }
            Err(_) => {
                bg.stop();
                Err(RecipeError::failed(
                    format!("start {name}"),
                    "it neither started nor failed within 5 s",
                ))
            }
        }
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `brisk-tcp`'s experiment server in the lab's server namespace.
pub fn start_server(
    lab: &Lab,
    config: brisk_tcp::server::ServeConfig,
) -> Result<Background, RecipeError> {
    Background::start(lab.server_ns(), "recipe-server", move |ready| async move {
        match brisk_tcp::server::Server::bind(config).await {
            Ok(server) => {
                ready.ok();
                // A connection's error ends that connection only; the
                // client's own measurement reports what it saw.
                server.run(|_, _| {}).await;
            }
            Err(e) => ready.fail(e),
        }
    })
}

/// Sets `net.ipv4.tcp_fastopen` in both namespaces, or says why not.
pub fn set_fastopen(lab: &Lab, value: u32) -> Result<(), RecipeError> {
    for ns in [lab.client_ns(), lab.server_ns()] {
        ns.sysctl("ipv4.tcp_fastopen", &value.to_string())
            .map_err(|e| {
                RecipeError::Unsupported(format!(
                    "net.ipv4.tcp_fastopen cannot be set to {value} in {}: {e}",
                    ns.name()
                ))
            })?;
    }
    Ok(())
}

/// Percentiles of a few latency samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    /// Nearest-rank percentiles; NaN when there are no samples.
    pub fn of(samples_ms: &[f64]) -> Summary {
        let mut s: Vec<f64> = samples_ms
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        s.sort_by(f64::total_cmp);
        Summary {
            count: s.len(),
            p50_ms: quantile(&s, 0.5),
            p99_ms: quantile(&s, 0.99),
            max_ms: s.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// Nearest-rank quantile of sorted samples; NaN when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of a few samples; NaN when empty.
pub fn median(samples: &[f64]) -> f64 {
    Summary::of(samples).p50_ms
}

/// The constant rate of the network's down link (where downloads
/// queue), if it has one.
pub fn down_rate_bps(network: &brisk_netmodel::Network) -> Option<u64> {
    match network.link.down.rate {
        brisk_netmodel::RateModel::Constant { bps } => Some(bps),
        _ => None,
    }
}

/// Milliseconds in a duration.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0, f64::NAN]);
        assert_eq!(s.count, 5);
        assert_eq!(s.p50_ms, 3.0);
        assert_eq!(s.p99_ms, 5.0);
        assert_eq!(s.max_ms, 5.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&hundred, 0.99), 99.0);
        assert_eq!(quantile(&hundred, 0.5), 50.0);
        assert!(Summary::of(&[]).p50_ms.is_nan());
        assert_eq!(median(&[7.0, 1.0]), 1.0);
    }

    #[test]
    fn the_down_rate_is_read_from_the_scenario() {
        let parse = |toml: &str| brisk_netmodel::Network::parse(toml).unwrap();
        let s = parse("duration = \"1s\"\n[link.down]\nrate = \"1Mbit\"\n");
        assert_eq!(down_rate_bps(&s), Some(1_000_000));
        let s = parse(
            "duration = \"1s\"\n[link.down]\nrate = { schedule = [[\"0s\", \"1Mbit\"], [\"1s\", \"2Mbit\"]] }\n",
        );
        assert_eq!(down_rate_bps(&s), None);
    }
}
