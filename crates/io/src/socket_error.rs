//! What a socket error means for the endpoint, decided in one place.
//!
//! A UDP socket reports three sorts of trouble through the same `errno`:
//! - its own system call could not run now (`EINTR`, `ENOMEM`, `ENOBUFS`):
//!   [`Class::Transient`], try again or count the datagram as lost;
//! - a report about one peer's path: an ICMP or ICMPv6 error about a
//!   datagram sent earlier (the kernel raises it on the next receive or
//!   send of the socket, whatever its kind: `ECONNREFUSED`, `EHOSTUNREACH`,
//!   `ENOPROTOOPT`, `EMSGSIZE`, `EPROTO`, `EACCES`, `EHOSTDOWN`, `ENONET`,
//!   `EOPNOTSUPP`, ...), or the kernel refusing one destination (no route,
//!   a firewall, a datagram larger than the route): [`Class::Peer`]. Such
//!   an error affects at most the connections to that peer; anyone who
//!   can send a packet can raise one, so it must never stop the endpoint;
//! - the socket itself is unusable (`EBADF`, `ENOTSOCK`, `EFAULT`, and
//!   `EINVAL` from a receive): [`Class::Fatal`], the endpoint stops and
//!   says why.
//!
//! An ICMP error reaches the socket as an entry of its error queue
//! (`IP_RECVERR` / `IPV6_RECVERR`) with the ICMP type and code, the
//! reported MTU, and the start of the datagram it quotes; [`Report`]
//! sorts those entries into the kinds counted in [`ErrorStats`].

use std::io;

/// Error-queue entries the endpoint task reads per turn, at most (about a
/// microsecond each). The queue shares the receive buffer with datagrams
/// (an ICMP error's entry takes about 800 bytes of it), so it must be
/// emptied while it fills; the bound keeps a flood from holding up the
/// datagrams behind it.
pub const MAX_ERRORS_PER_TURN: usize = 512;

/// Which system call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Receive,
    Send,
}

/// What to do about a socket error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Nothing is wrong with the socket or a peer: retry (a receive), or
    /// count the one datagram as lost (a send the kernel could not buffer).
    Transient,
    /// About one peer: drain the error queue, apply each report to the
    /// connections of the address it names, and carry on.
    Peer,
    /// The socket cannot be used any more.
    Fatal,
}

/// Sorts `e`, the error of a receive or send system call on the endpoint's
/// UDP socket. `EAGAIN` never gets here (the socket waits for readiness).
///
/// Every `errno` not listed as transient or fatal counts as a peer's:
/// the kernel turns ICMP messages into many of them, and a pending ICMP
/// error is returned by whichever call comes next, so an unknown code on
/// a healthy socket must be survivable.
pub fn classify(op: Op, e: &io::Error) -> Class {
    let Some(errno) = e.raw_os_error() else {
        // Not from the kernel: std's own `Interrupted` and the like.
        return if e.kind() == io::ErrorKind::Interrupted {
            Class::Transient
        } else {
            Class::Peer
        };
    };
    match errno {
        libc::EINTR | libc::EAGAIN | libc::ENOMEM | libc::ENOBUFS => Class::Transient,
        libc::EBADF | libc::ENOTSOCK | libc::EFAULT => Class::Fatal,
        // Bad arguments to a receive are our bug and will repeat; on a
        // send the kernel says it of one destination (a scope-less link
        // local address) or of a GSO train the device cannot split.
        libc::EINVAL if op == Op::Receive => Class::Fatal,
        _ => Class::Peer,
    }
}

/// Who raised an error-queue entry (linux/errqueue.h).
const ORIGIN_LOCAL: u8 = libc::SO_EE_ORIGIN_LOCAL;
const ORIGIN_ICMP: u8 = libc::SO_EE_ORIGIN_ICMP;
const ORIGIN_ICMP6: u8 = libc::SO_EE_ORIGIN_ICMP6;

/// The kind of one error-queue entry, as counted in [`ErrorStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// Nothing listens on the peer's port (ICMP 3/3, ICMPv6 1/4).
    PortUnreachable,
    /// No route to the network or host, host unknown or down (ICMP type 3
    /// codes 0, 1, 6, 7, 8, 11, 12; ICMPv6 type 1 codes 0, 2, 3, 6, 7).
    Unreachable,
    /// A filter refused the datagram (ICMP type 3 codes 9, 10, 13, 14,
    /// 15; ICMPv6 type 1 codes 1 and 5).
    Prohibited,
    /// The datagram was too large for a hop (ICMP 3/4 "fragmentation
    /// needed", ICMPv6 type 2) or for the local route; carries the MTU.
    TooBig,
    /// The peer or a router could not parse it: protocol unreachable (ICMP
    /// 3/2), source route failed (3/5), parameter problem (ICMP 12,
    /// ICMPv6 4).
    Protocol,
    /// Its hop limit ran out on the way (ICMP 11, ICMPv6 3).
    TimeExceeded,
    /// Anything else (another local error, an ICMP type the kernel passes
    /// on that none of the above names).
    Other,
}

