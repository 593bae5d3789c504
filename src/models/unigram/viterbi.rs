//! The best segmentation of a text (Viterbi over the double-array trie),
//! in buffers that each thread keeps and reuses.
//!
//! A text is cut into chunks that start at each `▁` when the model allows
//! it (`Unigram::chunk_safe`: no matchable piece has `▁` past its first
//! character, so every `▁` starts a token and no lattice node crosses one).
//! Every path then passes through each chunk start, and the chunk is
//! solved alone, seeded with the path score the whole-text Viterbi has at
//! its start: each comparison is the very same floating-point sum as over
//! the whole text, so the result is identical, while the working arrays
//! stay the size of a chunk.

use super::{utf8_len, Seg, Unigram, NONE, SP_RESET, UNK_PENALTY};
use std::cell::RefCell;

/// The best path that ends at a byte: its score, where its last piece
/// starts (`NONE`: not reached), and that piece's id.
#[derive(Clone, Copy)]
struct Best<S> {
    score: S,
    start: u32,
    id: u32,
}

/// The buffers of one thread.
#[derive(Default)]
pub(super) struct Scratch {
    hf: Vec<Best<f64>>,
    sp: Vec<Best<f32>>,
    /// the segmentation being built (absolute byte offsets)
    pub(super) segs: Vec<Seg>,
}

/// Buffers past this many entries are dropped after use (a text with one
/// huge chunk should not pin its memory in every thread).
const KEEP_ENTRIES: usize = 1 << 16;

impl Scratch {
    fn trim(&mut self) {
        if self.hf.capacity() > KEEP_ENTRIES {
            self.hf = Vec::new();
        }
        if self.sp.capacity() > KEEP_ENTRIES {
            self.sp = Vec::new();
        }
        if self.segs.capacity() > KEEP_ENTRIES {
            self.segs = Vec::new();
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Run `f` with this thread's scratch buffers (fresh ones if they are in
/// use further up the stack), trimmed afterwards.
pub(super) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => {
            let r = f(&mut s);
            s.trim();
            r
        }
        Err(_) => f(&mut Scratch::default()),
    })
}

/// How many pieces `segment` gathers before handing them on.
const FLUSH_SEGS: usize = 4096;

const MARK: [u8; 3] = [0xE2, 0x96, 0x81];

/// The fewest bytes in a chunk but the last: text is cut at the first `▁`
/// past this many (any `▁` is a place to cut; fewer cuts, less work per
/// cut, while the arrays stay in the core's first-level cache).
const MIN_CHUNK: usize = 1024;

