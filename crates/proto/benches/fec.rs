//! Erasure-code throughput on one core: repair symbols for a block of 32
//! packets of 1,400 bytes (the blocks a bulk sender closes), encoded with
//! 4 repair symbols, and the same block rebuilt with 4 of its packets
//! lost. Throughput is counted in source bytes (the 32 payloads), so
//! "Gbit/s" means how fast packets can be protected or recovered; the
//! goal is at least 1 Gbit/s each way.
//!
//! Run: `cargo bench -p brisk-proto --bench fec`.

use brisk_proto::fec::codec;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const SOURCES: usize = 32;
const REPAIR: usize = 4;
const PAYLOAD_BYTES: usize = 1400;

fn payloads() -> Vec<Vec<u8>> {
    (0..SOURCES)
        .map(|i| (0..PAYLOAD_BYTES).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

fn erasure_code(c: &mut Criterion) {
    let p = payloads();
    let mut group = c.benchmark_group("fec_block_32x1400B_4_repair");
    group.throughput(Throughput::Bytes((SOURCES * PAYLOAD_BYTES) as u64));
    group.bench_function("encode", |b| {
        b.iter(|| codec::encode(black_box(&p), REPAIR).expect("the code takes the block"))
    });
    let (shard_len, repair) = codec::encode(&p, REPAIR).expect("the code takes the block");
    let lost = [3, 9, 17, 30];
    let present: Vec<(usize, &Vec<u8>)> = p
        .iter()
        .enumerate()
        .filter(|(i, _)| !lost.contains(i))
        .collect();
    let rep: Vec<(usize, &Vec<u8>)> = repair.iter().enumerate().collect();
    group.bench_function("decode_4_lost", |b| {
        b.iter(|| {
            codec::decode(SOURCES, REPAIR, shard_len, black_box(&present), &rep)
                .expect("four repairs rebuild four losses")
        })
    });
    group.finish();
}

criterion_group!(benches, erasure_code);
criterion_main!(benches);
