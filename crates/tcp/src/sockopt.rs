//! Socket options, with errors that say what the kernel refused and why.
//!
//! Every helper takes anything that owns a socket (tokio, std and socket2
//! streams and listeners) through [`AsSocket`]. On Linux they issue the
//! real `setsockopt`/`getsockopt`; elsewhere they return
//! [`SockoptError::Unsupported`] so callers can report it instead of
//! silently running without the option.

#![allow(unsafe_code)]

use std::io;

/// Anything that owns a socket descriptor.
#[cfg(unix)]
pub trait AsSocket: std::os::fd::AsFd {}
#[cfg(unix)]
impl<T: std::os::fd::AsFd> AsSocket for T {}

/// Anything that owns a socket handle.
#[cfg(windows)]
pub trait AsSocket: std::os::windows::io::AsSocket {}
#[cfg(windows)]
impl<T: std::os::windows::io::AsSocket> AsSocket for T {}

/// Why a socket option could not be set or read.
#[derive(Debug, thiserror::Error)]
pub enum SockoptError {
    #[error("{option} is not supported on {os}: brisk-tcp drives it on Linux only")]
    /// The option is not driven on this OS.
    Unsupported {
        /// The option's kernel name, such as `TCP_NOTSENT_LOWAT`.
        option: &'static str,
        /// The OS this was built for (`std::env::consts::OS`).
        os: &'static str,
    },
    #[error("the kernel refused {option} ({errno}): {hint}")]
    /// The kernel returned an error for the option.
    Refused {
        /// The option's kernel name, such as `TCP_CONGESTION`.
        option: &'static str,
        /// The errno's symbolic name, such as `EPERM`.
        errno: &'static str,
        /// What to do about it.
        hint: String,
        #[source]
        /// The OS error.
        source: io::Error,
    },
}

impl SockoptError {
    /// The raw errno, when the kernel refused.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            SockoptError::Unsupported { .. } => None,
            SockoptError::Refused { source, .. } => source.raw_os_error(),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn unsupported(option: &'static str) -> Self {
        SockoptError::Unsupported {
            option,
            os: std::env::consts::OS,
        }
    }

    /// Wraps an OS error with a hint; `context` is the value that was being
    /// set (an algorithm or interface name, a byte count).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn refused(option: &'static str, source: io::Error, context: &str) -> Self {
        let code = source.raw_os_error().unwrap_or(0);
        SockoptError::Refused {
            option,
            errno: errno_name(code),
            hint: hint(option, code, context),
            source,
        }
    }
}

impl From<SockoptError> for io::Error {
    fn from(e: SockoptError) -> io::Error {
        let kind = match &e {
            SockoptError::Unsupported { .. } => io::ErrorKind::Unsupported,
            SockoptError::Refused { source, .. } => source.kind(),
        };
        io::Error::new(kind, e)
    }
}

/// The symbolic name of the errnos these options can return.
#[cfg(unix)]
fn errno_name(code: i32) -> &'static str {
    match code {
        libc::ENOPROTOOPT => "ENOPROTOOPT",
        libc::ENOENT => "ENOENT",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EINVAL => "EINVAL",
        libc::ENODEV => "ENODEV",
        libc::ENOTCONN => "ENOTCONN",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EBADF => "EBADF",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EBUSY => "EBUSY",
        _ => "other errno",
    }
}

#[cfg(not(unix))]
fn errno_name(_code: i32) -> &'static str {
    "os error"
}

/// The Linux release that introduced an option, for ENOPROTOOPT messages.
fn introduced_in(option: &str) -> &'static str {
    match option {
        "TCP_NOTSENT_LOWAT" => " (added in Linux 3.12)",
        "TCP_FASTOPEN" => " (server side added in Linux 3.7)",
        "TCP_FASTOPEN_CONNECT" => " (added in Linux 4.11)",
        "TCP_CONGESTION" => " (added in Linux 2.6.13)",
        _ => "",
    }
}

