//! Stateful NAT64 (RFC 6146): many IPv6 hosts share a few IPv4 addresses.
//!
//! An IPv6 host X sends to Y' = prefix + Y. The NAT binds X's transport
//! address (address, port or ICMP identifier) to a pool transport address
//! T (the binding information base, BIB), records the session X <-> Y as
//! T <-> Y, and translates. Replies from Y to T find the session and go
//! back to X. Mapping is endpoint-independent (one T per X whatever Y is,
//! RFC 4787 REQ-1); filtering is endpoint-independent by default (any IPv4
//! host may reach a bound T, the transparent choice RFC 6146 allows) or
//! address-dependent (only hosts X already sent to).
//!
//! Call pattern for a router, per datagram:
//! 1. [`Nat64::handle_v6`] for a datagram from the IPv6 side: on `Ok` send
//!    the IPv4 datagram to the IPv4 side.
//! 2. [`Nat64::handle_v4`] for a datagram from the IPv4 side: on `Ok` send
//!    the IPv6 datagram to the IPv6 side.
//! 3. Then drain [`Nat64::poll_transmit`]: ICMP errors the NAT originates
//!    (time exceeded, packet too big), further IPv6 fragments, and
//!    hairpinned datagrams, each tagged with the side to send it to.
//! 4. Call [`Nat64::handle_timeout`] at [`Nat64::poll_timeout`] (also done
//!    lazily at the start of every `handle_*`, so expiry is exact even if the
//!    router's timer is late).
//!
//! Limits: the session table refuses new sessions past `max_sessions`, and
//! one IPv6 host past `max_sessions_per_host`, so a flooding host fills its
//! own quota without starving the others and memory stays bounded (each
//! binding has at least one session). Existing sessions are never evicted
//! for new ones. Refusals are counted in [`Nat64Stats::drops`].

use crate::icmp;
use crate::tcp_state::{Lifetime, Side, TcpState};
use crate::translate::{
    Content, Echo, Flow, Ipv4Datagram, Ipv6Datagram, Plan, Proto, Rewrite, TcpControl,
    TranslateConfig, TranslateError,
};
use brisk_time::Instant;
use brisk_wire::Nat64Prefix;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::RangeInclusive;
use std::time::Duration;

/// Datagrams waiting in [`Nat64::poll_transmit`] beyond this are dropped
/// (and counted), so a router that never drains cannot grow memory.
const MAX_PENDING_TRANSMITS: usize = 1024;

/// Session lifetimes (RFC 6146 §4 defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// UDP_DEFAULT: 5 minutes.
    pub udp: Duration,
    /// TCP_EST: 2 hours 4 minutes.
    pub tcp_established: Duration,
    /// TCP_TRANS: 4 minutes, for opening, closing and reset connections.
    pub tcp_transitory: Duration,
    /// ICMP_DEFAULT: 60 seconds.
    pub icmp: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            udp: Duration::from_secs(5 * 60),
            tcp_established: Duration::from_secs(2 * 3600 + 4 * 60),
            tcp_transitory: Duration::from_secs(4 * 60),
            icmp: Duration::from_secs(60),
        }
    }
}

/// Which IPv4 hosts may send to a bound pool address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filtering {
    /// Anyone (RFC 4787 endpoint-independent filtering): the most
    /// transparent, what peer-to-peer apps need.
    EndpointIndependent,
    /// Only IPv4 addresses the IPv6 host has sent to from that binding.
    AddressDependent,
}

/// How to build a [`Nat64`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nat64Config {
    /// Where IPv4 addresses live inside IPv6 (the DNS64 must use the same).
    pub prefix: Nat64Prefix,
    /// The IPv4 addresses shared by the IPv6 hosts. The first one is also
    /// the source of ICMP errors the NAT originates.
    pub pool: Vec<Ipv4Addr>,
    /// Ports (and ICMP identifiers) handed out on each pool address.
    pub ports: RangeInclusive<u16>,
    /// Session lifetimes per protocol and TCP state.
    pub timeouts: Timeouts,
    /// Which IPv4 hosts may reach a bound pool address.
    pub filtering: Filtering,
    /// Sessions across all protocols and hosts.
    pub max_sessions: usize,
    /// Sessions one IPv6 host may hold.
    pub max_sessions_per_host: usize,
    /// Loop IPv6-to-pool traffic back to IPv6 (RFC 6146 §3.8) instead of
    /// dropping it.
    pub hairpinning: bool,
    /// Link MTUs and header choices for the translation itself.
    pub translate: TranslateConfig,
    /// ICMP errors the NAT originates per second (RFC 4443 §2.4(f) asks
    /// for a limit); a burst of one second's worth is allowed. Zero sends
    /// none.
    pub icmp_errors_per_s: u32,
}

