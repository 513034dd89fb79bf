//! An endpoint: one UDP socket's worth of connections.
//!
//! It routes each datagram by destination connection ID, so a connection
//! survives the peer's address changing; creates server connections for
//! valid Initials, once admission control lets them in (Retry, Refuse,
//! half-open and rate budgets: `admission`); answers unknown versions with
//! version negotiation and unknown connections with a stateless reset; and
//! drops everything else without keeping state. Like a connection it is
//! sans-IO: `handle_datagram` (or `handle_datagram_owned`) /
//! `handle_timeout` in, `poll_transmit` / `poll_timeout` / `poll_event`
//! out. The endpoint owns its connections; reach one with
//! [`Endpoint::connection_mut`].

use crate::admission::{Admission, MAX_STATELESS_QUEUE};
use crate::anti_replay::AntiReplay;
use crate::cid::{CidCodec, CidIssuer};
use crate::config::{ClientConfig, ServerConfig};
use crate::connection::{
    Connection, Event, InitialInfo, Transmit, parse_hs_payload, parse_initial_token,
};
use crate::error::ConnectError;
use crate::error::code;
use crate::packet::{
    ConnectionId, Header, HeaderView, LOCAL_CID_LEN, Layout, LongType, SUPPORTED_VERSIONS,
};
use crate::qlog::QlogFactory;
use crate::retry::StatelessPacket;
use crate::schedule::Schedule;
use crate::stateless_reset::{RESET_TOKEN_LEN, reset_packet, trailing_token};
use brisk_time::Instant;
use brisk_wire::Ecn;
use bytes::BytesMut;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, SocketAddr};

/// The smallest datagram that may open a connection (RFC 9000 §14.1): it
/// makes the 3x amplification allowance worth a full reply, and proves the
/// path carries 1200-byte datagrams.
pub(crate) const MIN_INITIAL_DATAGRAM: usize = 1200;

/// Names one connection of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionHandle(pub u64);

/// Datagrams the endpoint itself dealt with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to the endpoint.
    pub datagrams_received: u64,
    /// Not even a header.
    pub malformed: u64,
    /// For no connection we know, and not a valid Initial.
    pub unknown_connection: u64,
    /// Initials under 1200 bytes.
    pub short_initial: u64,
    /// Initials whose handshake message did not verify (wrong key,
    /// garbage, tampering).
    pub handshake_failed: u64,
    /// Initials refused because `max_connections` was reached.
    pub refused: u64,
    /// Version Negotiation packets sent for Initials of other versions.
    pub version_negotiations_sent: u64,
    /// Server connections created from valid Initials.
    pub connections_accepted: u64,
    /// Retry packets sent: Initials answered before any key agreement.
    pub retries_sent: u64,
    /// Initials whose retry token was forged, expired or for another
    /// address.
    pub invalid_tokens: u64,
    /// Initials with a valid token dropped because the handshake rate
    /// budget was spent (the client resends).
    pub handshakes_deferred: u64,
    /// Half-open handshakes dropped to make room for newer ones.
    pub half_open_evicted: u64,
    /// Stateless resets sent for short-header packets of unknown connections.
    pub resets_sent: u64,
    /// Stateless resets that ended one of our client connections.
    pub resets_received: u64,
    /// Retry, Refuse and reset packets not sent because of their rate
    /// limit or a full queue.
    pub stateless_dropped: u64,
    /// First flights whose early data was refused as a copy of one used
    /// before (the handshake goes on; the data waits for 1-RTT).
    pub early_data_replayed: u64,
    /// First flights whose early data was refused because their time was
    /// outside the replay window, or missing.
    pub early_data_outside_window: u64,
    /// First flights whose early data was refused because they were at or
    /// before the time of the oldest flight the register had to forget.
    pub early_data_undecidable: u64,
    /// First flights the replay register remembers now.
    pub anti_replay_entries: u64,
    /// Token-less Initials left unanswered because their source address
    /// and port already drew their Retry packets for this second without
    /// echoing a token (a flooding socket; `retry_sources.rs`).
    pub retries_withheld: u64,
}

