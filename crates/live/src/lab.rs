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

use crate::capture::{BottleneckCapture, BottleneckPcap, Captures};
use crate::clock::Clock;
use crate::error::LiveError;
use crate::names::RunNames;
use crate::netns::{self, Netns};
use crate::process::{Program, Streams};
use crate::registry::{self, Registration};
use crate::results::{self, LiveResults, RunFacts};
use crate::router::event_loop::{self, LoopConfig, RouterOutcome};
use crate::router::nat64::Gateway;
use crate::router::resolver::{self, Resolver};
use crate::router::{Rebind, RouterCore};
use crate::topology::{self, Addressing, IpMode};
use crate::tun::Tun;
use crate::{signal, sys};
use brisk_nat64::Nat64Prefix;
use brisk_netmodel::Network;
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
    /// The scenario's name, for the results.
    pub name: String,
    /// The bottleneck's links and queues.
    pub network: Network,
    pub seed: u64,
    pub ip: IpMode,
    /// Bytes of each packet kept in pcaps (`[capture] snaplen`).
    pub snaplen: u32,
    /// Write pcaps and the per-packet log here.
    pub out: Option<PathBuf>,
    /// Keep the bottleneck's packets in memory as one pcap of at most this
    /// many bytes ([`BottleneckCapture`]), returned by
    /// [`Lab::finish_with_pcap`].
    pub bottleneck_capture_bytes: Option<usize>,
    pub router: LoopConfig,
    /// Where runs register (see [`registry`]).
    pub registry_dir: PathBuf,
    /// Change the client's NAT binding mid-run (see [`Rebind`]).
    pub rebind: Option<Rebind>,
    /// Run the transparent TCP optimizer at the server's end of the
    /// bottleneck (see `router::core`).
    pub optimizer: Option<brisk_optimizer::Config>,
}

