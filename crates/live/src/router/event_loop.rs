//! The real-time driver: one thread, both TUN devices, one clock.
//!
//! Each turn reads what both devices have (a bounded burst each, so a
//! flood cannot starve the timers), advances the models when their next
//! deadline has passed, and writes what they delivered. It then sleeps in
//! `ppoll` (nanosecond timeout, timer slack set to 1 ns) until a device is
//! readable or until `spin` before the next deadline, and busy-polls the
//! devices for that last stretch so a delivery is not late by a wake-up's
//! latency. How late each deadline was handled and each packet written is
//! measured, never assumed.

use super::core::{RouterCore, Side};
use crate::capture::Captures;
use crate::clock::Clock;
use crate::sys;
use crate::tun::{MAX_DATAGRAM_BYTES, Tun};
use brisk_trace::stats::LatencySummary;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Longest sleep without checking the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Real-time priority of the router thread (of 1..99; below the kernel's
/// own threaded interrupts at 50).
const RT_PRIORITY: i32 = 40;

/// How the loop runs.
#[derive(Debug, Clone, Copy)]
pub struct LoopConfig {
    /// Busy-poll this long before each deadline instead of sleeping.
    pub spin: Duration,
    /// Ask for SCHED_FIFO so a loaded machine delays the router less.
    pub realtime: bool,
    /// Datagrams read from one device per turn at most.
    pub burst: usize,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            spin: Duration::from_micros(50),
            realtime: true,
            burst: 64,
        }
    }
}

/// What the loop measured about itself.
#[derive(Debug, Clone, Default)]
pub struct LoopStats {
    /// How late each model deadline was handled.
    pub timer_lateness: LatencySummary,
    /// Times the thread slept and woke.
    pub wakeups: u64,
    /// Deadlines handled.
    pub timer_fires: u64,
    /// Datagrams read from the client's and the server's device.
    pub read_packets: [u64; 2],
    pub read_errors: u64,
    /// Datagrams the kernel refused to take from the router.
    pub write_errors: u64,
    /// Whether SCHED_FIFO was granted.
    pub realtime: bool,
    /// CPU time the router thread used.
    pub cpu: Duration,
    /// Largest burst read from one device in one turn (a full burst means
    /// datagrams were waiting: the router was behind).
    pub max_burst: usize,
    /// Turns in which a device still had datagrams after a full burst.
    pub full_bursts: u64,
}

/// The router's end state.
pub struct RouterOutcome {
    pub core: RouterCore,
    pub stats: LoopStats,
    /// The result of flushing the captures, if any were written.
    pub capture: Option<Result<(), crate::error::LiveError>>,
}

/// Runs the router until `stop` is set.
pub fn run(
    mut core: RouterCore,
    client: Tun,
    server: Tun,
    clock: Clock,
    mut capture: Option<Captures>,
    stop: &AtomicBool,
    config: LoopConfig,
) -> RouterOutcome {
    let mut stats = LoopStats {
        realtime: config.realtime && sys::set_realtime_priority(RT_PRIORITY),
        ..LoopStats::default()
    };
    let _ = sys::set_timer_slack(Duration::from_nanos(1));
    let cpu_start = sys::thread_cpu_time();
    let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
    let mut ready = [true, true];
    let burst = config.burst.max(1);
    while !stop.load(Ordering::Relaxed) {
        for (i, side, tun) in [(0, Side::Client, &client), (1, Side::Server, &server)] {
            if !ready[i] {
                continue;
            }
            let mut n = 0;
            while n < burst {
                match tun.recv(&mut buf) {
                    Ok(Some(len)) => {
                        let now = clock.now();
                        let datagram = &buf[..len];
                        if let Some(c) = &mut capture {
                            c.packet(side, now, datagram);
                        }
                        core.handle_datagram(now, side, datagram.to_vec());
                        n += 1;
                    }
                    Ok(None) => break,
                    Err(_) => {
                        stats.read_errors += 1;
                        break;
                    }
                }
            }
            stats.read_packets[i] += n as u64;
            stats.max_burst = stats.max_burst.max(n);
            if n == burst {
                stats.full_bursts += 1;
            }
        }
        let now = clock.now();
        if let Some(due) = core.poll_timeout().filter(|t| *t <= now) {
            stats.timer_lateness.record(now - due);
            stats.timer_fires += 1;
            core.handle_timeout(now);
        }
        while let Some(t) = core.poll_transmit() {
            let tun = match t.to {
                Side::Client => &client,
                Side::Server => &server,
            };
            match tun.send(&t.packet.data) {
                Ok(()) => {
                    let written = clock.now();
                    if let Some(c) = &mut capture {
                        c.packet(t.to, written, &t.packet.data);
                    }
                    core.on_written(written, &t);
                }
                Err(_) => stats.write_errors += 1,
            }
        }
        if let Some(c) = &mut capture {
            while let Some(r) = core.poll_record() {
                c.record(&r);
            }
        }
        let now = clock.now();
        let wait = match core.poll_timeout() {
            None => IDLE_WAIT,
            Some(t) => {
                let left = t.saturating_duration_since(now);
                if left <= config.spin {
                    // Busy-poll: read both devices again right away.
                    ready = [true, true];
                    continue;
                }
                (left - config.spin).min(IDLE_WAIT)
            }
        };
        stats.wakeups += 1;
        ready = sys::wait_readable([client.as_fd(), server.as_fd()], Some(wait))
            .unwrap_or([true, true]);
    }
    stats.cpu = sys::thread_cpu_time().saturating_sub(cpu_start);
    RouterOutcome {
        core,
        stats,
        capture: capture.map(Captures::finish),
    }
}
