//! Happy Eyeballs v2 (RFC 8305) as a sans-IO state machine: which address
//! to try from which local path, and when.
//!
//! A blackholed path (an IPv6 route that drops packets, a Wi-Fi network
//! that associates but carries nothing) must cost a user a quarter of a
//! second, not a connect timeout. The machine races connection attempts:
//!
//! - **Resolution** (§3): AAAA and A queries run in parallel. A positive
//!   AAAA answer starts connecting at once; an A answer that arrives first
//!   waits up to the Resolution Delay (50 ms) for the AAAA answer.
//! - **Ordering** (§4): addresses alternate between families, starting with
//!   IPv6 (`first_address_family_count` of them first).
//! - **Attempts** (§5): one attempt starts every Connection Attempt Delay
//!   (250 ms; RFC bounds 100 ms to 2 s) without stopping the earlier ones;
//!   a failed attempt lets the next start at once (never closer than 10 ms
//!   to the previous start). The first handshake to complete wins and every
//!   other attempt is cancelled.
//! - **Paths**: each address is tried over each local [`Source`] in turn
//!   (an address or an interface, e.g. Wi-Fi then cellular), which is the
//!   WWDC 2015 fallback: a stalled Wi-Fi attempt is joined by a cellular
//!   one 250 ms later and the first to finish is kept.
//! - **NAT64** (§7): on a host with no IPv4 route, IPv4 answers are turned
//!   into IPv6 addresses under the network's NAT64 prefix (RFC 6052).
//!
//! Drive it with `handle_*` inputs and `handle_timeout(now)`, then drain
//! [`HappyEyeballs::poll_action`] and arm [`HappyEyeballs::poll_timeout`].

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Nat64Prefix;
use serde::Serialize;

/// RFC 8305 §8 bounds on the Connection Attempt Delay.
pub const MIN_ATTEMPT_DELAY: Duration = Duration::from_millis(100);
/// Upper bound on the Connection Attempt Delay (RFC 8305 §8).
pub const MAX_ATTEMPT_DELAY: Duration = Duration::from_secs(2);
/// §5: no two attempts may start within 10 ms of each other.
pub const MIN_ATTEMPT_SPACING: Duration = Duration::from_millis(10);

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "connection attempt delay {0:?} is outside RFC 8305's 100 ms to 2 s (250 ms recommended)"
    )]
    /// The Connection Attempt Delay is outside 100 ms to 2 s.
    AttemptDelay(Duration),
    #[error("resolution delay {0:?} is longer than 1 s; RFC 8305 recommends 50 ms")]
    /// The Resolution Delay is longer than 1 s.
    ResolutionDelay(Duration),
    #[error("first address family count must be at least 1")]
    /// The First Address Family Count is 0.
    FamilyCount,
}

/// The timers and ordering of RFC 8305 §8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Config {
    /// How long to wait for AAAA answers after A answers arrive first
    /// (RFC 8305 §3, 50 ms recommended, at most 1 s).
    pub resolution_delay: Duration,
    /// Time between starting successive attempts while none has connected
    /// (RFC 8305 §5, 100 ms to 2 s, 250 ms recommended).
    pub attempt_delay: Duration,
    /// How many addresses of the preferred family to try before the other
    /// (RFC 8305 §4, at least 1).
    pub first_address_family_count: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            resolution_delay: Duration::from_millis(50),
            attempt_delay: Duration::from_millis(250),
            first_address_family_count: 1,
        }
    }
}

impl Config {
    /// The defaults with another Connection Attempt Delay.
    pub fn with_attempt_delay(attempt_delay: Duration) -> Result<Self, ConfigError> {
        Config {
            attempt_delay,
            ..Config::default()
        }
        .validated()
    }

    /// `self` if it is within RFC 8305's bounds, otherwise which bound it breaks.
    pub fn validated(self) -> Result<Self, ConfigError> {
        if !(MIN_ATTEMPT_DELAY..=MAX_ATTEMPT_DELAY).contains(&self.attempt_delay) {
            return Err(ConfigError::AttemptDelay(self.attempt_delay));
        }
        if self.resolution_delay > Duration::from_secs(1) {
            return Err(ConfigError::ResolutionDelay(self.resolution_delay));
        }
        if self.first_address_family_count == 0 {
            return Err(ConfigError::FamilyCount);
        }
        Ok(self)
    }
}

