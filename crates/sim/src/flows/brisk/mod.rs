//! The Brisk transport as a simulator flow: a client endpoint on the
//! sender host and a server endpoint on the receiver host, joined by the
//! simulated network, carrying one application ([`BriskWorkload`]).
//!
//! The glue is thin: datagrams are unwrapped from IP/UDP with the ECN
//! codepoint they arrived with (so CE marks reach the transport), and the
//! transport's datagrams are wrapped with the codepoint it chose. The
//! client pins the server's static key (the IK handshake, one round trip);
//! both keypairs and all of the transport's randomness derive from the
//! flow's seed, so a run is reproducible.
//!
//! Files: [`workload`] the application trait and shared helpers; [`bulk`],
//! [`messages`], [`video`] (its frames in datagrams: [`frame_datagrams`]),
//! [`feed`], [`live_stream`] (its encoder [`stream_encoder`] and player
//! [`stream_player`]) the applications; [`failover`] a client's move to
//! its second address when its path stalls; [`seq`]
//! time-sequence events from the sender's qlog; [`report`] what a flow
//! reports.

mod bulk;
mod download;
mod failover;
mod feed;
mod frame_datagrams;
mod host;
mod live_stream;
mod messages;
pub mod report;
mod seq;
mod stream_encoder;
mod stream_player;
#[cfg(test)]
mod tests;
mod video;
mod workload;

pub use failover::Failover;
pub use report::{EarlyDataReport, FrameReport, Integrity, StreamReport, TransportReport};
pub use stream_encoder::{GOP, KEY_FRAME_WEIGHT, LADDER_BPS};
pub use stream_player::CATCH_UP_SPEED;
pub use video::{FRAME_DEADLINE, MAX_VIDEO_BPS, MIN_VIDEO_BPS, STALL_WINDOW};

use super::{AppReport, End, FlowAddrs, FlowApp};
use brisk_proto::congestion::CcAlgorithm;
use brisk_proto::crypto::{DhMemo, Keypair};
use brisk_proto::fec::FecPolicy;
use brisk_proto::qlog::{QlogFactory, QlogSink, Tee};
use brisk_proto::streams::StreamsConfig;
use brisk_proto::{
    ClientConfig, ConnectionHandle, ConnectionStats, Endpoint, Event, ServerConfig, TransportConfig,
};
use brisk_time::{Instant, earliest};
use brisk_wire::ip;
use host::Host;
use seq::Tracer;
use std::cell::Cell;
use std::time::Duration;
use workload::Workload;

/// The path MTU every simulated host uses; the transport's datagrams fill
/// it.
pub const MTU_BYTES: usize = 1500;

/// How a messages or video sender decides it may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendPath {
    /// Every unit is written.
    Unbounded,
    /// The classic socket: the transport holds up to this many bytes
    /// (unacknowledged plus unsent) per stream, like SO_SNDBUF.
    SendBuffer(u64),
    /// A unit is written only while fewer than this many bytes wait
    /// unsent (TCP_NOTSENT_LOWAT).
    LowWaterMark(u64),
}

/// The application a brisk flow carries.
#[derive(Debug, Clone, PartialEq)]
pub enum BriskWorkload {
    /// `bytes` on one stream, or without end until the flow stops.
    Bulk { bytes: Option<u64> },
    Messages {
        size_bytes: u64,
        /// At most one message per period; `None`: whenever writable.
        interval: Option<Duration>,
        path: SendPath,
    },
    Video {
        fps: u32,
        path: SendPath,
        /// Frames go as unreliable datagrams protected by FEC, rather
        /// than one stream each.
        datagrams: bool,
    },
    /// Object sizes, the API response first.
    Feed {
        objects: Vec<u64>,
        /// One object at a time, like HTTP/1.1 on one connection.
        sequential: bool,
        /// Small exchanges before the first request (handshakes).
        setup_round_trips: usize,
        /// Set either way, the receiver host runs the client (see
        /// [`BriskFlow`]); `Some(true)`: the first request rides in its
        /// first flight as early data.
        early_data: Option<bool>,
        /// A copy of that first flight is sent again this long after it.
        replay_first_flight: Option<Duration>,
    },
    /// A live stream: a publisher following the path, a player with a
    /// jitter buffer of `buffer`; `fixed_bps` replaces the ladder with a
    /// rate that ignores the path.
    Stream {
        fps: u32,
        buffer: Duration,
        fixed_bps: Option<u64>,
    },
    /// The client asks for `bytes` and the server sends them: the one
    /// application whose data flows toward the client (the two-path
    /// phone that only downloads).
    Download { bytes: u64 },
}

impl BriskWorkload {
    pub fn name(&self) -> &'static str {
        match self {
            BriskWorkload::Bulk { .. } => "bulk",
            BriskWorkload::Messages { .. } => "messages",
            BriskWorkload::Video { .. } => "video",
            BriskWorkload::Feed { .. } => "feed",
            BriskWorkload::Stream { .. } => "stream",
            BriskWorkload::Download { .. } => "download",
        }
    }
}

