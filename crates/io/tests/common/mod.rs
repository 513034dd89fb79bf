//! Helpers shared by the loopback tests.

#![allow(dead_code)]

use brisk_io::{Endpoint, EndpointConfig, Keypair, ServerConfig};
use std::net::SocketAddr;
use std::time::Duration;

/// Loopback of each family, port chosen by the kernel.
pub fn loopback(v6: bool) -> SocketAddr {
    if v6 {
        "[::1]:0".parse().unwrap()
    } else {
        "127.0.0.1:0".parse().unwrap()
    }
}

/// A keypair from a fixed secret, so runs are repeatable.
pub fn keypair(n: u8) -> Keypair {
    Keypair::from_private([n; 32])
}

pub fn server_on(addr: SocketAddr, n: u8, config: EndpointConfig) -> Endpoint {
    let mut c = ServerConfig::new(addr, keypair(n));
    c.endpoint = config;
    Endpoint::server(c).unwrap()
}

/// Environment variable: a busy-poll limit in microseconds for every
/// endpoint the helpers make, to run the whole suite with it on.
pub const BUSY_POLL_ENV: &str = "BRISK_IO_TEST_BUSY_POLL_US";

/// The default configuration, with the busy-poll limit of
/// [`BUSY_POLL_ENV`] if it is set.
pub fn config() -> EndpointConfig {
    let mut c = EndpointConfig::default();
    if let Some(us) = std::env::var(BUSY_POLL_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.busy_poll = Duration::from_micros(us);
    }
    c
}

pub fn server(v6: bool) -> Endpoint {
    server_on(loopback(v6), 1, config())
}

/// Short timeouts so failure tests finish quickly.
pub fn quick_config() -> EndpointConfig {
    let mut c = EndpointConfig {
        handshake_timeout: Duration::from_millis(1500),
        ..config()
    };
    c.transport.max_idle_timeout = Duration::from_secs(2);
    c
}

pub fn client(v6: bool) -> Endpoint {
    Endpoint::client_with(loopback(v6), config()).unwrap()
}

/// A deterministic byte pattern of `len` bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
