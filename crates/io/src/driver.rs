//! The endpoint task: one future per socket that feeds received datagrams
//! and expired timers to the sans-IO endpoint, sends what it returns, and
//! sleeps until the socket, the timer or an application handle wakes it.
//!
//! One turn: receive a batch (the ECN codepoint goes with each datagram),
//! fire due timers, move events to waiting tasks, pull datagrams from the
//! core into the send queue (the core's pacer decides when it has more),
//! flush the queue, then arm the timer at the core's next deadline. The
//! timer is a `timerfd` with microsecond precision, so pacing at the core's
//! 250 µs bursts is honoured.
//!
//! Before sleeping, the task may busy-poll its socket for a bounded time
//! when a reply is imminent ([`crate::busy_poll`]).
//!
//! Socket errors (sorted by [`crate::socket_error`]): transient ones and
//! peers' are counted and survived; each error-queue entry is applied to
//! the connections of the address it names (a handshake whose own
//! datagram drew it fails at once; a "too big" hands the path MTU it
//! reports to the connections' path MTU discovery). The queue is read at most [`MAX_ERRORS_PER_TURN`] entries a
//! turn, so a flood of ICMP errors cannot starve the datagrams behind it,
//! and also while idle (the socket's `POLLERR`). Only a broken socket or
//! timer ends the task, with an [`EndpointError`] the handles report.

use crate::busy_poll;
use crate::connected::ConnectedSockets;
use crate::error::EndpointError;
use crate::socket::{DatagramError, Socket};
use crate::socket_error::{MAX_ERRORS_PER_TURN, ReportKind};
use crate::state::{MAX_KEPT_HANDLES, MAX_QUEUED_DATAGRAMS, Shared, State};
use crate::sys::{self, TimerFd};
use brisk_proto::ConnState;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// Turns before the task yields to others even when there is more work.
const MAX_TURNS: usize = 64;
/// Receive calls on the listening socket per turn at most: batches while
/// each comes back full (a call that only collected a pending error, which
/// the kernel reports ahead of any datagram, counts too). Under a flood of
/// forged Initials each costs the core only its parsing (a source past its
/// Retry share gets nothing), so the task can take 512 a turn and still
/// serve established connections every fraction of a millisecond; at one
/// batch a turn the kernel dropped about half of what reached the
/// listening socket, a newcomer's Initials among the forgeries.
const LISTEN_CALLS_PER_TURN: usize = 16;
/// Times woken readers may run first before the task pulls regardless: a
/// response that arrives in two pieces wakes its reader twice, and a
/// reader woken through another task (a server's accept loop that spawns
/// a task per stream) runs only after one more yield; its ACK should still
/// leave with the reader's answer. A bound, so a busy receiver still
/// sends its ACKs.
const MAX_DEFERRALS_PER_PULL: u8 = 2;

pub(crate) struct Driver {
    shared: Arc<Shared>,
    socket: Socket,
    timer: AsyncFd<TimerFd>,
    /// The deadline the timer is armed at (monotonic ns), 0 if disarmed.
    armed_ns: u64,
    /// Times woken readers were let run first since the last pull.
    deferrals: u8,
    /// The yield in progress while readers run first.
    yielding: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// The busy-poll limit (zero: never spin).
    busy_poll: Duration,
    /// `datagrams_sent` when a busy poll last found nothing: no new spin
    /// until something more was sent.
    spun_out_at: Option<u64>,
    /// Pauses busy polling after spins the scheduler interrupted.
    backoff: busy_poll::Backoff,
    /// Whether the machine has a core to spare for spinning.
    load: busy_poll::LoadCheck,
    /// A server's per-connection sockets, read before the listening one.
    connected: Option<ConnectedSockets>,
    /// Connections whose datagrams came through the listening socket in
    /// this turn while they have (or may get) a socket of their own.
    looks: Vec<brisk_proto::ConnectionHandle>,
    /// Reused list of detached connections to visit in a turn.
    order: Vec<brisk_proto::ConnectionHandle>,
}

impl Driver {
    pub fn new(
        shared: Arc<Shared>,
        socket: Socket,
        busy_poll: Duration,
        connected: Option<ConnectedSockets>,
    ) -> io::Result<Driver> {
        Ok(Driver {
            shared,
            socket,
            timer: TimerFd::registered()?,
            armed_ns: 0,
            deferrals: 0,
            yielding: None,
            busy_poll,
            spun_out_at: None,
            backoff: busy_poll::Backoff::default(),
            load: busy_poll::LoadCheck::default(),
            connected,
            looks: Vec::new(),
            order: Vec::new(),
        })
    }

