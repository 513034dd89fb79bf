//! The only `unsafe` code of brisk-io: Linux system calls the standard
//! library and socket2 do not cover.
//!
//! - [`send`]: `sendmmsg(2)` with per-message control data, the ECN
//!   codepoint in `IP_TOS` / `IPV6_TCLASS` and, for a run of equal-sized
//!   datagrams, the segment size in `UDP_SEGMENT` (GSO); `sendmsg(2)` one
//!   message at a time where the kernel lacks `sendmmsg`.
//! - [`recv`]: `recvmmsg(2)` reading the `IP_TOS` / `IPV6_TCLASS` byte and
//!   the `UDP_GRO` segment size from each message's control data.
//! - socket options by number ([`set_int_option`], [`get_int_option`]);
//!   [`register_udp`], a socket handed to tokio's reactor for one
//!   direction of readiness.
//! - [`TimerFd`]: a `timerfd` on `CLOCK_MONOTONIC` armed at absolute
//!   nanoseconds, so the driver sleeps with microsecond precision (tokio's
//!   own timer rounds up to whole milliseconds, which would starve a pacer
//!   whose bursts last 250 µs), and [`monotonic_ns`], the clock it uses.
//! - [`Epoll`]: an `epoll` instance of the driver's own that says which
//!   per-connection sockets hold datagrams; [`open_files_limit`].
//! - [`interface_mtus`]: the MTUs of the interfaces of the calling
//!   thread's network namespace (`if_nameindex(3)` and `SIOCGIFMTU`).
//!
//! Safety argument, common to all calls: every pointer handed to the kernel
//! points into a buffer owned by the calling frame (or by the caller's
//! slices) that outlives the call, with its true length; the kernel writes
//! at most that many bytes; results are read only within the lengths the
//! kernel returned. Control messages are walked with the `CMSG_*` macros
//! and each payload is read with `read_unaligned` after checking its length.

#![allow(unsafe_code)]

