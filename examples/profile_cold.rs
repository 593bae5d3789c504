//! Profile cold encoding: `cargo run --release --example profile_cold -- RANKFILE FILE N`.
//! Loads N fresh tokenizers first, prints "ready", waits a second (attach a
//! profiler then), and for each: encodes the last 1 MB of FILE (warm-up),
//! then the first 1 MB, timing only the latter.
//!
//! With `ONE=1`: N rounds, each loading a tokenizer, warming it up and
//! timing it on a new thread, every round's MB/s on stderr — for
//! side-by-side runs of two builds on a machine whose speed drifts.
//! `ONE=threads`: the same with one tokenizer for all rounds (quicker, but
//! rounds after the first find what earlier rounds built or cached in the
//! tokenizer: the backtracking encoder, long pieces; `ONE=1` is the one
//! that matches the benchmark, which loads a fresh tokenizer).
use std::time::Instant;
use tokensmith::added_tokens::Allowed;
use tokensmith::Tokenizer;

mod common;
use common::{boundary_after, load, perf_ctl};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = std::fs::read_to_string(&args[2]).expect("text");
    let n: usize = args[3].parse().expect("N");
    let doc = &full[..boundary_after(&full, 1_000_000)];
    let warm = &full[boundary_after(&full, full.len() - 1_000_000)..];
    if std::env::var("ONE").is_ok_and(|w| w == "1" || w == "threads") {
        // as the benchmark runs it: a tokenizer loaded, warmed up on other
        // text, then timed; N rounds, each with a fresh tokenizer (no cache
        // carries over) on a new thread (no per-thread cache either)
        let mut times = Vec::new();
        // (`ONE=threads`: one tokenizer, each round on a new thread: its
        // per-thread caches start empty, the shared tables stay loaded)
        let shared = std::env::var("ONE").is_ok_and(|w| w == "threads");
        let first = shared.then(|| load(&args[1]));
        for _ in 0..n {
            let fresh;
            let tok = match &first {
                Some(t) => t,
                None => {
                    fresh = load(&args[1]);
                    &fresh
                }
            };
            let e = std::thread::scope(|s| {
                s.spawn(|| {
                    tok.encode(warm, &Allowed::None, None, false).expect("encode");
                    timed(tok, doc)
                })
                .join()
                .expect("thread")
            });
            times.push(e);
        }
        eprintln!("times {times:?}");
        times.sort_by(|a, b| b.total_cmp(a));
        println!(
            "cold, fresh tokenizers: best {:.1} MB/s, median {:.1}",
            times[0],
            times[times.len() / 2]
        );
        return;
    }
    let toks: Vec<Tokenizer> = (0..n).map(|_| load(&args[1])).collect();
    let early = std::env::var("WARM_EARLY").is_ok_and(|w| w == "1");
    if early {
        for t in &toks {
            t.encode(warm, &Allowed::None, None, false).expect("encode");
        }
    }
    // `HOT=1`: the document once more before it is timed (every piece cached)
    let hot = std::env::var("HOT").is_ok_and(|w| w == "1");
    println!("ready");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut best = 0f64;
    for t in &toks {
        if !early {
            t.encode(warm, &Allowed::None, None, false).expect("encode");
        }
        if hot {
            t.encode(doc, &Allowed::None, None, false).expect("encode");
        }
        best = best.max(timed(t, doc));
    }
    println!("cold (warmed on other text) best {best:.1} MB/s");
}

/// MB/s of one encode of `doc`, the profiler sampling only it (never inlined:
/// `valgrind --tool=callgrind --toggle-collect=profile_cold::timed` counts only it).
#[inline(never)]
fn timed(tok: &Tokenizer, doc: &str) -> f64 {
    perf_ctl("enable");
    let s = Instant::now();
    tok.encode(doc, &Allowed::None, None, false).expect("encode");
    let e = s.elapsed();
    perf_ctl("disable");
    doc.len() as f64 / 1e6 / e.as_secs_f64()
}
