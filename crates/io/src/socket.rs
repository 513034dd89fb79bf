//! The UDP socket: setup (dual stack, ECN reporting, GRO, DF), batched
//! receive, and a send queue of datagrams and GSO trains that the transport
//! wrote straight into the socket's buffers (no copy), split into single
//! datagrams when the kernel refuses GSO.
//!
//! Readiness costs system calls and wake-ups, so the socket asks epoll for
//! as little as it needs:
//! - it is registered for reading only. Registered for writing too, every
//!   datagram the peer consumes frees send-buffer room and wakes this
//!   thread for nothing (on loopback that is one extra wake-up and
//!   `epoll_wait` per datagram sent); a second descriptor for the same
//!   socket (`dup`) is registered for writing only once a send found the
//!   buffer full, and kept from then on;
//! - a receive batch that came back short drained the socket, so read
//!   readiness is cleared at once instead of by one more `recvmmsg` that
//!   returns `EAGAIN` (tokio keeps a readiness edge that arrived meanwhile).
//!
//! Errors (see [`crate::socket_error`]): a receive or send that fails with
//! a peer's error (a pending ICMP error) marks the error queue for
//! draining; the queue is also watched for `POLLERR` while the endpoint is
//! idle, since its entries take room in the receive buffer and a queue
//! left full makes the kernel drop every datagram. Only an error that
//! says the socket itself is broken reaches the driver.

use crate::config::SocketConfig;
use crate::socket_error::{self, Class, ErrorStats, Op, Report};
use crate::sys::{self, Batch, OutMsg, RecvMeta};
use brisk_wire::Ecn;
use socket2::{Domain, Protocol, Socket as RawSocket, Type};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;
use tokio::io::{Interest, Ready};

/// The largest GSO train the transport writes: 64 KiB minus IP and UDP
/// headers.
const MAX_GSO_BYTES: usize = brisk_proto::MAX_TRAIN_BYTES;
/// Send buffers kept for reuse, at most (one batch's worth).
const MAX_SPARE_BUFFERS: usize = sys::BATCH;
/// Bytes of send buffers kept for reuse, at most: four full GSO trains.
/// With GSO every buffer is a whole train's worth, so what stays after a
/// burst is bounded here.
const MAX_SPARE_BYTES: usize = 4 * MAX_GSO_BYTES;
/// Spare buffers kept however long they sit unused: what a quiet
/// endpoint needs for its next ACK or train.
const KEPT_SPARE_BUFFERS: usize = 1;
/// How often spare buffers that sat unused since the last look are
/// freed, in nanoseconds: a burst (a flood's Retry packets, thousands of
/// closes) fills the pool to its bound, and without this it stayed there.
pub(crate) const SPARE_TRIM_INTERVAL_NS: u64 = 250_000_000;
/// Receive buffer size with GRO (a coalesced train) and without.
const GRO_BUFFER_BYTES: usize = 65_536;
const PLAIN_BUFFER_BYTES: usize = 16_384;
/// Error-queue entries read while one send waits for a pending ICMP error
/// to clear.
const SEND_DRAIN_ENTRIES: usize = 64;

/// What the socket layer counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketStats {
    /// UDP datagrams (GRO segments counted one by one).
    pub datagrams_received: u64,
    pub datagrams_sent: u64,
    pub recv_calls: u64,
    /// Receive calls that found the socket empty (`EAGAIN`): a short
    /// batch clears read readiness without one.
    pub recv_would_block: u64,
    pub send_calls: u64,
    /// Receive buffers that held more than one datagram (GRO).
    pub gro_trains: u64,
    /// Sends that carried more than one datagram (GSO).
    pub gso_trains: u64,
    /// Received datagrams per ECN codepoint: Not-ECT, ECT(1), ECT(0), CE.
    pub ecn_received: [u64; 4],
    /// Datagrams dropped on send (the kernel refused them) or on receive
    /// (truncated, unknown address family).
    pub send_errors: u64,
    pub recv_dropped: u64,
    /// Error-queue entries read (ICMP errors, and local ones such as a
    /// datagram larger than the route); by kind in `errors`.
    pub icmp_errors: u64,
    /// Socket errors by class and kind, the error queue's draining, and
    /// the kernel's drops.
    pub errors: ErrorStats,
    /// Whether the offloads are in use (GSO can be switched off at run
    /// time when a send with it fails).
    pub gso: bool,
    pub gro: bool,
    /// `timerfd_settime` calls by the endpoint task (its timer is re-armed
    /// only when the core's deadline comes sooner).
    pub timer_arms: u64,
    /// A server's per-connection sockets ([`crate::connected`]).
    pub connected: crate::connected::ConnectedStats,
    /// Busy polls begun (the task spun on the socket instead of sleeping),
    /// those that received something before their budget ran out, and the
    /// time spent spinning in all of them; those during which the thread
    /// was switched out involuntarily (each pauses busy polling).
    pub busy_polls: u64,
    pub busy_poll_hits: u64,
    pub busy_poll_ns: u64,
    pub busy_poll_preempted: u64,
    /// Idle moments at which the machine had no core to spare, so the
    /// policy was not even asked.
    pub busy_poll_no_core: u64,
}