/// Many connections behind one socket: routes datagrams by connection ID,
/// accepts or refuses Initials (with Retry, Refuse and stateless reset
/// answers), and gathers every connection's output.
#[derive(Debug)]
pub struct Endpoint {
    rng: ChaCha20Rng,
    server: Option<ServerConfig>,
    connections: BTreeMap<ConnectionHandle, Connection>,
    by_cid: BTreeMap<ConnectionId, ConnectionHandle>,
    /// The last destination ID found in `by_cid` (or issued), its
    /// connection, and whether that one is detached: a receiver sees the
    /// same ID datagram after datagram, and routes it with one compare.
    last_route: Option<LastRoute>,
    /// Server: the client-chosen destination ID of first Initials, so a
    /// retransmitted Initial reaches the connection it created.
    by_initial: BTreeMap<ConnectionId, ConnectionHandle>,
    next_handle: u64,
    accept_queue: VecDeque<ConnectionHandle>,
    /// Stateless replies (version negotiation, Retry, Refuse, stateless
    /// reset) waiting to be sent: destination and datagram.
    stateless: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Round-robin position of `poll_transmit`.
    cursor: Option<ConnectionHandle>,
    /// Scheduling state, so that the work of one call does not grow with
    /// the number of idle connections.
    sched: Schedule,
    stats: EndpointStats,
    qlog: Option<QlogFactory>,
    /// Server: what decides whether an Initial costs a handshake.
    admission: Option<Admission>,
    /// Client: the reset tokens servers announced, to recognise a
    /// stateless reset among datagrams for no known connection.
    reset_tokens: BTreeMap<[u8; RESET_TOKEN_LEN], ConnectionHandle>,
    /// Server: half-open connections that last had nothing to send, by
    /// the address they wait on. Their allowance is shared by every
    /// unvalidated connection to that address, so a datagram from it for
    /// another connection (or a new handshake) may let them send; only the
    /// one it reached is touched by it, so these are woken too.
    starved: BTreeMap<IpAddr, BTreeSet<ConnectionHandle>>,
    /// The address each connection in `starved` is kept under (its own
    /// may have changed since), to take it out when it goes.
    starved_at: BTreeMap<ConnectionHandle, IpAddr>,
    /// Connections handed out by [`Endpoint::detach`], with the routes
    /// that still lead to them, until [`Endpoint::forget_detached`].
    detached: BTreeMap<ConnectionHandle, Routes>,
    /// Encrypts connections' routing numbers into the extra connection
    /// IDs they issue (`cid`), so any of them routes without a table.
    cid_codec: CidCodec,
    /// Connections by the routing number inside their issued IDs.
    by_route: BTreeMap<u32, ConnectionHandle>,
    /// Server: the first flights whose early data was used, so a replayed
    /// one delivers nothing (`ServerConfig::anti_replay`).
    anti_replay: Option<AntiReplay>,
}

/// The routing keys of a detached connection, kept so that forgetting it
/// later removes exactly its entries.
#[derive(Debug, Clone, Copy)]
struct Routes {
    local_cid: ConnectionId,
    initial_dcid: ConnectionId,
    reset_token: Option<[u8; RESET_TOKEN_LEN]>,
}

/// A route kept for the next datagram with the same destination ID.
#[derive(Debug, Clone, Copy)]
struct LastRoute {
    cid: ConnectionId,
    handle: ConnectionHandle,
    /// `detached` holds `handle` (cleared whenever that may change).
    detached: bool,
}

/// What `route` found for a datagram.
enum Route {
    /// One of the endpoint's own connections reads it; the layout of its
    /// first header, validated here, is handed on.
    To(ConnectionHandle, Layout),
    /// For a connection the caller detached, with its first header's
    /// layout, as for `To`.
    Detached(ConnectionHandle, Layout),
    /// Dealt with already, or for the caller to deliver.
    Elsewhere(Delivery),
}

/// Where [`Endpoint::handle_datagram_routed`] sent a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The endpoint dealt with it: read by the connection named (which may
    /// have ended since), or answered, counted or dropped (`None`).
    Handled(Option<ConnectionHandle>),
    /// It is for a connection the caller detached: the caller hands it to
    /// that connection's `handle_datagram`.
    Detached(ConnectionHandle),
    /// A stateless reset ended a connection the caller detached: the
    /// caller tells it with `Connection::handle_stateless_reset`.
    DetachedReset(ConnectionHandle),
}

impl Endpoint {
    /// A client-only endpoint when `server` is `None`. All randomness
    /// (connection IDs, ephemeral keys) comes from `seed`.
    pub fn new(seed: u64, server: Option<ServerConfig>) -> Self {
        let admission = server.as_ref().map(|s| Admission::new(s, seed));
        // Its own stream of the seed, so the IDs, keys and tokens drawn
        // from `rng` are those of an endpoint without migration.
        let mut codec_rng = ChaCha20Rng::seed_from_u64(seed);
        codec_rng.set_stream(1);
        let mut codec_key = [0u8; 32];
        codec_rng.fill_bytes(&mut codec_key);
        let anti_replay = server
            .as_ref()
            .and_then(|s| s.anti_replay)
            .map(AntiReplay::new);
        Endpoint {
            rng: ChaCha20Rng::seed_from_u64(seed),
            server,
            connections: BTreeMap::new(),
            by_cid: BTreeMap::new(),
            last_route: None,
            by_initial: BTreeMap::new(),
            next_handle: 0,
            accept_queue: VecDeque::new(),
            stateless: VecDeque::new(),
            cursor: None,
            sched: Schedule::default(),
            stats: EndpointStats::default(),
            qlog: None,
            admission,
            reset_tokens: BTreeMap::new(),
            starved: BTreeMap::new(),
            starved_at: BTreeMap::new(),
            detached: BTreeMap::new(),
            cid_codec: CidCodec::new(&codec_key),
            by_route: BTreeMap::new(),
            anti_replay,
        }
    }

