//! A running lab: two namespaces, their TUN devices, and the router thread
//! between them. [`Lab`] is the guard that owns all of it.
//!
//! Teardown is the same whichever way a run ends: a normal finish, an
//! error, Ctrl-C or SIGTERM (the wait loops notice [`crate::signal`]), or a
//! panic (unwinding drops the guard). Dropping the lab stops the router,
//! which closes the TUN devices; then kills every process left in either
//! namespace and deletes both, which removes their addresses and routes;
//! then removes the run's registry entry. A SIGKILL skips all of that, so
//! the next start cleans up after it ([`crate::registry`]).

use crate::capture::Captures;
use crate::clock::Clock;
use crate::error::LiveError;
use crate::names::RunNames;
use crate::netns::Netns;
use crate::process::{Program, Streams};
use crate::registry::{self, Registration};
use crate::results::{self, LiveResults, RunFacts};
use crate::router::RouterCore;
use crate::router::event_loop::{self, LoopConfig, RouterOutcome};
use crate::topology::{self, Addressing, IpMode};
use crate::tun::Tun;
use crate::{signal, sys};
use brisk_sim::scenario::Scenario;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long to wait for a server command to start listening.
const SERVER_READY_WAIT: Duration = Duration::from_secs(3);

/// How to build a lab.
#[derive(Debug, Clone)]
pub struct LabConfig {
    pub scenario: Scenario,
    pub seed: u64,
    pub ip: IpMode,
    /// Write pcaps and the per-packet log here.
    pub out: Option<PathBuf>,
    pub router: LoopConfig,
    /// Where runs register (see [`registry`]).
    pub registry_dir: PathBuf,
}

impl LabConfig {
    /// The scenario's seed and family, default router settings, no output.
    pub fn new(scenario: Scenario) -> LabConfig {
        LabConfig {
            seed: scenario.seed,
            ip: match scenario.ip {
                brisk_sim::scenario::IpFamily::V4 => IpMode::V4,
                brisk_sim::scenario::IpFamily::V6 => IpMode::V6,
            },
            scenario,
            out: None,
            router: LoopConfig::default(),
            registry_dir: PathBuf::from(registry::RUN_DIR),
        }
    }
}

/// A lab that is up: namespaces configured and the router running.
pub struct Lab {
    // Dropped in this order after `Drop::drop` stops the router: the
    // namespaces, then the registry entry.
    /// `None` only after [`Lab::finish`] closed them.
    namespaces: Option<(Netns, Netns)>,
    _registration: Registration,
    names: RunNames,
    addressing: Addressing,
    scenario: Scenario,
    seed: u64,
    spin: Duration,
    clock: Clock,
    stop: Arc<AtomicBool>,
    router: Option<JoinHandle<RouterOutcome>>,
}

