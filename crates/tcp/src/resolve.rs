//! Per-family name resolution, so Happy Eyeballs sees the AAAA and A
//! answers as they arrive rather than both at once.

#![allow(unsafe_code)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::dns::{self, QType};
use crate::happy_eyeballs::Family;

/// Where names are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// The system resolver (`getaddrinfo`), with its DNS64 if any.
    System,
    /// One DNS server over UDP.
    Server(SocketAddr),
}

/// `host`'s addresses of one family. An empty list means "no records".
pub async fn lookup(resolver: Resolver, host: &str, family: Family) -> io::Result<Vec<IpAddr>> {
    match resolver {
        Resolver::System => {
            let host = host.to_string();
            tokio::task::spawn_blocking(move || getaddrinfo(&host, family))
                .await
                .map_err(io::Error::other)?
        }
        Resolver::Server(server) => {
            let qtype = match family {
                Family::V4 => QType::A,
                Family::V6 => QType::Aaaa,
            };
            match dns::query(server, host, qtype, Duration::from_secs(2)).await {
                Ok(addrs) => Ok(addrs),
                Err(dns::DnsError::Rcode(3)) => Ok(Vec::new()),
                Err(e) => Err(io::Error::other(e)),
            }
        }
    }
}

/// glibc's "the host has no address of the requested family".
#[cfg(target_os = "linux")]
const EAI_ADDRFAMILY: libc::c_int = -9;

/// `getaddrinfo` restricted to one family; "no such name" or "no address
/// of this family" give an empty list.
#[cfg(unix)]
fn getaddrinfo(host: &str, family: Family) -> io::Result<Vec<IpAddr>> {
    use std::ffi::CString;

    let c_host = CString::new(host)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "host name contains NUL"))?;
    // SAFETY: an all-zero addrinfo is the documented "no hints" value.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = match family {
        Family::V4 => libc::AF_INET,
        Family::V6 => libc::AF_INET6,
    };
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut res: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: valid NUL-terminated host, hints and out-pointer; the list is
    // freed below.
    let rc = unsafe { libc::getaddrinfo(c_host.as_ptr(), std::ptr::null(), &hints, &mut res) };
    if rc != 0 {
        return match rc {
            libc::EAI_NONAME => Ok(Vec::new()),
            #[cfg(target_os = "linux")]
            libc::EAI_NODATA | EAI_ADDRFAMILY => Ok(Vec::new()),
            _ => Err(io::Error::other(format!(
                "getaddrinfo({host}) failed with code {rc}"
            ))),
        };
    }
    let mut out = Vec::new();
    let mut cur = res;
    while !cur.is_null() {
        // SAFETY: `cur` walks the list getaddrinfo returned; ai_addr points
        // at a sockaddr of the family ai_family names.
        let ai = unsafe { &*cur };
        let ip = match ai.ai_family {
            libc::AF_INET if !ai.ai_addr.is_null() => {
                let sin = unsafe { &*ai.ai_addr.cast::<libc::sockaddr_in>() };
                Some(IpAddr::from(
                    u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                ))
            }
            libc::AF_INET6 if !ai.ai_addr.is_null() => {
                let sin6 = unsafe { &*ai.ai_addr.cast::<libc::sockaddr_in6>() };
                Some(IpAddr::from(sin6.sin6_addr.s6_addr))
            }
            _ => None,
        };
        if let Some(ip) = ip.filter(|ip| !out.contains(ip)) {
            out.push(ip);
        }
        cur = ai.ai_next;
    }
    // SAFETY: `res` came from getaddrinfo and is freed once.
    unsafe { libc::freeaddrinfo(res) };
    Ok(out)
}

#[cfg(not(unix))]
fn getaddrinfo(host: &str, family: Family) -> io::Result<Vec<IpAddr>> {
    use std::net::ToSocketAddrs;
    let mut out = Vec::new();
    for a in (host, 0).to_socket_addrs()? {
        let ok = match family {
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        };
        if ok && !out.contains(&a.ip()) {
            out.push(a.ip());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn localhost_resolves_per_family() {
        // Literal names resolve without any DNS traffic.
        let v4 = lookup(Resolver::System, "127.0.0.1", Family::V4)
            .await
            .unwrap();
        assert_eq!(v4, ["127.0.0.1".parse::<IpAddr>().unwrap()]);
        let v6 = lookup(Resolver::System, "::1", Family::V6).await.unwrap();
        assert_eq!(v6, ["::1".parse::<IpAddr>().unwrap()]);
        let none = lookup(Resolver::System, "127.0.0.1", Family::V6)
            .await
            .unwrap();
        assert!(none.is_empty());
    }
}
