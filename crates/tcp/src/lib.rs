//! `brisk-tcp`: the seeds' recipes for applications that stay on kernel TCP.
//!
//! Layer: beside the transport. Brisk's own protocol runs over UDP; this
//! crate makes the kernel's TCP as responsive as it can be made, for servers
//! and apps that keep it. Pure logic is sans-IO and tested without sockets;
//! the socket code is Linux-first and reports "unsupported" elsewhere.
//!
//! Sending without stale data (WWDC 2015, H2O):
//! - [`lowat`]: `TCP_NOTSENT_LOWAT` and [`lowat::LowatWriter`], which pulls
//!   one freshly generated unit per writable event.
//! - [`write_sizing`]: H2O's write size from the congestion window (pure).
//! - [`tcp_info`]: `struct tcp_info` parsed from its bytes.
//!
//! Setting up connections (WWDC 2015, OK.ru):
//! - [`fastopen`]: TCP Fast Open client and listener; early data only as
//!   [`fastopen::Idempotent`].
//! - [`happy_eyeballs`]: RFC 8305 racing across families and local paths
//!   (Wi-Fi then cellular), as a state machine in virtual time.
//! - [`connect`]: its tokio driver.
//! - [`nat64`]: prefix discovery (RFC 7050) and synthesis for IPv4
//!   literals on IPv6-only networks (RFC 6052 via `brisk_wire`).
//! - [`resolve`], [`dns`]: per-family lookups; a minimal UDP DNS client.
//!
//! Tuning (OK.ru) and diagnosis:
//! - [`tuning`]: congestion control per socket, buffers sized to the
//!   bandwidth-delay product, ECN.
//! - [`doctor`]: sysctls that cost latency, with what to change and why.
//! - [`sysctl`], [`sockopt`]: the kernel interfaces, with errors that say
//!   what was refused and how to fix it.
//!
//! A small request/response protocol for experiments:
//! - [`app`]: `GET /size?bytes=N&prio=P` requests and framed responses.
//! - [`server`], [`client`]: the H2O experiment (a small high-priority
//!   response queued behind a large one) with each option on or off.

// System calls live in the few modules that allow `unsafe` below.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod app;
pub mod client;
pub mod connect;
pub mod dns;
pub mod doctor;
pub mod fastopen;
pub mod happy_eyeballs;
pub mod lowat;
pub mod nat64;
pub mod resolve;
pub mod server;
pub mod sockopt;
pub mod sysctl;
pub mod tcp_info;
pub mod tuning;
pub mod write_sizing;

pub use happy_eyeballs::HappyEyeballs;
pub use lowat::{LowatWriter, UnitSource, WriterConfig};
pub use sockopt::{AsSocket, SockoptError};
pub use sysctl::Sysctls;
pub use tcp_info::TcpInfo;
pub use write_sizing::{WriteSize, WriteSizingConfig};
