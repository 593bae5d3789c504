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

use super::cache::{key_at, key_of, ChunkCache, KEY_MAX};
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
}

/// Encodes a normalized text into `(id, byte length)` tokens.
pub(super) type Long<'a> = &'a dyn Fn(&str, &mut Vec<(u32, u32)>);

impl Fused {
    /// Encode `text` (normalized as `spec_fits` says, with the dummy
    /// prefix if `dummy`) into `out`.
    pub fn encode(&self, text: &str, dummy: bool, long: Long, cache: &mut ChunkCache, out: &mut Vec<u32>) {
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
        };
        let (mut prev, mut pos) = if dummy { (SPACE_CODE, 0) } else { decode(b, 0) };
        while pos < b.len() {
            let c = b[pos];
            // two ASCII characters: one bit decides
            let (code, len, joined) = if c < 0x80 && prev < 0x80 {
                (c as u32, 1, t.ascii_joined(prev, c as u32))
            } else {
                let (code, len) = decode(b, pos);
                (code, len, t.joined(prev, t.info(prev), code, t.info(code)))
            };
            if !joined {
                self.chunk(&w, pos, prev, cache, out);
                w.start = pos;
                w.prefixed = false;
            }
            prev = code;
            pos += len;
        }
        self.chunk(&w, b.len(), prev, cache, out);
    }

    /// Encode the chunk from `w.start` to `end`; `last` is the code of its
    /// last character.
    #[inline(always)]
    fn chunk(&self, w: &Walk, end: usize, last: u32, cache: &mut ChunkCache, out: &mut Vec<u32>) {
        let raw = &w.text[w.start..end];
        if w.prefixed {
            let mut chunk = Vec::with_capacity(raw.len() + 1);
            chunk.push(b' ');
            chunk.extend_from_slice(raw);
            return self.cached(w, &chunk, None, cache, out);
        }
        // one character: its own symbol (the chunk's last is its only one)
        if raw.len() == 1 || raw.len() == utf8_len(raw[0]) {
            return self.symbol(w, symbol_of(self.tables.info(last)), raw, out);
        }
        self.cached(w, raw, Some(w.start), cache, out)
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
