//! Sizes from the environment and per-call percentiles, for the benches that include this by `#[path]`
//! (pub_gate and workloadspread).

use std::time::{Duration, Instant};

/// The whole number in env `name`, or `default`.
pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50 and p99 of the time `f` takes: 20,000 calls under `--bench`, 20 in the smoke run of `cargo test`.
fn percentiles(f: impl Fn()) -> (Duration, Duration) {
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