    /// Server: handshakes half-open now (not yet both established and
    /// address-proved).
    pub fn half_open(&self) -> usize {
        self.admission.as_ref().map_or(0, |a| a.half_open.len())
    }

    /// Counters of what the endpoint itself handled.
    pub fn stats(&self) -> EndpointStats {
        let mut s = self.stats;
        if let Some(r) = &self.anti_replay {
            s.early_data_replayed = r.counts.replayed;
            s.early_data_outside_window = r.counts.outside_window;
            s.early_data_undecidable = r.counts.undecidable;
            s.anti_replay_entries = r.len() as u64;
        }
        s
    }

    /// Traces every connection created from now on into a sink `factory`
    /// makes, from its first handshake packet.
    pub fn set_qlog(&mut self, factory: QlogFactory) {
        self.qlog = Some(factory);
    }

    /// The connection `h` names, if it still exists.
    pub fn connection(&self, h: ConnectionHandle) -> Option<&Connection> {
        self.connections.get(&h)
    }

    /// The connection `h`, to act on. Whatever the caller does to it (a
    /// write, a close) is taken into account by the next `poll_*` or
    /// `handle_*` call, and `poll_timeout` reads its timer afresh until then.
    pub fn connection_mut(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        let c = self.connections.get_mut(&h)?;
        self.sched.touch(h);
        Some(c)
    }