/// The end of the chunk that starts at `from`: the first `▁` at least
/// `MIN_CHUNK` bytes after it, or the end of the text.
#[inline]
fn chunk_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from + MIN_CHUNK;
    while i + 2 < bytes.len() {
        match bytes[i..].iter().position(|&b| b == 0xE2) {
            Some(k) => i += k,
            None => return bytes.len(),
        }
        if i + 2 < bytes.len() && bytes[i + 1] == MARK[1] && bytes[i + 2] == MARK[2] {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

/// Follow the best-path links back from the end of a chunk (local offsets,
/// `base` added), appending the pieces in order.
fn backtrack<S: Copy>(best: &[Best<S>], base: usize, segs: &mut Vec<Seg>) {
    let at = segs.len();
    let mut end = best.len() - 1;
    while end > 0 {
        let b = best[end];
        if b.start == NONE || b.start as usize >= end {
            break;
        }
        segs.push((base + b.start as usize, base + end, b.id));
        end = b.start as usize;
    }
    segs[at..].reverse();
}

impl Unigram {
    /// The best segmentation of `text`, handed to `flush` in order, a run
    /// of pieces at a time (absolute offsets). A run is handed on only
    /// after a known piece, so that no run of unknown pieces, which the
    /// emitters fuse, is split between two calls.
    /// `chunked`: cut at `▁` where that is exact (a caller whose text has
    /// no `▁` past its start says false, and saves the search).
    pub(super) fn segment(&self, text: &[u8], chunked: bool, scratch: &mut Scratch, mut flush: impl FnMut(&[Seg])) {
        scratch.segs.clear();
        let unk = self.unk_id.unwrap_or(NONE);
        let n = text.len();
        let mut from = 0;
        let mut till_hf = 0.0f64;
        let mut till_sp = 0.0f32;
        while from < n {
            let to = if chunked && self.chunk_safe {
                chunk_end(text, from)
            } else {
                n
            };
            let chunk = &text[from..to];
            if self.sp.is_some() {
                till_sp = self.chunk_sp(chunk, from, till_sp, scratch);
            } else {
                till_hf = self.chunk_hf(chunk, from, till_hf, scratch);
            }
            from = to;
            let segs = &mut scratch.segs;
            if segs.len() >= FLUSH_SEGS && segs.last().is_some_and(|l| l.2 != unk && l.2 != NONE) {
                flush(segs);
                segs.clear();
            }
        }
        flush(&scratch.segs);
        scratch.segs.clear();
    }

    /// `tokenizers`' Viterbi (f64 sums) over one chunk seeded with `till0`;
    /// returns the best score at its end.
    fn chunk_hf(&self, text: &[u8], base: usize, till0: f64, s: &mut Scratch) -> f64 {
        let n = text.len();
        let unk_score = self.min_score - UNK_PENALTY;
        let unk = self.unk_id.unwrap_or(NONE);
        let scores = &self.scores_f64[..];
        let best = &mut s.hf;
        best.clear();
        best.resize(
            n + 1,
            Best {
                score: 0.0,
                start: NONE,
                id: NONE,
            },
        );
        best[0].score = till0;
        let mut pos = 0;
        while pos < n {
            let till = best[pos].score;
            let mblen = utf8_len(text[pos]).min(n - pos);
            let mut single = false;
            let ends = &mut best[pos..];
            self.dat.prefixes(&text[pos..], |len, id| {
                let cand = scores[id as usize] + till;
                let t = &mut ends[len];
                if t.start == NONE || cand > t.score {
                    *t = Best {
                        score: cand,
                        start: pos as u32,
                        id,
                    };
                }
                single |= len == mblen;
            });
            if !single {
                let cand = unk_score + till;
                let t = &mut best[pos + mblen];
                if t.start == NONE || cand > t.score {
                    *t = Best {
                        score: cand,
                        start: pos as u32,
                        id: unk,
                    };
                }
            }
            pos += mblen;
        }
        backtrack(best, base, &mut s.segs);
        best[n].score
    }

    /// `sentencepiece` 0.2.3's `EncodeOptimized` over one chunk seeded with
    /// `till0`: path scores in single precision (each candidate an f32 sum,
    /// kept when strictly greater), re-based to 0 when the running score
    /// passes ±1e5, with every reached score up to the furthest end so far
    /// shifted alike. Returns the best score at the chunk's end.
    fn chunk_sp(&self, text: &[u8], base: usize, till0: f32, s: &mut Scratch) -> f32 {
        let n = text.len();
        let sp = self.sp.as_ref().expect("a sentencepiece model");
        let unk_score = sp.min_score - UNK_PENALTY as f32;
        let unk = self.unk_id.unwrap_or(NONE);
        let best = &mut s.sp;
        best.clear();
        best.resize(
            n + 1,
            Best {
                score: 0.0,
                start: NONE,
                id: NONE,
            },
        );
        best[0].score = till0;
        let mut frontier = 0;
        let mut pos = 0;
        while pos < n {
            let mut till = best[pos].score;
            if !(-SP_RESET..=SP_RESET).contains(&till) {
                for (i, b) in best.iter_mut().enumerate().take(frontier + 1).skip(pos) {
                    if i == pos || b.start != NONE {
                        b.score -= till;
                    }
                }
                till = 0.0;
            }
            let mblen = utf8_len(text[pos]).min(n - pos);
            let mut single = false;
            let mut furthest = pos + mblen;
            let ends = &mut best[pos..];
            self.dat.prefixes_weighted(&text[pos..], |len, id, score| {
                furthest = furthest.max(pos + len);
                let cand = score + till;
                let t = &mut ends[len];
                if t.start == NONE || cand > t.score {
                    *t = Best {
                        score: cand,
                        start: pos as u32,
                        id,
                    };
                }
                single |= len == mblen;
            });
            frontier = frontier.max(furthest);
            if !single {
                let cand = unk_score + till;
                let t = &mut best[pos + mblen];
                if t.start == NONE || cand > t.score {
                    *t = Best {
                        score: cand,
                        start: pos as u32,
                        id: unk,
                    };
                }
            }
            pos += mblen;
        }
        backtrack(best, base, &mut s.segs);
        best[n].score
    }
}