/// What to do when `option` fails with `code`.
#[cfg(unix)]
fn hint(option: &str, code: i32, context: &str) -> String {
    match (option, code) {
        (_, libc::ENOPROTOOPT) => format!(
            "this kernel does not implement {option}{}",
            introduced_in(option)
        ),
        ("TCP_CONGESTION", libc::ENOENT) => format!(
            "no congestion control named {context:?} is loaded; pick one listed in \
             /proc/sys/net/ipv4/tcp_available_congestion_control or load the module \
             (`modprobe tcp_{context}`)"
        ),
        ("TCP_CONGESTION", libc::EPERM) => format!(
            "without CAP_NET_ADMIN a process may only pick algorithms listed in \
             net.ipv4.tcp_allowed_congestion_control; add {context:?} there \
             (`sysctl -w net.ipv4.tcp_allowed_congestion_control=\"... {context}\"`) \
             or run with CAP_NET_ADMIN"
        ),
        ("SO_BINDTODEVICE", libc::ENODEV) => format!("there is no interface named {context:?}"),
        ("SO_BINDTODEVICE", libc::EPERM) => {
            "binding to an interface needs CAP_NET_RAW on kernels before 5.7".to_string()
        }
        (_, libc::EPERM | libc::EACCES) => {
            "the process lacks the privilege to change this option".to_string()
        }
        (_, libc::EINVAL) => format!("{context} is not a valid value for {option}"),
        (_, libc::ENOTCONN) => "the socket is not connected".to_string(),
        (_, libc::EBADF | libc::ENOTSOCK) => "the descriptor is not an open socket".to_string(),
        _ => "unexpected error from the kernel".to_string(),
    }
}

#[cfg(not(unix))]
fn hint(option: &str, _code: i32, _context: &str) -> String {
    format!("{option} failed{}", introduced_in(option))
}

/// Sets `TCP_NOTSENT_LOWAT`: the socket reports writable only while fewer
/// than `bytes` sit unsent in the kernel. 0 restores the sysctl default.
pub fn set_notsent_lowat<S: AsSocket>(sock: &S, bytes: u32) -> Result<(), SockoptError> {
    sys::set_notsent_lowat(socket2::SockRef::from(sock), bytes)
}

/// Reads `TCP_NOTSENT_LOWAT` back.
pub fn notsent_lowat<S: AsSocket>(sock: &S) -> Result<u32, SockoptError> {
    sys::notsent_lowat(socket2::SockRef::from(sock))
}

/// Sets the congestion control algorithm of one socket (`TCP_CONGESTION`).
pub fn set_congestion<S: AsSocket>(sock: &S, name: &str) -> Result<(), SockoptError> {
    sys::set_congestion(socket2::SockRef::from(sock), name)
}

/// The congestion control algorithm a socket uses.
pub fn congestion<S: AsSocket>(sock: &S) -> Result<String, SockoptError> {
    sys::congestion(socket2::SockRef::from(sock))
}

/// Sets `SO_SNDBUF`. Linux stores twice the value (the other half pays
/// for its bookkeeping), caps the request at `net.core.wmem_max` and stops
/// autotuning this socket's send buffer.
pub fn set_send_buffer<S: AsSocket>(sock: &S, bytes: usize) -> Result<(), SockoptError> {
    let sock = socket2::SockRef::from(sock);
    sock.set_send_buffer_size(bytes)
        .map_err(|e| SockoptError::refused("SO_SNDBUF", e, &bytes.to_string()))
}

/// The send buffer as the kernel reports it (already doubled on Linux).
pub fn send_buffer<S: AsSocket>(sock: &S) -> Result<usize, SockoptError> {
    let sock = socket2::SockRef::from(sock);
    sock.send_buffer_size()
        .map_err(|e| SockoptError::refused("SO_SNDBUF", e, ""))
}