    /// Reads the error queue (bounded) if it may hold entries, then the
    /// connections' own sockets that hold datagrams, then the listening
    /// socket, up to [`LISTEN_CALLS_PER_TURN`] batches; true if anything
    /// was read.
    ///
    /// Established connections come first and the listening socket gets
    /// a bounded share of each turn: under a flood of new or forged
    /// handshakes what exceeds it waits in (and overflows from) the
    /// listening socket's buffer, dropped by the kernel at no cost to this
    /// task, while established traffic keeps its own buffers and is
    /// served every turn.
    fn receive(&mut self, cx: &mut Context<'_>, st: &mut State) -> Result<bool, EndpointError> {
        let mut any = false;
        if self.socket.errors_pending() {
            self.socket
                .drain_errors(MAX_ERRORS_PER_TURN, |e| apply_report(st, &e));
            any = true;
        }
        let mut own = false;
        if let Some(connected) = self.connected.as_mut() {
            let now = st.now();
            let mut errors = Vec::new();
            own = connected
                .receive(
                    cx,
                    &mut self.socket,
                    |from, ecn, data| st.deliver(now, from, ecn, data),
                    &mut errors,
                    &mut self.looks,
                )
                .map_err(|e| EndpointError::new("receive", &e))?;
            any |= own;
            for e in &errors {
                apply_report(st, e);
            }
        }
        let now = st.now();
        let (connected, looks) = (&self.connected, &mut self.looks);
        let mut deliver = |from, ecn, data: &[u8]| {
            let routed = st.deliver(now, from, ecn, data);
            if let (Some(h), Some(connected)) = (routed, connected)
                && looks.last() != Some(&h)
                && connected.wants_look(h, from)
            {
                looks.push(h);
            }
        };
        // Kept busy by its connections' own sockets, the task polls
        // tokio's reactor rarely, so the reactor may not know yet that the
        // listening socket holds datagrams: then the socket itself is
        // asked, so new clients are not left waiting for the reactor.
        let mut ask_reactor = true;
        let mut calls = 0;
        while calls < LISTEN_CALLS_PER_TURN {
            calls += 1;
            let got = if ask_reactor {
                match self.socket.poll_recv(cx, &mut deliver) {
                    Poll::Ready(Ok(got)) => {
                        any = true;
                        got
                    }
                    Poll::Ready(Err(e)) => return Err(EndpointError::new("receive", &e)),
                    Poll::Pending if own && calls == 1 => {
                        ask_reactor = false;
                        continue;
                    }
                    Poll::Pending => break,
                }
            } else {
                let got = self
                    .socket
                    .try_recv(&mut deliver)
                    .map_err(|e| EndpointError::new("receive", &e))?;
                if got == 0 {
                    break;
                }
                any = true;
                got
            };
            // A batch short of full emptied the socket.
            if got > 0 && got < sys::BATCH {
                break;
            }
        }
        self.adopt_looked(st);
        Ok(any)
    }

    /// Gives each connection seen on the listening socket this turn a
    /// socket of its own once its peer's address is proved, or a new one
    /// when its peer's address changed. A handshake whose Initial carried
    /// a valid Retry token gets one at once: the rest of its handshake
    /// then bypasses the listening socket, which a flood of forged
    /// Initials keeps full (before, a newcomer's every handshake datagram
    /// had to get through it).
    fn adopt_looked(&mut self, st: &State) {
        let Some(connected) = self.connected.as_mut() else {
            self.looks.clear();
            return;
        };
        let gro = self.socket.stats.gro;
        let trusted = |c: &brisk_proto::Connection| {
            let live = matches!(c.state(), ConnState::Handshake | ConnState::Established);
            (c.remote_address(), live && c.is_address_validated())
        };
        for h in self.looks.drain(..) {
            // A handshake the core started in this turn has no cell yet.
            let seen = st
                .peek(h, |_, c| c.map(trusted))
                .flatten()
                .or_else(|| st.ep.connection(h).map(trusted));
            if let Some((peer, ready)) = seen {
                connected.adopt(h, peer, ready, gro);
            }
        }
    }

    /// Closes the own sockets of connections the core forgot, and
    /// publishes the socket counters.
    fn settle_sockets(&mut self, st: &mut State) {
        match self.connected.as_mut() {
            Some(connected) => {
                for h in st.ended.drain(..) {
                    connected.close(h);
                }
                self.socket.stats.connected = connected.stats;
            }
            None => st.ended.clear(),
        }
        // Thousands of connections can end in one turn; their list should
        // not keep that room afterwards.
        st.ended.shrink_to(MAX_KEPT_HANDLES);
        self.looks.shrink_to(MAX_KEPT_HANDLES);
        st.socket_stats = self.socket.stats;
    }