/// Everything a brisk flow is built from.
#[derive(Debug, Clone)]
pub struct BriskConfig {
    pub addrs: FlowAddrs,
    /// Seeds the keys, connection IDs and the transport's randomness.
    pub seed: u64,
    pub cc: CcAlgorithm,
    /// Let the transport mark its packets ECN-capable (subject to ECN
    /// validation).
    pub ecn: bool,
    /// Use the ACK_FREQUENCY extension (both ends announce it, the sender
    /// asks for fewer ACKs while its window is large).
    pub ack_frequency: bool,
    /// Prague's smaller datagrams and increase at low rates.
    pub prague_small_datagrams: bool,
    /// Prague's cut floor on aggregating links (`CcConfig::prague_burst_floor`).
    pub prague_burst_floor: bool,
    /// Prague's pipe cap (`CcConfig::prague_pipe_cap`).
    pub prague_pipe_cap: bool,
    /// BBR's bounded Startup (`CcConfig::bbr_bounded_startup`).
    pub bbr_bounded_startup: bool,
    /// Forward error correction: both ends announce it, with this default
    /// policy for the sender's streams; `None`: not announced.
    pub fec: Option<brisk_proto::fec::FecPolicy>,
    /// Path MTU discovery: on when a link of the scenario has an `mtu`,
    /// so that scenarios without one run as they always did.
    pub pmtud: bool,
    /// Connection migration: on when the flow's sender moves
    /// (`migrate_every`, `nat_rebind_every`), so that other flows run as
    /// they always did.
    pub migration: bool,
    /// IP + UDP header bytes: datagrams fill [`MTU_BYTES`] with them.
    pub header_len: usize,
    pub start: Instant,
    pub stop: Instant,
    pub workload: BriskWorkload,
    /// Record the window over time and time-sequence events.
    pub series: bool,
    /// Both ends skip the packet cipher (same sizes, same results; see
    /// `TransportConfig::insecure_null_cipher`).
    pub null_cipher: bool,
    /// Traces both ends' connections from their first handshake packet.
    pub qlog: Option<QlogFactory>,
}

impl BriskConfig {
    /// Whether the receiver host runs the client (a feed with
    /// `early_data` set either way).
    fn receiver_connects(&self) -> bool {
        matches!(
            self.workload,
            BriskWorkload::Feed {
                early_data: Some(_),
                ..
            }
        )
    }

    /// How long after the first flight an attacker sends a copy of it.
    fn replay_first_flight(&self) -> Option<Duration> {
        match self.workload {
            BriskWorkload::Feed {
                replay_first_flight,
                ..
            } => replay_first_flight,
            _ => None,
        }
    }

    /// The transport knobs both ends use.
    fn transport(&self) -> TransportConfig {
        let mds = MTU_BYTES.saturating_sub(self.header_len) as u64;
        let mut t = TransportConfig {
            max_datagram_size: mds,
            cc: self.cc,
            ecn: self.ecn,
            ack_frequency: self.ack_frequency,
            pmtud: self.pmtud,
            migration: self.migration,
            insecure_null_cipher: self.null_cipher,
            // The flow's two ends share it (both configs are clones).
            insecure_dh_memo: Some(DhMemo::default()),
            ..TransportConfig::default()
        };
        if let Some(policy) = self.fec {
            t.fec.enabled = true;
            t.fec.default_policy = policy;
        }
        t.cc_config.max_datagram_size = mds;
        t.cc_config.prague_small_datagrams = self.prague_small_datagrams;
        t.cc_config.prague_burst_floor = self.prague_burst_floor;
        t.cc_config.prague_pipe_cap = self.prague_pipe_cap;
        t.cc_config.bbr_bounded_startup = self.bbr_bounded_startup;
        match &self.workload {
            BriskWorkload::Messages { path, .. } => match *path {
                SendPath::SendBuffer(limit) => {
                    t.streams.send_buffer_limit = limit;
                    t.streams.send_buffer_limit_max = limit;
                    t.streams.low_water_mark = u64::MAX;
                }
                SendPath::LowWaterMark(mark) => t.streams.low_water_mark = mark,
                SendPath::Unbounded => t.streams.low_water_mark = u64::MAX,
            },
            BriskWorkload::Video {
                datagrams: true, ..
            } => {
                // Both ends take datagrams as large as a packet carries,
                // and each frame's packets get repair at the measured loss
                // rate (none on a clean path, where it would only take
                // the call's rate): a datagram has no other way back from
                // a loss. `fec` sets another policy.
                t.datagrams.max_frame_bytes = Some(mds);
                t.datagrams.fec_policy = self.fec.unwrap_or(FecPolicy::Adaptive);
                t.fec.enabled = t.datagrams.fec_policy != FecPolicy::Off;
                // FEC here protects the frames; the handshake is copied only
                // when the scenario asked for FEC itself, so a call without
                // `fec` opens as it did before copies existed (their extra
                // datagrams shift every later packet of the run).
                t.fec.handshake_copies = self.fec.is_some();
            }
            BriskWorkload::Bulk { .. }
            | BriskWorkload::Video { .. }
            | BriskWorkload::Feed { .. }
            | BriskWorkload::Stream { .. }
            | BriskWorkload::Download { .. } => {}
        }
        t
    }

