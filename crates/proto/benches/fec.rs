//! Erasure-code throughput on one core, for the block shapes Brisk's FEC
//! sender closes, beside the GF(2^16) code it used before, in one run.
//!
//! Each shape is a block of `k` packets of 1,400 bytes with `m` repair
//! symbols: 32 + 5 and 16 + 4 (a stream with FEC on at 5% loss, a full
//! block and a short flight), 32 + 3 (adaptive bulk data at 5%), 8 + 3
//! (a 10 KB object at 5%), 4 + 2 (the tail of a small flight) and 32 + 1
//! (XOR parity, adaptive at 1 to 3%). Encoding makes the `m` symbols;
//! decoding rebuilds `m` lost packets from the rest and all `m` symbols,
//! the most a block can lose. Throughput counts the block's source bytes
//! (`k` x 1,400), so it says how fast packets are protected or recovered,
//! per second of this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, so
//! other work on a shared machine does not count; wall time elsewhere).
//! The goal is at least 1 Gbit/s each way.
//!
//! The GF(2^8) code keeps the inverted matrix of each loss pattern it
//! decoded last (254 per shape); the bench decodes up to 1,024 different
//! patterns in turn, so every decode of the larger shapes inverts its
//! matrix: the cost of a loss pattern seen for the first time. The two
//! small shapes have fewer patterns than that (4 + 2: 6, 8 + 3: 56), all
//! kept after their first decode, as on a connection.
//!
//! Run: `cargo bench -p brisk-proto --bench fec` (`FECBENCH_MB=n` source
//! megabytes per figure, default 64). Without `--bench` (as `cargo test
//! --benches` runs it), each shape is coded once and checked.

#[path = "support/cpu_time.rs"]
mod cpu_time;
use brisk_proto::fec::codec;
use cpu_time::thread_cpu_time;

const PAYLOAD_BYTES: usize = 1400;

/// (source packets, repair symbols) per block.
const SHAPES: [(usize, usize); 6] = [(32, 5), (16, 4), (32, 3), (8, 3), (4, 2), (32, 1)];

/// Loss patterns each shape's decoding goes through in turn.
const PATTERNS: usize = 1024;

