//! `brisk optimize`: the transparent TCP optimizer as a bump in the wire
//! between two real interfaces, one toward the mobile clients (radio) and
//! one toward the servers (internet), as an operator would put it on a box.
//!
//! Every Ethernet frame read from one interface leaves by the other.
//! Frames that are not IP, and IP frames of clients outside the optimized
//! subscribers, pass byte for byte; the rest go through the sans-IO
//! optimizer (`brisk-optimizer`, unchanged), which decides per connection
//! (docs/OPTIMIZER.md, "On a box").
//!
//! Modules: [`settings`] flags and the TOML file; [`core`] the sans-IO
//! bridge (frames in, frames out, the Ethernet headers it learns);
//! [`counters`] what it counts and the lines it prints; [`packet_socket`]
//! AF_PACKET sockets and interface queries (the only `unsafe` here);
//! [`error`] what can go wrong. This file is the event loop between them.

pub mod core;
pub mod counters;
pub mod error;
pub mod packet_socket;
pub mod settings;

pub use self::core::BridgeCore;
pub use counters::Counters;
pub use error::BridgeError;
pub use settings::{BridgeSettings, Prefix};

use crate::clock::Clock;
use crate::sys;
use brisk_optimizer::{Side, Stats};
use brisk_time::Instant;
use counters::{bytes, report_line};
use packet_socket::{Feature, PacketSocket};
use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

/// Frames read from one interface before the other gets its turn.
const BATCH_FRAMES: usize = 64;
/// Largest frame read: a 64 KB datagram and its Ethernet and VLAN headers.
const RECV_BUFFER_BYTES: usize = 65_535 + 18;
/// Longest sleep between looks at the stop request when nothing is due.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// A bridge whose interfaces are checked and whose sockets are open.
#[derive(Debug)]
pub struct Bridge {
    settings: BridgeSettings,
    radio: PacketSocket,
    internet: PacketSocket,
    notes: Vec<String>,
}

/// What a bridge did, at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeSummary {
    /// From the start of [`Bridge::run`] to its end.
    pub elapsed: Duration,
    /// The bridge's own counters.
    pub counters: Counters,
    /// The optimizer's totals, when it ran.
    pub stats: Option<Stats>,
    /// Bytes still held undelivered when the bridge stopped (the drain
    /// limit ran out first).
    pub held_bytes_left: usize,
    /// The closing report, in words.
    pub text: String,
}

/// Checks one interface: it exists and is up. Returns its MTU.
fn check_interface(name: &str) -> Result<u32, BridgeError> {
    if packet_socket::interface_index(name).is_none() {
        return Err(BridgeError::NoSuchInterface(name.to_string()));
    }
    let (up, mtu) = packet_socket::interface_state(name)
        .map_err(BridgeError::io(format!("read the state of {name}")))?;
    if !up {
        return Err(BridgeError::InterfaceDown(name.to_string()));
    }
    Ok(mtu)
}

fn permission(what: String) -> impl FnOnce(io::Error) -> BridgeError {
    move |e| {
        if e.kind() == io::ErrorKind::PermissionDenied {
            BridgeError::NotPermitted
        } else {
            BridgeError::io(what)(e)
        }
    }
}

