//! Helpers for the real-socket tests: skipping with a reason, and running
//! a closure inside a private network namespace where sysctls can be set
//! without touching the host.

#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Both loopback addresses, for tests that cover IPv4 and IPv6.
pub fn loopbacks() -> [IpAddr; 2] {
    [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ]
}

/// Whether `ip` can be bound here (IPv6 may be disabled).
pub fn can_bind(ip: IpAddr) -> bool {
    std::net::TcpListener::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Prints why a test did not run; the caller returns right after.
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIP {test}: {why}");
}

/// Runs `f` on a thread moved into a fresh network namespace with `lo`
/// up. Sockets and `/proc/sys/net` seen from that thread belong to the
/// namespace, so sysctls can be changed without touching the host. Returns
/// `Err(reason)` where namespaces are not available (not Linux, no
/// CAP_SYS_ADMIN); a panic inside is re-raised.
pub fn in_private_netns<R: Send>(f: impl FnOnce() -> R + Send) -> Result<R, String> {
    #[cfg(target_os = "linux")]
    {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // SAFETY: unshare only changes this thread's namespace.
                    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                        return Err(format!(
                            "cannot create a network namespace ({}); needs CAP_SYS_ADMIN",
                            std::io::Error::last_os_error()
                        ));
                    }
                    set_up("lo")?;
                    Ok(f())
                })
                .join()
                // A failed assertion inside must fail the test, not skip it.
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = f;
        Err("network namespaces are Linux-only".into())
    }
}

/// Brings an interface up (`ip link set NAME up`) with two ioctls.
#[cfg(target_os = "linux")]
fn set_up(name: &str) -> Result<(), String> {
    // SAFETY: a throw-away datagram socket and a zeroed ifreq whose name
    // fits (checked); the ioctls read and write only that struct.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err("socket for ioctl".into());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        if name.len() >= ifr.ifr_name.len() {
            libc::close(fd);
            return Err("interface name too long".into());
        }
        for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        let ok = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) == 0 && {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) == 0
        };
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if ok {
            Ok(())
        } else {
            Err(format!("cannot bring {name} up: {err}"))
        }
    }
}

/// Runs `ip ARGS` from the current thread (and so in its namespace).
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("`ip` is not available: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A single-threaded tokio runtime for the current thread.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}
