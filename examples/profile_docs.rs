//! Steady-state cost of cutting text into documents, one thread:
//! `cargo run --release --example profile_docs -- RANKFILE FILE N`.
//! Cuts FILE's first 2 MB into 1-4 KB documents, then times N rounds each of
//! encoding them one by one and of encoding their concatenation as one
//! document, on one tokenizer warmed up on both (`PERF_CTL=FIFO` samples
//! only the documents' rounds, `WHOLE=1` only the concatenation's;
//! `TOKENSMITH_NUM_THREADS=1` keeps the concatenation, which is split
//! across the cores otherwise, on one thread; `EACH=1` prints every round).
use std::time::Instant;
use tokensmith::added_tokens::Allowed;

mod common;
use common::{docs, load, perf_ctl};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = std::fs::read_to_string(&args[2]).expect("text");
    let n: usize = args[3].parse().expect("N");
    let docs = docs(&full, 2_000_000, &mut 20261129u64);
    let pos: usize = docs.iter().map(|d| d.len()).sum();
    let whole = &full[..pos];
    let t = load(&args[1]);
    let enc = |s: &str| t.encode(s, &Allowed::None, None, false).expect("encode");
    let (a, b): (usize, usize) = (docs.iter().map(|d| enc(d).len()).sum(), enc(whole).len());
    eprintln!("{} documents: {a} tokens; as one: {b}", docs.len());
    let only_whole = std::env::var("WHOLE").is_ok();
    let (mut sd, mut sw) = (0f64, 0f64);
    for _ in 0..n {
        if !only_whole {
            perf_ctl("enable");
        }
        let s = Instant::now();
        let mut k = 0;
        for d in &docs {
            k += enc(d).len();
        }
        let d = s.elapsed().as_secs_f64();
        sd += d;
        if std::env::var("EACH").is_ok() {
            eprintln!("documents: {:.1} MB/s", pos as f64 / 1e6 / d);
        }
        perf_ctl("disable");
        assert_eq!(k, a);
        if only_whole {
            perf_ctl("enable");
        }
        let s = Instant::now();
        assert_eq!(enc(whole).len(), b);
        sw += s.elapsed().as_secs_f64();
        perf_ctl("disable");
    }
    let mb = pos as f64 / 1e6 * n as f64;
    println!("documents {:.1} MB/s, as one {:.1} MB/s", mb / sd, mb / sw);
}
