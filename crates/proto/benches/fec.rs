//! Erasure-code throughput on one core: repair symbols for a block of 32
//! packets of 1,400 bytes (the largest block a sender closes), encoded
//! with 4 Reed-Solomon repair symbols and rebuilt with 4 of its packets
//! lost, and with 1 symbol (XOR parity) and 1 lost. Throughput is counted
//! in source bytes (the 32 payloads), so it says how fast packets can be
//! protected or recovered; the goal is at least 1 Gbit/s each way.
//!
//! Run: `cargo bench -p brisk-proto --bench fec`.

use brisk_proto::fec::codec;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const SOURCES: usize = 32;
const PAYLOAD_BYTES: usize = 1400;

fn payloads() -> Vec<Vec<u8>> {
    (0..SOURCES)
        .map(|i| (0..PAYLOAD_BYTES).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

fn erasure_code(c: &mut Criterion) {
    for (repair_count, lost) in [(4, &[3usize, 9, 17, 30][..]), (1, &[17][..])] {
        block(c, repair_count, lost);
    }
}

/// Encoding a block with `repair_count` symbols, and rebuilding it with
/// the packets `lost` missing.
fn block(c: &mut Criterion, repair_count: usize, lost: &[usize]) {
    let p = payloads();
    let mut group = c.benchmark_group(format!("fec_block_32x1400B_{repair_count}_repair"));
    group.throughput(Throughput::Bytes((SOURCES * PAYLOAD_BYTES) as u64));
    group.bench_function("encode", |b| {
        b.iter(|| codec::encode(black_box(&p), repair_count).expect("the code takes the block"))
    });
    let (shard_len, repair) = codec::encode(&p, repair_count).expect("the code takes the block");
    let present: Vec<(usize, &Vec<u8>)> = p
        .iter()
        .enumerate()
        .filter(|(i, _)| !lost.contains(i))
        .collect();
    let rep: Vec<(usize, &Vec<u8>)> = repair.iter().enumerate().collect();
    group.bench_function(format!("decode_{}_lost", lost.len()), |b| {
        b.iter(|| {
            codec::decode(SOURCES, repair_count, shard_len, black_box(&present), &rep)
                .expect("as many repairs as losses rebuild them")
        })
    });
    group.finish();
}

criterion_group!(benches, erasure_code);
criterion_main!(benches);