/// One error-queue entry: who raised it and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// `ee_errno`: what the kernel made of it.
    pub errno: i32,
    /// `ee_origin`: local, ICMP or ICMPv6.
    pub origin: u8,
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// `ee_info`: the MTU of a "too big" report, 0 otherwise.
    pub info: u32,
}

impl Report {
    /// A report with no entry behind it: the kernel refused a send.
    pub fn local(errno: i32) -> Report {
        Report {
            errno,
            origin: ORIGIN_LOCAL,
            icmp_type: 0,
            icmp_code: 0,
            info: 0,
        }
    }

    pub fn kind(&self) -> ReportKind {
        match (self.origin, self.icmp_type, self.icmp_code) {
            (ORIGIN_ICMP, 3, 3) | (ORIGIN_ICMP6, 1, 4) => ReportKind::PortUnreachable,
            (ORIGIN_ICMP, 3, 4) | (ORIGIN_ICMP6, 2, _) => ReportKind::TooBig,
            (ORIGIN_ICMP, 3, 0 | 1 | 6 | 7 | 8 | 11 | 12) => ReportKind::Unreachable,
            (ORIGIN_ICMP6, 1, 0 | 2 | 3 | 6 | 7) => ReportKind::Unreachable,
            (ORIGIN_ICMP, 3, 9 | 10 | 13..=15) | (ORIGIN_ICMP6, 1, 1 | 5) => ReportKind::Prohibited,
            (ORIGIN_ICMP, 3, 2 | 5) | (ORIGIN_ICMP, 12, _) | (ORIGIN_ICMP6, 4, _) => {
                ReportKind::Protocol
            }
            (ORIGIN_ICMP, 11, _) | (ORIGIN_ICMP6, 3, _) => ReportKind::TimeExceeded,
            (ORIGIN_LOCAL, _, _) if self.errno == libc::EMSGSIZE => ReportKind::TooBig,
            _ => ReportKind::Other,
        }
    }

    /// The path MTU a "too big" report names, if it names one.
    pub fn mtu(&self) -> Option<u32> {
        (self.kind() == ReportKind::TooBig && self.info > 0).then_some(self.info)
    }

    /// Whether an ICMP message raised it (rather than the local stack):
    /// such an entry also set the socket's pending error.
    pub fn from_icmp(&self) -> bool {
        matches!(self.origin, ORIGIN_ICMP | ORIGIN_ICMP6)
    }
}

/// Socket errors counted by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorStats {
    /// Receive and send calls that failed with a transient error.
    pub transient: u64,
    /// Receive and send calls that failed with a peer's error (most are
    /// ICMP errors raised on the socket; their entries are counted below).
    pub peer: u64,
    /// Error-queue entries by kind, and errors of sends the kernel refused.
    pub port_unreachable: u64,
    pub unreachable: u64,
    pub prohibited: u64,
    pub too_big: u64,
    pub protocol: u64,
    pub time_exceeded: u64,
    pub other: u64,
    /// Error-queue reads that emptied the queue, and turns that stopped at
    /// the per-turn bound with entries left (a flood of ICMP errors).
    pub queue_drained: u64,
    pub queue_bound_reached: u64,
    /// Datagrams the kernel dropped because the receive buffer was full
    /// (its running count, `SO_RXQ_OVFL`, as of the last datagram read).
    pub kernel_drops: u64,
}

impl ErrorStats {
    /// Counts one report.
    pub fn count(&mut self, report: &Report) {
        let slot = match report.kind() {
            ReportKind::PortUnreachable => &mut self.port_unreachable,
            ReportKind::Unreachable => &mut self.unreachable,
            ReportKind::Prohibited => &mut self.prohibited,
            ReportKind::TooBig => &mut self.too_big,
            ReportKind::Protocol => &mut self.protocol,
            ReportKind::TimeExceeded => &mut self.time_exceeded,
            ReportKind::Other => &mut self.other,
        };
        *slot += 1;
    }