    fn build_workload(&self, streams: &StreamsConfig) -> Box<dyn Workload> {
        let key = self.seed ^ 0x5eed_da7a;
        let limit = streams.send_buffer_limit;
        match &self.workload {
            BriskWorkload::Bulk { bytes } => Box::new(bulk::Bulk::new(key, *bytes, self.stop)),
            BriskWorkload::Messages {
                size_bytes,
                interval,
                ..
            } => Box::new(messages::Messages::new(
                key,
                *size_bytes,
                *interval,
                self.start,
                self.stop,
            )),
            BriskWorkload::Video {
                fps,
                path,
                datagrams,
            } => Box::new(video::Video::new(
                key,
                *fps,
                self.start,
                self.stop,
                if *datagrams {
                    video::Delivery::Datagrams
                } else {
                    video::Delivery::Streams(*path)
                },
                limit,
            )),
            BriskWorkload::Feed {
                objects,
                sequential,
                setup_round_trips,
                early_data,
                ..
            } => Box::new(feed::Feed::new(
                key,
                objects.clone(),
                *sequential,
                *setup_round_trips,
                *early_data == Some(true),
                limit,
            )),
            BriskWorkload::Stream {
                fps,
                buffer,
                fixed_bps,
            } => Box::new(live_stream::LiveStream::new(
                key, *fps, *buffer, *fixed_bps, self.start, self.stop,
            )),
            BriskWorkload::Download { bytes } => {
                Box::new(download::Download::new(key, *bytes, limit))
            }
        }
    }
}

/// A brisk flow: see the module documentation. The sender host runs the
/// client and the receiver host the server, except for a feed with
/// `early_data` set: then the receiver host (the phone asking for a page)
/// runs the client, and
/// `client`, `client_conn` and `client_config` name the sender host's
/// endpoint, connection and the connecting side's configuration whichever
/// side that is (`server` likewise the receiver host's).
pub struct BriskFlow {
    addrs: FlowAddrs,
    cc: &'static str,
    app: &'static str,
    start: Instant,
    series: bool,
    client: Host,
    server: Host,
    /// Taken when the client connects at `start`.
    client_config: Option<ClientConfig>,
    client_conn: Option<ConnectionHandle>,
    server_conn: Option<ConnectionHandle>,
    sender_up: bool,
    receiver_up: bool,
    workload: Box<dyn Workload>,
    /// The workload's timer as last read, `None` once a call that may
    /// move it was made: reading it through the trait object after every
    /// datagram found it unmoved nearly every time.
    app_timer: Cell<Option<Option<Instant>>>,
    /// The workload's [`Workload::receiver_writes`], asked twice per
    /// datagram through the trait object before it was kept.
    receiver_writes: bool,
    /// The workload's [`Workload::receiver_event_moves_timer`].
    receiver_event_moves_timer: bool,
    /// When the workload was last polled: its timers at or before this
    /// had their chance, so a timer that did not move waits on an event.
    polled_at: Option<Instant>,
    /// The instant at which [`BriskFlow::process`] last found the
    /// application with nothing it may write: only an event handed to it
    /// changes that, so until one is, a second look at the same instant
    /// (after every datagram's sending) need only ask for events.
    app_idle_at: Option<Instant>,
    trace: Tracer,
    rtt_samples: Vec<(Instant, Duration)>,
    last_rtt_sample: Option<Instant>,
    cwnd: Vec<(Instant, u64)>,
    connected_at: Option<Instant>,
    error: Option<String>,
    /// Statistics kept when a connection failed (the endpoint forgets it).
    sender_final: Option<ConnectionStats>,
    receiver_final: Option<ConnectionStats>,
    /// Datagrams that were not IP/UDP.
    malformed: u64,
    /// Buffers of datagrams the network handed back, to build the next
    /// ones in instead of a fresh allocation each.
    spare: Vec<Vec<u8>>,
    /// What each end (sender, receiver) may have for the glue.
    touched: [Touched; 2],
    /// Each end's last received headers (sender, receiver): a flow's
    /// datagrams repeat them, so most are not read again.
    udp_memo: [ip::UdpMemo; 2],
    /// Each end's last IP and UDP headers, which its next datagram of the
    /// same length repeats.
    udp_headers: [ip::UdpHeaderMemo; 2],
    /// Each end's next timer, read again only when the engine asks after
    /// a call that touched it (`timer_stale`): walking an endpoint's
    /// connections each time was a twentieth of a saturated run, and
    /// reading a touched end's at the end of every call read it two or
    /// three times per datagram. Cells, as the engine asks through `&self`.
    timers: [Cell<Option<Instant>>; 2],
    timer_stale: [Cell<bool>; 2],
    /// The client's other local address (a phone's second interface), to
    /// move to when its path stalls ([`BriskFlow::with_standby`]).
    standby: Option<std::net::SocketAddr>,
    /// The client's moves to its other address, in order.
    failovers: Vec<Failover>,
    /// The receiver host runs the client (a phone that connects, its
    /// first request in its first flight or after the handshake).
    receiver_connects: bool,
    /// The client's first datagram, kept for an attacker to send again at
    /// the time given, and when it did.
    replay: Option<Replay>,
    /// Times a first flight's early data reached the sender host's
    /// application (the server's `EarlyData` events, replays included).
    early_data_served: u64,
    /// When the receiver connects, it closes its connection once the page
    /// is in (a phone app done loading), so a later replay of its first
    /// flight meets a server that forgot it and reaches its anti-replay
    /// register; when it closed.
    closed_at: Option<Instant>,
}

