//! Every brisk-wire parser over one input: whole datagrams, bare TCP/UDP
//! headers under IPv4 and IPv6 pseudo-headers, and raw TCP option lists.
//! The checks live in `tests/support/parse_all.rs`, shared with the
//! proptests, so a crash here is a failing `cargo test` once minimised.

#![no_main]

#[path = "../../tests/support/parse_all.rs"]
mod parse_all;

libfuzzer_sys::fuzz_target!(|data: &[u8]| parse_all::parse_all(data));