/// An error about one datagram this socket sent: an entry of its error
/// queue (an ICMP message about it), or the kernel refusing to send it.
#[derive(Debug)]
pub struct DatagramError {
    /// Where the datagram was going.
    pub destination: SocketAddr,
    /// The error (e.g. `ECONNREFUSED` for port unreachable).
    pub error: io::Error,
    /// What raised it: the ICMP type and code, the MTU of a "too big".
    pub report: Report,
    /// The start of the datagram's UDP payload (up to 64 bytes),
    /// which tells whose datagram it was.
    pub head: Vec<u8>,
}

/// Index of a codepoint in [`SocketStats::ecn_received`].
pub fn ecn_index(ecn: Ecn) -> usize {
    match ecn {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    }
}

/// One queued send: a datagram, or a GSO train of equal segments (the
/// last may be shorter).
#[derive(Debug)]
struct TxMsg {
    destination: SocketAddr,
    ecn: Ecn,
    segment_bytes: usize,
    segments: usize,
    data: Vec<u8>,
}

/// Resolves once the socket reported `POLLERR` (an error-queue entry).
type ErrorWatch = Pin<Box<dyn Future<Output = ()> + Send>>;

pub struct Socket {
    /// The socket, registered for read readiness (and errors).
    io: Arc<AsyncFd<std::net::UdpSocket>>,
    /// A duplicate registered for write readiness, made the first time the
    /// send buffer was full.
    writer: Option<AsyncFd<std::net::UdpSocket>>,
    v6: bool,
    local: SocketAddr,
    gso: bool,
    send_batch: Batch,
    recv_batch: Batch,
    recv_bufs: Vec<Vec<u8>>,
    recv_metas: Vec<RecvMeta>,
    tx: VecDeque<TxMsg>,
    tx_datagrams: usize,
    /// Send buffers back from the kernel, reused so a datagram is queued
    /// without an allocation and a train without reallocating as it grows.
    spare: Vec<Vec<u8>>,
    /// The capacity of the `spare` buffers, in bytes.
    spare_bytes: usize,
    /// The fewest spare buffers the pool held since the last trim: that
    /// many went unused the whole time.
    spare_unused: usize,
    /// When the next trim is due (`CLOCK_MONOTONIC` nanoseconds).
    spare_trim_at_ns: u64,
    /// The error queue may hold entries: a receive or send reported a
    /// pending error, `POLLERR` was seen, or the last drain stopped at its
    /// bound.
    errors_pending: bool,
    /// Waits for `POLLERR` while nothing else wakes the endpoint.
    error_watch: Option<ErrorWatch>,
    pub stats: SocketStats,
}

