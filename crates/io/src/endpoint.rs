//! [`Endpoint`]: one UDP socket serving many connections, with the task
//! that drives it.

use crate::config::{EndpointConfig, ServerConfig};
use crate::connected::ConnectedSockets;
use crate::connection::Connection;
use crate::driver::Driver;
use crate::error::{ConnectError, ConnectionError, EndpointError};
use crate::keys;
use crate::socket::{Socket, SocketStats};
use crate::state::{Shared, State};
use crate::stream::Stream;
use brisk_proto::crypto::KEY_LEN;
use brisk_proto::streams::StreamId;
use brisk_proto::{ClientConfig, Endpoint as ProtoEndpoint, Idempotent};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// What an endpoint counted: the core's per-datagram verdicts (garbage
/// lands in `malformed`, `unknown_connection`, `short_initial` or
/// `handshake_failed`) and the socket layer's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointStats {
    pub proto: brisk_proto::EndpointStats,
    pub socket: SocketStats,
    /// Established connections driven behind a lock of their own (taken
    /// out of the core endpoint once their handshake finished); the rest
    /// are handshakes.
    pub own_lock: usize,
}

/// A UDP socket and the connections behind it. Cloning gives another
/// handle to the same endpoint; the socket closes once every handle and
/// every connection is gone.
pub struct Endpoint {
    shared: Arc<Shared>,
    config: Arc<EndpointConfig>,
    public_key: Option<[u8; KEY_LEN]>,
}

impl Endpoint {
    /// Listens on `config.listen` and accepts connections. Must be called
    /// within a tokio runtime.
    pub fn server(config: ServerConfig) -> io::Result<Endpoint> {
        let mut proto = brisk_proto::ServerConfig::new(config.keypair.clone());
        proto.accept_early_data = config.accept_early_data;
        // The endpoint's clock starts now (`start`).
        proto.wall_clock_at_zero = crate::wall_clock::at_zero(brisk_time::Instant::ZERO);
        (proto.transport, proto.max_connections) = config.within_budget();
        proto.admission = config.admission.clone();
        // A server cannot ask the route to each client: off loopback it
        // assumes the smallest interface MTU.
        let mtu = if config.listen.ip().is_loopback() {
            None
        } else {
            crate::socket::smallest_interface_mtu()
        };
        proto.transport.max_datagram_size =
            config.endpoint.datagram_size_within(config.listen, mtu);
        // That size is only a ceiling: each path's own is found by probing.
        proto.transport.pmtud = true;
        let public = config.keypair.public();
        Self::start(config.listen, config.endpoint, Some(proto), Some(public))
    }

    /// A client endpoint on `bind` (port 0 picks one) with default
    /// settings.
    pub fn client(bind: SocketAddr) -> io::Result<Endpoint> {
        Self::client_with(bind, EndpointConfig::default())
    }

    pub fn client_with(bind: SocketAddr, config: EndpointConfig) -> io::Result<Endpoint> {
        Self::start(bind, config, None, None)
    }

