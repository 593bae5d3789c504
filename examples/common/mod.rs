//! What the profiling examples share: loading a tokenizer, cutting text at
//! a character boundary.
#![allow(dead_code)]

use tokensmith::pre_tokenizers::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN};
use tokensmith::Tokenizer;

/// A `tokenizer.json`, or a tiktoken rank file whose name says its pattern
/// (`cl100k_base.tiktoken`, `o200k_base.tiktoken`, `r50k_base.tiktoken`).
pub fn load(path: &str) -> Tokenizer {
    if path.ends_with(".tiktoken") {
        let pattern = if path.contains("o200k") {
            O200K_PATTERN
        } else if path.contains("cl100k") {
            CL100K_PATTERN
        } else {
            GPT2_PATTERN
        };
        let data = std::fs::read(path).expect("read rank file");
        return Tokenizer::from_tiktoken(&data, pattern, &[]).expect("load");
    }
    Tokenizer::from_json(&std::fs::read_to_string(path).expect("read tokenizer")).expect("load")
}

/// The first character boundary of `text` at or after `i`.
pub fn boundary_after(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `text` from its start (up to `total` bytes) cut into documents of
/// 1,000-3,999 bytes (each cut back to a character boundary), the lengths
/// drawn from `seed`.
pub fn docs<'a>(text: &'a str, total: usize, seed: &mut u64) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < text.len() && pos < total {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut end = (pos + 1000 + (*seed >> 33) as usize % 3000).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&text[pos..end]);
        pos = end;
    }
    out
}

/// With `PERF_CTL=FIFO` (perf record -D -1 --control fifo:FIFO), sample only
/// the timed encodes: `cmd` is "enable" or "disable".
pub fn perf_ctl(cmd: &str) {
    use std::io::Write;
    if let Ok(path) = std::env::var("PERF_CTL") {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("perf control fifo");
        writeln!(f, "{cmd}").expect("perf control");
        // perf reads the fifo when it gets to it: let it
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
}
