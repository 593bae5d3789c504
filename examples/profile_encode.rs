//! Time the stages of encoding a file:
//! `cargo run --release --example profile_encode -- TOKENIZER FILE [MAX_BYTES]`.
//!
//! TOKENIZER is a `tokenizer.json`, or a tiktoken rank file whose name says
//! its pattern (`cl100k_base.tiktoken`, `o200k_base.tiktoken`,
//! `r50k_base.tiktoken`). The text is cut to MAX_BYTES (default 1,000,000,
//! below the size at which encoding goes parallel), at a character boundary.

use std::time::Instant;
use tokensmith::added_tokens::Allowed;

mod common;
use common::load;

/// CPU time of this thread in nanoseconds (Linux `schedstat`), so that a busy
/// shared machine slows the wall clock but not this measure; 0 elsewhere.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Best wall-clock MB/s of `rounds` runs of `f`, and MB/s by the CPU time
/// of all rounds together (`schedstat` is only updated every scheduler tick).
fn time(rounds: usize, mb: f64, mut f: impl FnMut()) -> (f64, f64) {
    let mut wall = 0f64;
    let c = cpu_ns();
    for _ in 0..rounds {
        let t = Instant::now();
        f();
        wall = wall.max(mb / t.elapsed().as_secs_f64());
    }
    let cpu = mb * rounds as f64 / ((cpu_ns() - c).max(1) as f64 / 1e9);
    (wall, cpu)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: profile_encode TOKENIZER FILE [MAX_BYTES]");
        std::process::exit(2);
    }
    let tok = load(&args[1]);
    let full = std::fs::read_to_string(&args[2]).expect("read text");
    // the last MAX_BYTES of the file: what a cold model sees before the timed text
    let mut w = full
        .len()
        .saturating_sub(args.get(3).map_or(1_000_000, |m| m.parse().expect("MAX_BYTES")));
    while !full.is_char_boundary(w) {
        w += 1;
    }
    let warm = full[w..].to_string();
    let mut text = full;
    let max: usize = args.get(3).map_or(1_000_000, |m| m.parse().expect("MAX_BYTES"));
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    let mb = text.len() as f64 / 1e6;
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(10);
    let mut n = 0;
    let (wall, cpu) = time(rounds, mb, || {
        n = tok.encode(&text, &Allowed::None, None, false).expect("encode").len();
    });
    println!("encode: {n} tokens, best {wall:.1} MB/s, cpu {cpu:.1} MB/s");
    // cold: a freshly loaded tokenizer each time (empty piece caches), warmed
    // up on the end of the file when WARMUP=1; only the encode is timed
    let mut cold = 0f64;
    let warmup = std::env::var("WARMUP").is_ok_and(|w| w == "1");
    for _ in 0..rounds.min(std::env::var("COLD").ok().and_then(|r| r.parse().ok()).unwrap_or(3)) {
        let fresh = load(&args[1]);
        if warmup {
            fresh.encode(&warm, &Allowed::None, None, false).expect("encode");
        }
        let t = Instant::now();
        n = fresh.encode(&text, &Allowed::None, None, false).expect("encode").len();
        cold = cold.max(mb / t.elapsed().as_secs_f64());
    }
    println!("cold encode: {n} tokens, best {cold:.1} MB/s");
    if let Some(regex) = tok.split_regex() {
        let pat = tokensmith::pattern::Pattern::regex(&regex).expect("regex");
        let mut out = Vec::new();
        let (wall, cpu) = time(rounds, mb, || {
            out.clear();
            pat.find_iter(&text, &mut out).expect("split");
        });
        println!(
            "split only: {} pieces, best {wall:.1} MB/s, cpu {cpu:.1} MB/s",
            out.len()
        );
    }
}
