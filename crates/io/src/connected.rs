//! A server's per-connection sockets: each address-proved connection
//! (a handshake whose Retry token proved the address included) gets a UDP socket of its own, bound to the listening
//! socket's address and port (`SO_REUSEPORT`) and `connect`ed to the
//! client, so the kernel queues that client's datagrams there and not in
//! the listening socket's receive buffer. The kernel tells sockets apart
//! by address and port only, so connections from one client address and
//! port (one client endpoint multiplexing several) share one socket.
//!
//! Why: every new client and every forged handshake lands in the listening
//! socket. Under a flood its buffer overflows, and the kernel drops an
//! established transfer's datagrams along with the forgeries. Linux
//! delivers a datagram to the socket of its reuseport group connected to
//! the datagram's source before any unconnected one (checked on IPv4,
//! IPv6 and dual-stack binds), so a connection with its own socket keeps
//! its packets whatever the listening socket suffers, and the driver
//! reads it before the listening socket each turn.
//!
//! What it does not change:
//! - routing: every datagram read here goes to the one sans-IO endpoint,
//!   which finds its connection by connection ID as before, so a datagram
//!   in the wrong socket (one that arrived before the `connect`) is still
//!   served;
//! - sending: replies leave through the listening socket, from the same
//!   address and port;
//! - clients, which have one socket per endpoint anyway.
//!
//! Life cycle: a connection is given a socket the first time one of its
//! datagrams comes through the listening socket once its address is
//! proved (the Initial with a valid Retry token is such a datagram, so
//! the rest of that handshake already skips the listening socket); it
//! moves to another when its peer address changes
//! (NAT rebinding: the new address's datagrams reach the listening socket
//! and are routed by connection ID meanwhile); a socket is closed when
//! its last connection moved away or the core forgot it. When no socket
//! can be made (the limit, or the system refuses one) the connection
//! stays on the listening socket, counted.
//!
//! The listening socket is bound without `SO_REUSEPORT` and gets it only
//! afterwards, so binding a port another server holds still fails with
//! "address in use"; only sockets of the same user can join the group.

use crate::config::SocketConfig;
use crate::socket::{DatagramError, Socket};
use crate::socket_error::{self, Class, MAX_ERRORS_PER_TURN, Op};
use crate::sys::{self, Epoll};
use brisk_proto::ConnectionHandle;
use brisk_wire::Ecn;
use socket2::{Domain, Protocol, Socket as RawSocket, Type};
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{SocketAddr, SocketAddrV6};
use std::os::fd::AsRawFd;
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;

/// Ready sockets read per turn, at most.
const MAX_READY_PER_TURN: usize = 64;
/// Receive batches read from one ready socket per turn, at most: a
/// client sending faster than the server reads cannot starve the rest.
const MAX_BATCHES_PER_SOCKET: usize = 4;

/// What the per-connection sockets counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectedStats {
    /// Sockets opened, and open now.
    pub opened: u64,
    pub open: u64,
    /// Connections that have a socket now (several share one when they
    /// come from the same client address and port).
    pub connections: u64,
    /// Connections moved to another socket because their peer address
    /// changed.
    pub rebound: u64,
    /// Connections left on the listening socket: the socket limit was
    /// reached, or the system refused a socket (descriptors exhausted).
    pub fallbacks: u64,
    /// Sockets given up after a receive error that said they were broken
    /// (their connections go on through the listening socket).
    pub failed: u64,
    /// Datagrams read from these sockets (GRO segments one by one).
    pub datagrams: u64,
}

struct Connected {
    socket: std::net::UdpSocket,
    /// The peer it is connected to, as the core names it (IPv4 peers of a
    /// dual-stack socket as IPv4).
    peer: SocketAddr,
    /// Connections using it.
    users: u32,
}

pub(crate) struct ConnectedSockets {
    epoll: AsyncFd<Epoll>,
    /// The listening socket's address, which each socket binds.
    local: SocketAddr,
    v6_only: bool,
    recv_buffer_bytes: usize,
    /// Limit on open sockets.
    limit: usize,
    /// Open sockets by their epoll token.
    sockets: HashMap<u64, Connected>,
    by_peer: HashMap<SocketAddr, u64>,
    /// The socket of each connection that has one.
    of_conn: HashMap<ConnectionHandle, u64>,
    next_token: u64,
    /// Connections whose socket could not be made: not retried.
    declined: HashSet<ConnectionHandle>,
    /// Scratch: the ready sockets of one turn.
    ready: Vec<(u64, bool)>,
    pub stats: ConnectedStats,
}

