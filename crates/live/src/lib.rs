//! Brisk's real-time lab: real programs (kernel TCP, curl, iperf3, Brisk
//! itself) in network namespaces, joined through a user-space router that
//! applies the simulator's own queue and link models to real IP packets.
//!
//! Layer: the edge. It owns the OS: namespaces, TUN devices, threads,
//! processes, the monotonic clock. The model it drives is the sans-IO
//! `brisk_netmodel::Bottleneck` the simulator drives, built from the same
//! network tables (`brisk_netmodel::Network`), with its result types, so
//! `brisk live` and `brisk sim` print the same JSON shape without this
//! crate depending on the simulator.
//!
//! Modules, from the bottom:
//! - [`sys`]: the few Linux calls (TUN ioctl, setns, ppoll, flock, ...);
//!   every `unsafe` block lives there.
//! - [`clock`]: the OS monotonic clock as a `brisk_time::Instant`.
//! - [`names`], [`registry`]: per-run names, and the lockfile registry
//!   that cleans up after a killed run.
//! - [`netns`], [`tun`], [`topology`]: namespaces, TUN devices, addresses
//!   and routes.
//! - [`router`]: the sans-IO router core (links, forwarding, per-flow
//!   accounting, fidelity) and its real-time event loop.
//! - [`capture`]: pcaps at each side of the bottleneck and the per-packet
//!   queue log.
//! - [`process`], [`signal`]: programs in namespaces, and clean stops on
//!   Ctrl-C and SIGTERM.
//! - [`bulk`], [`echo`]: built-in kernel TCP bulk transfer and UDP echo.
//! - [`bridge`]: `brisk optimize`, the TCP optimizer between two real
//!   interfaces over AF_PACKET sockets, outside any lab.
//! - [`lab`]: the guard that owns a running lab; [`run`]: one whole
//!   `brisk live` run; [`results`]: its JSON; [`steady_state`]: a
//!   download's second half and per-second trace, read back from the
//!   run's capture and per-packet log.
//! - [`recipes`]: before/after proofs of `brisk-tcp`'s recipes (low-water
//!   mark, write sizing, Fast Open, Happy Eyeballs, NAT64 synthesis) with
//!   the library's client and server on threads inside a running lab; and
//!   Brisk on real sockets (`brisk-io`) beside kernel TCP: Prague through
//!   DualPI2, goodput under random loss.

// System calls live in the few modules that allow `unsafe` below.
#![deny(unsafe_code)]

pub mod bridge;
pub mod bulk;
pub mod capture;
pub mod clock;
pub mod echo;
pub mod error;
pub mod lab;
pub mod names;
pub mod netns;
pub mod optimizer_table;
pub mod process;
pub mod recipes;
pub mod registry;
pub mod results;
pub mod router;
pub mod run;
pub mod signal;
pub mod steady_state;
pub mod sys;
pub mod topology;
pub mod tun;

pub use error::LiveError;
pub use lab::{Lab, LabConfig};
pub use results::{FlowResults, LiveResults, Routed};
pub use run::{LiveOutcome, LiveRun, Workload, run};
pub use topology::IpMode;