    /// Pulls datagrams from the core into the send queue once the kernel
    /// has taken the previous ones; true if any were pulled.
    fn pull(&mut self, st: &mut State) -> bool {
        let mut pulled = false;
        if self.socket.queued_datagrams() == 0 {
            let now = st.now();
            let before = self.socket.queued_datagrams();
            let max_datagrams = self.socket.max_train_datagrams();
            while self.socket.queued_datagrams() < MAX_QUEUED_DATAGRAMS {
                // The core writes whole GSO trains into the socket's own
                // buffer: nothing is copied on the way to the kernel.
                let mut buf = self.socket.take_buffer();
                let Some(t) = st.ep.poll_transmit(now, max_datagrams, &mut buf) else {
                    self.socket.recycle(buf);
                    break;
                };
                self.socket
                    .queue(t.destination, t.ecn, t.segment_bytes, buf);
                pulled = true;
            }
            self.pull_detached(st, now);
            pulled |= self.socket.queued_datagrams() > before;
        }
        pulled
    }

    /// Pulls datagrams from the detached connections that may have some,
    /// in turn from where the last pull stopped, until the send queue is
    /// full; each connection runs under its own lock.
    fn pull_detached(&mut self, st: &mut State, now: brisk_time::Instant) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let from = brisk_proto::ConnectionHandle(st.cursor);
        order.extend(st.ready.range(from..));
        order.extend(st.ready.range(..from));
        for &h in &order {
            let more = st.drive_detached(h, now, Some(&mut self.socket));
            if more {
                st.cursor = h.0;
                break;
            }
            st.ready.remove(&h);
        }
        order.shrink_to(MAX_KEPT_HANDLES);
        self.order = order;
    }

    /// Runs the timers and hands out the events of the detached
    /// connections that may have work, without sending.
    fn service_detached(&mut self, st: &mut State, now: brisk_time::Instant) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(st.ready.iter());
        for &h in &order {
            st.drive_detached(h, now, None);
        }
        order.shrink_to(MAX_KEPT_HANDLES);
        self.order = order;
    }

    /// Arms the timer at `deadline` (`(due now, monotonic ns)`); true if it
    /// is due or the timer fired.
    ///
    /// The core's deadline moves with nearly every packet (ACK delay, PTO,
    /// idle timeout), so the timer is re-armed only when the deadline comes
    /// sooner than the one already armed: a timer that fires early costs
    /// one idle turn (which arms the real deadline), while re-arming on
    /// every change cost a `timerfd_settime` per packet. A timer no longer
    /// needed is left to fire for the same reason.
    fn poll_timer(
        &mut self,
        cx: &mut Context<'_>,
        deadline: Option<(bool, u64)>,
    ) -> Result<bool, EndpointError> {
        if let Some((due, deadline_ns)) = deadline {
            if due {
                return Ok(true);
            }
            let deadline_ns = deadline_ns.max(1);
            if self.armed_ns == 0 || deadline_ns < self.armed_ns {
                self.timer
                    .get_ref()
                    .arm(deadline_ns)
                    .map_err(|e| EndpointError::new("arm the timer", &e))?;
                self.armed_ns = deadline_ns;
                self.socket.stats.timer_arms += 1;
            }
        }
        if self.armed_ns == 0 {
            return Ok(false);
        }
        loop {
            match self.timer.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => match guard.try_io(|t| t.get_ref().drain()) {
                    Ok(_) => {
                        self.armed_ns = 0;
                        return Ok(true);
                    }
                    Err(_would_block) => continue,
                },
                Poll::Ready(Err(e)) => return Err(EndpointError::new("wait for the timer", &e)),
                Poll::Pending => return Ok(false),
            }
        }
    }

    /// One turn. The core's work happens under the lock; the send system
    /// calls (on loopback they also run the receiver's network stack) and
    /// the timer happen outside it, so application tasks can read and
    /// write meanwhile.
    fn turn(&mut self, cx: &mut Context<'_>, shared: &Shared) -> Result<Outcome, EndpointError> {
        let mut progress;
        let deadline;
        let black_hole;
        {
            let mut st = shared.lock();
            if let Some(reason) = st.stopped.clone() {
                return Ok(Outcome::Stop(reason));
            }
            let mut touched = std::mem::take(&mut shared.wake_state().touched);
            if let Some(socket) = st.rebind.take() {
                st.local_addr = socket.local_addr();
                // The old socket goes, with what it still queued.
                self.socket = socket;
                let now = st.now();
                touched.extend(st.migrate_all(now));
            }
            if std::mem::take(&mut st.fail_over_due)
                && let Some(standby) = st.standby.take()
            {
                st.local_addr = standby.local_addr();
                // The old socket becomes the standby: its path may come
                // back, and a stall of the new one moves there again.
                st.standby = Some(std::mem::replace(&mut self.socket, standby));
                let now = st.now();
                touched.extend(st.fail_over_all(now));
            }
            progress = !touched.is_empty();
            st.take_touched(touched);
            progress |= self.receive(cx, &mut st)?;
            let now = st.now();
            if st.ep.poll_timeout().is_some_and(|t| t <= now) {
                st.ep.handle_timeout(now);
                progress = true;
            }
            progress |= st.take_due(now);
            st.take_accepted();
            st.dispatch_events();
            st.detach_established();
            self.service_detached(&mut st, now);
            // A stall reported this turn: the move happens next turn.
            progress |= st.fail_over_due;
            // A reader just woken will likely answer at once: let it run
            // first, so its data leaves with the ACK the core would send
            // now, in one datagram and one send call. Back from that yield
            // with no word from any application handle, the reader has not
            // run yet (the task that spawns it ran first): wait once more,
            // or a control frame the core holds (MAX_STREAMS every 50
            // streams) would leave alone, ahead of the answer.
            let woken = std::mem::take(&mut st.readers_woken);
            let unanswered = self.deferrals > 0 && !shared.wake_state().app_woke;
            if (woken || unanswered) && self.deferrals < MAX_DEFERRALS_PER_PULL {
                self.deferrals += 1;
                shared.wake_state().app_woke = false;
                return Ok(Outcome::Defer);
            }
            self.deferrals = 0;
            progress |= self.pull(&mut st);
            // Sending can raise events too (a stream whose data left).
            st.dispatch_events();
            st.sweep_writers();
            st.forget_quiet();
            st.check_idle();
            self.settle_sockets(&mut st);
            if st.is_finished() && self.socket.queued_datagrams() == 0 {
                return Ok(Outcome::Stop("endpoint closed".to_owned()));
            }
            black_hole = st.black_hole;
            let now = st.now();
            deadline = st
                .next_deadline()
                .map(|t| (t <= now, st.to_monotonic_ns(t)));
        }
        if black_hole {
            self.socket.discard_queued();
        }
        let mut refused = Vec::new();
        let flushed = self.socket.poll_flush(cx, |e| refused.push(e));
        if !refused.is_empty() {
            let mut st = shared.lock();
            for error in &refused {
                apply_report(&mut st, error);
            }
        }
        if let Poll::Ready(Err(e)) = flushed {
            return Err(EndpointError::new("send", &e));
        }
        // Spare send buffers a burst left are freed once unused; the timer
        // wakes the task for that only while some are held.
        let trim = self
            .socket
            .trim_spares(sys::monotonic_ns())
            .map(|ns| (false, ns));
        let deadline = match (deadline, trim) {
            (Some(d), Some(t)) => Some(if d.0 || d.1 <= t.1 { d } else { t }),
            (d, t) => d.or(t),
        };
        progress |= self.poll_timer(cx, deadline)?;
        // With nothing else to do, an ICMP error may still be waiting: its
        // entry holds receive-buffer room until it is read.
        if !progress {
            progress = self.socket.poll_errors(cx);
        }
        Ok(if progress {
            Outcome::Progress
        } else {
            Outcome::Idle
        })
    }

    /// With nothing to do, polls the socket without sleeping while the
    /// busy-poll policy expects a reply soon; true if a datagram arrived
    /// (already handed to the core) or an application handle asked for
    /// work meanwhile, so another turn is due.
    fn busy_poll(&mut self, cx: &mut Context<'_>, shared: &Shared) -> bool {
        if self.busy_poll.is_zero() {
            return false;
        }
        let now_ns = sys::monotonic_ns();
        if !self.backoff.allows(now_ns) {
            return false;
        }
        if !self.load.spare(now_ns) {
            self.socket.stats.busy_poll_no_core += 1;
            return false;
        }
        let sent = self.socket.stats.datagrams_sent;
        let budget = {
            let st = shared.lock();
            let now = st.now();
            let until_timer = st.next_deadline().map(|t| t.saturating_duration_since(now));
            busy_poll::spin_budget(
                self.busy_poll,
                busy_poll::awaiting(st.conn_views()),
                until_timer,
                self.spun_out_at == Some(sent),
            )
        };
        let Some(budget) = budget else {
            return false;
        };
        let switches_before = sys::involuntary_switches();
        let start_ns = sys::monotonic_ns();
        let end_ns = start_ns.saturating_add(u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX));
        let mut received = false;
        let ended_early = loop {
            {
                let mut st = shared.lock();
                if st.stopped.is_some() {
                    break true;
                }
                {
                    let mut wake = shared.wake_state();
                    if wake.waker.is_none() {
                        // An application handle woke us (another thread):
                        // serve it, and be wakeable again afterwards.
                        wake.waker = Some(cx.waker().clone());
                        break true;
                    }
                }
                if self.connected.as_mut().is_some_and(|c| c.any_ready()) {
                    received = true;
                    break true;
                }
                let now = st.now();
                match self.socket.try_recv(|from, ecn, data| {
                    st.deliver(now, from, ecn, data);
                }) {
                    Ok(0) if !self.socket.errors_pending() => {}
                    // Datagrams, or a pending error the next turn reads;
                    // a broken socket: the next turn's receive says so.
                    Ok(_) | Err(_) => {
                        received = true;
                        break true;
                    }
                }
            }
            if sys::monotonic_ns() >= end_ns {
                break false;
            }
            std::hint::spin_loop();
        };
        let end_ns = sys::monotonic_ns();
        let preempted = sys::involuntary_switches() != switches_before;
        self.backoff.on_spin(end_ns, preempted, ended_early);
        let stats = &mut self.socket.stats;
        stats.busy_polls += 1;
        stats.busy_poll_ns += end_ns.saturating_sub(start_ns);
        stats.busy_poll_preempted += u64::from(preempted);
        stats.busy_poll_hits += u64::from(received);
        self.spun_out_at = (!ended_early).then_some(sent);
        shared.lock().socket_stats = self.socket.stats;
        ended_early
    }
}

