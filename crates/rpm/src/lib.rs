//! Responsiveness under working conditions, as the IETF draft
//! draft-ietf-ippm-responsiveness-09 defines it: round trips per minute
//! (RPM) measured over HTTP/2 while the path is loaded.
//!
//! `stats` holds the draft's arithmetic as pure functions; `server` and
//! `client` are the network edges on hyper, rustls and tokio.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod body;
pub mod client;
pub mod config;
mod connect;
pub mod server;
pub mod stats;
pub mod tls;

pub use client::{ClientOptions, Direction, Progress, Report};
pub use config::Config;
pub use server::{Server, ServerOptions};
