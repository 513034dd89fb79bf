//! Helpers for tests that forge ICMP errors: a network namespace of their
//! own (so forged packets and raw sockets touch nothing else), a raw
//! socket that captures a datagram the server sent, and one that sends
//! ICMP and ICMPv6 errors quoting it.
//!
//! These need root (namespaces, raw sockets): without it a test skips with
//! a message, unless CI=true, where it fails.

#![allow(dead_code)]

use brisk_wire::{Ecn, checksum, udp_datagram};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

/// Whether a root-only test can run here; false (after saying why) if
/// not. Under CI=true a missing privilege fails the test instead.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let reason = format!("{test}: needs root (network namespaces and raw sockets)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{reason}, and CI=true forbids skipping");
    }
    eprintln!("skipped {reason}");
    false
}

/// A network namespace with only loopback, deleted on drop.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `icmp-<tag>-<pid>` (the prefix keeps it apart from other
    /// suites' namespaces) with its loopback up.
    pub fn create(tag: &str) -> Netns {
        let name = format!("icmp-{tag}-{}", std::process::id());
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name]).expect("ip netns add");
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]).expect("loopback up");
        ns
    }

    /// Sets the namespace's loopback MTU (IP packet bytes).
    pub fn set_loopback_mtu(&self, mtu: u32) {
        let mtu = mtu.to_string();
        ip(&["-n", &self.name, "link", "set", "lo", "mtu", &mtu]).expect("loopback MTU");
    }

    /// Runs `f` on a new thread inside the namespace (threads it starts,
    /// a tokio runtime's workers included, stay inside too); a panic in
    /// `f` is the caller's.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.name);
        let thread = std::thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("open the namespace");
            // SAFETY: `file` is an open namespace descriptor; setns only
            // moves the calling thread.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", io::Error::last_os_error());
            f()
        });
        match thread.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("cleanup of namespace {}: {e}", self.name);
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn raw_socket(v6: bool, protocol: libc::c_int) -> io::Result<OwnedFd> {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: plain system call; a non-negative result is ours.
    let fd = unsafe { libc::socket(family, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Copies of the UDP datagrams this namespace's loopback carries (a raw
/// UDP socket sees every one), to learn what a server really sent.
pub struct Capture {
    fd: OwnedFd,
    v6: bool,
}

impl Capture {
    /// Starts capturing datagrams of `v6`'s family.
    pub fn start(v6: bool) -> Capture {
        let fd = raw_socket(v6, libc::IPPROTO_UDP).expect("raw UDP socket");
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 100_000,
        };
        // SAFETY: `timeout` lives on this frame; its size is passed.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        Capture { fd, v6 }
    }

    /// The first bytes (up to 64) of the payload of a datagram from port
    /// `from_port` to port `to_port` of at least 20 bytes that `wanted`
    /// accepts, waiting up to `within`.
    pub fn datagram(
        &self,
        from_port: u16,
        to_port: u16,
        within: Duration,
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Option<Vec<u8>> {
        let end = Instant::now() + within;
        let mut buf = vec![0u8; 2048];
        while Instant::now() < end {
            // SAFETY: `buf` outlives the call; its length is passed.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                )
            };
            let Ok(n) = usize::try_from(n) else {
                continue;
            };
            let got = &buf[..n.min(buf.len())];
            // IPv4 raw sockets see the IP header; IPv6 ones do not.
            let udp = if self.v6 {
                got
            } else {
                let ihl = usize::from(got.first().map_or(0, |b| b & 0x0f)) * 4;
                got.get(ihl..).unwrap_or_default()
            };
            if udp.len() < 8 + 20 {
                continue;
            }
            let sport = u16::from_be_bytes([udp[0], udp[1]]);
            let dport = u16::from_be_bytes([udp[2], udp[3]]);
            let head = &udp[8..udp.len().min(8 + 64)];
            if (sport, dport) == (from_port, to_port) && wanted(head) {
                return Some(head.to_vec());
            }
        }
        None
    }
}

/// One forged error: its type and code, the 4 bytes after the checksum
/// (MTU, pointer or unused), and what the endpoint should count it as.
#[derive(Debug, Clone, Copy)]
pub struct Forged {
    pub icmp_type: u8,
    pub icmp_code: u8,
    pub rest: [u8; 4],
}

impl Forged {
    pub const fn new(icmp_type: u8, icmp_code: u8) -> Forged {
        Forged {
            icmp_type,
            icmp_code,
            rest: [0; 4],
        }
    }

    /// An ICMP "fragmentation needed" next-hop MTU (bytes 6-7) or an
    /// ICMPv6 "packet too big" MTU (bytes 4-7, below 65536 here).
    pub const fn with_mtu(mut self, mtu: u16) -> Forged {
        let b = mtu.to_be_bytes();
        self.rest = [0, 0, b[0], b[1]];
        self
    }
}

/// Sends ICMP (or ICMPv6) errors from a raw socket.
pub struct Forger {
    fd: OwnedFd,
    v6: bool,
}

impl Forger {
    pub fn new(v6: bool) -> Forger {
        let protocol = if v6 {
            libc::IPPROTO_ICMPV6
        } else {
            libc::IPPROTO_ICMP
        };
        let fd = raw_socket(v6, protocol).expect("raw ICMP socket");
        Forger { fd, v6 }
    }

    /// The error message `f` about a datagram from `server` to `client`
    /// whose payload began with `head`: the ICMP header, then the quoted
    /// datagram's IP and UDP headers and payload start.
    pub fn message(
        &self,
        f: Forged,
        server: SocketAddr,
        client: SocketAddr,
        head: &[u8],
    ) -> Vec<u8> {
        let quoted = udp_datagram(server, client, Ecn::NotEct, head).expect("quoted datagram");
        let mut m = vec![f.icmp_type, f.icmp_code, 0, 0];
        m.extend_from_slice(&f.rest);
        m.extend_from_slice(&quoted);
        if !self.v6 {
            // ICMPv6's checksum covers a pseudo-header; raw ICMPv6 sockets
            // have the kernel fill it in.
            let sum = checksum::of(&m);
            m[2..4].copy_from_slice(&sum.to_be_bytes());
        }
        m
    }

    /// Sends `message` to `to`.
    pub fn send(&self, to: IpAddr, message: &[u8]) -> io::Result<()> {
        let dest: socket2::SockAddr = SocketAddr::new(to, 0).into();
        // SAFETY: `message` and `dest` outlive the call, with their lengths.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                0,
                dest.as_ptr().cast(),
                dest.len(),
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}
