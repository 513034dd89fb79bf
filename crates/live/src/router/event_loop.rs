//! The real-time driver: one thread, both TUN devices, one clock.
//!
//! Each turn reads what both devices have (a bounded burst each, so a
//! flood cannot starve the timers), advances the models when their next
//! deadline has passed, and writes what they delivered. It then sleeps in
//! `ppoll` (nanosecond timeout, timer slack set to 1 ns) until a device is
//! readable or until `spin` before the next deadline, and busy-polls the
//! devices for that last stretch so a delivery is not late by a wake-up's
//! latency. Busy-polling is capped at `spin_budget` of each 100 ms: at
//! high packet rates deadlines come every few tens of microseconds, and a
//! spinning real-time thread would take the core the endpoints' TCP stacks
//! need (on a 2-core machine that costs more throughput than the wake-up
//! latency it saves). How late each deadline was handled and each packet
//! written is measured, never assumed.

use super::core::{RouterCore, Side};
use crate::capture::Captures;
use crate::clock::Clock;
use crate::sys;
use crate::tun::{MAX_DATAGRAM_BYTES, Tun};
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Longest sleep without checking the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// The window the spin budget applies to.
const SPIN_WINDOW: Duration = Duration::from_millis(100);
/// Real-time priority of the router thread (of 1..99; below the kernel's
/// own threaded interrupts at 50).
const RT_PRIORITY: i32 = 40;

/// How the loop runs.
#[derive(Debug, Clone, Copy)]
pub struct LoopConfig {
    /// Busy-poll this long before each deadline instead of sleeping.
    pub spin: Duration,
    /// Most of the time spent busy-polling, as a fraction of wall time.
    pub spin_budget: f64,
    /// Ask for SCHED_FIFO so a loaded machine delays the router less.
    pub realtime: bool,
    /// Datagrams read from one device per turn at most.
    pub burst: usize,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            spin: Duration::from_micros(50),
            spin_budget: 0.1,
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
    /// Time spent busy-polling before deadlines.
    pub spinning: Duration,
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

/// Runs the router until `stop` is set; switches its TCP optimizer off
/// once `stop_optimizing` is set.
#[allow(clippy::too_many_arguments)]
pub fn run(
    mut core: RouterCore,
    client: Tun,
    server: Tun,
    clock: Clock,
    mut capture: Option<Captures>,
    stop: &AtomicBool,
    stop_optimizing: &AtomicBool,
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
    let mut spin = SpinBudget::new(config.spin_budget, clock.now());
    while !stop.load(Ordering::Relaxed) {
        if stop_optimizing.load(Ordering::Relaxed) && stop_optimizing.swap(false, Ordering::Relaxed)
        {
            core.stop_optimizing(clock.now());
        }
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
                if left.is_zero() || left <= config.spin && spin.allows(now) {
                    // Due, or busy-poll: read both devices again right away.
                    spin.turn(now, !left.is_zero());
                    ready = [true, true];
                    continue;
                }
                // Wake `spin` early to busy-poll the rest, unless the
                // deadline is that close already (and the budget is spent).
                match left.checked_sub(config.spin) {
                    Some(early) if !early.is_zero() => early,
                    _ => left,
                }
                .min(IDLE_WAIT)
            }
        };
        spin.turn(now, false);
        stats.wakeups += 1;
        ready = sys::wait_readable([client.as_fd(), server.as_fd()], Some(wait))
            .unwrap_or([true, true]);
    }
    stats.cpu = sys::thread_cpu_time().saturating_sub(cpu_start);
    stats.spinning = spin.total;
    RouterOutcome {
        core,
        stats,
        capture: capture.map(Captures::finish),
    }
}

/// Accounts busy-polling against its budget, per [`SPIN_WINDOW`].
struct SpinBudget {
    budget: f64,
    window_start: Instant,
    spent: Duration,
    /// Since when the loop has been spinning, if it is.
    since: Option<Instant>,
    total: Duration,
}

impl SpinBudget {
    fn new(budget: f64, now: Instant) -> SpinBudget {
        SpinBudget {
            budget: budget.clamp(0.0, 1.0),
            window_start: now,
            spent: Duration::ZERO,
            since: None,
            total: Duration::ZERO,
        }
    }

    /// Whether another turn of busy-polling fits the budget.
    fn allows(&mut self, now: Instant) -> bool {
        if now - self.window_start >= SPIN_WINDOW {
            self.window_start = now;
            self.spent = Duration::ZERO;
        }
        self.spent < SPIN_WINDOW.mul_f64(self.budget)
    }

    /// The loop ends a turn at `now`, spinning into the next one or not.
    fn turn(&mut self, now: Instant, spinning: bool) {
        if let Some(since) = self.since.take() {
            let d = now - since;
            self.spent += d;
            self.total += d;
        }
        if spinning {
            self.since = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_stops_at_its_budget_and_resumes_next_window() {
        let mut b = SpinBudget::new(0.1, Instant::ZERO);
        let mut t = Instant::ZERO;
        let mut spun = Duration::ZERO;
        // Try to spin continuously in 10 us turns for 50 ms.
        while t < Instant::from_millis(50) {
            if b.allows(t) {
                b.turn(t, true);
                spun += Duration::from_micros(10);
            } else {
                b.turn(t, false);
            }
            t += Duration::from_micros(10);
        }
        // 10% of a 100 ms window, give or take one turn.
        assert!(spun <= Duration::from_micros(10_010), "{spun:?}");
        assert!(spun >= Duration::from_micros(9_990), "{spun:?}");
        assert!(!b.allows(Instant::from_millis(99)));
        assert!(b.allows(Instant::from_millis(100)));
    }
}