impl Socket {
    /// Binds `addr`; must run inside a tokio runtime.
    pub fn bind(addr: SocketAddr, config: &SocketConfig) -> io::Result<Socket> {
        let v6 = addr.is_ipv6();
        let raw = RawSocket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if v6 {
            raw.set_only_v6(config.v6_only)?;
        }
        raw.set_nonblocking(true)?;
        // Best effort: the kernel caps these, and a small buffer only
        // costs throughput.
        let _ = raw.set_recv_buffer_size(config.recv_buffer_bytes);
        let _ = raw.set_send_buffer_size(config.send_buffer_bytes);
        raw.bind(&addr.into())?;
        let fd = raw.as_raw_fd();
        let dual = v6 && !config.v6_only;
        if !v6 || dual {
            sys::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
            // ICMP errors (port unreachable) are queued for `take_errors`.
            let _ = sys::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1);
            let _ = sys::set_int_option(
                fd,
                libc::IPPROTO_IP,
                sys::IP_MTU_DISCOVER,
                sys::PMTUDISC_PROBE,
            );
        }
        if v6 {
            sys::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
            let _ = sys::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1);
            let _ = sys::set_int_option(
                fd,
                libc::IPPROTO_IPV6,
                sys::IPV6_MTU_DISCOVER,
                sys::PMTUDISC_PROBE,
            );
        }
        // Each datagram then tells how many the kernel dropped so far.
        let _ = sys::set_int_option(fd, libc::SOL_SOCKET, sys::SO_RXQ_OVFL, 1);
        let gso = config.gso && sys::get_int_option(fd, libc::SOL_UDP, sys::UDP_SEGMENT).is_ok();
        let gro = config.gro && sys::set_int_option(fd, libc::SOL_UDP, sys::UDP_GRO, 1).is_ok();
        let local = raw
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("socket has no IP address"))?;
        let io = Arc::new(sys::register_udp(
            raw.into(),
            Interest::READABLE | Interest::ERROR,
        )?);
        let buf_len = if gro {
            GRO_BUFFER_BYTES
        } else {
            PLAIN_BUFFER_BYTES
        };
        Ok(Socket {
            io,
            writer: None,
            v6,
            local,
            gso,
            send_batch: Batch::default(),
            recv_batch: Batch::default(),
            recv_bufs: vec![vec![0; buf_len]; sys::BATCH],
            recv_metas: vec![RecvMeta::default(); sys::BATCH],
            tx: VecDeque::new(),
            spare: Vec::new(),
            spare_bytes: 0,
            spare_unused: 0,
            spare_trim_at_ns: 0,
            tx_datagrams: 0,
            errors_pending: false,
            error_watch: None,
            stats: SocketStats {
                gso,
                gro,
                ..SocketStats::default()
            },
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Datagrams queued and not yet handed to the kernel.
    pub fn queued_datagrams(&self) -> usize {
        self.tx_datagrams
    }

    /// Receives one batch and calls `deliver(source, ecn, datagram)` for
    /// each datagram (each GRO segment). `Pending` once the socket is
    /// drained; the waker is then registered for readability. A transient
    /// or a peer's error delivers nothing (`Ready(Ok(0))`; a peer's marks
    /// the error queue for [`Socket::drain_errors`]); only a fatal one is
    /// returned.
    pub fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        deliver: impl FnMut(SocketAddr, Ecn, &[u8]),
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = match self.io.poll_read_ready(cx) {
                Poll::Ready(Ok(guard)) => guard,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            let fd = self.io.as_raw_fd();
            let wanted = self.recv_bufs.len().min(sys::BATCH);
            let got = match sys::recv(
                fd,
                &mut self.recv_bufs,
                &mut self.recv_metas,
                &mut self.recv_batch,
            ) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.stats.recv_would_block += 1;
                    guard.clear_ready();
                    continue;
                }
                Err(e) => return Poll::Ready(self.recv_error(e)),
            };
            if got < wanted {
                // The kernel ran out of datagrams before the batch was full.
                guard.clear_ready();
            }
            return Poll::Ready(Ok(self.deliver_batch(got, deliver)));
        }
    }

    /// Receives one batch without asking the reactor whether the socket is
    /// readable (busy polling: the reactor has not looked yet); 0 if the
    /// socket was empty.
    pub fn try_recv(&mut self, deliver: impl FnMut(SocketAddr, Ecn, &[u8])) -> io::Result<usize> {
        let fd = self.io.as_raw_fd();
        match sys::recv(
            fd,
            &mut self.recv_bufs,
            &mut self.recv_metas,
            &mut self.recv_batch,
        ) {
            Ok(got) => Ok(self.deliver_batch(got, deliver)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => self.recv_error(e),
        }
    }

    /// Sorts a failed receive: `Ok(0)` unless the socket is broken.
    fn recv_error(&mut self, e: io::Error) -> io::Result<usize> {
        match socket_error::classify(Op::Receive, &e) {
            Class::Transient => self.stats.errors.transient += 1,
            Class::Peer => {
                self.stats.errors.peer += 1;
                self.errors_pending = true;
            }
            Class::Fatal => return Err(e),
        }
        Ok(0)
    }

    /// Hands the `got` received buffers to `deliver`, GRO trains split
    /// into their datagrams; returns the datagrams delivered.
    fn deliver_batch(
        &mut self,
        got: usize,
        mut deliver: impl FnMut(SocketAddr, Ecn, &[u8]),
    ) -> usize {
        self.stats.recv_calls += 1;
        let mut datagrams = 0;
        for (buf, meta) in self.recv_bufs.iter().zip(&self.recv_metas).take(got) {
            if let Some(drops) = meta.kernel_drops {
                let errors = &mut self.stats.errors;
                errors.kernel_drops = errors.kernel_drops.max(u64::from(drops));
            }
            let Some(data) = buf.get(..meta.len_bytes) else {
                self.stats.recv_dropped += 1;
                continue;
            };
            if data.is_empty() {
                self.stats.recv_dropped += 1;
                continue;
            }
            let ecn = Ecn::from_bits(meta.ecn_bits);
            let stride = meta.stride_bytes.max(1);
            if data.len() > stride {
                self.stats.gro_trains += 1;
            }
            for segment in data.chunks(stride) {
                self.stats.ecn_received[ecn_index(ecn)] += 1;
                deliver(meta.source, ecn, segment);
                datagrams += 1;
            }
        }
        self.stats.datagrams_received += datagrams as u64;
        datagrams
    }

    /// Receives one batch from `fd`, another socket of this endpoint (a
    /// connection's own, [`crate::connected`]), into this socket's buffers
    /// and counters, handing each datagram to `deliver`. Returns the
    /// messages read: fewer than a batch means `fd` is drained. Errors are
    /// the caller's to sort (they are about `fd`, not this socket).
    pub(crate) fn recv_other(
        &mut self,
        fd: std::os::fd::RawFd,
        deliver: impl FnMut(SocketAddr, Ecn, &[u8]),
    ) -> io::Result<usize> {
        match sys::recv(
            fd,
            &mut self.recv_bufs,
            &mut self.recv_metas,
            &mut self.recv_batch,
        ) {
            Ok(got) => {
                self.deliver_batch(got, deliver);
                Ok(got)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Reads up to `max` entries of the error queue of `fd`, another
    /// socket of this endpoint, counted with this socket's; true if the
    /// bound stopped it with entries left.
    pub(crate) fn drain_errors_of(
        &mut self,
        fd: std::os::fd::RawFd,
        max: usize,
        mut on_error: impl FnMut(DatagramError),
    ) -> bool {
        let stats = &mut self.stats;
        let (_, empty) = sys::recv_errors(fd, max, |e| {
            stats.icmp_errors += 1;
            stats.errors.count(&e.report);
            on_error(e);
        });
        if empty {
            stats.errors.queue_drained += 1;
        } else {
            stats.errors.queue_bound_reached += 1;
        }
        !empty
    }

    /// The socket's descriptor, for options set after the bind.
    pub(crate) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.io.as_raw_fd()
    }

    /// Whether the error queue may hold entries.
    pub fn errors_pending(&self) -> bool {
        self.errors_pending
    }

    /// Reads up to `max` entries of the error queue, handing each (with
    /// the start of the datagram it is about) to `on_error`; true if the
    /// bound stopped it with entries left.
    pub fn drain_errors(&mut self, max: usize, on_error: impl FnMut(DatagramError)) -> bool {
        let left = self.drain_errors_of(self.io.as_raw_fd(), max, on_error);
        self.errors_pending = left;
        left
    }

    /// Whether the error queue needs draining; if not, registers the waker
    /// for the socket's next `POLLERR` (an ICMP error arriving while the
    /// endpoint is idle).
    pub fn poll_errors(&mut self, cx: &mut Context<'_>) -> bool {
        if self.errors_pending {
            return true;
        }
        let watch = self.error_watch.get_or_insert_with(|| {
            let io = self.io.clone();
            Box::pin(async move {
                match io.ready(Interest::ERROR).await {
                    // Cleared before the queue is read: an entry queued
                    // after the read raises a new edge.
                    Ok(mut guard) => guard.clear_ready_matching(Ready::ERROR),
                    // The reactor is gone (the runtime is shutting down):
                    // nothing will wake us for errors again.
                    Err(_) => std::future::pending().await,
                }
            })
        });
        if watch.as_mut().poll(cx).is_ready() {
            self.error_watch = None;
            self.errors_pending = true;
        }
        self.errors_pending
    }

    /// The most datagrams one queued message may hold: a GSO train's
    /// segment limit, or 1 once GSO is off.
    pub fn max_train_datagrams(&self) -> usize {
        if self.gso { sys::MAX_GSO_SEGMENTS } else { 1 }
    }

    /// A buffer to write the next datagram or train into: one the kernel
    /// is done with if any (emptied), so queueing needs no allocation.
    /// With GSO it holds a full train from the start: grown datagram by
    /// datagram instead, a train's buffer was reallocated and copied
    /// several times on its way to 64 KiB.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        let mut buf = match self.spare.pop() {
            Some(mut buf) => {
                self.spare_bytes -= buf.capacity();
                self.spare_unused = self.spare_unused.min(self.spare.len());
                buf.clear();
                buf
            }
            None => Vec::new(),
        };
        if self.gso {
            buf.reserve(MAX_GSO_BYTES);
        }
        buf
    }

    /// Frees the spare buffers that sat unused since the last trim (at
    /// most one a [`SPARE_TRIM_INTERVAL_NS`]), down to
    /// [`KEPT_SPARE_BUFFERS`]: after a burst the pool shrinks back to what
    /// the traffic since uses. The next trim's time while spares above
    /// that are held, for the driver's timer.
    pub fn trim_spares(&mut self, now_ns: u64) -> Option<u64> {
        if now_ns >= self.spare_trim_at_ns {
            let free = self
                .spare_unused
                .min(self.spare.len().saturating_sub(KEPT_SPARE_BUFFERS));
            for buf in self.spare.drain(self.spare.len() - free..) {
                self.spare_bytes -= buf.capacity();
            }
            self.spare_unused = self.spare.len();
            self.spare_trim_at_ns = now_ns.saturating_add(SPARE_TRIM_INTERVAL_NS);
        }
        (self.spare.len() > KEPT_SPARE_BUFFERS).then_some(self.spare_trim_at_ns)
    }

    /// Gives back a buffer from [`Socket::take_buffer`] that was not
    /// queued.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        let bytes = buf.capacity();
        if self.spare.len() < MAX_SPARE_BUFFERS && self.spare_bytes + bytes <= MAX_SPARE_BYTES {
            self.spare_bytes += bytes;
            self.spare.push(buf);
        }
    }

    /// Queues `data` as it is, without copying it: one datagram, or a GSO
    /// train of `segment_bytes`-long datagrams (the last may be shorter)
    /// of at most [`Socket::max_train_datagrams`].
    pub fn queue(
        &mut self,
        destination: SocketAddr,
        ecn: Ecn,
        segment_bytes: usize,
        data: Vec<u8>,
    ) {
        let segment_bytes = segment_bytes.clamp(1, data.len().max(1));
        let segments = data.len().div_ceil(segment_bytes).max(1);
        self.tx_datagrams += segments;
        self.tx.push_back(TxMsg {
            destination,
            ecn,
            segment_bytes,
            segments,
            data,
        });
    }

    /// Sends what is queued. `Ready(Ok(()))` once the queue is empty;
    /// `Pending` with the waker registered while the socket is full.
    /// Datagrams the kernel refuses are dropped (the transport treats them
    /// as lost) and reported through `on_error`, as are the ICMP errors a
    /// send reports about earlier datagrams: the kernel returns a pending
    /// ICMP error from the next send without sending, so that send is
    /// retried once the error queue is drained. Only an error that says
    /// the socket is broken ends it with `Err`.
    pub fn poll_flush(
        &mut self,
        cx: &mut Context<'_>,
        mut on_error: impl FnMut(DatagramError),
    ) -> Poll<io::Result<()>> {
        // A peer could keep the error queue busy; after this many pending
        // errors in one flush, the error is taken as the datagram's own.
        let mut pending_errors_left = 8;
        while !self.tx.is_empty() {
            // Until the buffer was once full, sends go without asking.
            let guard = match &self.writer {
                None => None,
                Some(writer) => match writer.poll_write_ready(cx) {
                    Poll::Ready(Ok(guard)) => Some(guard),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                },
            };
            let fd = self.io.as_raw_fd();
            let msgs: Vec<OutMsg<'_>> = self
                .tx
                .iter()
                .take(sys::BATCH)
                .map(|m| OutMsg {
                    destination: m.destination,
                    ecn_bits: m.ecn.bits(),
                    segment_size: (m.segments > 1).then_some(m.segment_bytes as u16),
                    data: &m.data,
                })
                .collect();
            let result = sys::send(fd, self.v6, &msgs, &mut self.send_batch);
            drop(msgs);
            self.stats.send_calls += 1;
            if matches!(&result, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                if let Some(mut guard) = guard {
                    guard.clear_ready();
                } else {
                    let dup = self.io.get_ref().try_clone()?;
                    self.writer = Some(sys::register_udp(dup, Interest::WRITABLE)?);
                }
                continue;
            }
            match result {
                Ok(n) => {
                    for _ in 0..n {
                        let Some(m) = self.tx.pop_front() else {
                            break;
                        };
                        self.tx_datagrams -= m.segments;
                        self.stats.datagrams_sent += m.segments as u64;
                        if m.segments > 1 {
                            self.stats.gso_trains += 1;
                        }
                        self.recycle(m.data);
                    }
                }
                Err(e) => match socket_error::classify(Op::Send, &e) {
                    Class::Fatal => return Poll::Ready(Err(e)),
                    Class::Transient if e.kind() == io::ErrorKind::Interrupted => {}
                    Class::Transient => {
                        // The kernel could not buffer it (a full device
                        // queue: ENOBUFS): lost, as on a congested link.
                        self.stats.errors.transient += 1;
                        self.drop_first();
                    }
                    Class::Peer => {
                        self.stats.errors.peer += 1;
                        let (mut icmp, mut local) = (false, false);
                        if pending_errors_left > 0 {
                            pending_errors_left -= 1;
                            self.drain_errors(SEND_DRAIN_ENTRIES, |d| {
                                icmp |= d.report.from_icmp();
                                local |= !d.report.from_icmp();
                                on_error(d);
                            });
                        }
                        // Only ICMP entries: the error was pending, this
                        // datagram was not sent; send it again. A local
                        // entry is the refusal of this datagram, already
                        // reported.
                        if !icmp || local {
                            self.refuse_first(e, !local, &mut on_error);
                        }
                    }
                },
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Drops every queued message as if sent, as a link that carries
    /// nothing would (a test's stalled path).
    pub fn discard_queued(&mut self) {
        while let Some(m) = self.tx.pop_front() {
            self.tx_datagrams -= m.segments;
            self.stats.datagrams_sent += m.segments as u64;
            self.recycle(m.data);
        }
    }

    /// Drops the first queued message, as lost.
    fn drop_first(&mut self) {
        if let Some(first) = self.tx.pop_front() {
            self.tx_datagrams -= first.segments;
            self.stats.send_errors += first.segments as u64;
        }
    }

    /// The kernel refused the first queued message. A GSO train refused
    /// with EIO (no checksum offload on the device) or EINVAL turns GSO
    /// off for good and is split into datagrams; anything else is dropped,
    /// and reported unless `report` is false (its error-queue entry was).
    fn refuse_first(
        &mut self,
        e: io::Error,
        report: bool,
        on_error: &mut impl FnMut(DatagramError),
    ) {
        let Some(first) = self.tx.pop_front() else {
            return;
        };
        let gso_error = matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::EINVAL));
        if first.segments > 1 && gso_error {
            self.gso = false;
            self.stats.gso = false;
            // The split datagrams go first, in their original order; later
            // trains meet the same fate when their turn comes.
            let rest = std::mem::take(&mut self.tx);
            self.tx_datagrams -= first.segments;
            for p in first.data.chunks(first.segment_bytes) {
                self.queue(first.destination, first.ecn, p.len(), p.to_vec());
            }
            self.tx.extend(rest);
            return;
        }
        self.tx_datagrams -= first.segments;
        self.stats.send_errors += first.segments as u64;
        if !report {
            return;
        }
        let report = Report::local(e.raw_os_error().unwrap_or(0));
        self.stats.errors.count(&report);
        let head_len = first.segment_bytes.min(sys::QUOTED_BYTES);
        on_error(DatagramError {
            destination: first.destination,
            error: e,
            report,
            head: first.data[..head_len.min(first.data.len())].to_vec(),
        });
    }
}

