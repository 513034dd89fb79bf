//! An IPv4 literal on the IPv6-only network (WWDC 2015, RFC 6052, RFC
//! 7050): in the lab's IPv6-only mode the client has no IPv4 address or
//! route and the server has only IPv4, joined by the router's NAT64 and
//! DNS64. An app handed the server's IPv4 literal cannot reach it as
//! such; with synthesis it discovers the NAT64 prefix (`ipv4only.arpa`
//! through the lab's DNS64), embeds the literal and connects.

use super::{RecipeError, block_on_in, ms, server_bind, start_server};
use crate::lab::Lab;
use crate::router::resolver::RESOLVER_V6;
use crate::topology::IpMode;
use brisk_tcp::client::{self, GetConfig};
use brisk_tcp::connect::{ConnectOptions, Nat64Policy};
use brisk_tcp::resolve::Resolver;
use brisk_tcp::server::ServeConfig;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The DNS port of the lab's resolver.
const DNS_PORT: u16 = 53;

/// What one fetch by literal measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nat64Outcome {
    pub synthesis: bool,
    /// The IPv4 literal the app was handed.
    pub literal: IpAddr,
    pub connected: bool,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Until the response's first byte, or until the failure.
    pub elapsed_ms: f64,
    /// Handshake done, from the start (prefix discovery included).
    pub connect_ms: Option<f64>,
    /// The address actually dialed (the synthesized IPv6 one).
    pub dialed: Option<SocketAddr>,
    pub dialed_synthesized: bool,
}

/// Fetches a small response from the server's IPv4 literal, with NAT64
/// synthesis on (`Auto`: discover when there is no IPv4 route) or off.
pub fn run(lab: &Lab, synthesis: bool) -> Result<Nat64Outcome, RecipeError> {
    if lab.addressing().mode != IpMode::V6Only {
        return Err(RecipeError::failed(
            "NAT64",
            "the lab must be IPv6-only (IP mode v6only)",
        ));
    }
    let bind = server_bind(lab);
    let _server = start_server(lab, ServeConfig::new(bind))?;
    let literal = bind.ip();
    let get = GetConfig {
        large_bytes: 1024,
        small_bytes: None,
        small_delay: Duration::ZERO,
        fastopen: false,
        connect: ConnectOptions {
            nat64: if synthesis {
                Nat64Policy::Auto
            } else {
                Nat64Policy::Off
            },
            resolver: Resolver::Server(SocketAddr::new(RESOLVER_V6.into(), DNS_PORT)),
            attempt_timeout: Duration::from_secs(3),
            ..ConnectOptions::default()
        },
        timeout: Duration::from_secs(10),
    };
    let host = literal.to_string();
    let (elapsed, result) = block_on_in(lab.client_ns(), || async {
        let t = Instant::now();
        let r = client::get(&host, bind.port(), &get).await;
        (t.elapsed(), r)
    })?;
    Ok(match result {
        Ok(r) => Nat64Outcome {
            synthesis,
            literal,
            connected: true,
            error: None,
            elapsed_ms: r.first_byte_ms,
            connect_ms: Some(r.connect_ms),
            dialed: Some(r.peer),
            dialed_synthesized: r
                .attempts
                .iter()
                .any(|a| a.candidate.addr == r.peer && a.candidate.synthesized),
        },
        Err(e) => Nat64Outcome {
            synthesis,
            literal,
            connected: false,
            error: Some(e.to_string()),
            elapsed_ms: ms(elapsed),
            connect_ms: None,
            dialed: None,
            dialed_synthesized: false,
        },
    })
}
