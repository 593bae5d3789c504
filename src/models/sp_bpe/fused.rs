//! The fused pass: the `.model` normalizer, the cuts and the merge in one
//! walk over the text, ids only.
//!
//! The normalizer it fuses (checked on every call, `spec_fits`) has no
//! character map and no user-defined symbols, escapes spaces to `▁`, keeps
//! runs of them (`remove_extra_whitespaces` off, as Llama-2 and Mistral
//! have it) and may add the dummy prefix: so the normalized text is `▁`
//! (the prefix) then the text with every space as `▁`, character for
//! character. The walk reads the text itself, a space standing for `▁`,
//! cuts it where `Tables::joined` says no symbol can span, and encodes each
//! chunk: a lone character by its own symbol, a short chunk through the
//! thread's cache, any other by the merge.
//!
//! ASCII runs (up to 64 bytes) are cut at once, with one byte of
//! `Tables::ascii_cut_mask` a character and no branch, and their chunks
//! are queued: each chunk's cache set is prefetched when it is found and
//! read `LAG` chunks later, so the memory latency of the (L2-sized and
//! larger) cache overlaps the scan instead of stalling it. Out of ASCII
//! runs (CJK: nearly every character its own chunk, no cache) the queue is
//! drained and each chunk encoded as soon as it ends.

use super::cache::{key_at, key_of, set_of, ChunkCache, KEY_MAX};
use super::lines::{line_end, SAMPLE};
use super::merge::{decode, merge};
use super::tables::{symbol_of, Tables, SPACE_CODE};
use crate::normalizers::sentencepiece::SentencePieceSpec;

/// The `▁` a space stands for.
const SPACE_SYMBOL: &[u8] = "\u{2581}".as_bytes();

/// The fast path of one model (None when its pieces cannot take it).
pub(super) struct Fused {
    pub tables: Tables,
    pub byte_fallback: bool,
    pub byte_ids: [u32; 256],
    pub unk: u32,
    pub generation: u64,
    /// lines after the first encode alone (see `lines`): they may be kept
    pub lines: bool,
}

/// Does the walk equal this normalizer?
pub(super) fn spec_fits(spec: &SentencePieceSpec) -> bool {
    spec.precompiled_charsmap.is_none()
        && spec.user_defined_symbols.is_empty()
        && spec.escape_whitespaces
        && !spec.remove_extra_whitespaces
        && !spec.treat_whitespace_as_suffix
}

/// Where the walk is: the chunk under way and its last character.
struct Walk<'a> {
    text: &'a [u8],
    /// where the chunk under way starts
    start: usize,
    /// it starts with the dummy prefix `▁` before `text[start..]`
    prefixed: bool,
    /// `from`: where this text's ids start in `out` (unknowns fuse only there)
    from: usize,
    /// the general encoder of a normalized text, for chunks `merge` declines
    long: Long<'a>,
    /// chunks found but not yet encoded (`ring[done % LAG..found % LAG]`):
    /// their cache slots load while the scan goes on
    ring: [Chunk; LAG],
    found: usize,
    done: usize,
}

/// A chunk found in an ASCII run, to encode a few chunks later.
#[derive(Clone, Copy)]
struct Chunk {
    start: usize,
    end: usize,
    last: u32,
    prefixed: bool,
    /// its cache set (`NO_SET`: it is not looked up in the slots)
    set: usize,
    key: [u64; 4],
}

const NO_SET: usize = usize::MAX;

impl Chunk {
    const EMPTY: Chunk = Chunk {
        start: 0,
        end: 0,
        last: 0,
        prefixed: false,
        set: NO_SET,
        key: [0; 4],
    };
}

/// How many chunks the encoding trails the scan by.
const LAG: usize = 16;

/// The shortest ASCII run scanned as a block (shorter ones go character
/// by character).
const MIN_RUN: usize = 2;

/// How many ASCII bytes start `b[pos..]`, up to 64.
#[inline(always)]
fn ascii_run(b: &[u8], pos: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let Some(window) = b.get(pos..pos + 64) else {
        return b[pos..].iter().take_while(|&&c| c < 0x80).count();
    };
    for (i, word) in window.chunks_exact(8).enumerate() {
        let high = u64::from_le_bytes(word.try_into().unwrap_or_default()) & HIGH;
        if high != 0 {
            return i * 8 + high.trailing_zeros() as usize / 8;
        }
    }
    64
}

