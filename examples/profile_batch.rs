//! Profile batch encoding: `cargo run --release --example profile_batch -- RANKFILE FILE N`.
//! Cuts the first 4 MB of FILE into 1-4 KB documents, warms up on documents
//! cut from its last 1 MB, then times N rounds of the batch, each on fresh
//! tokenizers, on two threads (as benchmarks/encode.py does; `THREADS=k` for k),
//! printing MB/s.
use rayon::prelude::*;
use std::time::Instant;
use tokensmith::added_tokens::Allowed;

mod common;
use common::{boundary_after, docs, load};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = std::fs::read_to_string(&args[2]).expect("text");
    let n: usize = args[3].parse().expect("N");
    let mut seed = 20261129u64;
    let cut = boundary_after(&full, full.len() - 1_000_000);
    let batch = docs(&full, 4_000_000.min(cut), &mut seed);
    let warm = docs(&full[cut..], 1_000_000, &mut seed);
    let bytes: usize = batch.iter().map(|d| d.len()).sum();
    let threads: usize = std::env::var("THREADS").map_or(2, |t| t.parse().expect("THREADS"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let mut best = 0f64;
    for _ in 0..n {
        let t = load(&args[1]);
        let run = |docs: &[&str]| -> usize {
            pool.install(|| {
                docs.par_iter()
                    .map(|d| t.encode(d, &Allowed::None, None, false).expect("encode").len())
                    .sum()
            })
        };
        run(&warm);
        let s = Instant::now();
        let tokens = run(&batch);
        let e = s.elapsed().as_secs_f64();
        best = best.max(bytes as f64 / 1e6 / e);
        eprintln!("{tokens} tokens in {:.1} ms", e * 1e3);
    }
    println!(
        "batch of {} documents ({bytes} bytes), {threads} threads: best {best:.1} MB/s",
        batch.len()
    );
}
