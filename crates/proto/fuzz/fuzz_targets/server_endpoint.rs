//! Arbitrary datagrams to a server endpoint; the body lives in
//! `tests/support/fuzz_server_endpoint.rs`, which the stable replay test
//! (`tests/fuzz_corpus.rs`) runs on the seed corpus too.
#![no_main]

#[path = "../../tests/support/fuzz_common.rs"]
mod common;
#[path = "../../tests/support/fuzz_server_endpoint.rs"]
mod server_endpoint;

libfuzzer_sys::fuzz_target!(|data: &[u8]| server_endpoint::run(data));