impl Nat64Config {
    /// Defaults: ports 1024-65535, RFC 6146 timeouts, endpoint-independent
    /// filtering, 65,536 sessions (8,192 per host), hairpinning on, 1500-byte
    /// links, 100 ICMP errors per second.
    pub fn new(prefix: Nat64Prefix, pool: Vec<Ipv4Addr>) -> Self {
        Nat64Config {
            prefix,
            pool,
            ports: 1024..=65535,
            timeouts: Timeouts::default(),
            filtering: Filtering::EndpointIndependent,
            max_sessions: 65_536,
            max_sessions_per_host: 8_192,
            hairpinning: true,
            translate: TranslateConfig::default(),
            icmp_errors_per_s: 100,
        }
    }
}

/// Why a [`Nat64Config`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No IPv4 address to share.
    #[error("the IPv4 pool is empty")]
    EmptyPool,
    /// No port to hand out (start above end).
    #[error("the port range is empty")]
    EmptyPortRange,
    /// `max_sessions` or `max_sessions_per_host` is 0: nothing could pass.
    #[error("session limits must be at least 1")]
    ZeroLimit,
    /// A link MTU below the minimum its IP version guarantees.
    #[error("MTUs must be at least 1280 (IPv6) and 576 (IPv4)")]
    MtuTooSmall,
}

/// Why a datagram was not forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Nat64Drop {
    /// The datagram itself cannot be translated (malformed, fragment, ...).
    #[error(transparent)]
    Translate(#[from] TranslateError),
    /// An IPv6 datagram whose destination has no IPv4 address embedded.
    #[error("IPv6 destination is not under the NAT64 prefix")]
    NotForPrefix,
    /// An IPv4 datagram not addressed to the NAT's pool.
    #[error("IPv4 destination is not a pool address")]
    NotForPool,
    #[error(
        "source address must not be translated (under the prefix, in the pool, or not unicast)"
    )]
    /// A source that must not be translated: under the prefix, in the pool,
    /// or not unicast.
    BadSource,
    /// A multicast, broadcast or otherwise non-unicast IPv4 destination.
    #[error("destination is not a unicast IPv4 address")]
    BadDestination,
    /// An inbound datagram for a pool port no IPv6 host holds.
    #[error("no binding for this inbound packet (unsolicited)")]
    NoBinding,
    /// A datagram that would need a new session but cannot open one (a TCP
    /// segment other than SYN, an ICMP other than echo request).
    #[error("no session, and only a SYN or echo request opens one")]
    NoSession,
    /// The IPv4 sender was never contacted from this binding
    /// (address-dependent filtering).
    #[error("refused by address-dependent filtering")]
    Filtered,
    /// `max_sessions` reached.
    #[error("session table full")]
    TableFull,
    /// The IPv6 host reached `max_sessions_per_host`.
    #[error("this IPv6 host holds its maximum of sessions")]
    HostLimit,
    /// Every port of every pool address is bound.
    #[error("no free port on any pool address")]
    PoolExhausted,
    /// IPv6 to a pool address with hairpinning off.
    #[error("destination is a pool address and hairpinning is off")]
    HairpinDisabled,
    /// Not a loss: the datagram was for another IPv6 host behind this NAT
    /// and is waiting in [`Nat64::poll_transmit`] for the IPv6 side.
    #[error("hairpinned back to the IPv6 side (see poll_transmit)")]
    Hairpinned,
}

/// Drop counters, one per reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Unparsable datagrams, ICMP errors about ICMP errors, routing headers
    /// with segments left.
    pub malformed: u64,
    /// Datagrams with a wrong IPv4 header or ICMP checksum.
    pub bad_checksum: u64,
    /// IP fragments, which this NAT does not reassemble.
    pub fragment: u64,
    /// Upper layers other than TCP, UDP and ICMP.
    pub unknown_protocol: u64,
    /// ICMP types RFC 7915 drops (neighbour discovery, timestamps, ...).
    pub untranslatable_icmp: u64,
    /// Datagrams whose TTL or hop limit ran out here (an ICMP error is sent).
    pub hop_limit: u64,
    /// Datagrams over the next link's MTU that may not be fragmented: from
    /// IPv6, or IPv4 with DF set (an ICMP error is sent).
    pub too_big: u64,
    /// See [`Nat64Drop::NotForPrefix`].
    pub not_for_prefix: u64,
    /// See [`Nat64Drop::NotForPool`].
    pub not_for_pool: u64,
    /// Untranslatable source or non-unicast destination.
    pub bad_address: u64,
    /// Unsolicited inbound datagrams.
    pub no_binding: u64,
    /// See [`Nat64Drop::NoSession`].
    pub no_session: u64,
    /// Refused by address-dependent filtering.
    pub filtered: u64,
    /// Refused because the session table was full.
    pub table_full: u64,
    /// Refused because the IPv6 host held its maximum of sessions.
    pub host_limit: u64,
    /// Refused because no pool port was free.
    pub pool_exhausted: u64,
    /// IPv6 to a pool address with hairpinning off.
    pub hairpin_disabled: u64,
}

