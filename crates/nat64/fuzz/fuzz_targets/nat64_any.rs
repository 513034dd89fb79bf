//! Every brisk-nat64 entry point over one input: both translators, a NAT64
//! holding a live session, the DNS parser and the DNS64 responder, on the
//! raw bytes and spliced into valid datagrams. The checks live in
//! `tests/support/check_all.rs`, shared with the proptests, so a crash here
//! is a failing `cargo test` once minimised.

#![no_main]

#[path = "../../tests/support/check_all.rs"]
mod check_all;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_all::check_all(data));
