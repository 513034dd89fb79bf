//! Busy polling: when the endpoint task has nothing to do but a reply is
//! imminent, it polls the socket without blocking for a short, bounded
//! time instead of going to sleep.
//!
//! Why: on an idle machine a sleeping thread is woken by the kernel (and,
//! in a VM, the host must first schedule the idle vCPU): tens of
//! microseconds per wake-up, more than a loopback round trip. Linux's own
//! busy polling (`SO_BUSY_POLL`, `net.core.busy_poll`) spins on a NIC
//! queue and does nothing for loopback or for a user-space transport, so
//! the task spins itself, as DPDK and io_uring's SQPOLL do.
//!
//! The policy is adaptive so that it costs nothing where it cannot help:
//! - off when the setting is zero (the default is [`DEFAULT_BUSY_POLL`]);
//! - only while a connection has ack-eliciting data in flight and its
//!   application is waiting to read or to accept (a request/response
//!   exchange), never while an application writer has unsent data or
//!   waits for window (the bulk path: it has work, and wakes up for ACKs
//!   that arrive in trains anyway);
//! - only on a short path: its minimum RTT at most [`MIN_RTT_FACTOR`]
//!   times the setting (RTT samples include the peer's wake-up, which is
//!   what spinning on both ends removes, so a fast path may not yet show
//!   an RTT within the setting itself); for at most
//!   min(setting, 2 × smoothed RTT), cut short by the core's next timer;
//! - once per burst sent: a spin that found nothing is not repeated until
//!   the task has sent something again;
//! - only while the machine has a core to spare: the runnable threads
//!   (the fourth field of /proc/loadavg, this one included) must not
//!   outnumber the CPUs; read at most every [`LOAD_CHECK_INTERVAL`]. On a
//!   busy machine a spinning thread takes the core its peer (or anyone
//!   else) is queued for, and waking up is cheap there anyway, since no
//!   vCPU is idle;
//! - not where it does not pay: a spin during which the scheduler took the
//!   core away (an involuntary context switch of the thread) shows that
//!   another thread wanted it, and a spinning thread then delays the very
//!   peer it waits for; several spins in a row that found nothing show
//!   that answers take longer than the budget (a loaded machine, a peer
//!   that sleeps). Either pauses spinning for a back-off time that doubles
//!   each time (1 ms to 100 ms) and resets after a hit.

use std::time::Duration;

/// The spin limit a default [`crate::EndpointConfig`] uses: a loopback or
/// same-rack round trip, so the spin covers the answer it waits for. On an
/// idle 2-core VM it cut the netbench RPC p50 from 179 to 39 us and the
/// CPU per request from 164 to 91 us (a spin costs less than a wake-up).
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(50);

/// How often the machine's runnable count is read again.
pub const LOAD_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// Whether the machine has a core to spare, from /proc/loadavg, checked at
/// most every [`LOAD_CHECK_INTERVAL`]; spare if it cannot be read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LoadCheck {
    next_ns: u64,
    spare: bool,
}

impl LoadCheck {
    pub fn spare(&mut self, now_ns: u64) -> bool {
        if now_ns >= self.next_ns {
            let interval_ns = u64::try_from(LOAD_CHECK_INTERVAL.as_nanos()).unwrap_or(u64::MAX);
            self.next_ns = now_ns.saturating_add(interval_ns);
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            self.spare = std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|text| runnable(&text))
                .is_none_or(|running| core_to_spare(running, cpus));
        }
        self.spare
    }
}

/// The runnable scheduling entities in /proc/loadavg's text (the `R` of
/// its fourth field, `R/T`).
pub(crate) fn runnable(loadavg: &str) -> Option<usize> {
    let field = loadavg.split_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

/// Whether `runnable` threads (the caller among them) leave a core free
/// for a spinning one: no more of them than `cpus`.
pub(crate) fn core_to_spare(runnable: usize, cpus: usize) -> bool {
    runnable <= cpus
}

/// A path whose minimum RTT exceeds this many times the setting is never
/// waited for: its answers cannot come within a spin.
pub const MIN_RTT_FACTOR: u32 = 4;

/// Shortest and longest pause after spins that did not pay.
const MIN_BACKOFF: Duration = Duration::from_millis(1);
const MAX_BACKOFF: Duration = Duration::from_millis(100);
/// Spins in a row that found nothing before spinning pauses.
const MISSES_BEFORE_PAUSE: u32 = 4;

/// Pauses busy polling while the machine has no core to spare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// No spin before this time (monotonic ns).
    until_ns: u64,
    /// The current pause; zero after a hit.
    pause: Duration,
    /// Spins in a row that found nothing.
    misses: u32,
}