impl DropCounts {
    fn count(&mut self, drop: &Nat64Drop) {
        use TranslateError as T;
        let counter = match drop {
            Nat64Drop::Translate(
                T::Malformed(_) | T::ErrorAboutError | T::SegmentsLeft | T::PlanMismatch,
            ) => &mut self.malformed,
            Nat64Drop::Translate(T::BadChecksum) => &mut self.bad_checksum,
            Nat64Drop::Translate(T::Fragment) => &mut self.fragment,
            Nat64Drop::Translate(T::UnknownProtocol(_)) => &mut self.unknown_protocol,
            Nat64Drop::Translate(T::UntranslatableIcmp { .. }) => &mut self.untranslatable_icmp,
            Nat64Drop::Translate(T::HopLimitExceeded) => &mut self.hop_limit,
            Nat64Drop::Translate(T::PacketTooBig { .. } | T::FragmentationNeeded { .. }) => {
                &mut self.too_big
            }
            Nat64Drop::NotForPrefix => &mut self.not_for_prefix,
            Nat64Drop::NotForPool => &mut self.not_for_pool,
            Nat64Drop::BadSource | Nat64Drop::BadDestination => &mut self.bad_address,
            Nat64Drop::NoBinding => &mut self.no_binding,
            Nat64Drop::NoSession => &mut self.no_session,
            Nat64Drop::Filtered => &mut self.filtered,
            Nat64Drop::TableFull => &mut self.table_full,
            Nat64Drop::HostLimit => &mut self.host_limit,
            Nat64Drop::PoolExhausted => &mut self.pool_exhausted,
            Nat64Drop::HairpinDisabled => &mut self.hairpin_disabled,
            Nat64Drop::Hairpinned => return,
        };
        *counter += 1;
    }

    /// All drops together.
    pub fn total(&self) -> u64 {
        self.malformed
            + self.bad_checksum
            + self.fragment
            + self.unknown_protocol
            + self.untranslatable_icmp
            + self.hop_limit
            + self.too_big
            + self.not_for_prefix
            + self.not_for_pool
            + self.bad_address
            + self.no_binding
            + self.no_session
            + self.filtered
            + self.table_full
            + self.host_limit
            + self.pool_exhausted
            + self.hairpin_disabled
    }
}

/// Counters and table sizes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nat64Stats {
    /// Datagrams translated from IPv6 to IPv4.
    pub v6_to_v4: u64,
    /// Datagrams translated from IPv4 to IPv6 (fragments count once).
    pub v4_to_v6: u64,
    /// IPv6 datagrams looped back to IPv6 through a pool address.
    pub hairpinned: u64,
    /// Extra IPv6 fragments queued for `poll_transmit`.
    pub fragments_sent: u64,
    /// ICMP errors the NAT originated: time exceeded, packet too big or
    /// fragmentation needed.
    pub icmp_errors_sent: u64,
    /// ICMP errors not sent because of the rate limit or a full queue.
    pub icmp_errors_suppressed: u64,
    /// Datagrams lost because `poll_transmit` was not drained.
    pub transmit_overflow: u64,
    /// Sessions opened since start.
    pub sessions_created: u64,
    /// Sessions closed by their timeout since start.
    pub sessions_expired: u64,
    /// Sessions now.
    pub sessions: usize,
    /// Bindings (BIB entries) now.
    pub bindings: usize,
    /// Drops, by reason.
    pub drops: DropCounts,
}

/// A datagram for the router to send, and on which side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The side to send on: IPv6 (inside) or IPv4 (outside).
    pub side: Side,
    /// A whole IP datagram with valid checksums.
    pub datagram: Vec<u8>,
}

/// One session, as [`Nat64::sessions`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// TCP, UDP or ICMP.
    pub proto: Proto,
    /// The IPv6 host's address and port (or ICMP identifier).
    pub v6: (Ipv6Addr, u16),
    /// The pool address and port (or identifier) it is bound to.
    pub v4: (Ipv4Addr, u16),
    /// The IPv4 peer and its port (0 for ICMP).
    pub remote: (Ipv4Addr, u16),
    /// `None` for UDP and ICMP.
    pub tcp: Option<TcpState>,
    /// When the session ends unless traffic refreshes it.
    pub expires: Instant,
}

