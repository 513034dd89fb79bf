//! The fuzz target `parse_any` on its seed corpus (`fuzz/seeds/parse_any/`),
//! on stable Rust; `BRISK_FUZZ_RUNS=N` adds N mutations (see
//! `support/corpus.rs`).

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/parse_all.rs"]
mod parse_all;

#[test]
fn parse_any_on_its_seed_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/parse_any");
    let r = corpus::replay(&dir, parse_all::parse_all);
    eprintln!("parse_any: {r:?}");
}
