//! TUN devices: the router's ends of the two namespaces. Each namespace
//! routes everything through its TUN device; the router holds the fd and
//! reads and writes bare IP datagrams.

use crate::error::LiveError;
use crate::netns::Netns;
use crate::sys;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Largest datagram a TUN read returns (the device MTU is 1500; this
/// leaves room for a larger MTU without truncating).
pub const MAX_DATAGRAM_BYTES: usize = 65_535;

/// An open TUN device living in some namespace.
#[derive(Debug)]
pub struct Tun {
    name: String,
    fd: OwnedFd,
}

impl Tun {
    /// Creates a TUN device named `name` inside `ns`. The device vanishes
    /// when this value is dropped (or when the namespace is deleted).
    pub fn create_in(ns: &Netns, name: &str) -> Result<Tun, LiveError> {
        let fd = ns
            .run(|| sys::open_tun(name))?
            .map_err(LiveError::io(format!(
                "create TUN {name} (is /dev/net/tun there?)"
            )))?;
        Ok(Tun {
            name: name.to_string(),
            fd,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one datagram into `buf`; `Ok(None)` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        sys::read_nonblocking(self.fd.as_fd(), buf)
    }

    /// Hands one datagram to the namespace's stack, as if received.
    pub fn send(&self, datagram: &[u8]) -> io::Result<()> {
        sys::write_datagram(self.fd.as_fd(), datagram)
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