type SessionId = u64;
/// (protocol, IPv6 host, its port, IPv4 peer, its port).
type Key6 = (Proto, Ipv6Addr, u16, Ipv4Addr, u16);
/// (protocol, pool address, pool port, IPv4 peer, its port).
type Key4 = (Proto, Ipv4Addr, u16, Ipv4Addr, u16);

#[derive(Debug, Clone, Copy)]
struct Binding {
    v4: (Ipv4Addr, u16),
    sessions: usize,
}

/// A stateful NAT64: see the module documentation for the call pattern.
#[derive(Debug)]
pub struct Nat64 {
    config: Nat64Config,
    sessions: BTreeMap<SessionId, SessionInfo>,
    next_session: SessionId,
    by_v6: BTreeMap<Key6, SessionId>,
    by_v4: BTreeMap<Key4, SessionId>,
    timers: BTreeSet<(Instant, SessionId)>,
    bib6: BTreeMap<(Proto, Ipv6Addr, u16), Binding>,
    bib4: BTreeMap<(Proto, Ipv4Addr, u16), (Ipv6Addr, u16)>,
    /// Bound ports per pool address, to skip full addresses at once.
    bound: BTreeMap<(Proto, Ipv4Addr), usize>,
    /// Where the next port search starts, per pool address.
    cursor: BTreeMap<(Proto, Ipv4Addr), u16>,
    per_host: BTreeMap<Ipv6Addr, usize>,
    ident: u16,
    transmits: VecDeque<Transmit>,
    /// ICMP error budget in nanoseconds of allowance (one error costs
    /// 1 s / rate), capped at one second.
    icmp_budget_ns: u64,
    icmp_budget_at: Instant,
    stats: Nat64Stats,
}

impl Nat64 {
    /// An empty NAT; refuses a configuration that could not pass a packet.
    pub fn new(config: Nat64Config) -> Result<Self, ConfigError> {
        if config.pool.is_empty() {
            return Err(ConfigError::EmptyPool);
        }
        if config.ports.is_empty() {
            return Err(ConfigError::EmptyPortRange);
        }
        if config.max_sessions == 0 || config.max_sessions_per_host == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        let t = &config.translate;
        if t.ipv6_mtu < 1280 || t.lowest_ipv6_mtu < 1280 || t.ipv4_mtu < icmp::V4_ERROR_MAX_LEN {
            return Err(ConfigError::MtuTooSmall);
        }
        Ok(Nat64 {
            config,
            sessions: BTreeMap::new(),
            next_session: 0,
            by_v6: BTreeMap::new(),
            by_v4: BTreeMap::new(),
            timers: BTreeSet::new(),
            bib6: BTreeMap::new(),
            bib4: BTreeMap::new(),
            bound: BTreeMap::new(),
            cursor: BTreeMap::new(),
            per_host: BTreeMap::new(),
            ident: 0,
            transmits: VecDeque::new(),
            icmp_budget_ns: 1_000_000_000,
            icmp_budget_at: Instant::ZERO,
            stats: Nat64Stats::default(),
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &Nat64Config {
        &self.config
    }

    /// Translates a datagram from the IPv6 side into one for the IPv4 side.
    pub fn handle_v6(&mut self, now: Instant, datagram: &[u8]) -> Result<Vec<u8>, Nat64Drop> {
        self.handle_timeout(now);
        let result = self.v6_to_v4(now, datagram);
        match &result {
            Ok(_) => self.stats.v6_to_v4 += 1,
            Err(drop) => self.stats.drops.count(drop),
        }
        result
    }

    /// Translates a datagram from the IPv4 side into one for the IPv6 side.
    /// If it had to be fragmented, the first fragment is returned and the
    /// rest wait in [`Nat64::poll_transmit`].
    pub fn handle_v4(&mut self, now: Instant, datagram: &[u8]) -> Result<Vec<u8>, Nat64Drop> {
        self.handle_timeout(now);
        let result = self.v4_to_v6(now, datagram, false);
        match result {
            Ok(fragments) => {
                self.stats.v4_to_v6 += 1;
                let mut fragments = fragments.into_iter();
                // `translate` never returns an empty list.
                let first = fragments.next().unwrap_or_default();
                for f in fragments {
                    self.stats.fragments_sent += 1;
                    self.queue(Side::V6, f);
                }
                Ok(first)
            }
            Err(drop) => {
                self.stats.drops.count(&drop);
                Err(drop)
            }
        }
    }

    /// The next datagram the NAT wants sent on its own account.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// When the earliest session expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|&(t, _)| t)
    }

    /// Expires every session whose lifetime ended at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            let next = self
                .sessions
                .get(&id)
                .and_then(|s| s.tcp)
                .and_then(TcpState::on_expiry);
            match next {
                Some(state) => {
                    // Deadlines chain from the old one, not from `now`, so a
                    // late timer call does not lengthen the grace period.
                    let expires = at + self.config.timeouts.tcp_transitory;
                    if let Some(s) = self.sessions.get_mut(&id) {
                        s.tcp = Some(state);
                        s.expires = expires;
                    }
                    self.timers.insert((expires, id));
                }
                None => {
                    self.remove_session(id);
                    self.stats.sessions_expired += 1;
                }
            }
        }
    }