fn payloads(k: usize) -> Vec<Vec<u8>> {
    (0..k)
        .map(|i| (0..PAYLOAD_BYTES).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

/// `count` different sets of `lost` source indices below `k` (as many as
/// there are, if fewer), from a fixed seed.
fn loss_patterns(k: usize, lost: usize, count: usize) -> Vec<Vec<usize>> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut patterns: Vec<Vec<usize>> = Vec::new();
    for _ in 0..count * 4 {
        let mut p: Vec<usize> = Vec::new();
        while p.len() < lost {
            let i = (next() % k as u64) as usize;
            if !p.contains(&i) {
                p.push(i);
            }
        }
        p.sort_unstable();
        if !patterns.contains(&p) {
            patterns.push(p);
        }
        if patterns.len() == count {
            break;
        }
    }
    patterns
}

/// Gbit/s of source bytes per CPU second: `blocks` runs of `f`, each
/// coding `block_bytes`.
fn rate(blocks: usize, block_bytes: usize, mut f: impl FnMut(usize)) -> f64 {
    let wall = std::time::Instant::now();
    let cpu = thread_cpu_time();
    for i in 0..blocks {
        f(i);
    }
    let spent = match (cpu, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    (blocks * block_bytes) as f64 * 8.0 / spent.as_secs_f64().max(1e-9) / 1e9
}

/// One shape's figures, Gbit/s per core.
struct Figures {
    encode: f64,
    decode: f64,
    /// The GF(2^16) code's (encode, decode); `None` for XOR parity.
    before: Option<(f64, f64)>,
}

fn measure(k: usize, m: usize, blocks: usize) -> Figures {
    let p = payloads(k);
    let bytes = k * PAYLOAD_BYTES;
    let encode = rate(blocks, bytes, |_| {
        std::hint::black_box(codec::encode(std::hint::black_box(&p), m).expect("block encodes"));
    });
    let (shard_len, repair) = codec::encode(&p, m).expect("block encodes");
    let rep: Vec<(usize, &Vec<u8>)> = repair.iter().enumerate().collect();
    let patterns = loss_patterns(k, m, PATTERNS);
    let presents: Vec<Vec<(usize, &Vec<u8>)>> = patterns
        .iter()
        .map(|lost| {
            p.iter()
                .enumerate()
                .filter(|(i, _)| !lost.contains(i))
                .collect()
        })
        .collect();
    let decode = rate(blocks, bytes, |i| {
        let present = &presents[i % presents.len()];
        let rebuilt = codec::decode(k, m, shard_len, std::hint::black_box(present), &rep)
            .expect("as many repairs as losses rebuild them");
        std::hint::black_box(rebuilt);
    });
    let before = (m > 1).then(|| {
        let shards: Vec<Vec<u8>> = p
            .iter()
            .map(|x| codec::source_shard(x, shard_len).expect("fits"))
            .collect();
        let encode = rate(blocks, bytes, |_| {
            std::hint::black_box(
                reed_solomon_simd::encode(k, m, std::hint::black_box(&shards)).expect("encodes"),
            );
        });
        let recovery = reed_solomon_simd::encode(k, m, &shards).expect("encodes");
        let decode = rate(blocks, bytes, |i| {
            let lost = &patterns[i % patterns.len()];
            let present = shards.iter().enumerate().filter(|(i, _)| !lost.contains(i));
            let rebuilt = reed_solomon_simd::decode(k, m, present, recovery.iter().enumerate())
                .expect("decodes");
            std::hint::black_box(rebuilt);
        });
        (encode, decode)
    });
    Figures {
        encode,
        decode,
        before,
    }
}

/// Every shape rebuilds its lost packets exactly (the harness's check).
fn smoke() {
    for (k, m) in SHAPES {
        let p = payloads(k);
        let (shard_len, repair) = codec::encode(&p, m).expect("block encodes");
        let lost = &loss_patterns(k, m, 1)[0];
        let present: Vec<(usize, &Vec<u8>)> = p
            .iter()
            .enumerate()
            .filter(|(i, _)| !lost.contains(i))
            .collect();
        let rep: Vec<(usize, &Vec<u8>)> = repair.iter().enumerate().collect();
        let rebuilt = codec::decode(k, m, shard_len, &present, &rep).expect("decodes");
        assert_eq!(rebuilt.len(), m, "{k} + {m}");
        for (i, payload) in rebuilt {
            assert_eq!(payload, p[i], "{k} + {m}: packet {i}");
        }
        println!("fec smoke test: {k} packets + {m} repair, {m} lost, all rebuilt");
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        smoke();
        return;
    }
    let mb: usize = std::env::var("FECBENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(64);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "erasure code, one core, Gbit/s of source payload per CPU second ({mb} MB per figure, \
         payloads of {PAYLOAD_BYTES} bytes; load average {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:>7} {:>7} {:>5} | {:>14} {:>14} | {:>15} {:>15}",
        "packets",
        "repair",
        "lost",
        "encode GF(2^8)",
        "decode GF(2^8)",
        "encode GF(2^16)",
        "decode GF(2^16)"
    );
    for (k, m) in SHAPES {
        let blocks = (mb << 20) / (k * PAYLOAD_BYTES);
        let f = measure(k, m, blocks);
        let (be, bd) = match f.before {
            Some((e, d)) => (format!("{e:.2}"), format!("{d:.2}")),
            None => ("(xor)".into(), "(xor)".into()),
        };
        println!(
            "{k:>7} {m:>7} {m:>5} | {:>14.2} {:>14.2} | {be:>15} {bd:>15}",
            f.encode, f.decode
        );
    }
}