impl Lab {
    /// Cleans up after dead runs, then builds and starts a new lab.
    pub fn up(config: LabConfig) -> Result<Lab, LiveError> {
        if !sys::has_net_admin() {
            return Err(LiveError::NotPrivileged);
        }
        for c in [&config.scenario.link.down, &config.scenario.link.up] {
            c.validate().map_err(|e| LiveError::Config(e.to_string()))?;
        }
        let removed = registry::clean_stale(&config.registry_dir)?;
        if !removed.is_empty() {
            eprintln!(
                "brisk live: removed namespaces left by a killed run: {}",
                removed.join(", ")
            );
        }
        let names = RunNames::next();
        let registration = Registration::create(&config.registry_dir, &names)?;
        let client_ns = Netns::create(&names.client)?;
        let server_ns = Netns::create(&names.server)?;
        let addressing = Addressing::new(config.ip);
        let client_tun = Tun::create_in(&client_ns, &names.client)?;
        let server_tun = Tun::create_in(&server_ns, &names.server)?;
        topology::configure(
            &client_ns,
            client_tun.name(),
            addressing.client_v4,
            addressing.client_v6,
        )?;
        topology::configure(
            &server_ns,
            server_tun.name(),
            addressing.server_v4,
            addressing.server_v6,
        )?;
        let clock = Clock::start();
        let mut core = RouterCore::new(&config.scenario, config.seed, addressing);
        let capture = match &config.out {
            Some(dir) => {
                core.record_packets();
                Some(Captures::create(
                    dir,
                    config.scenario.capture.snaplen,
                    clock.unix_offset_nanos(),
                )?)
            }
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let loop_config = config.router;
        let router = std::thread::Builder::new()
            .name("brisk-router".into())
            .spawn(move || {
                event_loop::run(
                    core,
                    client_tun,
                    server_tun,
                    clock,
                    capture,
                    &flag,
                    loop_config,
                )
            })
            .map_err(LiveError::io("spawn the router thread"))?;
        Ok(Lab {
            namespaces: Some((client_ns, server_ns)),
            _registration: registration,
            names,
            addressing,
            seed: config.seed,
            spin: config.router.spin,
            scenario: config.scenario,
            clock,
            stop,
            router: Some(router),
        })
    }

    pub fn names(&self) -> &RunNames {
        &self.names
    }

    pub fn addressing(&self) -> &Addressing {
        &self.addressing
    }

    fn namespaces(&self) -> &(Netns, Netns) {
        // Only `finish` takes them, and it consumes the lab.
        self.namespaces
            .as_ref()
            .expect("namespaces live as long as the lab")
    }

    pub fn client_ns(&self) -> &Netns {
        &self.namespaces().0
    }

    pub fn server_ns(&self) -> &Netns {
        &self.namespaces().1
    }

    /// The server's address in the mode's family: what the server binds.
    pub fn server_bind_addr(&self) -> IpAddr {
        match (self.addressing.mode, self.addressing.server_v6) {
            (IpMode::V6, Some(a)) => a.into(),
            _ => topology::SERVER_V4.into(),
        }
    }

    /// The address the client dials to reach the server (its NAT64 form
    /// for an IPv6-only client).
    pub fn server_addr(&self) -> IpAddr {
        self.server_bind_addr()
    }

    pub fn client_addr(&self) -> IpAddr {
        self.addressing.client_addr()
    }

    /// Variables every program gets: `BRISK_SERVER` (the address to dial),
    /// `BRISK_CLIENT`, and each side's namespace name.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("BRISK_SERVER".into(), self.server_addr().to_string()),
            ("BRISK_CLIENT".into(), self.client_addr().to_string()),
            ("BRISK_SERVER_NS".into(), self.names.server.clone()),
            ("BRISK_CLIENT_NS".into(), self.names.client.clone()),
        ]
    }

    /// Turns classic ECN negotiation on (`tcp_ecn = 1`: request and accept)
    /// or off (0) for TCP in both namespaces.
    pub fn set_tcp_ecn(&self, on: bool) -> Result<(), LiveError> {
        let v = if on { "1" } else { "0" };
        self.client_ns().sysctl("ipv4.tcp_ecn", v)?;
        self.server_ns().sysctl("ipv4.tcp_ecn", v)
    }

    /// Starts `command` in the server's namespace and waits (up to 3 s)
    /// until something listens there.
    pub fn spawn_server(&self, command: &str, streams: Streams) -> Result<Program, LiveError> {
        let mut env = self.env();
        env[0].1 = self.server_bind_addr().to_string();
        let p = Program::spawn(self.server_ns(), "server", command, &env, streams)?;
        self.wait_listening(SERVER_READY_WAIT)?;
        Ok(p)
    }

    /// Starts `command` in the client's namespace.
    pub fn spawn_client(&self, command: &str, streams: Streams) -> Result<Program, LiveError> {
        Program::spawn(self.client_ns(), "client", command, &self.env(), streams)
    }

    /// Waits until the server's namespace has a listening TCP socket or a
    /// bound UDP socket, or `limit` passes.
    fn wait_listening(&self, limit: Duration) -> Result<bool, LiveError> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let listening = self.server_ns().run(|| {
                ["tcp", "tcp6", "udp", "udp6"].iter().any(|t| {
                    std::fs::read_to_string(format!("/proc/thread-self/net/{t}"))
                        .map(|s| has_listener(&s, t.starts_with("tcp")))
                        .unwrap_or(false)
                })
            })?;
            if listening || std::time::Instant::now() >= deadline {
                return Ok(listening);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for `program` to exit, or for a stop signal, or for the router
    /// to fail, or for `limit`. Returns its exit status, or `None` if it was
    /// stopped.
    pub fn wait(
        &self,
        program: &mut Program,
        limit: Option<Duration>,
        interactive: bool,
    ) -> Result<Option<ExitStatus>, LiveError> {
        let started = std::time::Instant::now();
        loop {
            if let Some(s) = program.try_wait()? {
                return Ok(Some(s));
            }
            match signal::received() {
                Some(libc::SIGINT) if interactive => signal::clear(libc::SIGINT),
                Some(_) => return Ok(None),
                None => {}
            }
            if self.router.as_ref().is_none_or(|r| r.is_finished()) {
                return Err(LiveError::Router("the router thread ended early".into()));
            }
            if limit.is_some_and(|l| started.elapsed() >= l) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Datagrams the kernel dropped at both TUN devices (the router did not
    /// read them in time).
    fn tun_drops(&self) -> u64 {
        [
            (self.client_ns(), &self.names.client),
            (self.server_ns(), &self.names.server),
        ]
        .into_iter()
        .map(|(ns, dev)| {
            ns.ip(&["-s", "-j", "link", "show", "dev", dev])
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v[0]["stats64"]["tx"]["dropped"].as_u64())
                .unwrap_or(0)
        })
        .sum()
    }

    fn stop_router(&mut self) -> Option<std::thread::Result<RouterOutcome>> {
        self.stop.store(true, Ordering::Relaxed);
        self.router.take().map(JoinHandle::join)
    }

    /// Stops the router, builds the results, and tears the lab down.
    pub fn finish(
        mut self,
        client_exit_code: Option<i32>,
        bulk: Option<crate::bulk::BulkReport>,
    ) -> Result<LiveResults, LiveError> {
        let tun_drops = self.tun_drops();
        let duration = self.clock.now().since_epoch();
        let outcome = match self.stop_router() {
            Some(Ok(o)) => o,
            Some(Err(_)) => return Err(LiveError::Router("the router thread panicked".into())),
            None => return Err(LiveError::Router("the router was already stopped".into())),
        };
        if let Some(Err(e)) = &outcome.capture {
            return Err(LiveError::Router(format!("captures: {e}")));
        }
        let facts = RunFacts {
            duration,
            tun_drops,
            client_exit_code,
            bulk,
            spin: self.spin,
            ip: self.addressing.mode.name(),
        };
        let results = results::build(&self.scenario, self.seed, &outcome, facts);
        self.teardown()?;
        Ok(results)
    }

    /// Deletes both namespaces now, reporting the first failure.
    fn teardown(mut self) -> Result<(), LiveError> {
        let _ = self.stop_router();
        match self.namespaces.take() {
            Some((client, server)) => {
                let a = client.close();
                let b = server.close();
                a.and(b)
            }
            None => Ok(()),
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.stop_router();
    }
}

/// Whether a /proc/net/{tcp,udp}[6] table has a listening TCP socket
/// (state 0A) or any UDP socket.
fn has_listener(table: &str, tcp: bool) -> bool {
    table.lines().skip(1).any(|l| {
        let state = l.split_whitespace().nth(3).unwrap_or("");
        !tcp || state == "0A"
    })
}
