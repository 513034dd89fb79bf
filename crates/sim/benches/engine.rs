//! The engine on `brisk_sim::bench`'s reference loads, shortened to two
//! simulated seconds: throughput is reported in packet-hops (packets that
//! crossed one bottleneck direction). `brisk bench` runs the full minute.

use brisk_sim::{RunOptions, bench, run};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::time::Duration;

fn engine(c: &mut Criterion) {
    let cases = bench::cases(Duration::from_secs(2)).expect("built-in scenarios parse");
    let mut group = c.benchmark_group("dumbbell_100mbit_20ms_2s");
    group.sample_size(10);
    for case in &cases {
        // Runs are deterministic: every iteration moves the same hops.
        let hops = run(&case.scenario, RunOptions::default())
            .results
            .driver
            .engine
            .packet_hops;
        group.throughput(Throughput::Elements(hops));
        group.bench_function(case.name, |b| {
            b.iter(|| run(&case.scenario, RunOptions::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