    /// Live connections the endpoint holds, in handle order (detached
    /// ones are the caller's).
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.connections.keys().copied()
    }

    fn fresh_cid(&mut self) -> ConnectionId {
        loop {
            let mut b = [0u8; LOCAL_CID_LEN];
            self.rng.fill_bytes(&mut b);
            let cid = ConnectionId::new(&b).unwrap_or_default();
            if !self.by_cid.contains_key(&cid) && !self.by_initial.contains_key(&cid) {
                return cid;
            }
        }
    }

    fn seed(&mut self) -> [u8; 32] {
        let mut s = [0u8; 32];
        self.rng.fill_bytes(&mut s);
        s
    }

    fn insert(&mut self, mut conn: Connection) -> ConnectionHandle {
        let h = ConnectionHandle(self.next_handle);
        self.next_handle += 1;
        // After 2^32 connections a routing number may still be taken: that
        // rare connection issues no extra IDs and keeps its first one.
        let route = h.0 as u32;
        if let std::collections::btree_map::Entry::Vacant(e) = self.by_route.entry(route) {
            e.insert(h);
            let issuer = CidIssuer {
                codec: self.cid_codec.clone(),
                route,
                reset_key: self.admission.as_ref().map(|a| a.reset_key.clone()),
            };
            conn.enable_migration(issuer, self.cid_codec.seed_for(route));
        }
        self.by_cid.insert(conn.local_cid(), h);
        self.connections.insert(h, conn);
        self.sched.touch(h);
        h
    }

    /// Starts a connection to `remote`; its first flight leaves at the next
    /// `poll_transmit`.
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        config: ClientConfig,
    ) -> Result<ConnectionHandle, ConnectError> {
        if remote.port() == 0 || remote.ip().is_unspecified() {
            return Err(ConnectError::InvalidRemoteAddress);
        }
        let local = self.fresh_cid();
        let initial_dcid = self.fresh_cid();
        let seed = self.seed();
        let mut conn = Connection::new_client(now, &config, local, initial_dcid, remote, seed)?;
        if let Some(f) = &self.qlog {
            conn.start_qlog(now, f);
        }
        Ok(self.insert(conn))
    }

    /// The next connection a client opened to this server.
    pub fn accept(&mut self) -> Option<ConnectionHandle> {
        self.accept_queue.pop_front()
    }

    /// A UDP payload from `remote` arrived with `ecn` in its IP header.
    /// The connection copies it once, to decrypt; a caller that owns the
    /// buffer spares that copy with [`Endpoint::handle_datagram_owned`].
    pub fn handle_datagram(&mut self, now: Instant, remote: SocketAddr, ecn: Ecn, data: &[u8]) {
        self.handle_datagram_for(now, remote, ecn, data);
    }

    /// Like [`Endpoint::handle_datagram`], and names the existing
    /// connection the datagram went to, if any (it may have ended
    /// meanwhile; a datagram that starts a connection names it only when
    /// its Retry token proved the client's address): a
    /// driver with a socket per connection learns this way that a
    /// connection's datagrams arrive elsewhere (its peer's address
    /// changed).
    pub fn handle_datagram_for(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: &[u8],
    ) -> Option<ConnectionHandle> {
        match self.handle_datagram_routed(now, remote, ecn, data) {
            Delivery::Handled(h) => h,
            Delivery::Detached(h) | Delivery::DetachedReset(h) => Some(h),
        }
    }

    /// Like [`Endpoint::handle_datagram_for`], for a caller that detached
    /// some connections ([`Endpoint::detach`]): a datagram for one of
    /// those is not read here but handed back to the caller to deliver,
    /// so the endpoint keeps routing and admission while each detached
    /// connection is driven (and locked) on its own.
    pub fn handle_datagram_routed(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: &[u8],
    ) -> Delivery {
        self.route_datagram(now, remote, ecn, data, None)
    }

    /// Routes and reads a datagram; one for `detached` goes to it.
    fn route_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: &[u8],
        detached: Option<(ConnectionHandle, &mut Connection)>,
    ) -> Delivery {
        let long = data.first().is_some_and(|b| b & 0x80 != 0);
        let routed = match self.route(now, remote, data) {
            Route::To(h, first) => Some((h, first)),
            Route::Detached(h, first) => {
                if let Some((d, conn)) = detached
                    && d == h
                {
                    conn.handle_routed_datagram(now, remote, ecn, data, first);
                }
                return Delivery::Detached(h);
            }
            Route::Elsewhere(d) => return d,
        };
        if let Some((h, first)) = routed
            && let Some(c) = self.connections.get_mut(&h)
        {
            let raises_allowance = counts_for_allowance(c, remote);
            c.handle_routed_datagram(now, remote, ecn, data, first);
            self.after_datagram(h, long, raises_allowance.then_some(remote.ip()));
        }
        self.settle();
        Delivery::Handled(routed.map(|(h, _)| h))
    }

    /// [`Endpoint::handle_datagram_routed`] for a caller holding detached
    /// connection `conn` (named `h` here): a datagram for it is handed to
    /// it at once, with the header this endpoint validated to route it, so
    /// the connection does not parse that header again (the same outcome
    /// as its `handle_datagram`). Returns [`Delivery::Detached`]`(h)` then.
    pub fn handle_datagram_routed_to(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: &[u8],
        detached: (ConnectionHandle, &mut Connection),
    ) -> Delivery {
        self.route_datagram(now, remote, ecn, data, Some(detached))
    }

    /// Takes established connection `h` out of the endpoint, for a caller
    /// that drives each connection on its own (its own lock, timer and
    /// polls) while the endpoint keeps routing and admission: datagrams
    /// for it come back from [`Endpoint::handle_datagram_routed`] as
    /// [`Delivery::Detached`], and it still counts towards the connection
    /// limit. `None` (and the connection stays) while it is still a
    /// handshake or half-open: admission and the shared amplification
    /// allowance need those here. Once the detached connection reports
    /// [`Event::Closed`], call [`Endpoint::forget_detached`].
    pub fn detach(&mut self, h: ConnectionHandle) -> Option<Connection> {
        let c = self.connections.get(&h)?;
        if !c.is_established() || c.is_half_open() {
            return None;
        }
        let routes = Routes {
            local_cid: c.local_cid(),
            initial_dcid: c.initial_dcid(),
            reset_token: c.peer_reset_token(),
        };
        let c = self.connections.remove(&h)?;
        self.sched.forget(h);
        self.unstarve(h);
        if self.cursor == Some(h) {
            self.cursor = None;
        }
        self.detached.insert(h, routes);
        if self.last_route.is_some_and(|l| l.handle == h) {
            self.last_route = None;
        }
        if self.connections.is_empty() {
            self.connections = BTreeMap::new();
        }
        Some(c)
    }

    /// Drops the routes of detached connection `h`, which has ended: its
    /// connection ID and reset token may be used again.
    pub fn forget_detached(&mut self, h: ConnectionHandle) {
        let Some(r) = self.detached.remove(&h) else {
            return;
        };
        if self.by_cid.get(&r.local_cid) == Some(&h) {
            self.by_cid.remove(&r.local_cid);
        }
        self.forget_route(h);
        if self.by_initial.get(&r.initial_dcid) == Some(&h) {
            self.by_initial.remove(&r.initial_dcid);
        }
        if let Some(t) = r.reset_token
            && self.reset_tokens.get(&t) == Some(&h)
        {
            self.reset_tokens.remove(&t);
        }
        if self.last_route.is_some_and(|l| l.handle == h) {
            self.last_route = None;
        }
    }

    /// Connections taken out with [`Endpoint::detach`] and not yet
    /// forgotten.
    pub fn detached_len(&self) -> usize {
        self.detached.len()
    }

    /// Like [`Endpoint::handle_datagram`], for a datagram the caller hands
    /// over: it is decrypted where it lies, and the stream data in it is
    /// handed to the reader as slices of it, without a copy. For an
    /// endpoint without detached connections: one for a detached
    /// connection is dropped.
    pub fn handle_datagram_owned(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: BytesMut,
    ) {
        let long = data.first().is_some_and(|b| b & 0x80 != 0);
        if let Route::To(h, first) = self.route(now, remote, &data)
            && let Some(c) = self.connections.get_mut(&h)
        {
            let raises_allowance = counts_for_allowance(c, remote);
            c.handle_routed_datagram_owned(now, remote, ecn, data, first);
            self.after_datagram(h, long, raises_allowance.then_some(remote.ip()));
        }
        self.settle();
    }

    /// Book-keeping after connection `h` read a datagram: a client learns
    /// its server's reset token from a handshake packet; a server's
    /// handshake may have left the half-open set; the datagram raised the
    /// allowance of `allowance_of` if given.
    fn after_datagram(&mut self, h: ConnectionHandle, long: bool, allowance_of: Option<IpAddr>) {
        if let Some(ip) = allowance_of {
            self.wake_starved(ip);
        }
        // The usual case, a short-header packet with no handshake left
        // half-open: nothing to look up.
        let half_open = self
            .admission
            .as_ref()
            .is_some_and(|a| !a.half_open.is_empty());
        if !long && !half_open {
            return;
        }
        let Some(c) = self.connections.get(&h) else {
            return;
        };
        if long && let Some(t) = c.peer_reset_token() {
            self.reset_tokens.insert(t, h);
        }
        if let Some(a) = self.admission.as_mut()
            && !a.half_open.is_empty()
            && !c.is_half_open()
        {
            a.half_open.remove(&h);
        }
    }

    /// The connection `data` is for, if any; deals with everything else
    /// (counting malformed and unknown datagrams, answering unknown
    /// versions and connections, stateless packets, accepting new
    /// connections) itself.
    fn route(&mut self, now: Instant, remote: SocketAddr, data: &[u8]) -> Route {
        self.stats.datagrams_received += 1;
        // The usual datagram: the same destination as the last one.
        if let Some(last) = self.last_route
            && !StatelessPacket::is_stateless_type(data)
            && let Ok(view) = HeaderView::new_checked(data, LOCAL_CID_LEN)
            && last.cid.matches(view.dcid())
        {
            return self.route_to(last.handle, last.detached, view.layout());
        }
        self.route_other(now, remote, data)
    }

    /// [`Endpoint::route`] for a datagram not simply to the last
    /// destination. Out of line: accepting a connection needs a stack
    /// frame of tens of kilobytes, which every datagram paid for (in
    /// stack probes) while this was inlined.
    #[inline(never)]
    fn route_other(&mut self, now: Instant, remote: SocketAddr, data: &[u8]) -> Route {
        if StatelessPacket::is_stateless_type(data)
            && let Ok(p) = StatelessPacket::parse(data)
        {
            self.handle_stateless(now, p);
            return Route::Elsewhere(Delivery::Handled(None));
        }
        let Ok(view) = HeaderView::new_checked(data, LOCAL_CID_LEN) else {
            self.stats.malformed += 1;
            return Route::Elsewhere(Delivery::Handled(None));
        };
        // A datagram that looked stateless but did not parse as one may
        // still be for the last destination.
        if let Some(last) = self.last_route
            && last.cid.matches(view.dcid())
        {
            return self.route_to(last.handle, last.detached, view.layout());
        }
        let Some(dcid) = ConnectionId::new(view.dcid()) else {
            self.stats.malformed += 1;
            return Route::Elsewhere(Delivery::Handled(None));
        };
        let initial = view.long_type() == Some(LongType::Initial);
        let routed = match self.by_cid.get(&dcid) {
            Some(&h) => {
                self.remember_route(dcid, h);
                Some(h)
            }
            None if initial => self.by_initial.get(&dcid).copied(),
            None if view.is_long() => None,
            None => self.by_issued_id(&dcid),
        };
        if let Some(h) = routed {
            let detached = self.detached.contains_key(&h);
            return self.route_to(h, detached, view.layout());
        }
        if !view.is_long()
            && let Some(d) = self.take_stateless_reset(data)
        {
            return Route::Elsewhere(d);
        }
        if self.server.is_none() {
            self.stats.unknown_connection += 1;
            return Route::Elsewhere(Delivery::Handled(None));
        }
        if view.is_foreign_version() {
            self.send_version_negotiation(&view, remote, data.len());
            return Route::Elsewhere(Delivery::Handled(None));
        }
        if !initial {
            self.stats.unknown_connection += 1;
            if !view.is_long() {
                self.send_stateless_reset(now, remote, dcid, data.len());
            }
            return Route::Elsewhere(Delivery::Handled(None));
        }
        self.accept_initial(now, remote, &view, data.len());
        // A handshake whose Retry token proved the client's address is
        // named, so a driver can give it a socket of its own at once;
        // any other new one is not (forged Initials must claim nothing).
        let proved = self.by_initial.get(&dcid).copied().filter(|h| {
            self.connections
                .get(h)
                .is_some_and(|c| c.is_address_validated())
        });
        Route::Elsewhere(Delivery::Handled(proved))
    }

    fn send_version_negotiation(
        &mut self,
        view: &HeaderView<&[u8]>,
        remote: SocketAddr,
        len: usize,
    ) {
        // Only a full-size datagram earns a reply, so this cannot amplify.
        if len < MIN_INITIAL_DATAGRAM {
            self.stats.short_initial += 1;
            return;
        }
        let (Some(dcid), Some(scid)) = (
            ConnectionId::new(view.scid()),
            ConnectionId::new(view.dcid()),
        ) else {
            return;
        };
        let mut contents = Vec::new();
        Header::VersionNegotiation {
            dcid,
            scid,
            versions: SUPPORTED_VERSIONS.to_vec(),
        }
        .emit(&mut contents);
        self.stats.version_negotiations_sent += 1;
        self.stateless.push_back((remote, contents));
    }

    fn accept_initial(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        view: &HeaderView<&[u8]>,
        len: usize,
    ) {
        if len < MIN_INITIAL_DATAGRAM {
            self.stats.short_initial += 1;
            return;
        }
        let (Some(server), Some(adm)) = (self.server.as_ref(), self.admission.as_mut()) else {
            return;
        };
        let (Some(dcid), Some(scid)) = (
            ConnectionId::new(view.dcid()),
            ConnectionId::new(view.scid()),
        ) else {
            self.stats.malformed += 1;
            return;
        };
        let Some((Some(pattern), message)) = parse_hs_payload(true, view.payload()) else {
            self.stats.malformed += 1;
            return;
        };
        // Everything up to the handshake is stateless and costs at most
        // one HMAC: refuse when full, ask for proof of address when loaded.
        let established =
            (self.connections.len() + self.detached.len()).saturating_sub(adm.half_open.len());
        if established >= server.max_connections {
            self.stats.refused += 1;
            let refuse = StatelessPacket::Refuse {
                version: view.version(),
                dcid: scid,
                scid: dcid,
                error_code: code::CONNECTION_REFUSED,
                reason: "too many connections".into(),
            };
            self.send_stateless(now, remote, &refuse);
            return;
        }
        let token = parse_initial_token(view.payload());
        let validated = token.is_some_and(|t| adm.tokens.validate(now, t, remote, &dcid, &scid));
        if token.is_some() && !validated {
            self.stats.invalid_tokens += 1;
        }
        if validated {
            adm.retry_sources.trust(now, remote);
        }
        if !validated && adm.wants_retry(now) {
            if !adm.retry_sources.allows(now, remote) {
                self.stats.retries_withheld += 1;
                return;
            }
            let retry = StatelessPacket::Retry {
                version: view.version(),
                dcid: scid,
                scid: dcid,
                token: adm.tokens.mint(now, remote, &dcid, &scid).to_vec(),
            };
            if self.send_stateless(now, remote, &retry) {
                self.stats.retries_sent += 1;
            }
            return;
        }
        if !adm.handshakes.try_take(now) {
            self.stats.handshakes_deferred += 1;
            return;
        }
        if adm.half_open.len() >= adm.config.max_half_open.max(1)
            && let Some(oldest) = adm.half_open.pop_first()
        {
            if let Some(c) = self.connections.get_mut(&oldest) {
                c.abandon_half_open();
                self.sched.touch(oldest);
            }
            self.stats.half_open_evicted += 1;
        }
        let allowance = adm.allowances.for_ip(remote.ip());
        let local = self.fresh_cid();
        let Some(adm) = self.admission.as_ref() else {
            return;
        };
        let info = InitialInfo {
            version: view.version(),
            dcid,
            scid,
            pattern,
            message,
            datagram_len: len,
            address_validated: validated,
            allowance,
            reset_token: Some(adm.reset_key.token(&local)),
        };
        let seed = self.seed();
        let Some(server) = self.server.as_ref() else {
            return;
        };
        match Connection::new_server(
            now,
            server,
            local,
            info,
            remote,
            seed,
            self.anti_replay.as_mut(),
        ) {
            Ok(mut conn) => {
                if let Some(f) = &self.qlog {
                    conn.start_qlog(now, f);
                    conn.log_long_received(now, LongType::Initial, view);
                }
                let half_open = conn.is_half_open();
                let h = self.insert(conn);
                if half_open && let Some(adm) = self.admission.as_mut() {
                    adm.half_open.insert(h);
                }
                self.by_initial.insert(dcid, h);
                self.accept_queue.push_back(h);
                self.stats.connections_accepted += 1;
                // Its Initial counts towards the address's allowance.
                self.wake_starved(remote.ip());
            }
            Err(_) => {
                self.stats.handshake_failed += 1;
                if let Some(adm) = self.admission.as_mut() {
                    adm.failures.try_take(now);
                }
            }
        }
    }

    /// Queues a Retry or Refuse within the rate limit; false if it was
    /// dropped.
    fn send_stateless(&mut self, now: Instant, remote: SocketAddr, p: &StatelessPacket) -> bool {
        let Some(adm) = self.admission.as_mut() else {
            return false;
        };
        if self.stateless.len() >= MAX_STATELESS_QUEUE || !adm.replies.try_take(now) {
            self.stats.stateless_dropped += 1;
            return false;
        }
        let mut contents = Vec::new();
        p.emit(&mut contents);
        self.stateless.push_back((remote, contents));
        true
    }

    /// A short-header packet for a connection this server does not know
    /// (it restarted, or forgot it): answer with a stateless reset, within
    /// the rate limit, and never to a packet too small to be shrunk.
    fn send_stateless_reset(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        dcid: ConnectionId,
        len: usize,
    ) {
        let Some(adm) = self.admission.as_mut() else {
            return;
        };
        if len <= crate::stateless_reset::MIN_RESET_LEN {
            return;
        }
        if self.stateless.len() >= MAX_STATELESS_QUEUE || !adm.resets.try_take(now) {
            self.stats.stateless_dropped += 1;
            return;
        }
        let Some(contents) = reset_packet(&adm.reset_key, &dcid, len, &mut adm.rng) else {
            return;
        };
        self.stats.resets_sent += 1;
        self.stateless.push_back((remote, contents));
    }

    /// A datagram for no known connection that ends in a reset token a
    /// server gave one of our client connections: that connection is over
    /// (told here, or by the caller if it was detached).
    fn take_stateless_reset(&mut self, data: &[u8]) -> Option<Delivery> {
        if self.reset_tokens.is_empty() {
            return None;
        }
        let h = trailing_token(data).and_then(|t| self.reset_tokens.remove(&t))?;
        if self.detached.contains_key(&h) {
            self.stats.resets_received += 1;
            return Some(Delivery::DetachedReset(h));
        }
        if let Some(c) = self.connections.get_mut(&h) {
            c.handle_stateless_reset();
            self.stats.resets_received += 1;
            self.sched.touch(h);
        }
        Some(Delivery::Handled(None))
    }

    /// A Retry or Refuse for one of our client connections.
    fn handle_stateless(&mut self, now: Instant, p: StatelessPacket) {
        let Some(&h) = self.by_cid.get(p.dcid()) else {
            self.stats.unknown_connection += 1;
            return;
        };
        let Some(c) = self.connections.get_mut(&h) else {
            return;
        };
        self.sched.touch(h);
        match &p {
            StatelessPacket::Retry { scid, token, .. } => c.handle_retry(now, scid, token),
            StatelessPacket::Refuse {
                scid,
                error_code,
                reason,
                ..
            } => c.handle_refusal(scid, *error_code, reason),
        }
    }

    /// Appends the next datagrams to send to `buf`, taking connections in
    /// turn: a stateless reply, or up to `max_datagrams` of one connection
    /// as one GSO train (see [`Connection::poll_transmit`]). Bytes already
    /// in `buf` are left alone, so a caller that keeps room in front for
    /// the IP and UDP headers builds the whole packet in place; on `None`,
    /// `buf` is as it was.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        if let Some((destination, contents)) = self.stateless.pop_front() {
            buf.extend_from_slice(&contents);
            return Some(Transmit {
                destination,
                ecn: Ecn::NotEct,
                len_bytes: contents.len(),
                segment_bytes: contents.len(),
            });
        }
        self.settle();
        self.sched.mark_due(now);
        // Round robin over the connections that may have something to
        // send, from the one after the last that sent: first the handles
        // from there up, then the ones below.
        let start = self.cursor.map_or(0, |h| h.0.saturating_add(1));
        let mut from = start;
        let mut wrapped = false;
        loop {
            let below = if wrapped { start } else { u64::MAX };
            let Some(h) = self.sched.next_ready(from, below) else {
                if wrapped || start == 0 {
                    return None;
                }
                (from, wrapped) = (0, true);
                continue;
            };
            from = h.0.saturating_add(1);
            let Some(c) = self.connections.get_mut(&h) else {
                self.sched.forget(h);
                continue;
            };
            let sent = c.poll_transmit(now, max_datagrams, buf);
            let deadline = c.poll_timeout();
            let eventful = c.may_have_event();
            if sent.is_none() && c.is_half_open() {
                let ip = c.remote_address().ip();
                self.unstarve(h);
                self.starved.entry(ip).or_default().insert(h);
                self.starved_at.insert(h, ip);
            }
            self.sched.rearm(h, deadline);
            // Sending may queue events (a stream that became writable).
            if eventful {
                self.sched.events_ready.insert(h);
            }
            match sent {
                Some(t) => {
                    self.cursor = Some(h);
                    return Some(t);
                }
                None => {
                    self.sched.send_ready.remove(&h);
                }
            }
        }
    }

    /// The earliest deadline of any connection: the next time
    /// `handle_timeout` has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let touched = &self.sched.touched;
        // Connections touched through `connection_mut` since the last call
        // may have moved their deadline: read theirs afresh.
        let fresh = touched
            .iter()
            .filter_map(|h| self.connections.get(h)?.poll_timeout())
            .min();
        let armed = self
            .sched
            .timers
            .iter()
            .find(|(_, h)| !touched.contains(h))
            .map(|(t, _)| t);
        armed.into_iter().chain(fresh).min()
    }

    /// Runs the timers of every connection whose deadline has come, each
    /// once, found in the deadline order rather than by visiting all.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.settle();
        let mut due = std::mem::take(&mut self.sched.due);
        self.sched.take_due(now, &mut due);
        for &h in &due {
            if let Some(c) = self.connections.get_mut(&h) {
                c.handle_timeout(now);
            }
            self.sched.touch(h);
        }
        due.clear();
        self.sched.due = due;
        self.settle();
    }

    /// Whether [`Endpoint::accept`] or [`Endpoint::poll_event`] might give
    /// anything: false means both would give nothing and change nothing.
    /// Inline: a driver asks it two or three times per datagram, from
    /// another crate.
    #[inline]
    pub fn may_have_event(&self) -> bool {
        !self.accept_queue.is_empty()
            || !self.sched.touched.is_empty()
            || self.sched.events_ready.first().is_some()
    }

    /// The next event of any connection. After [`Event::Closed`] the
    /// connection is forgotten.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        self.settle();
        loop {
            let h = self.sched.events_ready.first().copied()?;
            let Some(c) = self.connections.get_mut(&h) else {
                self.sched.forget(h);
                continue;
            };
            let Some(e) = c.poll_event() else {
                self.sched.events_ready.remove(&h);
                continue;
            };
            if matches!(e, Event::Closed) {
                self.forget(h);
            }
            return Some((h, e));
        }
    }

    /// A datagram from `ip` raised the allowance its unvalidated
    /// connections share: those that had nothing to send look again.
    fn wake_starved(&mut self, ip: IpAddr) {
        if self.starved.is_empty() {
            return;
        }
        for h in self.starved.remove(&ip).unwrap_or_default() {
            self.starved_at.remove(&h);
            self.sched.touch(h);
        }
    }

    /// Takes `h` out of `starved`.
    fn unstarve(&mut self, h: ConnectionHandle) {
        let Some(ip) = self.starved_at.remove(&h) else {
            return;
        };
        if let Some(set) = self.starved.get_mut(&ip) {
            set.remove(&h);
            if set.is_empty() {
                self.starved.remove(&ip);
            }
        }
    }

    /// Brings the schedule up to date with the connections touched since
    /// the last call: their deadlines, and that they may have something to
    /// send or report. Asked before every decision, and most often with
    /// nothing touched: that case stays in the caller.
    #[inline]
    fn settle(&mut self) {
        if !self.sched.touched.is_empty() {
            self.settle_touched();
        }
    }

    fn settle_touched(&mut self) {
        while let Some(h) = self.sched.touched.pop() {
            if let Some(c) = self.connections.get(&h) {
                let (deadline, eventful) = (c.poll_timeout(), c.may_have_event());
                self.sched.rearm(h, deadline);
                self.sched.send_ready.insert(h);
                if eventful {
                    self.sched.events_ready.insert(h);
                }
            } else {
                self.sched.forget(h);
            }
        }
    }

    /// Drops a closed connection and its routes. Out of line: moving a
    /// whole `Connection` needs a stack frame of kilobytes, which
    /// `poll_event`, asked after every datagram, would otherwise carry.
    #[cold]
    #[inline(never)]
    fn forget(&mut self, h: ConnectionHandle) {
        self.sched.forget(h);
        if let Some(c) = self.connections.remove(&h) {
            self.by_cid.remove(&c.local_cid());
            self.last_route = None;
            self.by_initial.remove(&c.initial_dcid());
            if let Some(t) = c.peer_reset_token() {
                self.reset_tokens.remove(&t);
            }
            if let Some(a) = self.admission.as_mut() {
                a.half_open.remove(&h);
            }
        }
        self.forget_route(h);
        self.unstarve(h);
        // An emptied tree keeps its root node, which holds connections
        // inline (tens of kilobytes): give it back once the last is gone.
        if self.connections.is_empty() {
            self.connections = BTreeMap::new();
        }
    }
}