/// An attacker on the path who copies the client's first datagram and
/// sends it again later from another port of the same host.
#[derive(Debug)]
struct Replay {
    after: Duration,
    flight: Option<(Instant, Vec<u8>)>,
    sent: bool,
}

/// What the glue must ask one end about again. A sans-IO endpoint's
/// datagrams and events change only when it is handed input (a datagram,
/// a due timer, an application call) or polled, so an end left alone since
/// it last had nothing is not asked: in a saturated run most of the polls
/// were of the end that had no input.
#[derive(Debug, Clone, Copy)]
struct Touched {
    /// May have a datagram to send.
    transmit: bool,
    /// May have an event (or a connection to accept) for the application.
    events: bool,
}

impl Touched {
    const ALL: Touched = Touched {
        transmit: true,
        events: true,
    };
}

#[cfg(test)]
thread_local! {
    /// The reference [`Touched`] is tested against: every end asked about
    /// everything on every call, as if always touched.
    static ASK_EVERY_END: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Spare datagram buffers a flow keeps: about what both ends have in
/// flight in a saturated run; more are freed.
const SPARE_BUFFERS: usize = 256;

impl std::fmt::Debug for BriskFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BriskFlow")
            .field("addrs", &self.addrs)
            .field("cc", &self.cc)
            .field("app", &self.app)
            .finish_non_exhaustive()
    }
}

/// The client's qlog: the user's trace, the time-sequence tracer, both or
/// neither.
fn client_qlog(user: Option<QlogFactory>, trace: &Tracer) -> Option<QlogFactory> {
    let tracer = trace.is_enabled().then(|| trace.clone());
    match (user, tracer) {
        (None, None) => None,
        (Some(f), None) => Some(f),
        (user, Some(tracer)) => Some(QlogFactory(std::sync::Arc::new(move |s| {
            let tracer: Box<dyn QlogSink> = Box::new(tracer.clone());
            Some(match user.as_ref().and_then(|f| (f.0)(s)) {
                Some(file) => Box::new(Tee(file, tracer)),
                None => tracer,
            })
        }))),
    }
}