    /// Reports counted, all kinds.
    pub fn reports(&self) -> u64 {
        self.port_unreachable
            + self.unreachable
            + self.prohibited
            + self.too_big
            + self.protocol
            + self.time_exceeded
            + self.other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(op: Op, errno: i32) -> Class {
        classify(op, &io::Error::from_raw_os_error(errno))
    }

    #[test]
    fn only_a_broken_socket_is_fatal() {
        // What the kernel makes of ICMP and ICMPv6 errors (icmp_err_convert,
        // icmpv6_err_convert, the UDP error handlers), and what a send
        // reports about one destination.
        let peer = [
            libc::ECONNREFUSED,
            libc::ECONNRESET,
            libc::EHOSTUNREACH,
            libc::ENETUNREACH,
            libc::ENOPROTOOPT,
            libc::EMSGSIZE,
            libc::EOPNOTSUPP,
            libc::EHOSTDOWN,
            libc::ENONET,
            libc::EACCES,
            libc::EPERM,
            libc::EPROTO,
            libc::EADDRNOTAVAIL,
            libc::EAFNOSUPPORT,
            libc::ENETDOWN,
            libc::ETIMEDOUT,
        ];
        for op in [Op::Receive, Op::Send] {
            for errno in peer {
                assert_eq!(class(op, errno), Class::Peer, "{op:?} errno {errno}");
            }
            for errno in [libc::EINTR, libc::EAGAIN, libc::ENOMEM, libc::ENOBUFS] {
                assert_eq!(class(op, errno), Class::Transient, "{op:?} errno {errno}");
            }
            for errno in [libc::EBADF, libc::ENOTSOCK, libc::EFAULT] {
                assert_eq!(class(op, errno), Class::Fatal, "{op:?} errno {errno}");
            }
        }
        assert_eq!(class(Op::Receive, libc::EINVAL), Class::Fatal);
        assert_eq!(class(Op::Send, libc::EINVAL), Class::Peer);
        let interrupted = io::Error::from(io::ErrorKind::Interrupted);
        assert_eq!(classify(Op::Receive, &interrupted), Class::Transient);
    }

    #[test]
    fn every_icmp_error_has_its_kind() {
        use ReportKind::*;
        let icmp = |t, c| Report {
            errno: 0,
            origin: ORIGIN_ICMP,
            icmp_type: t,
            icmp_code: c,
            info: 0,
        };
        let icmp6 = |t, c| Report {
            origin: ORIGIN_ICMP6,
            ..icmp(t, c)
        };
        let v4: Vec<ReportKind> = (0..16).map(|c| icmp(3, c).kind()).collect();
        assert_eq!(
            v4,
            [
                Unreachable,
                Unreachable,
                Protocol,
                PortUnreachable,
                TooBig,
                Protocol,
                Unreachable,
                Unreachable,
                Unreachable,
                Prohibited,
                Prohibited,
                Unreachable,
                Unreachable,
                Prohibited,
                Prohibited,
                Prohibited
            ]
        );
        let v6: Vec<ReportKind> = (0..8).map(|c| icmp6(1, c).kind()).collect();
        assert_eq!(
            v6,
            [
                Unreachable,
                Prohibited,
                Unreachable,
                Unreachable,
                PortUnreachable,
                Prohibited,
                Unreachable,
                Unreachable
            ]
        );
        assert_eq!(icmp(11, 0).kind(), TimeExceeded);
        assert_eq!(icmp(12, 1).kind(), Protocol);
        assert_eq!(icmp6(2, 0).kind(), TooBig);
        assert_eq!(icmp6(3, 1).kind(), TimeExceeded);
        assert_eq!(icmp6(4, 2).kind(), Protocol);
        assert_eq!(icmp(5, 0).kind(), Other);
        assert_eq!(Report::local(libc::EMSGSIZE).kind(), TooBig);
        assert_eq!(Report::local(libc::EPERM).kind(), Other);
        // The MTU counts only where a "too big" report carries one.
        let big = Report {
            info: 1400,
            ..icmp6(2, 0)
        };
        assert_eq!(big.mtu(), Some(1400));
        assert_eq!(
            Report {
                info: 1400,
                ..icmp(3, 3)
            }
            .mtu(),
            None
        );
        assert_eq!(icmp(3, 4).mtu(), None);
        let mut stats = ErrorStats::default();
        for c in 0..16 {
            stats.count(&icmp(3, c));
        }
        assert_eq!(
            (stats.unreachable, stats.prohibited, stats.protocol),
            (7, 5, 2)
        );
        assert_eq!(stats.reports(), 16);
    }
}