/// `IP_MTU` / `IPV6_MTU` from linux/in.h, linux/in6.h: the MTU of the route
/// a connected socket uses.
const IP_MTU: libc::c_int = 14;
const IPV6_MTU: libc::c_int = 24;

/// The MTU of the local route towards `dest` (the outgoing interface's, or
/// a smaller one the kernel learned), asked of a connected socket that
/// sends nothing.
pub fn route_mtu(dest: SocketAddr) -> io::Result<usize> {
    let bind: SocketAddr = if dest.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let probe = std::net::UdpSocket::bind(bind)?;
    probe.connect(dest)?;
    let (level, name) = if dest.is_ipv6() {
        (libc::IPPROTO_IPV6, IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, IP_MTU)
    };
    let mtu = sys::get_int_option(probe.as_raw_fd(), level, name)?;
    usize::try_from(mtu).map_err(|_| io::Error::other("negative MTU"))
}

/// The smallest MTU of the non-loopback interfaces in the calling
/// thread's network namespace; what a server that cannot ask per client
/// must assume. Asked of the namespace itself, not read from
/// /sys/class/net, which after a `setns(2)` still lists the interfaces of
/// the namespace sysfs was mounted in: a server started that way inside a
/// namespace whose path carries 1500 bytes took a host interface's 1400
/// and sent 1352-byte datagrams instead of 1432.
pub fn smallest_interface_mtu() -> Option<usize> {
    sys::interface_mtus().ok()?.into_iter().min()
}