/// Encodes a normalized text into `(id, byte length)` tokens.
pub(super) type Long<'a> = &'a dyn Fn(&str, &mut Vec<(u32, u32)>);

impl Fused {
    /// Encode `text` (normalized as `spec_fits` says, with the dummy
    /// prefix if `dummy`) into `out`: the lines the memo looks up (see
    /// `lines`) from it or walked and kept, the text between them walked.
    pub fn encode(&self, text: &str, dummy: bool, long: Long, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        if !self.lines {
            return self.walk(text, dummy, long, cache, out);
        }
        let b = text.as_bytes();
        let (mut pos, mut sample_at) = (0, SAMPLE);
        while let Some(start) = next_lookup(b, pos, sample_at, cache.memo.hot()) {
            if start > pos {
                self.walk(&text[pos..start], dummy && pos == 0, long, cache, out);
            }
            let end = line_end(b, start);
            let line = &b[start..end];
            let sample = start >= sample_at;
            if sample {
                sample_at = start + SAMPLE;
            }
            if !cache.memo.lookup(line, sample, out) {
                let from = out.len();
                self.walk(&text[start..end], false, long, cache, out);
                cache.memo.keep(line, &out[from..]);
            }
            pos = end;
        }
        if pos < b.len() {
            self.walk(&text[pos..], dummy && pos == 0, long, cache, out);
        }
    }

    /// The walk over `text` (or a run of its lines), chunk by chunk.
    fn walk(&self, text: &str, dummy: bool, long: Long, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        let b = text.as_bytes();
        if b.is_empty() {
            return;
        }
        let t = &self.tables;
        let mut w = Walk {
            text: b,
            start: 0,
            prefixed: dummy,
            from: out.len(),
            long,
            ring: [Chunk::EMPTY; LAG],
            found: 0,
            done: 0,
        };
        let (mut prev, mut pos) = if dummy { (SPACE_CODE, 0) } else { decode(b, 0) };
        while pos < b.len() {
            if prev < 0x80 {
                let n = ascii_run(b, pos);
                if n >= MIN_RUN {
                    self.run(&mut w, pos, n, prev, cache, out);
                    pos += n;
                    prev = b[pos - 1] as u32;
                    continue;
                }
            }
            let (code, len) = decode(b, pos);
            let (iprev, info) = (t.info(prev), t.info(code));
            if !t.joined(prev, iprev, code, info) {
                // the chunk is the one character before `pos` (most CJK ones
                // are), nothing queued: its own symbol, no other check
                if w.start + utf8_len(b[w.start]) == pos && !w.prefixed && w.done == w.found {
                    self.symbol(&w, symbol_of(iprev), &b[w.start..pos], out);
                    w.start = pos;
                } else {
                    self.cut_now(&mut w, pos, prev, cache, out);
                }
            }
            prev = code;
            pos += len;
        }
        self.cut(&mut w, b.len(), prev, cache, out);
        while w.done < w.found {
            self.finish_next(&mut w, cache, out);
        }
    }

    /// Encode the chunks that end in the ASCII run `text[pos..pos + n]`
    /// (after the character `prev` < 128): the cuts of the whole run are
    /// found at once.
    fn run(&self, w: &mut Walk, pos: usize, n: usize, prev: u32, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        let b = w.text;
        let mut cuts = self.tables.ascii_cut_mask(prev, &b[pos..pos + n]);
        while cuts != 0 {
            let end = pos + cuts.trailing_zeros() as usize;
            cuts &= cuts - 1;
            let last = if end > pos { b[end - 1] as u32 } else { prev };
            self.cut(w, end, last, cache, out);
        }
    }