impl Endpoint {
    /// The connection an ID issued after the handshake names (sequence
    /// numbers from 1; 0 is the handshake's, found in `by_cid`), kept as
    /// the last route so a stream of packets decrypts it once.
    fn by_issued_id(&mut self, dcid: &ConnectionId) -> Option<ConnectionHandle> {
        let (route, seq) = self.cid_codec.decode(dcid.as_bytes())?;
        if seq == 0 {
            return None;
        }
        let h = *self.by_route.get(&route)?;
        self.remember_route(*dcid, h);
        Some(h)
    }

    /// Keeps `cid`'s route to `h` for the datagrams that follow.
    fn remember_route(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        self.last_route = Some(LastRoute {
            cid,
            handle: h,
            detached: self.detached.contains_key(&h),
        });
    }

    /// The route to connection `h`, which the caller reads the datagram
    /// with if it is `detached`.
    fn route_to(&mut self, h: ConnectionHandle, detached: bool, first: Layout) -> Route {
        if detached {
            return Route::Detached(h, first);
        }
        self.sched.touch(h);
        Route::To(h, first)
    }

    fn forget_route(&mut self, h: ConnectionHandle) {
        let route = h.0 as u32;
        if self.by_route.get(&route) == Some(&h) {
            self.by_route.remove(&route);
        }
        if self.last_route.is_some_and(|l| l.handle == h) {
            self.last_route = None;
        }
    }
}

/// Whether a datagram from `remote` adds to `c`'s amplification allowance
/// (the connection counts it when it arrives from the address it waits to
/// validate), and so to that of every unvalidated connection to the address.
fn counts_for_allowance(c: &Connection, remote: SocketAddr) -> bool {
    c.is_half_open() && remote.ip() == c.remote_address().ip()
}