    /// Counters now, with the current table sizes.
    pub fn stats(&self) -> Nat64Stats {
        Nat64Stats {
            sessions: self.sessions.len(),
            bindings: self.bib6.len(),
            ..self.stats.clone()
        }
    }

    /// Every session, in a stable order.
    pub fn sessions(&self) -> impl Iterator<Item = &SessionInfo> {
        self.sessions.values()
    }

    fn v6_to_v4(&mut self, now: Instant, bytes: &[u8]) -> Result<Vec<u8>, Nat64Drop> {
        let d = Ipv6Datagram::parse(bytes)?;
        let src = d.src();
        if self.config.prefix.contains(src)
            || src.is_unspecified()
            || src.is_multicast()
            || src.is_loopback()
        {
            return Err(Nat64Drop::BadSource);
        }
        let dst4 = self
            .config
            .prefix
            .extract(d.dst())
            .ok_or(Nat64Drop::NotForPrefix)?;
        if dst4.is_unspecified() || dst4.is_loopback() || dst4.is_multicast() || dst4.is_broadcast()
        {
            return Err(Nat64Drop::BadDestination);
        }
        let hairpin = self.config.pool.contains(&dst4);
        if hairpin && !self.config.hairpinning {
            return Err(Nat64Drop::HairpinDisabled);
        }
        if let Err(e) = d.check_forward(&self.config.translate) {
            if matches!(d.content(), Content::Flow { .. }) {
                self.icmp_error_v6(now, &d, e);
            }
            return Err(e.into());
        }
        let plan = match *d.content() {
            Content::Flow { flow, tcp, echo } => {
                let id = self.session_for_v6(now, flow, dst4, tcp, echo)?;
                let s = &self.sessions[&id];
                let dst_port = if flow.proto == Proto::Icmp {
                    s.v4.1
                } else {
                    flow.dst_port
                };
                Plan::Flow(Rewrite {
                    src: s.v4.0,
                    dst: dst4,
                    src_port: s.v4.1,
                    dst_port,
                })
            }
            Content::Error { inner } => {
                // The quoted packet came from the IPv4 peer to the host.
                let peer = self
                    .config
                    .prefix
                    .extract(inner.src)
                    .ok_or(Nat64Drop::NotForPrefix)?;
                let peer_port = remote_port(inner.proto, inner.src_port);
                let key = (inner.proto, inner.dst, inner.dst_port, peer, peer_port);
                let id = *self.by_v6.get(&key).ok_or(Nat64Drop::NoSession)?;
                let s = &self.sessions[&id];
                let src_port = if inner.proto == Proto::Icmp {
                    s.v4.1
                } else {
                    inner.src_port
                };
                Plan::Error {
                    src: s.v4.0,
                    dst: dst4,
                    inner: Rewrite {
                        src: peer,
                        dst: s.v4.0,
                        src_port,
                        dst_port: s.v4.1,
                    },
                }
            }
        };
        self.ident = self.ident.wrapping_add(1);
        let out = d.translate(&plan, self.ident, &self.config.translate)?;
        if hairpin {
            let back = self.v4_to_v6(now, &out, true)?;
            self.stats.hairpinned += 1;
            for datagram in back {
                self.queue(Side::V6, datagram);
            }
            return Err(Nat64Drop::Hairpinned);
        }
        Ok(out)
    }