    /// The chunk under way ends at `end` (`last` the code of its last
    /// character): it is queued, its cache slot asked for, and encoded `LAG`
    /// chunks later, so that the slot's load overlaps the scan.
    #[inline(always)]
    fn cut(&self, w: &mut Walk, end: usize, last: u32, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        if w.found - w.done == LAG {
            self.finish_next(w, cache, out);
        }
        w.ring[w.found % LAG] = self.plan(w, end, last, cache);
        w.found += 1;
        w.start = end;
        w.prefixed = false;
    }

    /// The chunk under way ends at `end`, out of an ASCII run: it is
    /// encoded at once (after those queued), as most there are one
    /// character (CJK), which the cache does not hold.
    #[inline(always)]
    fn cut_now(&self, w: &mut Walk, end: usize, last: u32, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        while w.done < w.found {
            self.finish_next(w, cache, out);
        }
        self.chunk(w, w.start, end, w.prefixed, last, cache, out);
        w.start = end;
        w.prefixed = false;
    }

    /// Encode the oldest queued chunk.
    #[inline(always)]
    fn finish_next(&self, w: &mut Walk, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        let c = w.ring[w.done % LAG];
        w.done += 1;
        self.finish(w, &c, cache, out);
    }

    /// The chunk from `w.start` to `end` (last character `last`), with its
    /// cache slot on the way if it is looked up there.
    #[inline(always)]
    fn plan(&self, w: &Walk, end: usize, last: u32, cache: &ChunkCache) -> Chunk {
        let len = end - w.start;
        let mut c = Chunk {
            start: w.start,
            end,
            last,
            prefixed: w.prefixed,
            set: NO_SET,
            key: [0; 4],
        };
        if !w.prefixed && len <= KEY_MAX && len > utf8_len(w.text[w.start]) {
            c.key = key_at(w.text, w.start, len);
            c.set = set_of(&c.key);
            cache.prefetch(c.set);
        }
        c
    }

    /// Encode a chunk `plan` made.
    #[inline(always)]
    fn finish(&self, w: &Walk, c: &Chunk, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        if c.set == NO_SET {
            return self.chunk(w, c.start, c.end, c.prefixed, c.last, cache, out);
        }
        let at = out.len();
        if cache.extend_from_set(c.set, &c.key, out) {
            return self.fuse_unknowns(w, out, at);
        }
        self.merged(w, &w.text[c.start..c.end], out);
        if self.cacheable(w, out, at) {
            cache.insert_at(c.set, &c.key, &out[at..]);
        }
    }