/// A local path to connect from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Whatever the routing table picks.
    Any,
    /// Bind to this address before connecting (it must belong to an
    /// interface; it also fixes the family).
    Ip(IpAddr),
    /// Pin to this interface (`SO_BINDTODEVICE`), for either family.
    Device(String),
}

impl Source {
    fn can_reach(&self, dest: &SocketAddr) -> bool {
        match self {
            Source::Ip(ip) => ip.is_ipv6() == dest.is_ipv6(),
            Source::Any | Source::Device(_) => true,
        }
    }
}

/// One address over one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Destination address and port.
    pub addr: SocketAddr,
    /// Local path to connect from.
    pub source: Source,
    /// An IPv6 address made locally from an IPv4 answer (NAT64).
    pub synthesized: bool,
}

/// Identifies one connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct AttemptId(pub u64);

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start connecting (bind to the source first).
    Connect {
        /// The attempt, named in later input about it.
        id: AttemptId,
        /// What to connect to and from.
        candidate: Candidate,
    },
    /// Abandon this attempt: close its socket.
    Cancel {
        /// The attempt to abandon.
        id: AttemptId,
    },
    /// This attempt's connection is the result.
    Connected {
        /// The winning attempt.
        id: AttemptId,
    },
    /// Every address failed or none was found.
    Failed,
}

/// Which address family a DNS answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Family {
    /// An A (IPv4) answer.
    V4,
    /// An AAAA (IPv6) answer.
    V6,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer<T> {
    Pending,
    Done(Vec<T>),
}

impl<T> Answer<T> {
    fn is_done(&self) -> bool {
        matches!(self, Answer::Done(_))
    }
}

/// The RFC 8305 race for one destination.
#[derive(Debug)]
pub struct HappyEyeballs {
    config: Config,
    port: u16,
    sources: Vec<Source>,
    /// Set when the host has no IPv4 route: IPv4 answers are synthesized.
    nat64: Option<Nat64Prefix>,
    aaaa: Answer<Ipv6Addr>,
    a: Answer<Ipv4Addr>,
    /// When the A answer arrived first: wait for AAAA until this.
    resolution_deadline: Option<Instant>,
    connecting: bool,
    /// Not yet attempted, in order.
    queue: VecDeque<Candidate>,
    /// Every candidate started so far, so late answers add only new ones.
    attempted: Vec<Candidate>,
    in_flight: BTreeMap<AttemptId, Candidate>,
    last_start: Option<Instant>,
    /// An attempt failed since the last start: the next need not wait.
    failed_since_start: bool,
    next_id: u64,
    actions: VecDeque<Action>,
    finished: bool,
}

impl HappyEyeballs {
    /// A race to `port` from `sources` (in preference order; empty means
    /// [`Source::Any`]). `nat64` is the prefix to synthesize IPv6 addresses
    /// under when the host has no IPv4 route, `None` when it has one.
    pub fn new(
        config: Config,
        port: u16,
        sources: Vec<Source>,
        nat64: Option<Nat64Prefix>,
    ) -> Self {
        let sources = if sources.is_empty() {
            vec![Source::Any]
        } else {
            sources
        };
        HappyEyeballs {
            config,
            port,
            sources,
            nat64,
            aaaa: Answer::Pending,
            a: Answer::Pending,
            resolution_deadline: None,
            connecting: false,
            queue: VecDeque::new(),
            attempted: Vec::new(),
            in_flight: BTreeMap::new(),
            last_start: None,
            failed_since_start: false,
            next_id: 0,
            actions: VecDeque::new(),
            finished: false,
        }
    }

    /// The AAAA answer (empty for "no records" or a failed query).
    pub fn handle_aaaa(&mut self, now: Instant, addrs: Vec<Ipv6Addr>) {
        if self.finished || self.aaaa.is_done() {
            return;
        }
        let positive = !addrs.is_empty();
        self.aaaa = Answer::Done(addrs);
        if !self.connecting && (positive || self.a.is_done()) {
            self.start_connecting();
        } else if self.connecting {
            self.requeue();
        }
        self.handle_timeout(now);
    }