impl Backoff {
    /// Whether a spin may start at `now_ns`.
    pub fn allows(&self, now_ns: u64) -> bool {
        now_ns >= self.until_ns
    }

    /// Records a spin that ended at `now_ns`: `preempted` if the thread was
    /// switched out involuntarily meanwhile, `hit` if a datagram came.
    pub fn on_spin(&mut self, now_ns: u64, preempted: bool, hit: bool) {
        if hit && !preempted {
            self.pause = Duration::ZERO;
            self.misses = 0;
            return;
        }
        if !hit {
            self.misses += 1;
        }
        if preempted || self.misses >= MISSES_BEFORE_PAUSE {
            self.misses = 0;
            self.pause = (self.pause * 2).clamp(MIN_BACKOFF, MAX_BACKOFF);
            let pause_ns = u64::try_from(self.pause.as_nanos()).unwrap_or(u64::MAX);
            self.until_ns = now_ns.saturating_add(pause_ns);
        }
    }
}

/// What the endpoint knows when it is about to sleep, for one connection
/// that awaits a reply (the one with the smallest RTT, if several do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Awaiting {
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
}

/// What a connection looks like to the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ConnView {
    /// Ack-eliciting bytes not yet acknowledged.
    pub bytes_in_flight: u64,
    /// The application waits for stream data or a new stream.
    pub reader_waiting: bool,
    /// An application writer has unsent data queued or waits for window.
    pub writer_busy: bool,
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
}

impl ConnView {
    /// This connection expects an answer its application is waiting for.
    pub fn awaiting(&self) -> Option<Awaiting> {
        (self.bytes_in_flight > 0 && self.reader_waiting && !self.writer_busy).then_some(Awaiting {
            smoothed_rtt: self.smoothed_rtt,
            min_rtt: self.min_rtt,
        })
    }
}

/// The awaiting connection with the smallest smoothed RTT; `None` if any
/// connection is busy writing (the endpoint has bulk work) or none awaits.
pub(crate) fn awaiting(conns: impl IntoIterator<Item = ConnView>) -> Option<Awaiting> {
    let mut best: Option<Awaiting> = None;
    for c in conns {
        if c.writer_busy {
            return None;
        }
        if let Some(a) = c.awaiting()
            && best.is_none_or(|b| a.smoothed_rtt < b.smoothed_rtt)
        {
            best = Some(a);
        }
    }
    best
}