use std::io;
use std::mem::{self, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::socket_error::Report;

/// `UDP_SEGMENT` from linux/udp.h (Linux 4.18): GSO segment size.
pub const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` from linux/udp.h (Linux 5.0): coalesce received datagrams.
pub const UDP_GRO: libc::c_int = 104;
/// `IP_MTU_DISCOVER` / `IPV6_MTU_DISCOVER` and their `*_PMTUDISC_PROBE`
/// value (linux/in.h, linux/in6.h): set DF, ignore the path MTU cache.
pub const IP_MTU_DISCOVER: libc::c_int = 10;
pub const IPV6_MTU_DISCOVER: libc::c_int = 23;
pub const PMTUDISC_PROBE: libc::c_int = 3;
/// `SO_RXQ_OVFL` from asm-generic/socket.h (Linux 2.6.33): each received
/// datagram carries the socket's count of datagrams dropped so far.
pub const SO_RXQ_OVFL: libc::c_int = 40;

/// The most messages one `sendmmsg` / `recvmmsg` call carries.
pub const BATCH: usize = 32;
/// The most segments the kernel accepts in one GSO send (UDP_MAX_SEGMENTS).
pub const MAX_GSO_SEGMENTS: usize = 64;

/// Room for the control messages of one datagram: up to four `int`-sized
/// ones (ECN byte, GRO or GSO size, the kernel's drop count), 8-byte
/// aligned.
const CMSG_WORDS: usize = 16;
/// Room for an error-queue entry's control messages: the extended error
/// (16 bytes) and the ICMP sender's address (up to 28), and the ECN byte
/// of the quoted datagram.
const ERR_CMSG_WORDS: usize = 24;

/// One datagram (or GSO train of equal segments) to send.
#[derive(Debug, Clone, Copy)]
pub struct OutMsg<'a> {
    pub destination: SocketAddr,
    /// The IP header's ECN bits (the low two bits of TOS / traffic class).
    pub ecn_bits: u8,
    /// `Some(size)`: `data` is a train of `size`-byte segments (the last may
    /// be shorter) that the kernel splits (UDP GSO).
    pub segment_size: Option<u16>,
    pub data: &'a [u8],
}

/// What arrived in one receive buffer.
#[derive(Debug, Clone, Copy)]
pub struct RecvMeta {
    pub source: SocketAddr,
    pub len_bytes: usize,
    /// Segment size of a GRO-coalesced buffer; `len_bytes` otherwise.
    pub stride_bytes: usize,
    pub ecn_bits: u8,
    /// The socket's running count of datagrams the kernel dropped for a
    /// full receive buffer (`SO_RXQ_OVFL`), when it is not zero.
    pub kernel_drops: Option<u32>,
}

impl Default for RecvMeta {
    fn default() -> Self {
        RecvMeta {
            source: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
            len_bytes: 0,
            stride_bytes: 0,
            ecn_bits: 0,
            kernel_drops: None,
        }
    }
}

/// Set when the kernel answered `ENOSYS` to `sendmmsg` / `recvmmsg`.
static NO_MMSG: AtomicBool = AtomicBool::new(false);

pub fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` lives on this frame; its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub fn get_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` live on this frame; `len` holds its size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes `addr` into `storage` as the socket's family wants it: an IPv4
/// destination becomes v4-mapped on an IPv6 socket.
fn encode_addr(
    addr: SocketAddr,
    v6_socket: bool,
    storage: &mut libc::sockaddr_storage,
) -> libc::socklen_t {
    let addr = match addr {
        SocketAddr::V4(a) if v6_socket => {
            SocketAddr::V6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0))
        }
        a => a,
    };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((storage as *mut libc::sockaddr_storage).cast(), sin) };
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in6.
            unsafe { std::ptr::write((storage as *mut libc::sockaddr_storage).cast(), sin6) };
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// The source address the kernel wrote, v4-mapped addresses folded back to
/// IPv4 so one peer always has one spelling.
fn decode_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            Some(match ip.to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                None => SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    port,
                    u32::from_be(sin6.sin6_flowinfo),
                    sin6.sin6_scope_id,
                )),
            })
        }
        _ => None,
    }
}

/// Appends one `int` control message at `*cmsg`, returning the next slot.
///
/// # Safety
/// `hdr`'s control buffer must have room for it (`CMSG_SPACE(4)`), and
/// `cmsg` must be a header slot within it (from `CMSG_FIRSTHDR`/`NXTHDR`).
unsafe fn put_int_cmsg(
    hdr: &libc::msghdr,
    cmsg: *mut libc::cmsghdr,
    level: libc::c_int,
    kind: libc::c_int,
    value: libc::c_int,
) -> *mut libc::cmsghdr {
    // SAFETY: guaranteed by the caller.
    unsafe {
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), value);
        libc::CMSG_NXTHDR(hdr, cmsg)
    }
}

/// Same as [`put_int_cmsg`] for a `u16` payload (UDP_SEGMENT).
///
/// # Safety
/// As for [`put_int_cmsg`].
unsafe fn put_u16_cmsg(
    hdr: &libc::msghdr,
    cmsg: *mut libc::cmsghdr,
    level: libc::c_int,
    kind: libc::c_int,
    value: u16,
) -> *mut libc::cmsghdr {
    // SAFETY: guaranteed by the caller.
    unsafe {
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), value);
        libc::CMSG_NXTHDR(hdr, cmsg)
    }
}

/// Per-message buffers of one batch, kept together so their addresses are
/// stable while the kernel reads or writes them.
struct Slots {
    hdrs: [libc::mmsghdr; BATCH],
    iovs: [libc::iovec; BATCH],
    names: [libc::sockaddr_storage; BATCH],
    cmsgs: [[u64; CMSG_WORDS]; BATCH],
}

impl Slots {
    fn zeroed() -> Box<Slots> {
        // SAFETY: all four arrays are plain C structs / integers for which
        // all-zero bytes are a valid value.
        Box::new(unsafe { MaybeUninit::<Slots>::zeroed().assume_init() })
    }
}

/// Reusable batch buffers; one per socket direction.
pub struct Batch {
    slots: Box<Slots>,
}

// SAFETY: the raw pointers inside `Slots` are written afresh before every
// system call and never dereferenced by Rust code, so moving the buffers
// to another thread between calls is harmless.
unsafe impl Send for Batch {}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            slots: Slots::zeroed(),
        }
    }
}

/// Sends up to [`BATCH`] messages; returns how many the kernel took (the
/// rest should be retried when the socket is writable again).
pub fn send(
    fd: RawFd,
    v6_socket: bool,
    msgs: &[OutMsg<'_>],
    batch: &mut Batch,
) -> io::Result<usize> {
    let n = msgs.len().min(BATCH);
    let s = &mut *batch.slots;
    for (i, m) in msgs.iter().take(n).enumerate() {
        let namelen = encode_addr(m.destination, v6_socket, &mut s.names[i]);
        s.iovs[i] = libc::iovec {
            iov_base: m.data.as_ptr() as *mut libc::c_void,
            iov_len: m.data.len(),
        };
        s.cmsgs[i] = [0; CMSG_WORDS];
        let hdr = &mut s.hdrs[i].msg_hdr;
        hdr.msg_name = (&mut s.names[i] as *mut libc::sockaddr_storage).cast();
        hdr.msg_namelen = namelen;
        hdr.msg_iov = &mut s.iovs[i];
        hdr.msg_iovlen = 1;
        hdr.msg_control = s.cmsgs[i].as_mut_ptr().cast();
        hdr.msg_controllen = (CMSG_WORDS * 8) as _;
        hdr.msg_flags = 0;
        s.hdrs[i].msg_len = 0;
        let v4_dest = match m.destination {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
        };
        // SAFETY: the control buffer holds CMSG_WORDS * 8 = 128 bytes, room
        // for the two messages written here (24 bytes each).
        let used = unsafe {
            let first = libc::CMSG_FIRSTHDR(hdr);
            let next = if v4_dest {
                put_int_cmsg(
                    hdr,
                    first,
                    libc::IPPROTO_IP,
                    libc::IP_TOS,
                    i32::from(m.ecn_bits),
                )
            } else {
                put_int_cmsg(
                    hdr,
                    first,
                    libc::IPPROTO_IPV6,
                    libc::IPV6_TCLASS,
                    i32::from(m.ecn_bits),
                )
            };
            let mut used = libc::CMSG_SPACE(mem::size_of::<libc::c_int>() as u32) as usize;
            if let Some(seg) = m.segment_size
                && m.data.len() > usize::from(seg)
            {
                put_u16_cmsg(hdr, next, libc::SOL_UDP, UDP_SEGMENT, seg);
                used += libc::CMSG_SPACE(mem::size_of::<u16>() as u32) as usize;
            }
            used
        };
        hdr.msg_controllen = used as _;
    }
    if !NO_MMSG.load(Ordering::Relaxed) {
        // SAFETY: `n` headers were filled above and point into `s` and
        // `msgs`, which outlive the call.
        let rc = unsafe { libc::sendmmsg(fd, s.hdrs.as_mut_ptr(), n as libc::c_uint, 0) };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(err);
        }
        NO_MMSG.store(true, Ordering::Relaxed);
    }
    for i in 0..n {
        // SAFETY: header `i` was filled above.
        let rc = unsafe { libc::sendmsg(fd, &s.hdrs[i].msg_hdr, 0) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            return if i == 0 { Err(err) } else { Ok(i) };
        }
    }
    Ok(n)
}

/// Receives up to `bufs.len()` (at most [`BATCH`]) datagrams; fills
/// `metas` for each and returns how many arrived.
pub fn recv(
    fd: RawFd,
    bufs: &mut [Vec<u8>],
    metas: &mut [RecvMeta],
    batch: &mut Batch,
) -> io::Result<usize> {
    let n = bufs.len().min(metas.len()).min(BATCH);
    let s = &mut *batch.slots;
    for (i, buf) in bufs.iter_mut().take(n).enumerate() {
        s.iovs[i] = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let hdr = &mut s.hdrs[i].msg_hdr;
        hdr.msg_name = (&mut s.names[i] as *mut libc::sockaddr_storage).cast();
        hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        hdr.msg_iov = &mut s.iovs[i];
        hdr.msg_iovlen = 1;
        hdr.msg_control = s.cmsgs[i].as_mut_ptr().cast();
        hdr.msg_controllen = (CMSG_WORDS * 8) as _;
        hdr.msg_flags = 0;
        s.hdrs[i].msg_len = 0;
    }
    let got = loop {
        if NO_MMSG.load(Ordering::Relaxed) {
            // SAFETY: header 0 was filled above and points into `s` and
            // `bufs`.
            let rc = unsafe { libc::recvmsg(fd, &mut s.hdrs[0].msg_hdr, 0) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            s.hdrs[0].msg_len = rc as libc::c_uint;
            break 1;
        }
        // SAFETY: `n` headers were filled above and point into `s` and
        // `bufs`, which outlive the call.
        let rc = unsafe {
            libc::recvmmsg(
                fd,
                s.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                0,
                std::ptr::null_mut(),
            )
        };
        if rc >= 0 {
            break rc as usize;
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(err);
        }
        NO_MMSG.store(true, Ordering::Relaxed);
    };
    for i in 0..got {
        let hdr = &s.hdrs[i].msg_hdr;
        // A datagram larger than its buffer arrives cut short: report it
        // as empty so the caller drops and counts it.
        let truncated = hdr.msg_flags & libc::MSG_TRUNC != 0;
        let len_bytes = if truncated {
            0
        } else {
            s.hdrs[i].msg_len as usize
        };
        // A source of another family cannot be answered: drop it.
        let source = decode_addr(&s.names[i]);
        let mut meta = RecvMeta {
            source: source.unwrap_or(RecvMeta::default().source),
            len_bytes: if source.is_some() { len_bytes } else { 0 },
            stride_bytes: len_bytes,
            ecn_bits: 0,
            kernel_drops: None,
        };
        // SAFETY: the kernel set msg_controllen to what it wrote into our
        // control buffer; CMSG_FIRSTHDR/NXTHDR stay within it and each
        // payload is read only after checking cmsg_len covers it.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
            while !cmsg.is_null() {
                let c = &*cmsg;
                let payload_len = (c.cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                let data = libc::CMSG_DATA(cmsg);
                match (c.cmsg_level, c.cmsg_type) {
                    (libc::IPPROTO_IP, libc::IP_TOS) if payload_len >= 1 => {
                        meta.ecn_bits = std::ptr::read_unaligned(data) & 0b11;
                    }
                    (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if payload_len >= 4 => {
                        let v = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                        meta.ecn_bits = (v & 0b11) as u8;
                    }
                    (libc::SOL_SOCKET, SO_RXQ_OVFL) if payload_len >= 4 => {
                        meta.kernel_drops = Some(std::ptr::read_unaligned(data.cast::<u32>()));
                    }
                    (libc::SOL_UDP, UDP_GRO) if payload_len >= 4 => {
                        let v = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                        if v > 0 {
                            meta.stride_bytes = v as usize;
                        }
                    }
                    _ => {}
                }
                cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
            }
        }
        if let Some(m) = metas.get_mut(i) {
            *m = meta;
        }
    }
    Ok(got)
}

/// Bytes kept of the datagram an ICMP error quotes: enough for a long
/// header's version-independent part (flags, version, both connection IDs).
pub const QUOTED_BYTES: usize = 64;

/// Reads up to `max` entries of the socket's error queue (enabled by
/// `IP_RECVERR` / `IPV6_RECVERR`: one entry per datagram that drew an ICMP
/// error, or that the local stack refused), handing each to `found`.
/// Returns how many were read and whether the queue is now empty.
pub fn recv_errors(
    fd: RawFd,
    max: usize,
    mut found: impl FnMut(crate::socket::DatagramError),
) -> (usize, bool) {
    for read in 0..max {
        match recv_error(fd) {
            Ok(Some(e)) => found(e),
            // An entry without an address or an extended error: counted
            // as read, nothing to report.
            Ok(None) => {}
            // EAGAIN: empty. Anything else cannot be about one entry;
            // the next receive reports it if it persists.
            Err(_) => return (read, true),
        }
    }
    (max, false)
}

/// Reads one error-queue entry; `Ok(None)` if it names no address or
/// carries no extended error.
fn recv_error(fd: RawFd) -> io::Result<Option<crate::socket::DatagramError>> {
    // SAFETY: all-zero is a valid sockaddr_storage and msghdr.
    let mut name: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut payload = [0u8; QUOTED_BYTES];
    // Room for the extended error and its offender address, and the
    // IP_TOS / IPV6_TCLASS message a dual-stack socket may add.
    let mut cmsgs = [0u64; ERR_CMSG_WORDS];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: as above.
    let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
    hdr.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsgs.as_mut_ptr().cast();
    hdr.msg_controllen = (ERR_CMSG_WORDS * 8) as _;
    // SAFETY: every pointer in `hdr` points into this frame's buffers,
    // with their lengths.
    let rc = unsafe { libc::recvmsg(fd, &mut hdr, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut report = None;
    // SAFETY: as in `recv`: the walk stays within msg_controllen and
    // the payload is read after checking its length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&hdr);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let payload_len = (c.cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
            let is_err = matches!(
                (c.cmsg_level, c.cmsg_type),
                (libc::IPPROTO_IP, libc::IP_RECVERR) | (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
            );
            if is_err && payload_len >= mem::size_of::<libc::sock_extended_err>() {
                let e: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                report = Some(Report {
                    errno: e.ee_errno as i32,
                    origin: e.ee_origin,
                    icmp_type: e.ee_type,
                    icmp_code: e.ee_code,
                    info: e.ee_info,
                });
            }
            cmsg = libc::CMSG_NXTHDR(&hdr, cmsg);
        }
    }
    let (Some(report), Some(destination)) = (report, decode_addr(&name)) else {
        return Ok(None);
    };
    let quoted_len = (rc as usize).min(QUOTED_BYTES);
    Ok(Some(crate::socket::DatagramError {
        destination,
        error: io::Error::from_raw_os_error(report.errno),
        report,
        head: payload[..quoted_len].to_vec(),
    }))
}

/// Times the calling thread was switched out involuntarily (preempted by
/// the scheduler), from `getrusage(RUSAGE_THREAD)`; 0 if it fails.
pub fn involuntary_switches() -> u64 {
    // SAFETY: `rusage` is plain data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` lives on this frame; RUSAGE_THREAD only reads the
    // calling thread's counters.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc == 0 {
        u64::try_from(usage.ru_nivcsw).unwrap_or(0)
    } else {
        0
    }
}

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock [`TimerFd`] runs on.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` lives on this frame. CLOCK_MONOTONIC always exists on
    // Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// A non-blocking `timerfd` on `CLOCK_MONOTONIC`.
#[derive(Debug)]
pub struct TimerFd(OwnedFd);

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain system call; a non-negative result is a fresh fd
        // that we own.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is valid and owned by nobody else.
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Fires once at `deadline_ns` on [`monotonic_ns`]'s clock (replacing
    /// any earlier setting); `0` disarms.
    pub fn arm(&self, deadline_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` lives on this frame; the old value is not wanted.
        let rc = unsafe {
            libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Consumes the expiry count; `WouldBlock` if the timer has not fired.
    pub fn drain(&self) -> io::Result<()> {
        let mut count = 0u64;
        // SAFETY: reads at most 8 bytes into `count` on this frame.
        let rc = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                (&mut count as *mut u64).cast(),
                mem::size_of::<u64>(),
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl TimerFd {
    /// A new timer registered with tokio's reactor for readability.
    pub fn registered() -> io::Result<tokio::io::unix::AsyncFd<TimerFd>> {
        let timer = TimerFd::new()?;
        // SAFETY: the TimerFd owns its descriptor, which stays open and
        // unchanged until the AsyncFd (its only owner) drops it.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(timer, tokio::io::Interest::READABLE)
        };
        fd.map_err(io::Error::from)
    }
}

/// Registers a UDP socket with tokio's reactor for `interest` only (the
/// socket module registers a `dup` of it for the other direction).
pub fn register_udp(
    socket: std::net::UdpSocket,
    interest: tokio::io::Interest,
) -> io::Result<tokio::io::unix::AsyncFd<std::net::UdpSocket>> {
    // SAFETY: the UdpSocket owns its descriptor, which stays open and
    // unchanged until the AsyncFd (its only owner) drops it.
    let fd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(socket, interest) };
    fd.map_err(io::Error::from)
}