    fn start(
        bind: SocketAddr,
        config: EndpointConfig,
        server: Option<brisk_proto::ServerConfig>,
        public_key: Option<[u8; KEY_LEN]>,
    ) -> io::Result<Endpoint> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("brisk-io endpoints need a tokio runtime"))?;
        let (socket, connected) = {
            let _guard = runtime.enter();
            let socket = Socket::bind(bind, &config.socket)?;
            // Without them (no SO_REUSEPORT, no epoll), every connection
            // shares the listening socket, as a client's do.
            let connected = (server.is_some() && config.socket.connected_sockets > 0)
                .then(|| ConnectedSockets::new(&socket, &config.socket).ok())
                .flatten();
            (socket, connected)
        };
        let seed = u64::from_le_bytes(keys::random_bytes::<8>()?);
        let state = State::new(ProtoEndpoint::new(seed, server), socket.local_addr());
        let shared = Shared::new(state);
        let driver = Driver::new(shared.clone(), socket, config.busy_poll, connected)?;
        runtime.spawn(driver);
        Ok(Endpoint {
            shared,
            config: Arc::new(config),
            public_key,
        })
    }

    /// Client: moves the endpoint to a new local address `bind` (another
    /// interface or network; port 0 picks one) and returns it. Each
    /// connection then sends from there, by a connection ID the server
    /// never saw on the old address, with congestion state started over
    /// and a path challenge that tells the server at once
    /// (docs/PROTOCOL.md §7.4). Datagrams still on their way to the old
    /// address are lost, as when an interface goes away.
    pub fn rebind(&self, bind: SocketAddr) -> io::Result<SocketAddr> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("brisk-io endpoints need a tokio runtime"))?;
        let socket = {
            let _guard = runtime.enter();
            Socket::bind(bind, &self.config.socket)?
        };
        let local = socket.local_addr();
        self.shared.lock().rebind = Some(socket);
        self.shared.wake_driver();
        Ok(local)
    }

    /// Client: binds a second local address `bind` (another interface: a
    /// phone's cellular beside its Wi-Fi; port 0 picks one) and returns it.
    /// When a connection's path stalls (no ACK for a probe timeout with
    /// data in flight), the endpoint sends from this address from then
    /// on, the old one becoming the standby, and every connection
    /// validates the new path and resends there what the old one
    /// swallowed (docs/PROTOCOL.md §7.4). Connections need
    /// `TransportConfig::failover` and `migration`, and the server
    /// `migration`.
    pub fn set_standby(&self, bind: SocketAddr) -> io::Result<SocketAddr> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("brisk-io endpoints need a tokio runtime"))?;
        let socket = {
            let _guard = runtime.enter();
            Socket::bind(bind, &self.config.socket)?
        };
        let local = socket.local_addr();
        self.shared.lock().standby = Some(socket);
        Ok(local)
    }

    /// For tests: while `on`, the endpoint drops every datagram it would
    /// send and every one it receives, as a stalled link (an access point
    /// still associated that passes nothing) would.
    #[doc(hidden)]
    pub fn set_black_hole(&self, on: bool) {
        self.shared.lock().black_hole = on;
        self.shared.wake_driver();
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.shared.lock().local_addr
    }

    /// Traces every connection this endpoint opens or accepts from now on
    /// into a sink `factory` makes, from the first handshake packet. The
    /// factory runs on the endpoint task: it should not block for long.
    pub fn set_qlog(&self, factory: brisk_proto::qlog::QlogFactory) {
        self.shared.lock().ep.set_qlog(factory);
    }

    /// Server: handshakes half-open now (not yet both established and
    /// address-proved); forged ones age out after the half-open timeout.
    pub fn half_open(&self) -> usize {
        self.shared.lock().ep.half_open()
    }

    /// The server's static public key (what clients pin).
    pub fn public_key(&self) -> Option<[u8; KEY_LEN]> {
        self.public_key
    }

    pub fn stats(&self) -> EndpointStats {
        let st = self.shared.lock();
        EndpointStats {
            proto: st.ep.stats(),
            socket: st.socket_stats,
            own_lock: st.ep.detached_len(),
        }
    }

    /// Connects to the server at `addr` whose static public key is
    /// `server_key` (Noise IK: one round trip). If the server does not
    /// answer, a key-less probe tells a wrong key from an absent server.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        server_key: [u8; KEY_LEN],
    ) -> Result<Connection, ConnectError> {
        let mut config = ClientConfig::new(Some(server_key));
        config.transport = self.config.transport.clone();
        self.connect_with(addr, config).await
    }

    /// Connects with full control of the client configuration; its
    /// `max_datagram_size` is set from the endpoint's configuration. With
    /// a pinned server key, a handshake that gets no answer is followed by
    /// a key-less (XX) probe that tells a wrong key from an absent server.
    pub async fn connect_with(
        &self,
        addr: SocketAddr,
        config: ClientConfig,
    ) -> Result<Connection, ConnectError> {
        self.connect_sending(addr, config, None)
            .await
            .map(|(conn, _)| conn)
    }

    /// Connects to the server at `addr` whose static public key is
    /// `server_key` with `request` in the first flight (Noise IK early
    /// data), and returns the connection and the stream the request went
    /// on, its sending half finished: the server can answer half a round
    /// trip after the first flight leaves, so the answer's first byte
    /// arrives one round trip after the call, as on a warm connection.
    /// The request must be safe to process twice ([`Idempotent`]): the
    /// server refuses replays it remembers, but a copy sent to another
    /// server process holding the same key is not one of them. A server
    /// that refuses early data gets the same bytes one round trip later.
    /// At most 900 bytes.
    pub async fn connect_with_request(
        &self,
        addr: SocketAddr,
        server_key: [u8; KEY_LEN],
        request: Idempotent<'_>,
    ) -> Result<(Connection, Stream), ConnectError> {
        let mut config = ClientConfig::new(Some(server_key));
        config.transport = self.config.transport.clone();
        let (conn, id) = self.connect_sending(addr, config, Some(request)).await?;
        // A handshake that succeeded with early data named its stream.
        let id = id.ok_or(ConnectError::EarlyData(
            brisk_proto::EarlyDataError::TooLate,
        ))?;
        let stream = Stream::new(conn.clone(), id);
        Ok((conn, stream))
    }

    /// Connects, with `early` as the first flight's early data if given
    /// (then also the stream it went on).
    async fn connect_sending(
        &self,
        addr: SocketAddr,
        config: ClientConfig,
        early: Option<Idempotent<'_>>,
    ) -> Result<(Connection, Option<StreamId>), ConnectError> {
        let timeout = self.config.handshake_timeout;
        let Some(pinned) = config.server_static_key else {
            return self.handshake(addr, config, early, timeout).await;
        };
        match self.handshake(addr, config.clone(), early, timeout).await {
            Err(ConnectError::TimedOut { .. }) => {}
            other => return other,
        }
        let probe_config = ClientConfig {
            server_static_key: None,
            ..config
        };
        let timed_out = ConnectError::TimedOut {
            addr,
            after: timeout,
        };
        let Ok((probe, _)) = self.handshake(addr, probe_config, None, timeout / 2).await else {
            return Err(timed_out);
        };
        let presented = probe.remote_static_key();
        probe.close(0, b"key probe");
        match presented {
            Some(k) if k != pinned => Err(ConnectError::WrongServerKey {
                addr,
                expected: keys::to_hex(&pinned),
                presented: keys::to_hex(&k),
            }),
            _ => Err(timed_out),
        }
    }

    async fn handshake(
        &self,
        addr: SocketAddr,
        mut config: ClientConfig,
        early: Option<Idempotent<'_>>,
        timeout: Duration,
    ) -> Result<(Connection, Option<StreamId>), ConnectError> {
        let mtu = crate::socket::route_mtu(addr).ok();
        config.transport.max_datagram_size = self.config.datagram_size_within(addr, mtu);
        // The first flight is 1200 bytes, so a path with a smaller hop than
        // the local route still connects; larger sizes are probed.
        config.transport.pmtud = true;
        let conn = {
            let mut st = self.shared.lock();
            if let Some(reason) = &st.stopped {
                return Err(ConnectError::Failed {
                    addr,
                    reason: ConnectionError::EndpointStopped(reason.clone()),
                });
            }
            let now = st.now();
            config.wall_clock_at_zero = crate::wall_clock::at_zero(now);
            let h = st.ep.connect(now, addr, config)?;
            let early_id = match (early, st.ep.connection_mut(h)) {
                (Some(request), Some(c)) => {
                    let sent = c.send_early(request).and_then(|id| {
                        c.finish(id)
                            .map(|()| id)
                            .map_err(|_| brisk_proto::EarlyDataError::StreamsBlocked)
                    });
                    match sent {
                        Ok(id) => Some(id),
                        Err(e) => {
                            c.close(now, 0, b"");
                            return Err(ConnectError::EarlyData(e));
                        }
                    }
                }
                (Some(_), None) => {
                    return Err(ConnectError::EarlyData(
                        brisk_proto::EarlyDataError::TooLate,
                    ));
                }
                (None, _) => None,
            };
            let cell = st.cell(h);
            drop(st);
            self.shared.wake_driver();
            (Connection::new(self.shared.clone(), cell), early_id)
        };
        let (conn, early_id) = conn;
        match tokio::time::timeout(timeout, conn.established()).await {
            Ok(Ok(())) => Ok((conn, early_id)),
            Ok(Err(reason)) => Err(ConnectError::Failed { addr, reason }),
            Err(_) => Err(ConnectError::TimedOut {
                addr,
                after: timeout,
            }),
        }
    }

    /// The next connection a client opened; `None` once the endpoint has
    /// stopped.
    pub async fn accept(&self) -> Option<Connection> {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if let Some(h) = st.incoming.pop_front() {
                let cell = st.cell(h);
                return Poll::Ready(Some(Connection::new(self.shared.clone(), cell)));
            }
            if st.stopped.is_some() {
                return Poll::Ready(None);
            }
            if !st.accept_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                st.accept_wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Closes every connection with `code` and `reason`; the socket stays
    /// open until they have drained (see [`Endpoint::wait_idle`]).
    pub fn close(&self, code: u64, reason: &[u8]) {
        self.shared.lock().close_all(code, reason);
        self.shared.wake_driver();
    }

    /// Stops the task and closes the socket at once, telling no peer (as
    /// a crash would): their connections time out.
    pub fn abort(&self) {
        self.shared
            .lock()
            .stopped
            .get_or_insert_with(|| "aborted".to_owned());
        self.shared.wake_driver();
    }

    /// Why the endpoint's task stopped, if its socket failed (rather than
    /// being closed or aborted): after `accept` returned `None`, the
    /// difference between a shutdown and a failure to report.
    pub fn failure(&self) -> Option<EndpointError> {
        self.shared.lock().failure.clone()
    }

    /// Resolves once no connection is left (or the endpoint stopped).
    pub async fn wait_idle(&self) {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if st.stopped.is_some() || !st.has_connections() {
                return Poll::Ready(());
            }
            if !st.idle_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                st.idle_wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

impl Clone for Endpoint {
    fn clone(&self) -> Self {
        self.shared.lock().endpoint_refs += 1;
        Endpoint {
            shared: self.shared.clone(),
            config: self.config.clone(),
            public_key: self.public_key,
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.endpoint_refs = st.endpoint_refs.saturating_sub(1);
        }
        self.shared.wake_driver();
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local_addr", &self.local_addr())
            .finish_non_exhaustive()
    }
}
