//! TCP Fast Open (RFC 7413): request data in the SYN, saving a round trip,
//! only for data that may be delivered twice.
//!
//! A normal connection spends one round trip on the handshake before the
//! request can leave. With a Fast Open cookie from an earlier connection,
//! the client puts its request in the SYN and the server answers in its
//! SYN-ACK. The catch (WWDC 2015): the network may duplicate packets, and a
//! delayed copy of a SYN with data looks like a fresh valid request, so the
//! server may act on it twice. Early data must therefore be *idempotent*:
//! fetching an image twice is harmless, ordering shoes twice is not. This
//! module only sends early data wrapped in [`Idempotent`], which callers
//! construct explicitly.
//!
//! Linux gates Fast Open with `net.ipv4.tcp_fastopen`: bit 0x1 lets clients
//! send data in the SYN, 0x2 lets listeners accept it (3 = both). The
//! [`check`] function reads it and says what to change.

use std::io;
use std::net::SocketAddr;

use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::sockopt::{self, SockoptError};
use crate::sysctl::{SysctlError, Sysctls};
use crate::tcp_info::TcpInfo;

/// Data the caller has declared safe to deliver more than once.
///
/// There is deliberately no `From`, `Default` or deserialisation: the only
/// way in is [`Idempotent::assume_replay_safe`], so a request reaches a SYN
/// only where someone wrote that name next to it.
///
/// ```no_run
/// # async fn f(addr: std::net::SocketAddr) -> Result<(), brisk_tcp::fastopen::TfoError> {
/// use brisk_tcp::fastopen::{self, Idempotent};
/// // Fetching a resource is safe to replay.
/// let early = Idempotent::assume_replay_safe(b"GET /size?bytes=2048\n".as_slice());
/// let tfo = fastopen::connect(addr, early).await?;
/// println!("{} bytes rode in the SYN", tfo.syn_bytes);
/// # Ok(()) }
/// ```
///
/// ```compile_fail,E0308
/// # async fn f(addr: std::net::SocketAddr) {
/// // Plain bytes are not accepted as early data:
/// brisk_tcp::fastopen::connect(addr, b"POST /buy-shoes".as_slice()).await;
/// # }
/// ```
///
/// ```compile_fail,E0423
/// // Nor can the wrapper be built from its field:
/// let early = brisk_tcp::fastopen::Idempotent(b"GET /".as_slice());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idempotent<T>(T);

impl<T> Idempotent<T> {
    /// Declares `data` replay-safe: the server may receive and act on it
    /// twice (a delayed duplicate SYN is indistinguishable from a new one)
    /// and that must do no harm. Use it for reads (`GET` of a resource),
    /// never for requests that change state (payments, orders, posts).
    pub fn assume_replay_safe(data: T) -> Self {
        Idempotent(data)
    }

    /// The data, to send in the SYN.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The data, by value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// `net.ipv4.tcp_fastopen` bits (Documentation/networking/ip-sysctl).
pub mod bits {
    /// Clients may send data in the SYN.
    pub const CLIENT: i64 = 0x1;
    /// Listeners that set `TCP_FASTOPEN` accept data in the SYN.
    pub const SERVER: i64 = 0x2;
    /// Clients send SYN data even without a cookie.
    pub const CLIENT_NO_COOKIE: i64 = 0x4;
    /// Listeners accept SYN data without a valid cookie.
    pub const SERVER_NO_COOKIE: i64 = 0x200;
    /// Every listener accepts Fast Open without setting `TCP_FASTOPEN`.
    pub const SERVER_WITHOUT_SOCKOPT: i64 = 0x400;
}

/// Which side of Fast Open is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The connecting side (bit 0x1 of `net.ipv4.tcp_fastopen`).
    Client,
    /// The listening side (bit 0x2 of `net.ipv4.tcp_fastopen`).
    Server,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Client => "clients",
            Role::Server => "listeners",
        })
    }
}

impl Role {
    fn bit(self) -> i64 {
        match self {
            Role::Client => bits::CLIENT,
            Role::Server => bits::SERVER,
        }
    }
}

