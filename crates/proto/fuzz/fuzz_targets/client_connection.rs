//! Arbitrary input to an established client connection; the body lives in
//! `tests/support/fuzz_client_connection.rs`, which the stable replay test
//! (`tests/fuzz_corpus.rs`) runs on the seed corpus too.
#![no_main]

#[path = "../../tests/support/fuzz_common.rs"]
mod common;
#[path = "../../tests/support/fuzz_client_connection.rs"]
mod client_connection;

libfuzzer_sys::fuzz_target!(|data: &[u8]| client_connection::run(data));