    fn v4_to_v6(
        &mut self,
        now: Instant,
        bytes: &[u8],
        hairpin: bool,
    ) -> Result<Vec<Vec<u8>>, Nat64Drop> {
        let d = Ipv4Datagram::parse(bytes)?;
        if !self.config.pool.contains(&d.dst()) {
            return Err(Nat64Drop::NotForPool);
        }
        let src = d.src();
        let pool_src = self.config.pool.contains(&src);
        if (pool_src && !hairpin)
            || src.is_unspecified()
            || src.is_loopback()
            || src.is_multicast()
            || src.is_broadcast()
        {
            return Err(Nat64Drop::BadSource);
        }
        if let Err(e) = d.check_forward(&self.config.translate) {
            if matches!(d.content(), Content::Flow { .. }) {
                self.icmp_error_v4(now, &d, e);
            }
            return Err(e.into());
        }
        let prefix = self.config.prefix;
        let plan = match *d.content() {
            Content::Flow { flow, tcp, .. } => {
                let id = self.session_for_v4(now, flow, tcp)?;
                let s = &self.sessions[&id];
                let src_port = if flow.proto == Proto::Icmp {
                    s.v6.1
                } else {
                    flow.src_port
                };
                Plan::Flow(Rewrite {
                    src: prefix.embed(src),
                    dst: s.v6.0,
                    src_port,
                    dst_port: s.v6.1,
                })
            }
            Content::Error { inner } => {
                // The quoted packet is one the NAT sent from the pool.
                let peer_port = remote_port(inner.proto, inner.dst_port);
                let key = (inner.proto, inner.src, inner.src_port, inner.dst, peer_port);
                let id = *self.by_v4.get(&key).ok_or(Nat64Drop::NoSession)?;
                let s = &self.sessions[&id];
                let dst_port = if inner.proto == Proto::Icmp {
                    s.v6.1
                } else {
                    inner.dst_port
                };
                Plan::Error {
                    src: prefix.embed(src),
                    dst: s.v6.0,
                    inner: Rewrite {
                        src: s.v6.0,
                        dst: prefix.embed(inner.dst),
                        src_port: s.v6.1,
                        dst_port,
                    },
                }
            }
        };
        Ok(d.translate(&plan, &self.config.translate)?)
    }

    /// The session an outbound flow packet belongs to, created if the packet
    /// may open one.
    fn session_for_v6(
        &mut self,
        now: Instant,
        flow: Flow<Ipv6Addr>,
        dst4: Ipv4Addr,
        tcp: TcpControl,
        echo: Option<Echo>,
    ) -> Result<SessionId, Nat64Drop> {
        let key = (
            flow.proto,
            flow.src,
            flow.src_port,
            dst4,
            remote_port(flow.proto, flow.dst_port),
        );
        if let Some(&id) = self.by_v6.get(&key) {
            self.on_packet(now, id, Side::V6, tcp);
            return Ok(id);
        }
        match flow.proto {
            Proto::Tcp if !tcp.syn || tcp.rst => return Err(Nat64Drop::NoSession),
            Proto::Icmp if echo != Some(Echo::Request) => return Err(Nat64Drop::NoSession),
            _ => {}
        }
        self.check_limits(flow.src)?;
        let v4 = self.bind(flow.proto, flow.src, flow.src_port)?;
        let tcp_state = (flow.proto == Proto::Tcp).then(|| TcpState::opened_by(Side::V6));
        Ok(self.insert_session(
            now,
            flow.proto,
            (flow.src, flow.src_port),
            v4,
            (dst4, key.4),
            tcp_state,
        ))
    }

    /// The session an inbound flow packet belongs to; a new one only where a
    /// binding exists and filtering allows it.
    fn session_for_v4(
        &mut self,
        now: Instant,
        flow: Flow<Ipv4Addr>,
        tcp: TcpControl,
    ) -> Result<SessionId, Nat64Drop> {
        let peer_port = remote_port(flow.proto, flow.src_port);
        let key = (flow.proto, flow.dst, flow.dst_port, flow.src, peer_port);
        if let Some(&id) = self.by_v4.get(&key) {
            self.on_packet(now, id, Side::V4, tcp);
            return Ok(id);
        }
        match flow.proto {
            // Inbound ICMP queries need a session the host opened.
            Proto::Icmp => return Err(Nat64Drop::NoBinding),
            Proto::Tcp if !tcp.syn || tcp.rst => return Err(Nat64Drop::NoBinding),
            _ => {}
        }
        let &(host, host_port) = self
            .bib4
            .get(&(flow.proto, flow.dst, flow.dst_port))
            .ok_or(Nat64Drop::NoBinding)?;
        if self.config.filtering == Filtering::AddressDependent {
            let from = (flow.proto, host, host_port, flow.src, 0);
            let to = (flow.proto, host, host_port, flow.src, u16::MAX);
            if self.by_v6.range(from..=to).next().is_none() {
                return Err(Nat64Drop::Filtered);
            }
        }
        self.check_limits(host)?;
        let tcp_state = (flow.proto == Proto::Tcp).then(|| TcpState::opened_by(Side::V4));
        let v4 = (flow.dst, flow.dst_port);
        Ok(self.insert_session(
            now,
            flow.proto,
            (host, host_port),
            v4,
            (flow.src, peer_port),
            tcp_state,
        ))
    }