/// How long to spin before sleeping, or `None` not to spin.
///
/// `limit` is the configured setting; `until_timer` the time left until
/// the core's next deadline (the timer wakes the task then anyway);
/// `spun_out` whether the last spin found nothing and nothing was sent
/// since.
pub(crate) fn spin_budget(
    limit: Duration,
    awaiting: Option<Awaiting>,
    until_timer: Option<Duration>,
    spun_out: bool,
) -> Option<Duration> {
    if limit.is_zero() || spun_out {
        return None;
    }
    let a = awaiting?;
    // A long path will not answer within a spin.
    if a.min_rtt > limit.saturating_mul(MIN_RTT_FACTOR) {
        return None;
    }
    let mut budget = limit.min(a.smoothed_rtt.saturating_mul(2));
    if let Some(t) = until_timer {
        budget = budget.min(t);
    }
    (!budget.is_zero()).then_some(budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    fn rpc_client() -> ConnView {
        ConnView {
            bytes_in_flight: 600,
            reader_waiting: true,
            writer_busy: false,
            smoothed_rtt: 40 * US,
            min_rtt: 25 * US,
        }
    }

    fn awaiting_rpc() -> Option<Awaiting> {
        awaiting([rpc_client()])
    }

    #[test]
    fn spins_while_a_request_awaits_its_answer() {
        // Bounded by the setting and by twice the smoothed RTT.
        assert_eq!(
            spin_budget(50 * US, awaiting_rpc(), None, false),
            Some(50 * US)
        );
        assert_eq!(
            spin_budget(200 * US, awaiting_rpc(), None, false),
            Some(80 * US)
        );
        // The core's next timer cuts it short.
        assert_eq!(
            spin_budget(50 * US, awaiting_rpc(), Some(10 * US), false),
            Some(10 * US)
        );
    }

    #[test]
    fn never_spins_when_off_or_out() {
        assert_eq!(
            spin_budget(Duration::ZERO, awaiting_rpc(), None, false),
            None
        );
        // A spin found nothing and nothing was sent since.
        assert_eq!(spin_budget(50 * US, awaiting_rpc(), None, true), None);
        // A timer due now: handle it instead.
        assert_eq!(
            spin_budget(50 * US, awaiting_rpc(), Some(Duration::ZERO), false),
            None
        );
    }

    #[test]
    fn never_spins_with_nothing_in_flight() {
        let idle = ConnView {
            bytes_in_flight: 0,
            ..rpc_client()
        };
        assert_eq!(awaiting([idle]), None);
        assert_eq!(spin_budget(50 * US, awaiting([idle]), None, false), None);
        assert_eq!(awaiting([]), None);
    }

    #[test]
    fn never_spins_when_nobody_waits_to_read() {
        let unread = ConnView {
            reader_waiting: false,
            ..rpc_client()
        };
        assert_eq!(awaiting([unread]), None);
    }

    #[test]
    fn a_bulk_writer_with_work_never_spins() {
        let bulk = ConnView {
            writer_busy: true,
            ..rpc_client()
        };
        assert_eq!(awaiting([bulk]), None);
        // Nor does the endpoint while any of its connections is busy.
        assert_eq!(awaiting([rpc_client(), bulk]), None);
        assert_eq!(awaiting([bulk, rpc_client()]), None);
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_preempted_spin_backs_off_doubling_until_a_hit() {
        let mut b = Backoff::default();
        assert!(b.allows(0));
        // Hits never pause.
        b.on_spin(10 * MS, false, true);
        assert!(b.allows(10 * MS));
        // Preempted, even with a hit: 1 ms, then 2, then 4.
        b.on_spin(20 * MS, true, true);
        assert!(!b.allows(20 * MS) && !b.allows(21 * MS - 1) && b.allows(21 * MS));
        b.on_spin(30 * MS, true, false);
        assert!(!b.allows(32 * MS - 1) && b.allows(32 * MS));
        b.on_spin(40 * MS, true, false);
        assert!(!b.allows(44 * MS - 1) && b.allows(44 * MS));
        // Capped at 100 ms.
        for _ in 0..20 {
            b.on_spin(100 * MS, true, false);
        }
        assert!(!b.allows(200 * MS - 1) && b.allows(200 * MS));
        // A clean hit resets the pause to its shortest.
        b.on_spin(300 * MS, false, true);
        b.on_spin(400 * MS, true, false);
        assert!(!b.allows(401 * MS - 1) && b.allows(401 * MS));
    }

    #[test]
    fn load_is_read_from_proc_loadavg() {
        assert_eq!(runnable("0.52 0.58 0.59 2/467 12345\n"), Some(2));
        assert_eq!(runnable("7.90 8.08 9.02 11/603 99"), Some(11));
        assert_eq!(runnable("garbage"), None);
        assert_eq!(runnable("1 2 3 x/5 6"), None);
        // Two threads, spinning or answering, on two CPUs: room; a third
        // runnable one (a build) would wait behind a spinner.
        assert!(core_to_spare(1, 2) && core_to_spare(2, 2));
        assert!(!core_to_spare(3, 2) && !core_to_spare(9, 2));
        // The real file parses wherever it exists.
        if let Ok(text) = std::fs::read_to_string("/proc/loadavg") {
            assert!(runnable(&text).is_some_and(|n| n >= 1), "{text}");
        }
    }

    #[test]
    fn spins_that_keep_missing_pause() {
        let mut b = Backoff::default();
        for i in 0..MISSES_BEFORE_PAUSE - 1 {
            b.on_spin(u64::from(i) * MS, false, false);
            assert!(b.allows(u64::from(i) * MS));
        }
        b.on_spin(10 * MS, false, false);
        assert!(!b.allows(11 * MS - 1) && b.allows(11 * MS));
        // A hit between misses starts the count again.
        let mut b = Backoff::default();
        for i in 0..10 {
            b.on_spin(i * MS, false, i % 3 == 2);
            assert!(b.allows(i * MS), "spin {i}");
        }
    }

    #[test]
    fn a_slow_path_is_not_waited_for() {
        // A path that answered in 150 us (a sleeping peer had to wake up)
        // is still spun for: spinning may remove that wake-up.
        let sleepy = ConnView {
            smoothed_rtt: 180 * US,
            min_rtt: 150 * US,
            ..rpc_client()
        };
        assert_eq!(
            spin_budget(50 * US, awaiting([sleepy]), None, false),
            Some(50 * US)
        );
        // min RTT 2 ms: the answer cannot come within a 50 us spin.
        let far = ConnView {
            smoothed_rtt: 3 * Duration::from_millis(1),
            min_rtt: 2 * Duration::from_millis(1),
            ..rpc_client()
        };
        assert_eq!(spin_budget(50 * US, awaiting([far]), None, false), None);
        // A fast path beside it is.
        let both = awaiting([far, rpc_client()]);
        assert_eq!(both.map(|a| a.smoothed_rtt), Some(40 * US));
        assert_eq!(spin_budget(50 * US, both, None, false), Some(50 * US));
    }
}