/// Sets `SO_RCVBUF`; as [`set_send_buffer`], doubled, capped at
/// `net.core.rmem_max`, and autotuning is off for this socket. Set it
/// before `connect`/`listen` so the window scale is chosen to match.
pub fn set_recv_buffer<S: AsSocket>(sock: &S, bytes: usize) -> Result<(), SockoptError> {
    let sock = socket2::SockRef::from(sock);
    sock.set_recv_buffer_size(bytes)
        .map_err(|e| SockoptError::refused("SO_RCVBUF", e, &bytes.to_string()))
}

/// The receive buffer as the kernel reports it (already doubled on Linux).
pub fn recv_buffer<S: AsSocket>(sock: &S) -> Result<usize, SockoptError> {
    let sock = socket2::SockRef::from(sock);
    sock.recv_buffer_size()
        .map_err(|e| SockoptError::refused("SO_RCVBUF", e, ""))
}

/// Enables TCP Fast Open on a listener: up to `queue_len` connections may
/// be pending with data received in their SYN.
pub fn set_fastopen_queue<S: AsSocket>(sock: &S, queue_len: u32) -> Result<(), SockoptError> {
    sys::set_fastopen_queue(socket2::SockRef::from(sock), queue_len)
}

/// Pins a socket to one interface (`SO_BINDTODEVICE`), e.g. Wi-Fi or
/// cellular, before it connects.
pub fn bind_device<S: AsSocket>(sock: &S, interface: &str) -> Result<(), SockoptError> {
    sys::bind_device(socket2::SockRef::from(sock), interface)
}

/// Raw `TCP_INFO` bytes into `buf`; returns how many the kernel filled.
pub(crate) fn tcp_info_bytes<S: AsSocket>(sock: &S, buf: &mut [u8]) -> Result<usize, SockoptError> {
    sys::tcp_info_bytes(socket2::SockRef::from(sock), buf)
}

/// Whether the kernel would report the socket writable right now, which
/// with `TCP_NOTSENT_LOWAT` means unsent bytes are below the mark.
pub(crate) fn kernel_writable_now<S: AsSocket>(sock: &S) -> io::Result<bool> {
    sys::kernel_writable_now(socket2::SockRef::from(sock))
}

#[cfg(target_os = "linux")]
pub(crate) mod sys {
    use super::SockoptError;
    use socket2::SockRef;
    use std::io;
    use std::os::fd::AsRawFd;

    fn setsockopt_int(
        sock: &SockRef<'_>,
        level: libc::c_int,
        name: libc::c_int,
        value: libc::c_int,
    ) -> io::Result<()> {
        // SAFETY: the descriptor is borrowed for the call and the value is a
        // live c_int whose size is passed alongside.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                level,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub(crate) fn set_notsent_lowat(sock: SockRef<'_>, bytes: u32) -> Result<(), SockoptError> {
        sock.set_tcp_notsent_lowat(bytes)
            .map_err(|e| SockoptError::refused("TCP_NOTSENT_LOWAT", e, &bytes.to_string()))
    }

    pub(crate) fn notsent_lowat(sock: SockRef<'_>) -> Result<u32, SockoptError> {
        sock.tcp_notsent_lowat()
            .map_err(|e| SockoptError::refused("TCP_NOTSENT_LOWAT", e, ""))
    }

    pub(crate) fn set_congestion(sock: SockRef<'_>, name: &str) -> Result<(), SockoptError> {
        sock.set_tcp_congestion(name.as_bytes())
            .map_err(|e| SockoptError::refused("TCP_CONGESTION", e, name))
    }

    pub(crate) fn congestion(sock: SockRef<'_>) -> Result<String, SockoptError> {
        let raw = sock
            .tcp_congestion()
            .map_err(|e| SockoptError::refused("TCP_CONGESTION", e, ""))?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
    }