impl BriskFlow {
    pub fn new(config: BriskConfig) -> Self {
        let mut key_rng = brisk_netmodel::rng(config.seed, 0x6b65_7973);
        let server_keys = Keypair::generate(&mut key_rng);
        let client_keys = Keypair::generate(&mut key_rng);
        let transport = config.transport();
        let mut server_config = ServerConfig::new(server_keys.clone());
        server_config.transport = transport.clone();
        let mut client_config = ClientConfig::new(Some(server_keys.public()));
        client_config.keypair = Some(client_keys);
        let workload = config.build_workload(&transport.streams);
        client_config.transport = transport;
        let receiver_connects = config.receiver_connects();
        let replay = config.replay_first_flight().map(|after| Replay {
            after,
            flight: None,
            sent: false,
        });
        let window = client_config.transport.streams.connection_receive_window;
        let trace = if config.series {
            Tracer::enabled(window)
        } else {
            Tracer::default()
        };
        // When the receiver connects the endpoints swap hosts: the
        // server's sits on the sender host.
        let (sender_server, receiver_server) = if receiver_connects {
            (Some(server_config), None)
        } else {
            (None, Some(server_config))
        };
        let mut client = Endpoint::new(config.seed ^ 0xc11e_0001, sender_server);
        let mut server = Endpoint::new(config.seed ^ 0x5e7e_0002, receiver_server);
        if let Some(f) = &config.qlog {
            server.set_qlog(f.clone());
        }
        if let Some(f) = client_qlog(config.qlog, &trace) {
            client.set_qlog(f);
        }
        BriskFlow {
            addrs: config.addrs,
            cc: config.cc.name(),
            app: config.workload.name(),
            start: config.start,
            series: config.series,
            // A replayed first flight makes a second connection at the
            // sender host's endpoint: both stay inside theirs.
            client: Host::new(client, replay.is_none()),
            server: Host::new(server, replay.is_none()),
            client_config: Some(client_config),
            client_conn: None,
            server_conn: None,
            sender_up: false,
            receiver_up: false,
            receiver_event_moves_timer: workload.receiver_event_moves_timer(),
            receiver_writes: workload.receiver_writes(),
            workload,
            app_timer: Cell::new(None),
            polled_at: None,
            app_idle_at: None,
            trace,
            rtt_samples: Vec::new(),
            last_rtt_sample: None,
            cwnd: Vec::new(),
            connected_at: None,
            error: None,
            sender_final: None,
            receiver_final: None,
            malformed: 0,
            spare: Vec::new(),
            touched: [Touched::ALL; 2],
            udp_memo: Default::default(),
            udp_headers: Default::default(),
            timers: Default::default(),
            timer_stale: [Cell::new(true), Cell::new(true)],
            standby: None,
            failovers: Vec::new(),
            receiver_connects,
            replay,
            early_data_served: 0,
            closed_at: None,
        }
    }

    /// Times a first flight's early data reached the application on the
    /// sender host (once per genuine connection; a replay the server's
    /// anti-replay register refused adds none).
    pub fn early_data_served(&self) -> u64 {
        self.early_data_served
    }

    /// Datagrams dropped because they were not IP/UDP.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// Marks `end` as handed input: everything about it is asked again.
    fn touch(&mut self, end: End) {
        self.touched[end as usize] = Touched::ALL;
        self.timer_stale[end as usize].set(true);
    }

    /// In the tests' reference mode, marks both ends touched (see
    /// [`ASK_EVERY_END`]); otherwise nothing.
    fn touch_all_in_reference_mode(&mut self) {
        #[cfg(test)]
        if ASK_EVERY_END.get() {
            self.touched = [Touched::ALL; 2];
            self.timer_stale.iter().for_each(|s| s.set(true));
            self.client.touch_all();
            self.server.touch_all();
        }
    }

    /// `end`'s next timer, read again if it was touched since it was last
    /// read (every call that can touch an end marks it).
    fn timer(&self, end: End) -> Option<Instant> {
        let i = end as usize;
        #[cfg(test)]
        if ASK_EVERY_END.get() {
            self.timer_stale[i].set(true);
        }
        if self.timer_stale[i].replace(false) {
            let host = match end {
                End::Sender => &self.client,
                End::Receiver => &self.server,
            };
            self.timers[i].set(host.poll_timeout());
        }
        self.timers[i].get()
    }