    /// Encode the chunk `w.text[start..end]` (after the dummy prefix if
    /// `prefixed`); `last` is the code of its last character.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn chunk(
        &self,
        w: &Walk,
        start: usize,
        end: usize,
        prefixed: bool,
        last: u32,
        cache: &mut ChunkCache,
        out: &mut Vec<u32>,
    ) {
        let raw = &w.text[start..end];
        if prefixed {
            let mut chunk = Vec::with_capacity(raw.len() + 1);
            chunk.push(b' ');
            chunk.extend_from_slice(raw);
            return self.cached(w, &chunk, None, cache, out);
        }
        // one character: its own symbol (the chunk's last is its only one)
        if raw.len() == 1 || raw.len() == utf8_len(raw[0]) {
            return self.symbol(w, symbol_of(self.tables.info(last)), raw, out);
        }
        self.cached(w, raw, Some(start), cache, out)
    }

    /// Encode `chunk` (`w.text[at..]` unless it is the prefixed one)
    /// through the cache.
    #[inline(always)]
    fn cached(&self, w: &Walk, chunk: &[u8], at: Option<usize>, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        if chunk.len() > KEY_MAX {
            return self.cached_long(w, chunk, cache, out);
        }
        let key = match at {
            Some(start) => key_at(w.text, start, chunk.len()),
            None => key_of(chunk),
        };
        let at = out.len();
        if cache.extend_from(&key, out) {
            return self.fuse_unknowns(w, out, at);
        }
        let from = out.len();
        self.merged(w, chunk, out);
        if self.cacheable(w, out, from) {
            cache.insert(&key, &out[from..]);
        }
    }

    #[inline(never)]
    fn cached_long(&self, w: &Walk, chunk: &[u8], cache: &mut ChunkCache, out: &mut Vec<u32>) {
        if let Some(ids) = cache.get_long(chunk) {
            return self.extend(w, ids, out);
        }
        let from = out.len();
        self.merged(w, chunk, out);
        if self.cacheable(w, out, from) {
            cache.insert_long(chunk, &out[from..]);
        }
    }

    /// Are `out[from..]` the chunk's ids as merged alone? (Not if its
    /// first unknown fused with the text's before it.)
    #[inline(always)]
    fn cacheable(&self, w: &Walk, out: &[u32], from: usize) -> bool {
        self.byte_fallback || from == w.from || out[from - 1] != self.unk
    }

    /// After a chunk's cached ids were pushed at `out[at..]`: without byte
    /// fallback, an unknown that starts them fuses with one before it.
    #[inline(always)]
    fn fuse_unknowns(&self, w: &Walk, out: &mut Vec<u32>, at: usize) {
        if !self.byte_fallback && at > w.from && out.len() > at && out[at] == self.unk && out[at - 1] == self.unk {
            out.remove(at);
        }
    }

    /// Push `ids` (a chunk's, as merged alone).
    #[inline(always)]
    fn extend(&self, w: &Walk, ids: &[u32], out: &mut Vec<u32>) {
        let skip = !self.byte_fallback && ids[0] == self.unk && out.len() > w.from && out[out.len() - 1] == self.unk;
        out.extend_from_slice(&ids[skip as usize..]);
    }

    /// Merge `chunk` and push its ids.
    fn merged(&self, w: &Walk, chunk: &[u8], out: &mut Vec<u32>) {
        let Some(m) = merge(&self.tables, chunk) else {
            return self.long(w, chunk, out);
        };
        for k in 0..m.n {
            let span = &chunk[m.starts[k] as usize..m.starts[k + 1] as usize];
            self.symbol(w, m.syms[k], span, out);
        }
    }

    /// A chunk too long for `merge`: the general segmenter's ids.
    #[cold]
    fn long(&self, w: &Walk, chunk: &[u8], out: &mut Vec<u32>) {
        let mut tokens = Vec::new();
        (w.long)(&normalized(chunk), &mut tokens);
        let ids: Vec<u32> = tokens.iter().map(|&(id, _)| id).collect();
        if !ids.is_empty() {
            self.extend(w, &ids, out);
        }
    }

    /// Push one symbol spelled `span`: its id if it is a piece, else the
    /// unknown (its bytes with byte fallback).
    #[inline(always)]
    fn symbol(&self, w: &Walk, sym: u32, span: &[u8], out: &mut Vec<u32>) {
        if sym < self.tables.vocab_len {
            out.push(sym);
        } else {
            self.unknown(w, span, out);
        }
    }

    fn unknown(&self, w: &Walk, span: &[u8], out: &mut Vec<u32>) {
        if !self.byte_fallback {
            if out.len() == w.from || out[out.len() - 1] != self.unk {
                out.push(self.unk);
            }
            return;
        }
        for &b in span {
            if b == b' ' {
                out.extend(SPACE_SYMBOL.iter().map(|&s| self.byte_ids[s as usize]));
            } else {
                out.push(self.byte_ids[b as usize]);
            }
        }
    }
}

/// The start of the next line the memo looks up, from `pos` on: the line
/// at `pos` when `hot` (never the text's first, which alone takes the
/// dummy prefix), else the first sample, the first line to start at or
/// after `sample_at`.
#[inline(always)]
fn next_lookup(b: &[u8], pos: usize, sample_at: usize, hot: bool) -> Option<usize> {
    let start = match (hot, pos) {
        (true, 0) => line_end(b, 0),
        (true, _) => pos,
        (false, _) => line_end(b, (sample_at - 1).max(pos).min(b.len())),
    };
    (start < b.len()).then_some(start)
}

/// The normalized form of a chunk: every space as `▁`.
fn normalized(chunk: &[u8]) -> String {
    // chunks are whole characters of a `str` (and a leading space)
    String::from_utf8_lossy(chunk).replace(' ', "\u{2581}")
}

/// The length of the UTF-8 character that starts with `b`.
#[inline(always)]
fn utf8_len(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}
