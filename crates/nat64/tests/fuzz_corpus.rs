//! The fuzz target `nat64_any` on its seed corpus (`fuzz/seeds/nat64_any/`),
//! on stable Rust; `BRISK_FUZZ_RUNS=N` adds N mutations (see brisk-wire's
//! `tests/support/corpus.rs`).

#[path = "support/check_all.rs"]
#[allow(dead_code, reason = "only the entry point is used here")]
mod check_all;
#[path = "../../wire/tests/support/corpus.rs"]
mod corpus;

#[test]
fn nat64_any_on_its_seed_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/nat64_any");
    let r = corpus::replay(&dir, check_all::check_all);
    eprintln!("nat64_any: {r:?}");
}