impl LabConfig {
    /// A lab over `network` with a scenario file's defaults (seed 1,
    /// IPv4, 128-byte snapshots), default router settings, no output.
    pub fn new(network: Network) -> LabConfig {
        LabConfig {
            name: String::new(),
            network,
            seed: 1,
            ip: IpMode::V4,
            snaplen: 128,
            out: None,
            bottleneck_capture_bytes: None,
            router: LoopConfig::default(),
            registry_dir: PathBuf::from(registry::RUN_DIR),
            rebind: None,
            optimizer: None,
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
    /// What the client dials: the server's address, or its NAT64 form.
    server_target: IpAddr,
    /// The scenario's name, for the results.
    name: String,
    seed: u64,
    spin: Duration,
    clock: Clock,
    stop: Arc<AtomicBool>,
    /// Asks the router to switch its TCP optimizer off.
    stop_optimizing: Arc<AtomicBool>,
    router: Option<JoinHandle<RouterOutcome>>,
}

impl Lab {
    /// Cleans up after dead runs, then builds and starts a new lab.
    pub fn up(config: LabConfig) -> Result<Lab, LiveError> {
        if !sys::has_net_admin() {
            return Err(LiveError::NotPrivileged);
        }
        for c in [&config.network.link.down, &config.network.link.up] {
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
        let prefix = Nat64Prefix::WELL_KNOWN;
        let gateway = match config.ip {
            IpMode::V6Only => Some(Gateway::new(prefix).map_err(LiveError::Config)?),
            _ => None,
        };
        let resolver = Resolver::new(
            prefix,
            addrs(addressing.server_v4, addressing.server_v6),
            addrs(addressing.client_v4, addressing.client_v6),
        )
        .map_err(LiveError::Config)?;
        let client_dns = match addressing.client_v4 {
            Some(_) => IpAddr::V4(resolver::RESOLVER_V4),
            None => IpAddr::V6(resolver::RESOLVER_V6),
        };
        write_resolv_conf(&names.client, client_dns)?;
        write_resolv_conf(&names.server, IpAddr::V4(resolver::RESOLVER_V4))?;
        let server_target = match &gateway {
            Some(g) => IpAddr::V6(g.prefix().embed(topology::SERVER_V4)),
            None => server_bind_addr(&addressing),
        };
        let clock = Clock::start();
        let mut core = RouterCore::new(&config.network, config.seed, addressing, gateway, resolver);
        if let Some(r) = config.rebind {
            core.rebind_client(r);
        }
        if let Some(o) = config.optimizer.clone() {
            core.optimize(o);
        }
        if let Some(limit) = config.bottleneck_capture_bytes {
            core.capture_bottleneck(BottleneckCapture::new(
                config.snaplen,
                clock.unix_offset_nanos(),
                limit,
            )?);
        }
        let capture = match &config.out {
            Some(dir) => {
                core.record_packets();
                Some(Captures::create(
                    dir,
                    config.snaplen,
                    clock.unix_offset_nanos(),
                )?)
            }
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let stop_optimizing = Arc::new(AtomicBool::new(false));
        let optimizer_flag = stop_optimizing.clone();
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
                    &optimizer_flag,
                    loop_config,
                )
            })
            .map_err(LiveError::io("spawn the router thread"))?;
        Ok(Lab {
            namespaces: Some((client_ns, server_ns)),
            _registration: registration,
            names,
            addressing,
            server_target,
            seed: config.seed,
            spin: config.router.spin,
            name: config.name,
            clock,
            stop,
            stop_optimizing,
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

    /// Switches the router's TCP optimizer off mid-run, as an operator
    /// would before an upgrade: connections it optimizes get what it holds,
    /// then pass untouched. Returns at once; the router acts on its next
    /// turn. Nothing without an optimizer.
    pub fn stop_optimizing(&self) {
        self.stop_optimizing.store(true, Ordering::Relaxed);
    }

    pub fn client_ns(&self) -> &Netns {
        &self.namespaces().0
    }

    pub fn server_ns(&self) -> &Netns {
        &self.namespaces().1
    }

    /// The server's address in the mode's family: what the server binds.
    pub fn server_bind_addr(&self) -> IpAddr {
        server_bind_addr(&self.addressing)
    }

    /// The address the client dials to reach the server (its NAT64 form
    /// for an IPv6-only client).
    pub fn server_addr(&self) -> IpAddr {
        self.server_target
    }

    /// The run's zero (`brisk_time::Instant::ZERO`, the router's clock) in
    /// Unix nanoseconds: what the captures add to the router's times.
    pub fn unix_offset_nanos(&self) -> u64 {
        self.clock.unix_offset_nanos()
    }

    pub fn client_addr(&self) -> IpAddr {
        self.addressing.client_addr()
    }

    /// Variables every program gets: `BRISK_SERVER` (the address to dial),
    /// `BRISK_CLIENT`, `BRISK_SERVER_NAME` (a name the lab's resolver
    /// answers: the server's addresses, synthesized under the NAT64 prefix
    /// for an IPv6-only client), and each side's namespace name.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("BRISK_SERVER".into(), self.server_addr().to_string()),
            ("BRISK_CLIENT".into(), self.client_addr().to_string()),
            ("BRISK_SERVER_NAME".into(), resolver::SERVER_NAME.into()),
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
        let mut p = Program::spawn(self.server_ns(), "server", command, &env, streams)?;
        wait_listening(&mut p, self.server_ns(), SERVER_READY_WAIT)?;
        Ok(p)
    }

    /// Starts `command` in the client's namespace.
    pub fn spawn_client(&self, command: &str, streams: Streams) -> Result<Program, LiveError> {
        Program::spawn(self.client_ns(), "client", command, &self.env(), streams)
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
        self,
        client_exit_code: Option<i32>,
        bulk: Option<crate::bulk::BulkReport>,
    ) -> Result<LiveResults, LiveError> {
        self.finish_with_pcap(client_exit_code, bulk)
            .map(|(results, _)| results)
    }

    /// [`Lab::finish`], also returning the bottleneck capture when
    /// [`LabConfig::bottleneck_capture_bytes`] asked for one.
    pub fn finish_with_pcap(
        mut self,
        client_exit_code: Option<i32>,
        bulk: Option<crate::bulk::BulkReport>,
    ) -> Result<(LiveResults, Option<BottleneckPcap>), LiveError> {
        let tun_drops = self.tun_drops();
        let duration = self.clock.now().since_epoch();
        let mut outcome = match self.stop_router() {
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
        let results = results::build(&self.name, self.seed, &outcome, facts);
        let pcap = match outcome.core.take_bottleneck_capture() {
            Some(c) => Some(c.finish()?),
            None => None,
        };
        self.teardown()?;
        Ok((results, pcap))
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

fn server_bind_addr(a: &Addressing) -> IpAddr {
    match (a.mode, a.server_v6) {
        (IpMode::V6, Some(v6)) => v6.into(),
        _ => topology::SERVER_V4.into(),
    }
}

fn addrs(v4: Option<std::net::Ipv4Addr>, v6: Option<std::net::Ipv6Addr>) -> Vec<IpAddr> {
    v4.map(IpAddr::V4)
        .into_iter()
        .chain(v6.map(IpAddr::V6))
        .collect()
}

/// Points a namespace's resolver at the router's: `ip netns exec` mounts
/// `/etc/netns/NAME/resolv.conf` over `/etc/resolv.conf` for the programs
/// it starts. Removed with the namespace ([`netns::destroy`]).
fn write_resolv_conf(ns: &str, server: IpAddr) -> Result<(), LiveError> {
    let dir = std::path::Path::new(netns::ETC_NETNS_DIR).join(ns);
    std::fs::create_dir_all(&dir).map_err(LiveError::io(format!("create {}", dir.display())))?;
    let path = dir.join("resolv.conf");
    std::fs::write(
        &path,
        format!("nameserver {server}\noptions timeout:1 attempts:1\n"),
    )
    .map_err(LiveError::io(format!("write {}", path.display())))
}

/// Waits until `program` (which runs in the server's namespace) or anything
/// there listens, in the tables /proc/PID/net shows for that namespace: a
/// TCP socket in LISTEN, or an unconnected UDP socket that has stayed for
/// [`UDP_SETTLE`] (a resolver's socket is unconnected for a moment before
/// it connects). The tables are read only once the program has entered
/// `ns` (`ip netns exec` starts in the root namespace). Gives up after
/// `limit` or when the program exits.
fn wait_listening(program: &mut Program, ns: &Netns, limit: Duration) -> Result<bool, LiveError> {
    let started = std::time::Instant::now();
    let pid = program.pid();
    let mut udp_seen: std::collections::HashMap<String, std::time::Instant> = Default::default();
    loop {
        if !ns.holds(pid) {
            if started.elapsed() >= limit || program.try_wait()?.is_some() {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        let read = |t: &str| std::fs::read_to_string(format!("/proc/{pid}/net/{t}"));
        let tcp = ["tcp", "tcp6"]
            .iter()
            .any(|t| read(t).is_ok_and(|s| !listeners(&s, true).is_empty()));
        let now = std::time::Instant::now();
        let udp: Vec<String> = ["udp", "udp6"]
            .iter()
            .flat_map(|t| read(t).map(|s| listeners(&s, false)).unwrap_or_default())
            .collect();
        udp_seen.retain(|inode, _| udp.contains(inode));
        for inode in udp {
            udp_seen.entry(inode).or_insert(now);
        }
        let udp_ready = udp_seen.values().any(|t| now - *t >= UDP_SETTLE);
        if tcp || udp_ready {
            return Ok(true);
        }
        if started.elapsed() >= limit || program.try_wait()?.is_some() {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long an unconnected UDP socket must stay to count as a server's.
const UDP_SETTLE: Duration = Duration::from_millis(100);

/// The inodes of the listening sockets in a /proc/net/{tcp,udp}[6] table:
/// TCP sockets in LISTEN (state 0A), or unconnected UDP sockets (remote
/// port 0).
fn listeners(table: &str, tcp: bool) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (remote, state, inode) = (f.get(2)?, f.get(3)?, f.get(9)?);
            let listening = if tcp {
                *state == "0A"
            } else {
                remote.ends_with(":0000")
            };
            listening.then(|| inode.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_are_read_from_proc_net_tables() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100010A:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n\
   1: 0100010A:1F90 4000020A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4243 1\n";
        assert_eq!(listeners(tcp, true), vec!["4242".to_string()]);
        let udp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
  10: 0100010A:14B2 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 777 2\n\
  11: 0100010A:D431 3500350A:0035 01 00000000:00000000 00:00000000 00000000     0        0 778 2\n";
        assert_eq!(listeners(udp, false), vec!["777".to_string()]);
        assert!(listeners("header only\n", true).is_empty());
        assert!(listeners("h\n garbage\n", true).is_empty());
    }
}