impl Bridge {
    /// Checks the settings and both interfaces (present, up, same MTU),
    /// turns off receive coalescing on them (it would hand over 64 KB
    /// frames no interface can send), and opens a raw socket on each.
    pub fn open(settings: &BridgeSettings) -> Result<Bridge, BridgeError> {
        settings.check().map_err(BridgeError::Settings)?;
        let radio_mtu = check_interface(&settings.radio)?;
        let internet_mtu = check_interface(&settings.internet)?;
        if radio_mtu != internet_mtu {
            return Err(BridgeError::MtuMismatch {
                radio: settings.radio.clone(),
                radio_mtu,
                internet: settings.internet.clone(),
                internet_mtu,
            });
        }
        let mut notes = Vec::new();
        let mut prepare = |name: &str| -> Result<PacketSocket, BridgeError> {
            match packet_socket::set_feature(name, Feature::ReceiveCoalescing, false) {
                Ok(Some(true)) => notes.push(format!(
                    "turned off receive coalescing (GRO) on {name}; `ethtool -K {name} gro on` restores it"
                )),
                Ok(_) => {}
                // Interfaces without the feature (EOPNOTSUPP) coalesce nothing.
                Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
                Err(e) => {
                    return Err(permission(format!(
                        "turn off receive coalescing on {name}"
                    ))(e));
                }
            }
            let index = packet_socket::interface_index(name)
                .ok_or_else(|| BridgeError::NoSuchInterface(name.to_string()))?;
            PacketSocket::open(index).map_err(permission(format!("open a raw socket on {name}")))
        };
        let radio = prepare(&settings.radio)?;
        let internet = prepare(&settings.internet)?;
        notes.push(format!(
            "bridging {} (radio) and {} (internet), MTU {radio_mtu} bytes, {}",
            settings.radio,
            settings.internet,
            match (&settings.optimizer, settings.subscribers.is_empty()) {
                (None, _) => "optimizer off".to_string(),
                (Some(_), true) => "optimizing every subscriber".to_string(),
                (Some(_), false) => format!(
                    "optimizing subscribers in {}",
                    settings
                        .subscribers
                        .iter()
                        .map(Prefix::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        ));
        Ok(Bridge {
            settings: settings.clone(),
            radio,
            internet,
            notes,
        })
    }

    /// What opening did and found, one line each, for the operator.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Bridges until `stop` returns true, then stops optimizing, delivers
    /// what is held (up to the drain limit) and returns the summary.
    /// `report` receives a line of counters every report interval, and
    /// warnings as they arise.
    pub fn run(
        self,
        stop: &dyn Fn() -> bool,
        report: &mut dyn FnMut(&str),
    ) -> Result<BridgeSummary, BridgeError> {
        // The optimizer's pacing wants its timers on time.
        let _ = sys::set_timer_slack(Duration::from_micros(1));
        let clock = Clock::start();
        let mut core = BridgeCore::new(clock.now(), &self.settings);
        let mut buf = vec![0u8; RECV_BUFFER_BYTES];
        let every = self.settings.report_every;
        let mut next_report = every.map(|d| Instant::ZERO + d);
        let mut stopping: Option<Instant> = None;
        let mut warned_too_large = false;
        loop {
            let now = clock.now();
            if stopping.is_none() && stop() {
                core.stop_all();
                stopping = Some(now + self.settings.drain_limit);
                report(&format!(
                    "stopping: delivering the {} held for clients (for at most {:.1} s)",
                    bytes(core.held_bytes() as u64),
                    self.settings.drain_limit.as_secs_f64()
                ));
            }
            if let Some(until) = stopping
                && (core.held_bytes() == 0 || now >= until)
            {
                break;
            }
            for (side, sock, name) in [
                (Side::Server, &self.internet, &self.settings.internet),
                (Side::Client, &self.radio, &self.settings.radio),
            ] {
                for _ in 0..BATCH_FRAMES {
                    match sock.recv(&mut buf) {
                        Ok(None) => break,
                        Ok(Some(n)) if n > buf.len() => {
                            core.counters_mut().dropped_too_large += 1;
                        }
                        Ok(Some(n)) => core.handle_frame(now, side, buf[..n].to_vec()),
                        Err(e) => return Err(lost(name, "read from")(e)),
                    }
                }
            }
            if core.poll_timeout() <= now {
                core.handle_timeout(now);
            }
            while let Some((toward, frame)) = core.poll_frame() {
                let (sock, name) = match toward {
                    Side::Client => (&self.radio, &self.settings.radio),
                    Side::Server => (&self.internet, &self.settings.internet),
                };
                let Err(e) = sock.send(&frame) else {
                    continue;
                };
                match e.raw_os_error() {
                    Some(libc::ENOBUFS | libc::EAGAIN) => {
                        core.counters_mut().dropped_queue_full += 1;
                    }
                    Some(libc::EMSGSIZE) => {
                        core.counters_mut().dropped_too_large += 1;
                        if !warned_too_large {
                            warned_too_large = true;
                            report(&format!(
                                "warning: a {}-byte frame is too large for {name}: turn off \
                                 coalescing and segmentation offloads on both interfaces and on \
                                 directly attached virtual hosts (ethtool -K DEV gro off lro off tso off gso off)",
                                frame.len()
                            ));
                        }
                    }
                    _ => return Err(lost(name, "send on")(e)),
                }
            }
            let now = clock.now();
            if let (Some(at), Some(every)) = (next_report, every)
                && now >= at
            {
                report(&report_line(
                    now.saturating_duration_since(Instant::ZERO),
                    core.counters(),
                    core.optimizer_view().as_ref(),
                ));
                next_report = Some((at + every).max(now));
            }
            let mut due = core.poll_timeout().min(now + STOP_CHECK);
            for t in [next_report, stopping].into_iter().flatten() {
                due = due.min(t);
            }
            let wait = due.saturating_duration_since(now);
            if !wait.is_zero() {
                sys::wait_readable([self.radio.as_fd(), self.internet.as_fd()], Some(wait))
                    .map_err(BridgeError::io("wait for frames"))?;
            }
        }
        let elapsed = clock.now().saturating_duration_since(Instant::ZERO);
        let mut text = format!(
            "summary: {}",
            report_line(elapsed, core.counters(), core.optimizer_view().as_ref())
        );
        if core.held_bytes() > 0 {
            text.push_str(&format!(
                "; {} acknowledged to servers was still undelivered at exit",
                bytes(core.held_bytes() as u64)
            ));
        }
        Ok(BridgeSummary {
            elapsed,
            counters: core.counters().clone(),
            stats: core.optimizer_view().map(|v| v.stats.clone()),
            held_bytes_left: core.held_bytes(),
            text,
        })
    }
}

/// An error on an interface's socket: the interface gone or down, or
/// another I/O error.
fn lost<'a>(name: &'a str, doing: &'a str) -> impl FnOnce(io::Error) -> BridgeError + 'a {
    move |e| match e.raw_os_error() {
        Some(libc::ENETDOWN | libc::ENXIO | libc::ENODEV) => {
            BridgeError::InterfaceLost(name.to_string())
        }
        _ => BridgeError::io(format!("{doing} {name}"))(e),
    }
}