impl ConnectedSockets {
    /// Per-connection sockets beside `listening`, which gets
    /// `SO_REUSEPORT` now (after its bind). At most `config.
    /// connected_sockets`, and at most half the descriptors the process
    /// may open. Must run inside a tokio runtime.
    pub fn new(listening: &Socket, config: &SocketConfig) -> io::Result<ConnectedSockets> {
        sys::set_int_option(listening.raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
        let fd_room = sys::open_files_limit()
            .map(|n| usize::try_from(n / 2).unwrap_or(usize::MAX))
            .unwrap_or(usize::MAX);
        Ok(ConnectedSockets {
            epoll: Epoll::new()?.registered()?,
            local: listening.local_addr(),
            v6_only: config.v6_only,
            recv_buffer_bytes: config.recv_buffer_bytes,
            limit: config.connected_sockets.min(fd_room),
            sockets: HashMap::new(),
            by_peer: HashMap::new(),
            of_conn: HashMap::new(),
            next_token: 0,
            declined: HashSet::new(),
            ready: Vec::with_capacity(MAX_READY_PER_TURN),
            stats: ConnectedStats::default(),
        })
    }

    /// Whether a datagram from `from` for connection `h`, read from the
    /// listening socket, may call for [`ConnectedSockets::adopt`]: `h` has
    /// no socket of its own (and was not refused one), or its socket is
    /// connected elsewhere.
    pub fn wants_look(&self, h: ConnectionHandle, from: SocketAddr) -> bool {
        match self.of_conn.get(&h).and_then(|t| self.sockets.get(t)) {
            Some(c) => c.peer != from,
            None => !self.declined.contains(&h),
        }
    }

    /// Gives connection `h` (at `peer`, `ready`: address-proved and not
    /// closing) the socket connected to `peer`, opening it if no
    /// other connection has, and leaving one connected elsewhere.
    /// Nothing for a connection not ready yet.
    pub fn adopt(&mut self, h: ConnectionHandle, peer: SocketAddr, ready: bool, gro: bool) {
        if !ready || self.declined.contains(&h) {
            return;
        }
        if let Some(token) = self.of_conn.get(&h) {
            if self.sockets.get(token).is_some_and(|c| c.peer == peer) {
                return;
            }
            self.detach(h);
            self.stats.rebound += 1;
        }
        let token = match self.by_peer.get(&peer) {
            Some(&token) => token,
            None => match self.open_for(peer, gro) {
                Some(token) => token,
                None => {
                    self.declined.insert(h);
                    self.stats.fallbacks += 1;
                    return;
                }
            },
        };
        if let Some(c) = self.sockets.get_mut(&token) {
            c.users += 1;
            self.of_conn.insert(h, token);
        }
        self.count();
    }

    /// Opens and watches a socket connected to `peer`; its token, or
    /// `None` at the limit or when the system refuses.
    fn open_for(&mut self, peer: SocketAddr, gro: bool) -> Option<u64> {
        if self.sockets.len() >= self.limit {
            return None;
        }
        let socket = self.open(peer, gro).ok()?;
        let token = self.next_token;
        self.epoll.get_ref().add(socket.as_raw_fd(), token).ok()?;
        self.next_token += 1;
        self.sockets.insert(
            token,
            Connected {
                socket,
                peer,
                users: 0,
            },
        );
        self.by_peer.insert(peer, token);
        self.stats.opened += 1;
        Some(token)
    }

    /// Takes connection `h` off its socket, closing the socket if it was
    /// the last one there.
    fn detach(&mut self, h: ConnectionHandle) {
        let Some(token) = self.of_conn.remove(&h) else {
            return;
        };
        let Some(c) = self.sockets.get_mut(&token) else {
            return;
        };
        c.users = c.users.saturating_sub(1);
        if c.users == 0 {
            self.drop_socket(token);
        }
    }

    /// Closes the socket of `token`.
    fn drop_socket(&mut self, token: u64) {
        if let Some(c) = self.sockets.remove(&token) {
            self.epoll.get_ref().remove(c.socket.as_raw_fd());
            self.by_peer.remove(&c.peer);
        }
        if self.sockets.len() < self.sockets.capacity() / 4 {
            self.sockets.shrink_to(self.sockets.len() * 2);
            self.by_peer.shrink_to(self.by_peer.len() * 2);
        }
    }

    fn count(&mut self) {
        self.stats.open = self.sockets.len() as u64;
        self.stats.connections = self.of_conn.len() as u64;
    }

    /// A socket bound beside the listening one and connected to `peer`,
    /// reporting ECN codepoints and ICMP errors as the listening one does.
    fn open(&self, peer: SocketAddr, gro: bool) -> io::Result<std::net::UdpSocket> {
        let v6 = self.local.is_ipv6();
        let raw = RawSocket::new(
            Domain::for_address(self.local),
            Type::DGRAM,
            Some(Protocol::UDP),
        )?;
        if v6 {
            raw.set_only_v6(self.v6_only)?;
        }
        raw.set_nonblocking(true)?;
        raw.set_reuse_port(true)?;
        let _ = raw.set_recv_buffer_size(self.recv_buffer_bytes);
        raw.bind(&self.local.into())?;
        let fd = raw.as_raw_fd();
        if peer.is_ipv4() {
            sys::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
            let _ = sys::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1);
        }
        if v6 {
            sys::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
            let _ = sys::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1);
        }
        if gro {
            // Without it a coalesced train would not fit the listening
            // socket's buffers, which were sized for GRO.
            sys::set_int_option(fd, libc::SOL_UDP, sys::UDP_GRO, 1)?;
        }
        let target = match peer {
            SocketAddr::V4(a) if v6 => {
                SocketAddr::V6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0))
            }
            other => other,
        };
        raw.connect(&target.into())?;
        Ok(raw.into())
    }

    /// The core forgot connection `h`: it leaves its socket (closed if
    /// no other connection uses it).
    pub fn close(&mut self, h: ConnectionHandle) {
        self.detach(h);
        self.declined.remove(&h);
        if self.of_conn.len() < self.of_conn.capacity() / 4 {
            self.of_conn.shrink_to(self.of_conn.len() * 2);
        }
        if self.declined.len() < self.declined.capacity() / 4 {
            self.declined.shrink_to(self.declined.len() * 2);
        }
        self.count();
    }

    /// Reads the sockets that hold datagrams (at most
    /// [`MAX_READY_PER_TURN`] of them, [`MAX_BATCHES_PER_SOCKET`] batches
    /// each) into `socket`'s buffers, handing each datagram to `deliver`
    /// (which names the connection it went to) and each error-queue entry
    /// to `errors`; true if anything was read. Connections that called
    /// for [`ConnectedSockets::adopt`] go to `looks`: another connection
    /// from a socket's peer address (its handshake came through the
    /// socket, not the listening one). Registers the waker once none is
    /// ready.
    pub fn receive(
        &mut self,
        cx: &mut Context<'_>,
        socket: &mut Socket,
        mut deliver: impl FnMut(SocketAddr, Ecn, &[u8]) -> Option<ConnectionHandle>,
        errors: &mut Vec<DatagramError>,
        looks: &mut Vec<ConnectionHandle>,
    ) -> io::Result<bool> {
        // Asked every turn, not only when tokio's reactor has seen the
        // descriptor become readable: a task kept busy by a flood polls
        // the reactor rarely (tokio looks at it between task polls), and
        // established datagrams would wait for it.
        if self.ready_now()? == 0 {
            // Nothing ready: have the reactor wake the task when something
            // is. Readiness cleared here may be newer than the check
            // above, so the check is repeated after each clear.
            loop {
                match self.epoll.poll_read_ready(cx) {
                    Poll::Ready(Ok(mut guard)) => {
                        guard.clear_ready();
                        if self.ready_now()? > 0 {
                            break;
                        }
                    }
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => return Ok(false),
                }
            }
        }
        let before = socket.stats.datagrams_received;
        let mut broken = Vec::new();
        for &(token, error) in &self.ready {
            let Some(c) = self.sockets.get(&token) else {
                continue;
            };
            let fd = c.socket.as_raw_fd();
            if error {
                socket.drain_errors_of(fd, MAX_ERRORS_PER_TURN, |e| errors.push(e));
            }
            let of_conn = &self.of_conn;
            let mut last = None;
            let mut note = |from, ecn, data: &[u8]| {
                let Some(h) = deliver(from, ecn, data) else {
                    return;
                };
                if last != Some(h) && of_conn.get(&h) != Some(&token) {
                    looks.push(h);
                }
                last = Some(h);
            };
            for _ in 0..MAX_BATCHES_PER_SOCKET {
                match socket.recv_other(fd, &mut note) {
                    Ok(messages) if messages < sys::BATCH => break,
                    Ok(_) => {}
                    Err(e) => {
                        match socket_error::classify(Op::Receive, &e) {
                            Class::Transient => socket.stats.errors.transient += 1,
                            Class::Peer => {
                                socket.stats.errors.peer += 1;
                                socket.drain_errors_of(fd, MAX_ERRORS_PER_TURN, |e| errors.push(e));
                            }
                            Class::Fatal => broken.push(token),
                        }
                        break;
                    }
                }
            }
        }
        for token in broken {
            self.give_up(token);
        }
        self.stats.datagrams += socket.stats.datagrams_received - before;
        Ok(true)
    }

    /// Fills `ready` with the sockets that hold datagrams or errors now.
    fn ready_now(&mut self) -> io::Result<usize> {
        self.epoll
            .get_ref()
            .ready(MAX_READY_PER_TURN, &mut self.ready)
    }

    /// Closes a broken socket: its connections go back to the listening
    /// socket for good. Walks every connection with a socket, but only
    /// after a receive error that says the socket itself is broken.
    fn give_up(&mut self, token: u64) {
        let users: Vec<ConnectionHandle> = self
            .of_conn
            .iter()
            .filter(|&(_, t)| *t == token)
            .map(|(h, _)| *h)
            .collect();
        for h in users {
            self.of_conn.remove(&h);
            self.declined.insert(h);
        }
        self.drop_socket(token);
        self.stats.failed += 1;
        self.count();
    }

    /// Whether any socket holds datagrams, without reading them (for the
    /// busy poll).
    pub fn any_ready(&mut self) -> bool {
        self.epoll
            .get_ref()
            .ready(1, &mut self.ready)
            .is_ok_and(|n| n > 0)
    }
}
