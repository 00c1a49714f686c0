//! Sizes from the environment and per-call percentiles, for the benches that include this by `#[path]`
//! (pub_gate, workloadspread, sidecarset_injection).

use std::time::{Duration, Instant};

/// The whole number in env `name`, or `default`.
pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The times `f` takes, sorted: 20,000 calls under `--bench`, 20 in the smoke run of `cargo test`.
pub fn samples(f: impl Fn()) -> Vec<Duration> {
    let calls = if std::env::args().any(|a| a == "--bench") {
        20_000
    } else {
        20
    };
    let mut samples: Vec<Duration> = (0..calls)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

/// p50 and p99 of the time `f` takes ([`samples`]).
pub fn percentiles(f: impl Fn()) -> (Duration, Duration) {
    let samples = samples(f);
    (
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    )
}

/// Prints p50 and p99 of the time `f` takes ([`percentiles`]) as `<name>: p50 … µs, p99 … µs per call`.
pub fn print_percentiles(name: &str, f: impl Fn()) {
    let (p50, p99) = percentiles(f);
    println!(
        "{name}: p50 {:.1} µs, p99 {:.1} µs per call",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
}