    /// The workload's timer, read again only after a call that may have
    /// moved it (every such call clears `app_timer`).
    fn app_timer(&self) -> Option<Instant> {
        #[cfg(test)]
        if ASK_EVERY_END.get() {
            self.app_timer.set(None);
        }
        let t = match self.app_timer.get() {
            Some(t) => t,
            None => {
                let t = self.workload.poll_timeout();
                self.app_timer.set(Some(t));
                t
            }
        };
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(
                t,
                self.workload.poll_timeout(),
                "a call that moved the workload's timer did not clear it"
            );
        }
        t
    }

    fn connect(&mut self, now: Instant) {
        let Some(config) = self.client_config.take() else {
            return;
        };
        if self.receiver_connects {
            // The receiver host connects; early data goes in now.
            self.touch(End::Receiver);
            match self.server.connect(now, self.addrs.sender, config) {
                Ok(h) => {
                    self.server_conn = Some(h);
                    if let Some(c) = self.server.connection_mut(h) {
                        self.workload.first_flight(now, c);
                        self.app_timer.set(None);
                    }
                }
                Err(e) => self.error = Some(e.to_string()),
            }
            return;
        }
        self.touch(End::Sender);
        match self.client.connect(now, self.addrs.receiver, config) {
            Ok(h) => self.client_conn = Some(h),
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// Keeps the sender's new RTT samples and window changes.
    fn record_sender(&mut self, now: Instant) {
        let Some(c) = self.client_conn.and_then(|h| self.client.connection(h)) else {
            return;
        };
        let rtt = c.rtt();
        if rtt.has_sample() && rtt.last_sample_at() != self.last_rtt_sample {
            self.last_rtt_sample = rtt.last_sample_at();
            if let Some(at) = self.last_rtt_sample {
                self.rtt_samples.push((at, rtt.latest()));
            }
        }
        self.record_cwnd(now);
    }

    /// Keeps the sender's window if it changed (with `series`).
    fn record_cwnd(&mut self, now: Instant) {
        if !self.series {
            return;
        }
        let Some(c) = self.client_conn.and_then(|h| self.client.connection(h)) else {
            return;
        };
        let cwnd = c.stats().cwnd_bytes;
        if self.cwnd.last().is_none_or(|(_, w)| *w != cwnd) {
            self.cwnd.push((now, cwnd));
        }
    }

    /// Hands both sides' events to the application and lets it write what
    /// is due; true if anything happened.
    fn process(&mut self, now: Instant) -> bool {
        self.touch_all_in_reference_mode();
        let mut progressed = false;
        // An endpoint with nothing queued is not asked (asking would give
        // nothing and change nothing).
        if std::mem::replace(&mut self.touched[End::Sender as usize].events, false)
            && self.client.may_have_event()
        {
            // With early data the sender host is the server.
            while let Some(h) = self.client.accept() {
                self.client_conn.get_or_insert(h);
            }
            // An event is asked for only while one may be queued: the
            // closing ask that found nothing walked three calls deep.
            while self.client.may_have_event()
                && let Some((h, event)) = self.client.poll_event()
            {
                // The application may answer on the connection: ask again.
                progressed = true;
                self.touch(End::Sender);
                if matches!(event, Event::EarlyData { .. }) {
                    self.early_data_served += 1;
                }
                if Some(h) != self.client_conn {
                    continue;
                }
                match event {
                    Event::Connected => {
                        self.sender_up = true;
                        self.connected_at.get_or_insert(now);
                    }
                    Event::Stream(e) => {
                        if let Some(c) = self.client.connection_mut(h) {
                            self.workload.sender_event(now, c, e, &self.trace);
                            self.app_timer.set(None);
                        }
                    }
                    Event::ConnectionLost(e) => {
                        self.sender_up = false;
                        self.sender_final = self.client.connection(h).map(|c| c.stats());
                        if self.closed_at.is_none() {
                            self.error.get_or_insert_with(|| format!("sender: {e}"));
                        }
                    }
                    Event::EarlyData { .. } | Event::Closed | Event::DatagramsReadable => {}
                }
            }
        }
        if std::mem::replace(&mut self.touched[End::Receiver as usize].events, false)
            && self.server.may_have_event()
        {
            while let Some(h) = self.server.accept() {
                self.server_conn.get_or_insert(h);
            }
            while self.server.may_have_event()
                && let Some((h, event)) = self.server.poll_event()
            {
                progressed = true;
                self.touch(End::Receiver);
                if Some(h) != self.server_conn {
                    continue;
                }
                match event {
                    Event::Connected => self.receiver_up = true,
                    Event::Stream(e) => {
                        if let Some(c) = self.server.connection_mut(h) {
                            self.workload.receiver_event(now, c, e);
                            if self.receiver_event_moves_timer {
                                self.app_timer.set(None);
                            }
                        }
                    }
                    Event::DatagramsReadable => {
                        if let Some(c) = self.server.connection_mut(h) {
                            self.workload.receiver_datagrams(now, c);
                            self.app_timer.set(None);
                        }
                    }
                    Event::ConnectionLost(e) => {
                        self.receiver_up = false;
                        self.receiver_final = self.server.connection(h).map(|c| c.stats());
                        if self.closed_at.is_none() {
                            self.error.get_or_insert_with(|| format!("receiver: {e}"));
                        }
                    }
                    Event::EarlyData { .. } | Event::Closed => {}
                }
            }
        }
        // Whether the application may do anything at all below (see
        // `app_idle_at`).
        let mut idle = !((self.receiver_up && self.receiver_writes)
            || (self.receiver_connects && self.closed_at.is_none()));
        // The connection is taken out (which has the endpoint look at it
        // again) only if the application may write on it.
        if self.sender_up
            && let Some(h) = self.client_conn
            && self.client.connection(h).is_some()
        {
            self.polled_at = Some(now);
            if self.workload.sender_may_write(now) {
                idle = false;
                self.app_timer.set(None);
                if let Some(c) = self.client.connection_mut(h)
                    && self.workload.poll_sender(now, c, &self.trace)
                {
                    progressed = true;
                    self.touch(End::Sender);
                }
            }
        }
        self.app_idle_at = idle.then_some(now);
        if self.receiver_up
            && self.receiver_writes
            && let Some(c) = self.server_conn.and_then(|h| self.server.connection_mut(h))
        {
            let wrote = self.workload.poll_receiver(now, c);
            self.app_timer.set(None);
            if wrote {
                progressed = true;
                self.touch(End::Receiver);
            }
        }
        if self.receiver_connects
            && self.closed_at.is_none()
            && self.workload.finished()
            && let Some(c) = self.server_conn.and_then(|h| self.server.connection_mut(h))
        {
            // Both ends' statistics as the page left them.
            self.receiver_final = Some(c.stats());
            self.sender_final = self
                .client_conn
                .and_then(|h| self.client.connection(h))
                .map(|c| c.stats());
            c.close(now, 0, b"page loaded");
            self.closed_at = Some(now);
            progressed = true;
            self.touch(End::Receiver);
        }
        progressed
    }

    /// Whether [`BriskFlow::process`] at `now` would do nothing: the
    /// application found idle at `now` and no event waiting at either
    /// end. Clears the ends' event marks as it would.
    #[inline]
    fn settled(&mut self, now: Instant) -> bool {
        #[cfg(test)]
        if ASK_EVERY_END.get() {
            return false;
        }
        if self.app_idle_at != Some(now) {
            return false;
        }
        let [s, r] = &mut self.touched;
        if (s.events && self.client.may_have_event()) || (r.events && self.server.may_have_event())
        {
            return false;
        }
        (s.events, r.events) = (false, false);
        true
    }

    /// Builds `end`'s next datagram, IP and UDP headers included, in `d`
    /// if it has one; an end not touched since it last had none is not
    /// asked.
    fn poll_end(&mut self, now: Instant, end: End, d: &mut Vec<u8>) -> bool {
        if end == End::Receiver
            && let Some(r) = self.replay.as_mut()
            && !r.sent
            && let Some((at, flight)) = r.flight.as_ref()
            && now >= *at + r.after
        {
            // The attacker's copy, from another port of the same host.
            r.sent = true;
            let replayed = ip::parse_udp_trusted(flight)
                .ok()
                .map(|(_, to, ecn, payload)| (to, ecn, payload.to_vec()));
            if let Some((to, ecn, payload)) = replayed {
                let mut from = self.addrs.receiver;
                from.set_port(from.port().wrapping_add(1));
                d.clear();
                d.resize(ip::udp_headroom(from.ip()), 0);
                d.extend_from_slice(&payload);
                if ip::udp_datagram_in_place(from, to, ecn, d).is_ok() {
                    return true;
                }
            }
        }
        let touched = &mut self.touched[end as usize];
        if !touched.transmit {
            return false;
        }
        // Looked up only now: most polls are of an end left alone.
        let (host, src) = match end {
            End::Sender => (&mut self.client, self.addrs.sender),
            End::Receiver => (&mut self.server, self.addrs.receiver),
        };
        // Sending moves timers and can raise events (a connection that
        // used up its key closes).
        touched.events = true;
        self.timer_stale[end as usize].set(true);
        // The endpoint writes its payload after room for the IP and UDP
        // headers, which then go in front: no copy.
        let room = ip::udp_headroom(src.ip());
        loop {
            // The room's old bytes are overwritten by the headers: only a
            // buffer too short for it needs filling.
            if d.len() >= room {
                d.truncate(room);
            } else {
                d.resize(room, 0);
            }
            let Some(t) = host.poll_transmit(now, d) else {
                touched.transmit = false;
                return false;
            };
            // An address the wire format cannot carry is dropped, as a
            // host's stack would refuse to send it. The UDP checksum is
            // left for a capture to fill in: the receiving host takes it
            // on trust, and summing every byte of every datagram was a
            // thirtieth of a run.
            let headers = &mut self.udp_headers[end as usize];
            if headers.write(src, t.destination, t.ecn, d).is_ok() {
                if end == End::Receiver
                    && let Some(r) = self.replay.as_mut()
                    && r.flight.is_none()
                {
                    r.flight = Some((now, d.clone()));
                }
                return true;
            }
        }
    }

    fn stats(&self, end: End) -> Option<ConnectionStats> {
        let (ep, h, kept) = match end {
            End::Sender => (&self.client, self.client_conn, &self.sender_final),
            End::Receiver => (&self.server, self.server_conn, &self.receiver_final),
        };
        h.and_then(|h| ep.connection(h))
            .map(|c| c.stats())
            .or_else(|| kept.clone())
    }
}

impl BriskFlow {
    /// A datagram that is not UDP: a router's Packet Too Big about one of
    /// this end's packets goes to its connection's path MTU discovery, as
    /// a socket's error queue would hand it on; anything else is counted
    /// as malformed.
    fn handle_non_udp(&mut self, now: Instant, end: End, datagram: &[u8]) {
        let Ok(ptb) = brisk_wire::icmp::parse_packet_too_big(datagram) else {
            self.malformed += 1;
            return;
        };
        let (ep, h, own) = match end {
            End::Sender => (&mut self.client, self.client_conn, self.addrs.sender),
            End::Receiver => (&mut self.server, self.server_conn, self.addrs.receiver),
        };
        if ptb.quoted_src.ip() == own.ip()
            && let Some(c) = h.and_then(|h| ep.connection_mut(h))
        {
            c.handle_packet_too_big(now, ptb.mtu, &datagram[ptb.quoted_payload_at..]);
            self.touch(end);
            self.process(now);
        }
    }
}

impl FlowApp for BriskFlow {
    fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]) {
        // The UDP checksum is taken on trust, as between two processes on
        // one host: the datagram was built in this run and nothing on the
        // way changes the bytes it covers; its sender leaves it for the
        // engine to fill in when it captures the datagram (a test holds
        // the captures to it).
        let Ok((from, _, ecn, payload)) = self.udp_memo[end as usize].parse_trusted(datagram)
        else {
            self.handle_non_udp(now, end, datagram);
            return;
        };
        self.touch(end);
        // An established connection is driven without its endpoint from
        // then on (the end is touched: everything is asked again).
        match end {
            End::Sender => {
                let to = self.client.handle_datagram(now, from, ecn, payload);
                if let Some(h) = self.client_conn.filter(|h| to == Some(*h)) {
                    self.client.detach(h);
                }
                self.record_sender(now);
            }
            End::Receiver => {
                let to = self.server.handle_datagram(now, from, ecn, payload);
                if let Some(h) = self.server_conn.filter(|h| to == Some(*h)) {
                    self.server.detach(h);
                }
            }
        }
        self.process(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        // One buffer for every try: most polls find nothing to send.
        let mut d = self.spare.pop().unwrap_or_default();
        let sent = loop {
            self.touch_all_in_reference_mode();
            let mut ends = [End::Sender, End::Receiver].into_iter();
            if let Some(end) = ends.find(|&end| self.poll_end(now, end, &mut d)) {
                break Some(end);
            }
            if self.settled(now) || !self.process(now) {
                break None;
            }
        };
        match sent {
            Some(end) => Some((end, d)),
            None => {
                self.spare.push(d);
                None
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let timers = [self.timer(End::Sender), self.timer(End::Receiver)];
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(
                timers,
                [self.client.fresh_timeout(), self.server.fresh_timeout()],
                "a touched end's timer was not read again"
            );
        }
        // The rarer deadlines are folded in only when set: most flows have
        // no start or replay pending, and the application's is asked only
        // of an open sender.
        let mut next = earliest(timers[0], timers[1]);
        if self.sender_up
            && let Some(t) = self.app_timer()
            && self.polled_at.is_none_or(|p| t > p)
        {
            next = earliest(next, Some(t));
        }
        if self.client_config.is_some() {
            next = earliest(next, Some(self.start));
        }
        if let Some(r) = self.replay.as_ref().filter(|r| !r.sent)
            && let Some((at, _)) = r.flight.as_ref()
        {
            next = earliest(next, Some(*at + r.after));
        }
        next
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.client_config.is_some() && now >= self.start {
            self.connect(now);
        }
        self.touch_all_in_reference_mode();
        let due = |end| self.timer(end).is_some_and(|t| t <= now);
        let due = (due(End::Sender), due(End::Receiver));
        if due.0 {
            self.touch(End::Sender);
            self.client.handle_timeout(now);
            self.fail_over_if_stalled(now);
        }
        if due.1 {
            self.touch(End::Receiver);
            self.server.handle_timeout(now);
        }
        // Only an ACK gives an RTT sample, and each arriving one is
        // recorded then: after a timeout only the window can have moved.
        // Debug builds (the tests) look for a sample anyway and check that.
        if cfg!(any(test, debug_assertions)) {
            let samples = self.rtt_samples.len();
            self.record_sender(now);
            assert_eq!(samples, self.rtt_samples.len(), "a timeout took a sample");
        } else {
            self.record_cwnd(now);
        }
        self.process(now);
    }

    fn report(&self) -> AppReport {
        let mut app = AppReport::default();
        let mut t = TransportReport {
            cc: self.cc,
            app: self.app,
            started_at: self.start,
            connected_at: self.connected_at,
            error: self.error.clone(),
            sender: self.stats(End::Sender),
            receiver: self.stats(End::Receiver),
            cwnd: self.cwnd.clone(),
            seq: self.trace.events(),
            ..TransportReport::default()
        };
        self.workload.report(&mut app, &mut t);
        if self.receiver_connects {
            let s = self.client.stats();
            t.early_data = Some(EarlyDataReport {
                served: self.early_data_served,
                refused: s.early_data_replayed
                    + s.early_data_outside_window
                    + s.early_data_undecidable,
                replays_sent: u64::from(self.replay.as_ref().is_some_and(|r| r.sent)),
            });
        }
        app.rtt_samples = self.rtt_samples.clone();
        app.transport = Some(t);
        app
    }

    fn recycle(&mut self, datagram: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            self.spare.push(datagram);
        }
    }

    fn on_moved(&mut self, now: Instant) {
        if let Some(c) = self.client_conn.and_then(|h| self.client.connection_mut(h)) {
            c.migrate(now);
        }
        self.touch(End::Sender);
    }
}