/// What a turn found.
enum Outcome {
    /// Something happened; another turn may find more.
    Progress,
    /// Nothing to do until a waker fires.
    Idle,
    /// Woken readers should run before this task sends.
    Defer,
    /// The endpoint is finished or was stopped, for this reason.
    Stop(String),
}

/// Applies one error-queue entry (or refused send) to the connections of
/// the address it names. A "too big" report hands the MTU it names to
/// the connections' path MTU discovery, which ignores implausible sizes:
/// the datagram was lost, the connection goes on (a spoofed one must not
/// end it). Any other error fails only the handshake whose own
/// datagram drew it (matched by the quoted connection ID): an established
/// connection's short header names nobody an attacker could not also
/// name, and its loss recovery or idle timeout handles a dead path.
///
/// A datagram the local stack refused as too big (`EMSGSIZE`, with or
/// without a size) was never sent: if it was a path MTU probe, the probe
/// counts as lost at once.
fn apply_report(st: &mut State, e: &DatagramError) {
    if e.report.kind() == ReportKind::TooBig {
        if let Some(mtu) = e.report.mtu() {
            st.record_path_mtu(e.destination, mtu, &e.head);
        }
        if !e.report.from_icmp() {
            st.record_send_too_big(e.destination, &e.head);
        }
        return;
    }
    st.fail_unreachable(e);
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.shared.clone();
        {
            let mut wake = shared.wake_state();
            if wake.waker.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
                wake.waker = Some(cx.waker().clone());
            }
        }
        if let Some(yielding) = this.yielding.as_mut() {
            // A reader's write or read wakes us sooner than the yield ends.
            let _ = yielding.as_mut().poll(cx);
            this.yielding = None;
        }
        for _ in 0..MAX_TURNS {
            let reason = match this.turn(cx, &shared) {
                Ok(Outcome::Progress) => continue,
                Ok(Outcome::Idle) => {
                    if this.busy_poll(cx, &shared) {
                        continue;
                    }
                    return Poll::Pending;
                }
                Ok(Outcome::Defer) => {
                    // tokio's yield runs this task again only after every
                    // task ready now, including a `block_on` future (a
                    // plain self-wake would put us ahead of that one).
                    let mut yielding = Box::pin(tokio::task::yield_now());
                    if yielding.as_mut().poll(cx).is_pending() {
                        this.yielding = Some(yielding);
                        return Poll::Pending;
                    }
                    continue;
                }
                Ok(Outcome::Stop(reason)) => reason,
                Err(e) => {
                    let reason = e.to_string();
                    shared.lock().failure.get_or_insert(e);
                    reason
                }
            };
            shared.lock().stop(&reason);
            return Poll::Ready(());
        }
        // More work is waiting: let other tasks run first.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
