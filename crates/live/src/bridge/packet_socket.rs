//! AF_PACKET raw sockets: whole Ethernet frames read from and written to
//! one real interface, below the kernel's IP stack, as a bump in the wire
//! needs. Also the two interface features (receive coalescing, transmit
//! checksums) that decide whether the frames seen here are the frames on
//! the wire. Every `unsafe` block of the bridge lives here.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `ETH_P_ALL`: every protocol, in network byte order for `sll_protocol`.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();
/// `PACKET_IGNORE_OUTGOING` (Linux 4.20+): do not hand this socket the
/// frames sent on its interface (its own included).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `SIOCETHTOOL`: the ethtool ioctl.
const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// Legacy ethtool commands on one `struct ethtool_value`.
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;
const ETHTOOL_STXCSUM: u32 = 0x17;
/// Socket buffers: room for a few thousand full frames each way, so a
/// burst toward a shaped interface queues in its qdisc rather than
/// failing in the socket.
const SOCKET_BUFFER_BYTES: libc::c_int = 8 << 20;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn set_int(fd: BorrowedFd<'_>, level: i32, opt: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a live c_int whose size we pass.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// The index of interface `name` in the calling thread's namespace, or
/// `None` if there is no such interface.
pub fn interface_index(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (index != 0).then_some(index)
}

/// A raw packet socket bound to one interface, non-blocking, in
/// promiscuous mode (frames addressed to any station are read), blind to
/// the frames sent on the interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens a socket on the interface with index `ifindex`. Needs
    /// `CAP_NET_RAW` (`PermissionDenied` otherwise).
    pub fn open(ifindex: u32) -> io::Result<PacketSocket> {
        // Protocol 0 receives nothing until the bind below, so no frame of
        // another interface slips in first.
        // SAFETY: plain socket(2); the fd is owned right after.
        let raw = cvt(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        })?;
        // SAFETY: `raw` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let index = libc::c_int::try_from(ifindex)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface index"))?;
        // SAFETY: sockaddr_ll is plain data; zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as libc::c_ushort;
        addr.sll_protocol = ETH_P_ALL_BE;
        addr.sll_ifindex = index;
        // SAFETY: `addr` is a fully initialized sockaddr_ll of the size given.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        let mreq = libc::packet_mreq {
            mr_ifindex: index,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        // SAFETY: `mreq` is a live packet_mreq whose size we pass; the
        // membership ends when the socket closes.
        cvt(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                (&mreq as *const libc::packet_mreq).cast(),
                std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        })?;
        // Older kernels lack it; `recv` also skips outgoing frames.
        let _ = set_int(fd.as_fd(), libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
        // The forced sizes need CAP_NET_ADMIN; the plain ones are capped by
        // net.core.[rw]mem_max.
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            if set_int(fd.as_fd(), libc::SOL_SOCKET, force, SOCKET_BUFFER_BYTES).is_err() {
                let _ = set_int(fd.as_fd(), libc::SOL_SOCKET, plain, SOCKET_BUFFER_BYTES);
            }
        }
        Ok(PacketSocket { fd })
    }

    /// Reads one frame that arrived on the interface into `buf`; `Ok(None)`
    /// when none is waiting. The length is the frame's own even when `buf`
    /// was too small for it (the caller then sees more than it holds).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: sockaddr_ll is plain data; zero is a valid value.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` is valid for `buf.len()` bytes of writes and
            // `from` for `len` bytes.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }

    /// Sends one whole frame out of the interface (through its qdisc).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is valid for `frame.len()` bytes of reads.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An interface feature that changes which frames a packet socket sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Generic receive offload: the kernel merges received TCP segments
    /// into one frame of up to 64 KB before a packet socket sees them.
    ReceiveCoalescing,
    /// Transmit checksum offload: a host's own frames leave with the TCP
    /// checksum left for the card (on a veth, for nobody), and with it
    /// segmentation offload, which sends 64 KB frames to a veth peer.
    TransmitChecksums,
}

/// `struct ifreq` as SIOCETHTOOL reads it: a name, then a pointer.
#[repr(C)]
struct IfReqData {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

fn ethtool(name: &str, cmd: u32, data: u32) -> io::Result<u32> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    // SAFETY: plain socket(2); the fd is owned right after.
    let raw =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` was just opened and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReqData {
        name: [0; libc::IFNAMSIZ],
        data: (&mut value as *mut EthtoolValue).cast(),
        _pad: [0; 16],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: SIOCETHTOOL reads an ifreq whose data points at a live
    // ethtool_value, which it reads and writes; both outlive the call.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req as *mut IfReqData) })?;
    Ok(value.data)
}

/// Turns `feature` on or off for interface `name` in the calling
/// thread's namespace (needs `CAP_NET_ADMIN`). Returns whether it was on
/// before, where the kernel can say (receive coalescing), else `None`.
pub fn set_feature(name: &str, feature: Feature, on: bool) -> io::Result<Option<bool>> {
    match feature {
        Feature::ReceiveCoalescing => {
            let was = ethtool(name, ETHTOOL_GGRO, 0)? != 0;
            if was != on {
                ethtool(name, ETHTOOL_SGRO, u32::from(on))?;
            }
            Ok(Some(was))
        }
        Feature::TransmitChecksums => {
            ethtool(name, ETHTOOL_STXCSUM, u32::from(on))?;
            Ok(None)
        }
    }
}

/// `struct ifreq` for the interface queries: a name, then the union the
/// answer is written to.
#[repr(C)]
struct IfReqAnswer {
    name: [u8; libc::IFNAMSIZ],
    answer: [u8; 24],
}

/// Whether interface `name` (in the calling thread's namespace) is up,
/// and its MTU in bytes. Asked through a socket, which lives in this
/// thread's namespace, unlike /sys, which shows the namespace it was
/// mounted in.
pub fn interface_state(name: &str) -> io::Result<(bool, u32)> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    // SAFETY: plain socket(2); the fd is owned right after.
    let raw =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` was just opened and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let ask = |request: libc::c_ulong| -> io::Result<[u8; 24]> {
        let mut req = IfReqAnswer {
            name: [0; libc::IFNAMSIZ],
            answer: [0; 24],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: both requests read the name and write at most the
        // 24-byte union of a `struct ifreq`, which IfReqAnswer lays out.
        cvt(unsafe { libc::ioctl(sock.as_raw_fd(), request, &mut req as *mut IfReqAnswer) })?;
        Ok(req.answer)
    };
    let flags = ask(libc::SIOCGIFFLAGS)?;
    let mtu = ask(libc::SIOCGIFMTU)?;
    let up = i16::from_ne_bytes([flags[0], flags[1]]) & libc::IFF_UP as i16 != 0;
    let mtu = i32::from_ne_bytes([mtu[0], mtu[1], mtu[2], mtu[3]]);
    Ok((up, u32::try_from(mtu).unwrap_or(0)))
}