/// The largest UDP payload an MTU carries for `addr`'s family.
pub fn payload_for_mtu(mtu: usize, addr: SocketAddr) -> usize {
    let v4 = match addr {
        SocketAddr::V4(_) => true,
        SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
    };
    mtu.saturating_sub(if v4 { 20 + 8 } else { 40 + 8 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket_error::ReportKind;
    use std::future::poll_fn;
    use std::time::Duration;

    /// An address of `bind`'s family with nothing listening on it.
    fn closed_port(bind: &str) -> SocketAddr {
        let s = std::net::UdpSocket::bind(bind).unwrap();
        s.local_addr().unwrap()
    }

    #[tokio::test]
    async fn an_icmp_error_is_drained_and_counted_never_returned() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let mut s = Socket::bind(bind.parse().unwrap(), &SocketConfig::default()).unwrap();
            let closed = closed_port(bind);
            // The port-unreachable raises POLLERR on an idle socket.
            s.queue(closed, Ecn::NotEct, 14, b"first datagram".to_vec());
            poll_fn(|cx| s.poll_flush(cx, |e| panic!("{e:?}")))
                .await
                .unwrap();
            let seen = poll_fn(|cx| match s.poll_errors(cx) {
                true => Poll::Ready(()),
                false => Poll::Pending,
            });
            tokio::time::timeout(Duration::from_secs(2), seen)
                .await
                .expect("POLLERR within 2 s");
            let mut got = Vec::new();
            assert!(!s.drain_errors(16, |e| got.push(e)), "entries left");
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].report.kind(), ReportKind::PortUnreachable);
            assert_eq!(got[0].destination, closed);
            assert_eq!(got[0].head, b"first datagram");
            assert!(!s.errors_pending());
            // A receive that meets the pending error delivers nothing,
            // marks the queue, and the socket goes on.
            s.queue(closed, Ecn::NotEct, 6, b"second".to_vec());
            poll_fn(|cx| s.poll_flush(cx, |e| panic!("{e:?}")))
                .await
                .unwrap();
            let received = tokio::time::timeout(Duration::from_secs(2), async {
                loop {
                    match s.try_recv(|_, _, _| panic!("no datagram was sent here")) {
                        Ok(0) if !s.errors_pending() => tokio::task::yield_now().await,
                        other => return other,
                    }
                }
            });
            assert_eq!(received.await.expect("the error within 2 s").unwrap(), 0);
            assert!(s.errors_pending());
            assert_eq!(s.stats.errors.peer, 1);
            assert!(!s.drain_errors(16, |e| assert_eq!(e.head, b"second")));
            assert_eq!(s.stats.errors.port_unreachable, 2);
            assert_eq!(s.stats.icmp_errors, 2);
            assert_eq!(s.try_recv(|_, _, _| {}).unwrap(), 0);
        }
    }

    #[tokio::test]
    async fn a_train_buffer_holds_a_full_train_without_growing() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let mut s = Socket::bind(bind.parse().unwrap(), &SocketConfig::default()).unwrap();
            // Without GSO a buffer carries one datagram: nothing reserved.
            s.gso = false;
            assert_eq!(s.take_buffer().capacity(), 0);
            // With it (whatever this kernel offers: nothing is sent), fresh
            // and then recycled, the buffer never moves while a train of
            // MAX_GSO_BYTES is written into it datagram by datagram.
            s.gso = true;
            for _ in 0..2 {
                let mut buf = s.take_buffer();
                assert!(buf.capacity() >= MAX_GSO_BYTES, "{}", buf.capacity());
                let at = buf.as_ptr();
                for chunk in vec![0x5au8; MAX_GSO_BYTES].chunks(1_200) {
                    buf.extend_from_slice(chunk);
                }
                assert_eq!(buf.as_ptr(), at, "the train buffer was reallocated");
                s.recycle(buf);
            }
        }
    }

    #[tokio::test]
    async fn spare_buffers_a_burst_left_are_freed_once_they_sit_unused() {
        const I: u64 = SPARE_TRIM_INTERVAL_NS;
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let mut s = Socket::bind(bind.parse().unwrap(), &SocketConfig::default()).unwrap();
            s.gso = true;
            let t0 = 5 * I;
            assert_eq!(s.trim_spares(t0), None, "nothing held, no trim due");
            // A burst: four buffers out at once, then all back.
            let burst: Vec<_> = (0..4).map(|_| s.take_buffer()).collect();
            for buf in burst {
                s.recycle(buf);
            }
            assert_eq!(s.spare.len(), 4);
            // Within the burst's interval every spare was in use.
            assert_eq!(s.trim_spares(t0 + I / 2), Some(t0 + I), "not due yet");
            assert_eq!(s.trim_spares(t0 + I), Some(t0 + 2 * I));
            assert_eq!(s.spare.len(), 4);
            // Then one at a time, as a quiet connection's ACKs take them:
            // the three never taken go, one stays for the next ACK.
            let buf = s.take_buffer();
            s.recycle(buf);
            assert_eq!(s.trim_spares(t0 + 2 * I), None);
            assert_eq!(s.spare.len(), 1);
            assert_eq!(s.spare_bytes, s.spare[0].capacity());
            assert!(s.spare_bytes >= MAX_GSO_BYTES);
        }
    }

    #[test]
    fn interface_mtus_are_those_of_the_callers_namespace() {
        // This test runs in the namespace sysfs was mounted in, where both
        // views must agree (inside a namespace entered with `setns` only
        // the asked one is right: the live lab's tests hold that).
        let mut sysfs: Vec<usize> = std::fs::read_dir("/sys/class/net")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != "lo")
            .filter_map(|e| std::fs::read_to_string(e.path().join("mtu")).ok())
            .filter_map(|m| m.trim().parse().ok())
            .collect();
        sysfs.sort_unstable();
        let mut asked = sys::interface_mtus().unwrap();
        asked.sort_unstable();
        assert_eq!(asked, sysfs);
        assert_eq!(smallest_interface_mtu(), sysfs.first().copied());
    }

    #[test]
    fn loopback_route_mtu_and_payload_sizes() {
        // Loopback's MTU is 65536 on Linux; any real interface has less
        // headroom, but at least the 1280 bytes IPv6 requires.
        let mtu = route_mtu("127.0.0.1:9".parse().unwrap()).unwrap();
        assert!(mtu >= 1280, "{mtu}");
        assert_eq!(payload_for_mtu(1500, "192.0.2.1:1".parse().unwrap()), 1472);
        assert_eq!(
            payload_for_mtu(1500, "[::ffff:192.0.2.1]:1".parse().unwrap()),
            1472
        );
        assert_eq!(
            payload_for_mtu(1400, "[2001:db8::1]:1".parse().unwrap()),
            1352
        );
    }
}