    /// The A answer (empty for "no records" or a failed query).
    pub fn handle_a(&mut self, now: Instant, addrs: Vec<Ipv4Addr>) {
        if self.finished || self.a.is_done() {
            return;
        }
        self.a = Answer::Done(addrs);
        if self.connecting {
            self.requeue();
        } else if self.aaaa.is_done() {
            self.start_connecting();
        } else {
            self.resolution_deadline = Some(now + self.config.resolution_delay);
        }
        self.handle_timeout(now);
    }

    /// Both answers at once, e.g. for literal addresses.
    pub fn handle_resolved(&mut self, now: Instant, addrs: &[IpAddr]) {
        let (mut v6, mut v4) = (Vec::new(), Vec::new());
        for addr in addrs {
            match addr {
                IpAddr::V6(a) => v6.push(*a),
                IpAddr::V4(a) => v4.push(*a),
            }
        }
        self.handle_aaaa(now, v6);
        self.handle_a(now, v4);
    }

    /// The attempt's handshake completed.
    pub fn handle_connected(&mut self, _now: Instant, id: AttemptId) {
        if self.finished || !self.in_flight.contains_key(&id) {
            return;
        }
        self.in_flight.remove(&id);
        for other in std::mem::take(&mut self.in_flight).into_keys() {
            self.actions.push_back(Action::Cancel { id: other });
        }
        self.queue.clear();
        self.finished = true;
        self.actions.push_back(Action::Connected { id });
    }

    /// The attempt failed (refused, unreachable, timed out).
    pub fn handle_failed(&mut self, now: Instant, id: AttemptId) {
        if self.finished || self.in_flight.remove(&id).is_none() {
            return;
        }
        self.failed_since_start = true;
        self.handle_timeout(now);
    }

