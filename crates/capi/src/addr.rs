//! Socket addresses as a plain C struct, so the caller converts to and from
//! its own `sockaddr_in` / `sockaddr_in6` without the library depending on
//! any platform's socket headers.

use std::ffi::{CStr, c_char};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::status::{BriskStatus, fail, guard};

/// An IPv4 or IPv6 address and UDP port.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BriskAddr {
    /// 4 or 6.
    pub family: u8,
    /// The UDP port, in host byte order.
    pub port: u16,
    /// The address in network byte order: the first 4 bytes for IPv4, all
    /// 16 for IPv6.
    pub ip: [u8; 16],
}

impl BriskAddr {
    /// The Rust form, or why the struct is not an address.
    pub(crate) fn to_socket_addr(self) -> Result<SocketAddr, String> {
        let ip = match self.family {
            4 => IpAddr::V4(Ipv4Addr::new(
                self.ip[0], self.ip[1], self.ip[2], self.ip[3],
            )),
            6 => IpAddr::V6(Ipv6Addr::from(self.ip)),
            other => return Err(format!("address family {other} is neither 4 nor 6")),
        };
        Ok(SocketAddr::new(ip, self.port))
    }

    /// The C form of `addr`.
    pub(crate) fn from_socket_addr(addr: SocketAddr) -> Self {
        let mut ip = [0u8; 16];
        let family = match addr.ip() {
            IpAddr::V4(v4) => {
                ip[..4].copy_from_slice(&v4.octets());
                4
            }
            IpAddr::V6(v6) => {
                ip = v6.octets();
                6
            }
        };
        BriskAddr {
            family,
            port: addr.port(),
            ip,
        }
    }
}

/// Parses `text` ("192.0.2.1:4433" or "[2001:db8::1]:4433") into `*out`.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_addr_parse(text: *const c_char, out: *mut BriskAddr) -> BriskStatus {
    guard(|| {
        if text.is_null() || out.is_null() {
            return fail(
                BriskStatus::NullArgument,
                "brisk_addr_parse: text and out must not be NULL",
            );
        }
        // SAFETY: the caller promises a NUL-terminated string.
        let text = unsafe { CStr::from_ptr(text) };
        let Ok(text) = text.to_str() else {
            return fail(BriskStatus::InvalidArgument, "address is not UTF-8");
        };
        match text.parse::<SocketAddr>() {
            Ok(addr) => {
                // SAFETY: checked non-NULL; the caller promises it is writable.
                unsafe { out.write(BriskAddr::from_socket_addr(addr)) };
                BriskStatus::Ok
            }
            Err(e) => fail(
                BriskStatus::InvalidArgument,
                format!(
                    "{text:?} is not an address and port such as 192.0.2.1:4433 or [2001:db8::1]:4433: {e}"
                ),
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_families_round_trip() {
        for text in ["192.0.2.1:4433", "[2001:db8::1]:65535"] {
            let addr: SocketAddr = text.parse().expect("test address");
            let c = BriskAddr::from_socket_addr(addr);
            assert_eq!(c.to_socket_addr(), Ok(addr));
        }
    }

    #[test]
    fn an_unknown_family_is_an_error() {
        let bad = BriskAddr {
            family: 5,
            port: 1,
            ip: [0; 16],
        };
        assert_eq!(
            bad.to_socket_addr(),
            Err("address family 5 is neither 4 nor 6".to_string())
        );
    }

    #[test]
    fn parse_names_what_it_wanted() {
        let mut out = BriskAddr {
            family: 0,
            port: 0,
            ip: [0; 16],
        };
        // SAFETY: both pointers are valid.
        let ok = unsafe { brisk_addr_parse(c"[::1]:9".as_ptr(), &mut out) };
        assert_eq!(ok, BriskStatus::Ok);
        assert_eq!((out.family, out.port, out.ip[15]), (6, 9, 1));
        // SAFETY: both pointers are valid.
        let bad = unsafe { brisk_addr_parse(c"localhost".as_ptr(), &mut out) };
        assert_eq!(bad, BriskStatus::InvalidArgument);
        // SAFETY: NULL is allowed and reported.
        let null = unsafe { brisk_addr_parse(std::ptr::null(), &mut out) };
        assert_eq!(null, BriskStatus::NullArgument);
    }
}
