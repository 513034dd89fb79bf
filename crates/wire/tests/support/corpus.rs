//! Runs a fuzz target's checked-in seed corpus (`fuzz/seeds/<target>/`)
//! through the target's own function on stable Rust, so every CI run
//! exercises each target on real inputs without nightly or cargo-fuzz.
//!
//! `BRISK_FUZZ_RUNS=N` adds N mutations of the seeds (bytes flipped,
//! inserted, removed, spliced from another seed, cut short), drawn from
//! `BRISK_FUZZ_SEED` (default 1): a long run one command away. A crash
//! names the seed file or prints the mutated input as hex to replay.
//! Shared by the replay tests of brisk-wire, brisk-nat64 and brisk-proto.

use std::path::Path;

/// What one replay did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    pub seeds: usize,
    pub mutations: u64,
}

/// Feeds every file under `dir` to `target`, then the mutations asked for
/// in the environment.
pub fn replay(dir: &Path, target: impl Fn(&[u8])) -> Replayed {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("seed corpus {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    let seeds: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    for (path, data) in files.iter().zip(&seeds) {
        run_one(&target, data, || path.display().to_string());
    }
    let runs: u64 = env_number("BRISK_FUZZ_RUNS").unwrap_or(0);
    let mut state = env_number("BRISK_FUZZ_SEED").unwrap_or(1) | 1;
    for _ in 0..runs {
        let input = mutate(&mut state, &seeds);
        run_one(&target, &input, || hex(&input));
    }
    Replayed {
        seeds: seeds.len(),
        mutations: runs,
    }
}

fn env_number(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
    )
}

fn run_one(target: &impl Fn(&[u8]), data: &[u8], name: impl Fn() -> String) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(data))).is_err() {
        panic!("the target panicked on {}", name());
    }
}

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn below(state: &mut u64, n: usize) -> usize {
    (next(state) % n.max(1) as u64) as usize
}

/// One seed, changed in one to four places.
fn mutate(state: &mut u64, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[below(state, seeds.len())].clone();
    for _ in 0..=below(state, 4) {
        match below(state, 5) {
            0 if !d.is_empty() => {
                let i = below(state, d.len());
                d[i] ^= 1 << below(state, 8);
            }
            1 => {
                let i = below(state, d.len() + 1);
                let n = 1 + below(state, 8);
                let bytes: Vec<u8> = (0..n).map(|_| next(state) as u8).collect();
                d.splice(i..i, bytes);
            }
            2 if !d.is_empty() => {
                let i = below(state, d.len());
                let n = 1 + below(state, (d.len() - i).min(16));
                d.drain(i..i + n);
            }
            3 => {
                let other = &seeds[below(state, seeds.len())];
                if !other.is_empty() {
                    let from = below(state, other.len());
                    let at = below(state, d.len() + 1);
                    d.truncate(at);
                    d.extend_from_slice(&other[from..]);
                }
            }
            _ => {
                let n = below(state, d.len() + 1);
                d.truncate(n);
            }
        }
    }
    d
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