/// Why Fast Open could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TfoError {
    #[error(
        "TCP Fast Open is off for {role}: net.ipv4.tcp_fastopen = {current} lacks bit {bit:#x}; \
         enable it with `sysctl -w net.ipv4.tcp_fastopen={suggested}` (3 = client and server)"
    )]
    /// `net.ipv4.tcp_fastopen` lacks the role's bit.
    Disabled {
        /// The side that is off.
        role: Role,
        /// The sysctl's current value.
        current: i64,
        /// The bit the role needs.
        bit: i64,
        /// The value that turns the role on and keeps the other bits.
        suggested: i64,
    },
    #[error("TCP Fast Open is not available on {os}: it is driven on Linux only")]
    /// Fast Open is driven on Linux only.
    Unsupported {
        /// The OS this was built for (`std::env::consts::OS`).
        os: &'static str,
    },
    #[error(transparent)]
    /// The sysctl could not be read.
    Sysctl(#[from] SysctlError),
    #[error(transparent)]
    /// A socket option was refused.
    Sockopt(#[from] SockoptError),
    #[error("{what}: {source}")]
    /// A socket call failed.
    Io {
        /// Which call.
        what: &'static str,
        #[source]
        /// The OS error.
        source: io::Error,
    },
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> TfoError {
    move |source| TfoError::Io { what, source }
}

/// Checks that `net.ipv4.tcp_fastopen` allows `role`; returns its value.
pub fn check(sysctls: &Sysctls, role: Role) -> Result<i64, TfoError> {
    let current = sysctls.read_int("net.ipv4.tcp_fastopen")?;
    if current & role.bit() == 0 {
        return Err(TfoError::Disabled {
            role,
            current,
            bit: role.bit(),
            suggested: current | role.bit(),
        });
    }
    Ok(current)
}

/// A connection opened with Fast Open.
#[derive(Debug)]
pub struct TfoStream {
    /// The connected socket.
    pub stream: TcpStream,
    /// Bytes of early data the kernel put in the SYN (0 when it had no
    /// cookie yet and sent a plain SYN asking for one).
    pub syn_bytes: usize,
    /// Whether the server acknowledged the SYN data, from `TCP_INFO`. When
    /// false the kernel resent the data after the handshake, costing the
    /// round trip Fast Open would have saved.
    pub syn_data_acked: bool,
}

/// Connects to `addr` sending `early` in the SYN when the kernel holds a
/// cookie for it; the first connection to a server only fetches the
/// cookie. All of `early` has been written when this returns.
pub async fn connect(addr: SocketAddr, early: Idempotent<&[u8]>) -> Result<TfoStream, TfoError> {
    connect_from(addr, None, early).await
}

/// [`connect`] from a chosen local address.
pub async fn connect_from(
    addr: SocketAddr,
    local: Option<SocketAddr>,
    early: Idempotent<&[u8]>,
) -> Result<TfoStream, TfoError> {
    let data = early.into_inner();
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(io_err("socket"))?;
    socket.set_nonblocking(true).map_err(io_err("O_NONBLOCK"))?;
    if let Some(local) = local {
        socket.bind(&local.into()).map_err(io_err("bind"))?;
    }
    let syn_bytes = send_syn(&socket, data, addr)?;
    let stream =
        TcpStream::from_std(std::net::TcpStream::from(socket)).map_err(io_err("register"))?;
    stream.writable().await.map_err(io_err("connect"))?;
    if let Some(e) = stream.take_error().map_err(io_err("connect"))? {
        return Err(TfoError::Io {
            what: "connect",
            source: e,
        });
    }
    let mut stream = stream;
    stream
        .write_all(&data[syn_bytes..])
        .await
        .map_err(io_err("write early data"))?;
    let syn_data_acked = TcpInfo::read(&stream)?.syn_data_acked();
    Ok(TfoStream {
        stream,
        syn_bytes,
        syn_data_acked,
    })
}

#[cfg(target_os = "linux")]
fn send_syn(socket: &socket2::Socket, data: &[u8], addr: SocketAddr) -> Result<usize, TfoError> {
    let sock = socket2::SockRef::from(socket);
    match sockopt::sys::sendto_fastopen(&sock, data, &addr.into()) {
        Ok(n) => Ok(n),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            // The kernel refuses MSG_FASTOPEN when the client bit is off.
            let current = Sysctls::system()
                .read_int("net.ipv4.tcp_fastopen")
                .unwrap_or(0);
            Err(TfoError::Disabled {
                role: Role::Client,
                current,
                bit: bits::CLIENT,
                suggested: current | bits::CLIENT,
            })
        }
        Err(source) => Err(TfoError::Io {
            what: "sendto(MSG_FASTOPEN)",
            source,
        }),
    }
}

#[cfg(not(target_os = "linux"))]
fn send_syn(_: &socket2::Socket, _: &[u8], _: SocketAddr) -> Result<usize, TfoError> {
    Err(TfoError::Unsupported {
        os: std::env::consts::OS,
    })
}

/// A listener on `addr` that accepts data in SYNs, with up to `queue_len`
/// such connections pending. Fails with [`TfoError::Disabled`] when the
/// sysctl would silently ignore the option.
pub fn listen(
    sysctls: &Sysctls,
    addr: SocketAddr,
    queue_len: u32,
) -> Result<TcpListener, TfoError> {
    check(sysctls, Role::Server)?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(io_err("socket"))?;
    socket
        .set_reuse_address(true)
        .map_err(io_err("SO_REUSEADDR"))?;
    socket.bind(&addr.into()).map_err(io_err("bind"))?;
    sockopt::set_fastopen_queue(&socket, queue_len)?;
    socket.listen(1024).map_err(io_err("listen"))?;
    socket.set_nonblocking(true).map_err(io_err("O_NONBLOCK"))?;
    TcpListener::from_std(socket.into()).map_err(io_err("register"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysctl::fixture;

    #[test]
    fn check_names_the_missing_bit_and_the_fix() {
        let root = fixture::tree("tfo", &[("net.ipv4.tcp_fastopen", "1")]);
        let s = Sysctls::at(&root);
        assert_eq!(check(&s, Role::Client).unwrap(), 1);
        let err = check(&s, Role::Server).unwrap_err();
        match &err {
            TfoError::Disabled {
                current,
                bit,
                suggested,
                ..
            } => assert_eq!((*current, *bit, *suggested), (1, 2, 3)),
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            err.to_string()
                .contains("sysctl -w net.ipv4.tcp_fastopen=3")
        );
        s.write("net.ipv4.tcp_fastopen", "0").unwrap();
        assert!(matches!(
            check(&s, Role::Client),
            Err(TfoError::Disabled { suggested: 1, .. })
        ));
        s.write("net.ipv4.tcp_fastopen", "1027").unwrap(); // 0x403
        assert!(check(&s, Role::Server).is_ok());
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn idempotent_wrapper_only_by_declaration() {
        let early = Idempotent::assume_replay_safe(b"GET /logo.jpg".as_slice());
        assert_eq!(*early.get(), b"GET /logo.jpg");
        assert_eq!(early.into_inner().len(), 13);
    }
}