    pub(crate) fn set_fastopen_queue(
        sock: SockRef<'_>,
        queue_len: u32,
    ) -> Result<(), SockoptError> {
        let value = libc::c_int::try_from(queue_len).unwrap_or(libc::c_int::MAX);
        setsockopt_int(&sock, libc::IPPROTO_TCP, libc::TCP_FASTOPEN, value)
            .map_err(|e| SockoptError::refused("TCP_FASTOPEN", e, &queue_len.to_string()))
    }

    pub(crate) fn bind_device(sock: SockRef<'_>, interface: &str) -> Result<(), SockoptError> {
        sock.bind_device(Some(interface.as_bytes()))
            .map_err(|e| SockoptError::refused("SO_BINDTODEVICE", e, interface))
    }

    pub(crate) fn tcp_info_bytes(sock: SockRef<'_>, buf: &mut [u8]) -> Result<usize, SockoptError> {
        let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(libc::socklen_t::MAX);
        // SAFETY: the kernel writes at most `len` bytes into `buf`, which is
        // valid for that many bytes, and updates `len` to what it wrote.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc == 0 {
            Ok((len as usize).min(buf.len()))
        } else {
            Err(SockoptError::refused(
                "TCP_INFO",
                io::Error::last_os_error(),
                "",
            ))
        }
    }

    pub(crate) fn kernel_writable_now(sock: SockRef<'_>) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout: poll only reads the
        // socket's current state.
        let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // An error or hang-up counts as writable so the write reports it.
        Ok(pfd.revents & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0)
    }

    /// `sendto(MSG_FASTOPEN)` on an unconnected, non-blocking socket: the
    /// SYN carries `data` when a cookie is cached. Returns the bytes queued
    /// with the SYN; `Ok(0)` when the kernel sent a plain SYN (no cookie yet,
    /// or Fast Open disabled) and the data must be written after connecting.
    pub(crate) fn sendto_fastopen(
        sock: &SockRef<'_>,
        data: &[u8],
        addr: &socket2::SockAddr,
    ) -> io::Result<usize> {
        // SAFETY: `data` and `addr` are valid for the lengths passed.
        let rc = unsafe {
            libc::sendto(
                sock.as_raw_fd(),
                data.as_ptr().cast(),
                data.len(),
                libc::MSG_FASTOPEN | libc::MSG_NOSIGNAL,
                addr.as_ptr().cast(),
                addr.len(),
            )
        };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINPROGRESS) => Ok(0),
            _ => Err(err),
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) mod sys {
    use super::SockoptError;
    use socket2::SockRef;
    use std::io;

    pub(crate) fn set_notsent_lowat(_: SockRef<'_>, _: u32) -> Result<(), SockoptError> {
        Err(SockoptError::unsupported("TCP_NOTSENT_LOWAT"))
    }

    pub(crate) fn notsent_lowat(_: SockRef<'_>) -> Result<u32, SockoptError> {
        Err(SockoptError::unsupported("TCP_NOTSENT_LOWAT"))
    }

    pub(crate) fn set_congestion(_: SockRef<'_>, _: &str) -> Result<(), SockoptError> {
        Err(SockoptError::unsupported("TCP_CONGESTION"))
    }

    pub(crate) fn congestion(_: SockRef<'_>) -> Result<String, SockoptError> {
        Err(SockoptError::unsupported("TCP_CONGESTION"))
    }

    pub(crate) fn set_fastopen_queue(_: SockRef<'_>, _: u32) -> Result<(), SockoptError> {
        Err(SockoptError::unsupported("TCP_FASTOPEN"))
    }

    pub(crate) fn bind_device(_: SockRef<'_>, _: &str) -> Result<(), SockoptError> {
        Err(SockoptError::unsupported("SO_BINDTODEVICE"))
    }

    pub(crate) fn tcp_info_bytes(_: SockRef<'_>, _: &mut [u8]) -> Result<usize, SockoptError> {
        Err(SockoptError::unsupported("TCP_INFO"))
    }

    pub(crate) fn kernel_writable_now(_: SockRef<'_>) -> io::Result<bool> {
        Ok(true)
    }
}
