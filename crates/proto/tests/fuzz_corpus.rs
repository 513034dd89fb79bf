//! Both fuzz targets (`fuzz/fuzz_targets`) on their seed corpora
//! (`fuzz/seeds/<target>/`), on stable Rust; `BRISK_FUZZ_RUNS=N` adds N
//! mutations each (see `support/corpus.rs` in brisk-wire). Needs the
//! `fuzzing` feature, as the targets do:
//! `cargo test --release -p brisk-proto --features fuzzing --test fuzz_corpus`.

#[path = "support/fuzz_client_connection.rs"]
mod client_connection;
#[path = "support/fuzz_common.rs"]
mod common;
#[path = "../../wire/tests/support/corpus.rs"]
mod corpus;
#[path = "support/fuzz_server_endpoint.rs"]
mod server_endpoint;

use std::path::Path;

fn seeds(target: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

#[test]
fn server_endpoint_on_its_seed_corpus() {
    let r = corpus::replay(&seeds("server_endpoint"), server_endpoint::run);
    eprintln!("server_endpoint: {r:?}");
}

#[test]
fn client_connection_on_its_seed_corpus() {
    let r = corpus::replay(&seeds("client_connection"), client_connection::run);
    eprintln!("client_connection: {r:?}");
}