    fn check_limits(&self, host: Ipv6Addr) -> Result<(), Nat64Drop> {
        if self.sessions.len() >= self.config.max_sessions {
            return Err(Nat64Drop::TableFull);
        }
        if self.per_host.get(&host).copied().unwrap_or(0) >= self.config.max_sessions_per_host {
            return Err(Nat64Drop::HostLimit);
        }
        Ok(())
    }

    /// The pool transport address for an IPv6 transport address, binding
    /// one if needed.
    fn bind(
        &mut self,
        proto: Proto,
        addr: Ipv6Addr,
        port: u16,
    ) -> Result<(Ipv4Addr, u16), Nat64Drop> {
        if let Some(b) = self.bib6.get(&(proto, addr, port)) {
            return Ok(b.v4);
        }
        let v4 = self.allocate(proto, addr, port)?;
        self.bib6
            .insert((proto, addr, port), Binding { v4, sessions: 0 });
        self.bib4.insert((proto, v4.0, v4.1), (addr, port));
        *self.bound.entry((proto, v4.0)).or_insert(0) += 1;
        Ok(v4)
    }

    /// A free pool transport address. Each IPv6 host starts at the pool
    /// address its own address hashes to, so one host keeps one IPv4 address
    /// ("paired" pooling, RFC 4787 REQ-2) while the pool has room; the
    /// host's own port is kept when free, otherwise the next free one after
    /// a per-address cursor.
    fn allocate(
        &mut self,
        proto: Proto,
        addr: Ipv6Addr,
        port: u16,
    ) -> Result<(Ipv4Addr, u16), Nat64Drop> {
        let (lo, hi) = (*self.config.ports.start(), *self.config.ports.end());
        let range_len = usize::from(hi - lo) + 1;
        let pool_len = self.config.pool.len();
        let first = usize::try_from(fnv1a(&addr.octets()) % pool_len as u64).unwrap_or(0);
        for k in 0..pool_len {
            let v4 = self.config.pool[(first + k) % pool_len];
            if self.bound.get(&(proto, v4)).copied().unwrap_or(0) >= range_len {
                continue;
            }
            if self.config.ports.contains(&port) && !self.bib4.contains_key(&(proto, v4, port)) {
                return Ok((v4, port));
            }
            let cursor = self.cursor.entry((proto, v4)).or_insert(lo);
            for _ in 0..range_len {
                let candidate = *cursor;
                *cursor = if candidate >= hi { lo } else { candidate + 1 };
                if !self.bib4.contains_key(&(proto, v4, candidate)) {
                    return Ok((v4, candidate));
                }
            }
        }
        Err(Nat64Drop::PoolExhausted)
    }

    fn insert_session(
        &mut self,
        now: Instant,
        proto: Proto,
        v6: (Ipv6Addr, u16),
        v4: (Ipv4Addr, u16),
        remote: (Ipv4Addr, u16),
        tcp: Option<TcpState>,
    ) -> SessionId {
        let t = &self.config.timeouts;
        let lifetime = match proto {
            Proto::Tcp => t.tcp_transitory,
            Proto::Udp => t.udp,
            Proto::Icmp => t.icmp,
        };
        let id = self.next_session;
        self.next_session += 1;
        let expires = now + lifetime;
        self.sessions.insert(
            id,
            SessionInfo {
                proto,
                v6,
                v4,
                remote,
                tcp,
                expires,
            },
        );
        self.by_v6
            .insert((proto, v6.0, v6.1, remote.0, remote.1), id);
        self.by_v4
            .insert((proto, v4.0, v4.1, remote.0, remote.1), id);
        self.timers.insert((expires, id));
        *self.per_host.entry(v6.0).or_insert(0) += 1;
        if let Some(b) = self.bib6.get_mut(&(proto, v6.0, v6.1)) {
            b.sessions += 1;
        }
        self.stats.sessions_created += 1;
        id
    }

    /// Updates TCP state and the lifetime for a packet of session `id`.
    fn on_packet(&mut self, now: Instant, id: SessionId, side: Side, tcp: TcpControl) {
        let t = self.config.timeouts;
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        let lifetime = match (s.proto, s.tcp) {
            (Proto::Tcp, Some(state)) => {
                let (next, lifetime) = state.on_packet(side, tcp);
                s.tcp = Some(next);
                match lifetime {
                    Lifetime::Keep => return,
                    Lifetime::Established => t.tcp_established,
                    Lifetime::Transitory => t.tcp_transitory,
                }
            }
            (Proto::Icmp, _) => t.icmp,
            _ => t.udp,
        };
        let old = s.expires;
        s.expires = now + lifetime;
        let new = s.expires;
        self.timers.remove(&(old, id));
        self.timers.insert((new, id));
    }