/// A level-triggered `epoll` instance of its own, for the per-connection
/// sockets: tokio's reactor watches only this one descriptor, and
/// [`Epoll::ready`] names the sockets that hold datagrams, so a turn
/// visits those and never the idle ones.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no pointers; a valid descriptor is owned by the OwnedFd.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by epoll_create1 and is ours.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for datagrams and errors, reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLERR) as u32,
            u64: token,
        };
        // SAFETY: `event` lives on this frame for the call.
        let rc =
            unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Stops watching `fd` (closing it does too; this is for a socket
    /// that stays open elsewhere, and is harmless before a close).
    pub fn remove(&self, fd: RawFd) {
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: `event` lives on this frame (kernels before 2.6.9 need a
        // non-null pointer even for a delete).
        unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut event) };
    }

    /// Fills `ready` with the token of each of up to `max` watched sockets
    /// that are readable or hold an error, and whether it holds an error
    /// (`EPOLLERR`: its error queue has entries), without waiting.
    pub fn ready(&self, max: usize, ready: &mut Vec<(u64, bool)>) -> io::Result<usize> {
        const MAX_EVENTS: usize = 64;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS];
        let max = max.min(MAX_EVENTS) as libc::c_int;
        // SAFETY: `events` has room for `max` entries; the kernel writes
        // at most that many and returns how many.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        ready.clear();
        ready.extend(events.iter().take(n as usize).map(|e| {
            let (token, flags) = (e.u64, e.events);
            (token, flags & libc::EPOLLERR as u32 != 0)
        }));
        Ok(n as usize)
    }

    /// Hands the instance to tokio's reactor: it is readable while any
    /// watched socket is.
    pub fn registered(self) -> io::Result<tokio::io::unix::AsyncFd<Epoll>> {
        // SAFETY: the Epoll owns its descriptor, which stays open and
        // unchanged until the AsyncFd (its only owner) drops it.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(self, tokio::io::Interest::READABLE)
        };
        fd.map_err(io::Error::from)
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The soft limit on open descriptors (`RLIMIT_NOFILE`), if known.
pub fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` lives on this frame for the call.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some(limit.rlim_cur)
}

/// The MTUs of the network interfaces in the calling thread's network
/// namespace, loopback devices left out. `/sys/class/net` shows the
/// namespace sysfs was mounted in, which is not the caller's after a
/// `setns(2)` into another one (a lab's namespaces, a container entered
/// that way); the interface list (`if_nameindex`, a netlink query) and
/// each device's flags and MTU (`SIOCGIFFLAGS`, `SIOCGIFMTU` on a socket
/// opened here) are answered in the caller's own namespace.
pub fn interface_mtus() -> io::Result<Vec<usize>> {
    // SAFETY: a plain socket(2) call; the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: no arguments; a null answer is checked below.
    let list = unsafe { libc::if_nameindex() };
    if list.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut mtus = Vec::new();
    let mut entry = list;
    loop {
        // SAFETY: `entry` points into the array `if_nameindex` returned,
        // which ends with an entry of index 0 and a null name; the walk
        // stops there.
        let e = unsafe { &*entry };
        if e.if_index == 0 || e.if_name.is_null() {
            break;
        }
        // SAFETY: all-zero is a valid ifreq.
        let mut req: libc::ifreq = unsafe { mem::zeroed() };
        // SAFETY: a non-null name from `if_nameindex` is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr(e.if_name) }.to_bytes();
        for (d, s) in req
            .ifr_name
            .iter_mut()
            .zip(name.iter().take(libc::IFNAMSIZ - 1))
        {
            *d = *s as libc::c_char;
        }
        // SAFETY: `req` lives on this frame and is an ifreq, as both
        // requests expect; the kernel writes within it.
        let flags = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req) };
        // SAFETY: SIOCGIFFLAGS just filled the union's flags member.
        let loopback =
            flags == 0 && i32::from(unsafe { req.ifr_ifru.ifru_flags }) & libc::IFF_LOOPBACK != 0;
        // SAFETY: as above.
        if !loopback
            && unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req) } == 0
        {
            // SAFETY: SIOCGIFMTU just filled the union's MTU member.
            let mtu = unsafe { req.ifr_ifru.ifru_mtu };
            if let Ok(mtu) = usize::try_from(mtu)
                && mtu > 0
            {
                mtus.push(mtu);
            }
        }
        // SAFETY: the terminating entry has not been reached, so the next
        // one is still inside the array.
        entry = unsafe { entry.add(1) };
    }
    // SAFETY: `list` came from `if_nameindex` and is freed once.
    unsafe { libc::if_freenameindex(list) };
    Ok(mtus)
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_and_v4_mapped_folds_back() {
        for (addr, v6_socket) in [
            ("192.0.2.1:4433", false),
            ("192.0.2.1:4433", true),
            ("[2001:db8::1]:443", true),
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            // SAFETY: all-zero is a valid sockaddr_storage.
            let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
            let len = encode_addr(addr, v6_socket, &mut storage);
            let family = storage.ss_family as libc::c_int;
            assert_eq!(family == libc::AF_INET6, v6_socket);
            assert!(len as usize <= mem::size_of::<libc::sockaddr_storage>());
            assert_eq!(decode_addr(&storage), Some(addr));
        }
    }

    #[test]
    fn timer_fires_at_its_deadline_not_before() {
        let t = TimerFd::new().unwrap();
        let start = monotonic_ns();
        t.arm(start + 2_000_000).unwrap();
        assert_eq!(t.drain().unwrap_err().kind(), io::ErrorKind::WouldBlock);
        while t.drain().is_err() {
            std::thread::yield_now();
        }
        assert!(monotonic_ns() >= start + 2_000_000);
    }
}
