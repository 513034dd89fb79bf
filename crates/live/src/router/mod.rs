//! The user-space router between the two namespaces.
//!
//! [`core`] is the sans-IO part: the simulator's two [`brisk_netmodel::Link`]s,
//! forwarding rules, per-flow accounting ([`flows`]) and delivery
//! accuracy ([`fidelity`]), the lab's DNS [`resolver`], and the IPv6-only
//! mode's NAT64 gateway ([`nat64`]), and an optional NAT [`rebind`]ing of
//! the client's port. [`event_loop`] drives it in real time from the TUN devices.

pub mod core;
pub mod event_loop;
pub mod fidelity;
pub mod flows;
pub mod nat64;
pub mod rebind;
pub mod resolver;

pub use self::core::{RouterCore, Side, Transmit};
pub use event_loop::{LoopConfig, LoopStats, RouterOutcome};
pub use rebind::Rebind;
