//! The few Linux calls the lab makes, each behind a small safe function.
//! Every `unsafe` block of the crate lives here.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// Bit of `CAP_NET_ADMIN` in the capability masks of /proc/self/status.
const CAP_NET_ADMIN: u32 = 12;

/// `struct ifreq` as TUNSETIFF reads it: a name, then the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Whether this process may create namespaces and devices: root, or
/// `CAP_NET_ADMIN` in its effective set.
pub fn has_net_admin() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_NET_ADMIN) != 0)
}

/// Moves the calling thread into the network namespace `ns` (an open
/// `/run/netns/NAME` or `/proc/PID/ns/net`).
pub fn enter_netns(ns: &File) -> io::Result<()> {
    // SAFETY: setns takes a valid fd we borrow for the call.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// Opens `/dev/net/tun` and attaches it to a new layer-3 TUN device named
/// `name` (no packet-info header: reads and writes are bare IP datagrams;
/// no offloads, so the kernel hands over datagrams with full checksums and
/// no GSO). The device lives in the calling thread's network namespace and
/// disappears when the returned fd is closed. The fd is non-blocking.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.len() >= libc::IFNAMSIZ || name.is_empty() || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
    // SAFETY: a valid NUL-terminated path; the returned fd is owned below.
    let fd = cvt(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which IfReq lays
    // out exactly (40 bytes on every Linux ABI).
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) })?;
    Ok(fd)
}

/// Reads one datagram; `Ok(None)` when nothing is waiting.
pub fn read_nonblocking(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// Writes one datagram whole.
pub fn write_datagram(fd: BorrowedFd<'_>, datagram: &[u8]) -> io::Result<()> {
    // SAFETY: `datagram` is valid for `datagram.len()` bytes of reads.
    let n = unsafe { libc::write(fd.as_raw_fd(), datagram.as_ptr().cast(), datagram.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else if n as usize != datagram.len() {
        Err(io::Error::new(io::ErrorKind::WriteZero, "short tun write"))
    } else {
        Ok(())
    }
}

/// Waits until one of `fds` is readable or `timeout` passes (`None`: no
/// limit), with nanosecond resolution. Returns which fds are readable; a
/// signal ends the wait early with nothing readable.
pub fn wait_readable<const N: usize>(
    fds: [BorrowedFd<'_>; N],
    timeout: Option<Duration>,
) -> io::Result<[bool; N]> {
    let mut pfds = fds.map(|fd| libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` holds N valid pollfd entries; `ts_ptr` is null or
    // points at a live timespec; no signal mask is passed.
    let r = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            N as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok([false; N]);
        }
        return Err(e);
    }
    Ok(pfds.map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0))
}

/// Lets the kernel wake this thread's timed waits at most `slack` late
/// (the default is 50 us, too coarse for a link model).
pub fn set_timer_slack(slack: Duration) -> io::Result<()> {
    let ns = slack.as_nanos().clamp(1, u64::MAX as u128) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) }).map(drop)
}

/// Gives the calling thread a real-time (SCHED_FIFO) priority so a busy
/// machine delays its timers less. Returns whether the kernel agreed.
pub fn set_realtime_priority(priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Takes an exclusive `flock` on `file`; with `wait == false` returns
/// `Ok(false)` instead of waiting when another process holds it.
pub fn lock_exclusive(file: &File, wait: bool) -> io::Result<bool> {
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock on a valid fd.
    match cvt(unsafe { libc::flock(file.as_raw_fd(), op) }) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

/// Sends `signal` to process `pid` (a process group when negative).
/// A process that is already gone is not an error.
pub fn send_signal(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory preconditions.
    match cvt(unsafe { libc::kill(pid, signal) }) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        Err(e) => Err(e),
    }
}

/// What a child does between fork and exec: lead a new process group
/// unless `keep_group` (so the whole tree can be killed at once), and die
/// with its parent. Runs in the forked child, so it makes only
/// async-signal-safe syscalls.
pub fn child_setup(keep_group: bool) -> io::Result<()> {
    // SAFETY: plain syscalls on integers.
    unsafe {
        if !keep_group {
            cvt(libc::setpgid(0, 0))?;
        }
        cvt(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
    }
    Ok(())
}

/// The process id of this process.
pub fn pid() -> u32 {
    std::process::id()
}

/// Whether a process with this id exists.
pub fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Sets `opt` to the integer `value` on a socket.
pub fn set_socket_int(
    fd: BorrowedFd<'_>,
    level: i32,
    opt: i32,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a live c_int whose size we pass.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Chooses the congestion control of a TCP socket (`TCP_CONGESTION`).
pub fn set_tcp_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: `name` is valid for `name.len()` bytes; the kernel copies it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// The fields of `struct tcp_info` the lab reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub rtt_us: u32,
    pub min_rtt_us: u32,
    pub total_retrans: u32,
    /// Data segments sent, retransmissions included (Linux 4.6+; 0 before).
    pub data_segs_out: u32,
    pub snd_cwnd: u32,
    /// Whether the connection negotiated classic ECN.
    pub ecn_negotiated: bool,
    /// Segments delivered that the receiver echoed as CE (ECE-bearing ACKs).
    pub delivered_ce: u32,
    pub delivered: u32,
}

/// Reads `TCP_INFO` of a connected socket.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    // The layout of struct tcp_info up to tcpi_delivered_ce (Linux 4.18+);
    // the kernel fills what it knows and reports the length.
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is valid for `len` bytes; the kernel writes at most that.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    let len = len as usize;
    let u32_at = |off: usize| {
        if off + 4 <= len {
            u32::from_ne_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]])
        } else {
            0
        }
    };
    // Offsets from include/uapi/linux/tcp.h: 8 one-byte fields (options
    // at 5), then u32 and u64 fields.
    Ok(TcpInfo {
        ecn_negotiated: len > 5 && buf[5] & TCPI_OPT_ECN != 0,
        rtt_us: u32_at(68),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        data_segs_out: u32_at(156),
        min_rtt_us: u32_at(148),
        delivered: u32_at(192),
        delivered_ce: u32_at(196),
    })
}

/// `TCPI_OPT_ECN` in `tcpi_options`.
const TCPI_OPT_ECN: u8 = 8;

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