    /// Advances timers: the resolution delay and the next attempt.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.finished {
            return;
        }
        if !self.connecting && self.resolution_deadline.is_some_and(|t| t <= now) {
            self.start_connecting();
        }
        let due = self.connecting && self.next_start().is_some_and(|t| t <= now);
        if let Some(candidate) = due.then(|| self.queue.pop_front()).flatten() {
            let id = AttemptId(self.next_id);
            self.next_id += 1;
            self.in_flight.insert(id, candidate.clone());
            self.attempted.push(candidate.clone());
            self.last_start = Some(now);
            self.failed_since_start = false;
            self.actions.push_back(Action::Connect { id, candidate });
        }
        if self.exhausted() {
            self.finished = true;
            self.actions.push_back(Action::Failed);
        }
    }

    /// The next thing to do, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.finished {
            return None;
        }
        if !self.connecting {
            return self.resolution_deadline;
        }
        self.next_start()
    }

    /// The candidate an attempt is for.
    pub fn candidate(&self, id: AttemptId) -> Option<&Candidate> {
        self.in_flight.get(&id)
    }

    /// Whether the race has ended: an attempt connected or every one failed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// When the next queued candidate may start.
    fn next_start(&self) -> Option<Instant> {
        if self.queue.is_empty() {
            return None;
        }
        let Some(last) = self.last_start else {
            return Some(Instant::ZERO);
        };
        if self.in_flight.is_empty() || self.failed_since_start {
            Some(last + MIN_ATTEMPT_SPACING)
        } else {
            Some(last + self.config.attempt_delay)
        }
    }

    fn exhausted(&self) -> bool {
        let resolved = self.aaaa.is_done() && self.a.is_done();
        resolved && self.queue.is_empty() && self.in_flight.is_empty()
    }

    fn start_connecting(&mut self) {
        self.connecting = true;
        self.resolution_deadline = None;
        self.requeue();
    }

    /// Rebuilds the queue from every answer so far (§4 ordering), leaving
    /// out candidates already attempted.
    fn requeue(&mut self) {
        let attempted = &self.attempted;
        self.queue = self
            .ordered_candidates()
            .into_iter()
            .filter(|c| !attempted.contains(c))
            .collect();
    }

    /// Addresses interleaved by family (§4), native IPv6 first; synthesized
    /// IPv6 addresses take the IPv4 slots they stand for. Each address is
    /// expanded over the sources that can reach it.
    fn ordered_candidates(&self) -> Vec<Candidate> {
        let v6: Vec<(IpAddr, bool)> = match &self.aaaa {
            Answer::Done(list) => list.iter().map(|a| (IpAddr::V6(*a), false)).collect(),
            Answer::Pending => Vec::new(),
        };
        let v4: Vec<(IpAddr, bool)> = match &self.a {
            Answer::Done(list) => list
                .iter()
                .map(|a| match self.nat64 {
                    Some(prefix) => (IpAddr::V6(prefix.embed(*a)), true),
                    None => (IpAddr::V4(*a), false),
                })
                .collect(),
            Answer::Pending => Vec::new(),
        };
        let mut out = Vec::new();
        for (ip, synthesized) in interleave(&v6, &v4, self.config.first_address_family_count) {
            let addr = SocketAddr::new(ip, self.port);
            for source in &self.sources {
                if source.can_reach(&addr) {
                    let c = Candidate {
                        addr,
                        source: source.clone(),
                        synthesized,
                    };
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        out
    }
}

/// `first` items of `preferred`, then alternate, starting with the other
/// family; leftovers of either list go last.
fn interleave<T: Copy>(preferred: &[T], other: &[T], first: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(preferred.len() + other.len());
    let lead = first.min(preferred.len());
    out.extend_from_slice(&preferred[..lead]);
    let mut p = preferred[lead..].iter();
    let mut o = other.iter();
    loop {
        match (o.next(), p.next()) {
            (None, None) => break,
            (a, b) => {
                out.extend(a.copied());
                out.extend(b.copied());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// How the simulated network treats an attempt to one candidate.
    #[derive(Clone, Copy)]
    enum Path {
        /// The handshake completes after this many ms.
        Answers(u64),
        /// Refused or unreachable after this many ms.
        Fails(u64),
        /// SYNs vanish: the attempt never completes.
        Blackhole,
    }

    /// A virtual-time run: DNS answers at given times, per-candidate paths.
    struct Run {
        he: HappyEyeballs,
        now: Instant,
        /// (time, what) still to deliver.
        pending: Vec<(Instant, Input)>,
        paths: HashMap<(SocketAddr, Source), Path>,
        /// (ms, action) as they came out.
        log: Vec<(u64, Action)>,
    }

    #[derive(Clone)]
    enum Input {
        Aaaa(Vec<Ipv6Addr>),
        A(Vec<Ipv4Addr>),
        Connected(AttemptId),
        Failed(AttemptId),
    }

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    impl Run {
        fn new(config: Config, sources: Vec<Source>, nat64: Option<Nat64Prefix>) -> Self {
            Run {
                he: HappyEyeballs::new(config, 443, sources, nat64),
                now: Instant::ZERO,
                pending: Vec::new(),
                paths: HashMap::new(),
                log: Vec::new(),
            }
        }

        fn aaaa_at(mut self, t: u64, addrs: &[&str]) -> Self {
            let v = addrs.iter().map(|a| a.parse().unwrap()).collect();
            self.pending.push((ms(t), Input::Aaaa(v)));
            self
        }

        fn a_at(mut self, t: u64, addrs: &[&str]) -> Self {
            let v = addrs.iter().map(|a| a.parse().unwrap()).collect();
            self.pending.push((ms(t), Input::A(v)));
            self
        }

        fn path(mut self, addr: &str, source: Source, path: Path) -> Self {
            let ip: IpAddr = addr.parse().unwrap();
            self.paths.insert((SocketAddr::new(ip, 443), source), path);
            self
        }

        /// Runs until the machine finishes or nothing is left to happen.
        fn run(mut self) -> Self {
            for _ in 0..1000 {
                self.drain();
                if self.he.is_finished() {
                    break;
                }
                let next_input = self.pending.iter().map(|(t, _)| *t).min();
                let next = match (next_input, self.he.poll_timeout()) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => match a.or(b) {
                        Some(t) => t,
                        None => break,
                    },
                };
                self.now = next.max(self.now);
                let (due, later): (Vec<_>, Vec<_>) =
                    self.pending.drain(..).partition(|(t, _)| *t <= self.now);
                self.pending = later;
                for (_, input) in due {
                    match input {
                        Input::Aaaa(v) => self.he.handle_aaaa(self.now, v),
                        Input::A(v) => self.he.handle_a(self.now, v),
                        Input::Connected(id) => self.he.handle_connected(self.now, id),
                        Input::Failed(id) => self.he.handle_failed(self.now, id),
                    }
                }
                self.he.handle_timeout(self.now);
            }
            self.drain();
            self
        }

        fn drain(&mut self) {
            while let Some(action) = self.he.poll_action() {
                if let Action::Connect { id, candidate } = &action {
                    let key = (candidate.addr, candidate.source.clone());
                    match self.paths.get(&key).copied().unwrap_or(Path::Blackhole) {
                        Path::Answers(d) => self
                            .pending
                            .push((self.now + Duration::from_millis(d), Input::Connected(*id))),
                        Path::Fails(d) => self
                            .pending
                            .push((self.now + Duration::from_millis(d), Input::Failed(*id))),
                        Path::Blackhole => {}
                    }
                }
                self.log.push((self.now.as_millis(), action));
            }
        }

        /// (ms, address, source) of every Connect.
        fn starts(&self) -> Vec<(u64, String, Source)> {
            self.log
                .iter()
                .filter_map(|(t, a)| match a {
                    Action::Connect { candidate, .. } => Some((
                        *t,
                        candidate.addr.ip().to_string(),
                        candidate.source.clone(),
                    )),
                    _ => None,
                })
                .collect()
        }

        /// (ms, winning address) when the race was won.
        fn winner(&self) -> Option<(u64, String)> {
            let (t, id) = self.log.iter().find_map(|(t, a)| match a {
                Action::Connected { id } => Some((*t, *id)),
                _ => None,
            })?;
            let addr = self.log.iter().find_map(|(_, a)| match a {
                Action::Connect { id: i, candidate } if *i == id => Some(candidate.addr.ip()),
                _ => None,
            })?;
            Some((t, addr.to_string()))
        }

        fn cancelled(&self) -> Vec<AttemptId> {
            self.log
                .iter()
                .filter_map(|(_, a)| match a {
                    Action::Cancel { id } => Some(*id),
                    _ => None,
                })
                .collect()
        }

        fn failed(&self) -> bool {
            self.log.iter().any(|(_, a)| *a == Action::Failed)
        }
    }

    fn any(t: u64, addr: &str) -> (u64, String, Source) {
        (t, addr.to_string(), Source::Any)
    }

    #[test]
    fn blackholed_ipv6_falls_back_to_ipv4_at_250ms() {
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .path("192.0.2.1", Source::Any, Path::Answers(20))
            .run();
        assert_eq!(
            run.starts(),
            vec![any(0, "2001:db8::1"), any(250, "192.0.2.1")]
        );
        assert_eq!(run.winner(), Some((270, "192.0.2.1".into())));
        // The IPv6 attempt, still hanging, is cancelled before the result.
        assert_eq!(run.cancelled(), vec![AttemptId(0)]);
        assert!(matches!(
            run.log.last(),
            Some((270, Action::Connected { id: AttemptId(1) }))
        ));
    }

    #[test]
    fn working_ipv6_wins_before_ipv4_is_tried() {
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .path("2001:db8::1", Source::Any, Path::Answers(30))
            .path("192.0.2.1", Source::Any, Path::Answers(10))
            .run();
        assert_eq!(run.starts(), vec![any(0, "2001:db8::1")]);
        assert_eq!(run.winner(), Some((30, "2001:db8::1".into())));
        assert!(run.cancelled().is_empty());
    }

    #[test]
    fn configured_attempt_delay_moves_the_fallback() {
        let config = Config::with_attempt_delay(Duration::from_millis(100)).unwrap();
        let run = Run::new(config, vec![], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .path("192.0.2.1", Source::Any, Path::Answers(5))
            .run();
        assert_eq!(run.winner(), Some((105, "192.0.2.1".into())));
    }

    #[test]
    fn a_first_waits_the_resolution_delay_for_aaaa() {
        // AAAA arrives 30 ms after A, inside the 50 ms delay: IPv6 first.
        let run = Run::new(Config::default(), vec![], None)
            .a_at(0, &["192.0.2.1"])
            .aaaa_at(30, &["2001:db8::1"])
            .path("2001:db8::1", Source::Any, Path::Answers(10))
            .run();
        assert_eq!(run.starts(), vec![any(30, "2001:db8::1")]);
        assert_eq!(run.winner(), Some((40, "2001:db8::1".into())));
    }

    #[test]
    fn late_aaaa_joins_the_race_after_ipv4_started() {
        // No AAAA within 50 ms: IPv4 starts at 50; AAAA at 80 is queued and
        // started one attempt delay after IPv4 (300 ms).
        let run = Run::new(Config::default(), vec![], None)
            .a_at(0, &["192.0.2.1"])
            .aaaa_at(80, &["2001:db8::1"])
            .path("2001:db8::1", Source::Any, Path::Answers(10))
            .run();
        assert_eq!(
            run.starts(),
            vec![any(50, "192.0.2.1"), any(300, "2001:db8::1")]
        );
        assert_eq!(run.winner(), Some((310, "2001:db8::1".into())));
    }

    #[test]
    fn negative_aaaa_starts_ipv4_without_waiting() {
        let run = Run::new(Config::default(), vec![], None)
            .a_at(0, &["192.0.2.1"])
            .aaaa_at(10, &[])
            .path("192.0.2.1", Source::Any, Path::Answers(10))
            .run();
        assert_eq!(run.starts(), vec![any(10, "192.0.2.1")]);
    }

    #[test]
    fn refused_attempt_starts_the_next_at_once() {
        // IPv6 is refused after 3 ms: IPv4 starts at the 10 ms minimum
        // spacing, not at 250 ms.
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .path("2001:db8::1", Source::Any, Path::Fails(3))
            .path("192.0.2.1", Source::Any, Path::Answers(5))
            .run();
        assert_eq!(
            run.starts(),
            vec![any(0, "2001:db8::1"), any(10, "192.0.2.1")]
        );
        assert_eq!(run.winner(), Some((15, "192.0.2.1".into())));
    }

    #[test]
    fn families_interleave_starting_with_ipv6() {
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &["2001:db8::1", "2001:db8::2", "2001:db8::3"])
            .a_at(0, &["192.0.2.1", "192.0.2.2"])
            .run();
        let order: Vec<String> = run.starts().into_iter().map(|s| s.1).collect();
        assert_eq!(
            order,
            [
                "2001:db8::1",
                "192.0.2.1",
                "2001:db8::2",
                "192.0.2.2",
                "2001:db8::3"
            ]
        );
        let times: Vec<u64> = run.starts().into_iter().map(|s| s.0).collect();
        assert_eq!(times, [0, 250, 500, 750, 1000]);
        // Every address blackholed: nothing ever finishes, nothing fails.
        assert!(!run.failed());
    }

    #[test]
    fn first_address_family_count_leads_with_more_ipv6() {
        let config = Config {
            first_address_family_count: 2,
            ..Config::default()
        };
        let run = Run::new(config, vec![], None)
            .aaaa_at(0, &["2001:db8::1", "2001:db8::2", "2001:db8::3"])
            .a_at(0, &["192.0.2.1", "192.0.2.2"])
            .run();
        let order: Vec<String> = run.starts().into_iter().map(|s| s.1).collect();
        assert_eq!(
            order,
            [
                "2001:db8::1",
                "2001:db8::2",
                "192.0.2.1",
                "2001:db8::3",
                "192.0.2.2"
            ]
        );
    }

    #[test]
    fn all_failing_ends_in_failed_once() {
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .path("2001:db8::1", Source::Any, Path::Fails(1))
            .path("192.0.2.1", Source::Any, Path::Fails(1))
            .run();
        assert_eq!(run.starts().len(), 2);
        assert_eq!(
            run.log.iter().filter(|(_, a)| *a == Action::Failed).count(),
            1
        );
        assert_eq!(run.log.last().map(|l| l.0), Some(11));
        assert_eq!(run.winner(), None);
    }

    #[test]
    fn no_addresses_fails_immediately() {
        let run = Run::new(Config::default(), vec![], None)
            .aaaa_at(0, &[])
            .a_at(5, &[])
            .run();
        assert!(run.starts().is_empty());
        assert_eq!(run.log, vec![(5, Action::Failed)]);
    }

    #[test]
    fn stalled_wifi_falls_back_to_cellular() {
        // The WWDC 2015 scenario: Wi-Fi associated but carrying nothing.
        let wifi = Source::Device("wlan0".into());
        let cell = Source::Device("rmnet0".into());
        let run = Run::new(Config::default(), vec![wifi.clone(), cell.clone()], None)
            .aaaa_at(0, &[])
            .a_at(0, &["192.0.2.1"])
            .path("192.0.2.1", cell.clone(), Path::Answers(60))
            .run();
        assert_eq!(
            run.starts(),
            vec![
                (0, "192.0.2.1".into(), wifi),
                (250, "192.0.2.1".into(), cell)
            ]
        );
        assert_eq!(run.winner(), Some((310, "192.0.2.1".into())));
        assert_eq!(run.cancelled(), vec![AttemptId(0)]);
    }

    #[test]
    fn source_addresses_only_reach_their_own_family() {
        let src4 = Source::Ip("192.0.2.100".parse().unwrap());
        let src6 = Source::Ip("2001:db8::100".parse().unwrap());
        let run = Run::new(Config::default(), vec![src4.clone(), src6.clone()], None)
            .aaaa_at(0, &["2001:db8::1"])
            .a_at(0, &["192.0.2.1"])
            .run();
        assert_eq!(
            run.starts(),
            vec![
                (0, "2001:db8::1".into(), src6),
                (250, "192.0.2.1".into(), src4)
            ]
        );
    }

    #[test]
    fn ipv6_only_host_synthesizes_nat64_addresses() {
        // A host with no IPv4 route handed an IPv4-only name: RFC 6052
        // synthesis under the well-known prefix, RFC 8305 section 7.
        let mut he =
            HappyEyeballs::new(Config::default(), 80, vec![], Some(Nat64Prefix::WELL_KNOWN));
        he.handle_resolved(Instant::ZERO, &["192.0.2.33".parse().unwrap()]);
        match he.poll_action() {
            Some(Action::Connect { candidate, .. }) => {
                assert_eq!(candidate.addr, "[64:ff9b::c000:221]:80".parse().unwrap());
                assert!(candidate.synthesized);
            }
            other => panic!("expected a connect, got {other:?}"),
        }
    }

    #[test]
    fn synthesized_addresses_take_the_ipv4_slots() {
        let prefix: Nat64Prefix = "2001:db8:64::/96".parse().unwrap();
        let run = Run::new(Config::default(), vec![], Some(prefix))
            .aaaa_at(0, &["2001:db8::1", "2001:db8::2"])
            .a_at(0, &["192.0.2.1"])
            .run();
        let order: Vec<String> = run.starts().into_iter().map(|s| s.1).collect();
        assert_eq!(
            order,
            ["2001:db8::1", "2001:db8:64::c000:201", "2001:db8::2"]
        );
    }

    #[test]
    fn late_events_after_the_win_are_ignored() {
        let mut he = HappyEyeballs::new(Config::default(), 443, vec![], None);
        he.handle_resolved(Instant::ZERO, &["2001:db8::1".parse().unwrap()]);
        assert!(matches!(he.poll_action(), Some(Action::Connect { .. })));
        he.handle_connected(ms(5), AttemptId(0));
        assert_eq!(
            he.poll_action(),
            Some(Action::Connected { id: AttemptId(0) })
        );
        he.handle_failed(ms(6), AttemptId(0));
        he.handle_connected(ms(7), AttemptId(7));
        he.handle_a(ms(8), vec!["192.0.2.1".parse().unwrap()]);
        he.handle_timeout(ms(1000));
        assert_eq!(he.poll_action(), None);
        assert_eq!(he.poll_timeout(), None);
    }

    #[test]
    fn attempt_delay_bounds_follow_rfc8305() {
        for (ms, ok) in [
            (99, false),
            (100, true),
            (250, true),
            (2000, true),
            (2001, false),
        ] {
            assert_eq!(
                Config::with_attempt_delay(Duration::from_millis(ms)).is_ok(),
                ok,
                "{ms} ms"
            );
        }
        let zero = Config {
            first_address_family_count: 0,
            ..Config::default()
        };
        assert_eq!(zero.validated(), Err(ConfigError::FamilyCount));
    }

    #[test]
    fn interleave_handles_uneven_lists() {
        assert_eq!(interleave(&[1, 2, 3], &[9], 1), [1, 9, 2, 3]);
        assert_eq!(interleave(&[], &[9, 8], 1), [9, 8]);
        assert_eq!(interleave(&[1], &[9, 8, 7], 1), [1, 9, 8, 7]);
        assert_eq!(interleave(&[1, 2], &[9], 5), [1, 2, 9]);
    }
}