    fn remove_session(&mut self, id: SessionId) {
        let Some(s) = self.sessions.remove(&id) else {
            return;
        };
        self.timers.remove(&(s.expires, id));
        self.by_v6
            .remove(&(s.proto, s.v6.0, s.v6.1, s.remote.0, s.remote.1));
        self.by_v4
            .remove(&(s.proto, s.v4.0, s.v4.1, s.remote.0, s.remote.1));
        if let Some(n) = self.per_host.get_mut(&s.v6.0) {
            *n -= 1;
            if *n == 0 {
                self.per_host.remove(&s.v6.0);
            }
        }
        let key6 = (s.proto, s.v6.0, s.v6.1);
        let unbind = match self.bib6.get_mut(&key6) {
            Some(b) => {
                b.sessions = b.sessions.saturating_sub(1);
                b.sessions == 0
            }
            None => false,
        };
        if unbind {
            self.bib6.remove(&key6);
            self.bib4.remove(&(s.proto, s.v4.0, s.v4.1));
            if let Some(n) = self.bound.get_mut(&(s.proto, s.v4.0)) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Takes one ICMP error from the rate limiter's budget.
    fn may_send_icmp_error(&mut self, now: Instant) -> bool {
        let rate = u64::from(self.config.icmp_errors_per_s);
        if rate == 0 {
            self.stats.icmp_errors_suppressed += 1;
            return false;
        }
        let cost = 1_000_000_000 / rate;
        let elapsed = u64::try_from((now - self.icmp_budget_at).as_nanos()).unwrap_or(u64::MAX);
        self.icmp_budget_at = now.max(self.icmp_budget_at);
        self.icmp_budget_ns = self
            .icmp_budget_ns
            .saturating_add(elapsed)
            .min(1_000_000_000);
        if self.icmp_budget_ns >= cost && self.transmits.len() < MAX_PENDING_TRANSMITS {
            self.icmp_budget_ns -= cost;
            self.stats.icmp_errors_sent += 1;
            true
        } else {
            self.stats.icmp_errors_suppressed += 1;
            false
        }
    }

    /// Time Exceeded or Packet Too Big back to an IPv6 sender, from the
    /// NAT's own address (the first pool address under the prefix).
    fn icmp_error_v6(&mut self, now: Instant, d: &Ipv6Datagram<'_>, e: TranslateError) {
        let (icmp_type, rest) = match e {
            TranslateError::HopLimitExceeded => (icmp::V6_TIME_EXCEEDED, [0; 4]),
            TranslateError::PacketTooBig { mtu } => (icmp::V6_PACKET_TOO_BIG, mtu.to_be_bytes()),
            _ => return,
        };
        if !self.may_send_icmp_error(now) {
            return;
        }
        let me = self.config.prefix.embed(self.config.pool[0]);
        let error = icmp::v6_error(me, d.src(), icmp_type, 0, rest, d.bytes());
        self.queue(Side::V6, error);
    }

    /// Time Exceeded or "fragmentation needed" back to an IPv4 sender, from
    /// the pool address it wrote to.
    fn icmp_error_v4(&mut self, now: Instant, d: &Ipv4Datagram<'_>, e: TranslateError) {
        let (icmp_type, code, rest) = match e {
            TranslateError::HopLimitExceeded => (icmp::V4_TIME_EXCEEDED, 0, [0; 4]),
            TranslateError::FragmentationNeeded { mtu } => {
                let [hi, lo] = mtu.to_be_bytes();
                (
                    icmp::V4_DEST_UNREACHABLE,
                    icmp::V4_CODE_FRAG_NEEDED,
                    [0, 0, hi, lo],
                )
            }
            _ => return,
        };
        if !self.may_send_icmp_error(now) {
            return;
        }
        let error = icmp::v4_error(d.dst(), d.src(), icmp_type, code, rest, d.bytes());
        self.queue(Side::V4, error);
    }

    fn queue(&mut self, side: Side, datagram: Vec<u8>) {
        if self.transmits.len() < MAX_PENDING_TRANSMITS {
            self.transmits.push_back(Transmit { side, datagram });
        } else {
            self.stats.transmit_overflow += 1;
        }
    }
}

/// The peer port a session is keyed on: ICMP queries have only the
/// identifier, which is the host's, so the peer's is 0.
fn remote_port(proto: Proto, port: u16) -> u16 {
    if proto == Proto::Icmp { 0 } else { port }
}

/// FNV-1a: a fixed, seedless hash, so pool choice is the same every run.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[path = "nat_tests.rs"]
mod tests;
