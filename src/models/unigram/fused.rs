//! `Model::encode_fused` for Unigram: the normalizer, the pre-tokenizer
//! and the Viterbi in one pass, ids only, for the two pipelines Unigram
//! models come with:
//!
//! - `tokenizer.json` converted from SentencePiece (T5 and the like):
//!   `Precompiled` (optionally followed by `Replace(" {2,}", " ")`) and
//!   `Metaspace` that splits before every `▁`. Each piece is encoded on its
//!   own by the staged pipeline too, so a piece's tokens depend on the piece
//!   alone and are cached per thread (`cache`);
//! - a SentencePiece `.model`: the `SentencePiece` normalizer and no
//!   pre-tokenizer; the whole normalized text is one Viterbi, as in the
//!   staged pipeline (chunked at `▁` where that is exact, see `viterbi`).
//!
//! Any other configuration is declined and runs staged.

use super::cache::{key16, key_at, with_cache, WordCache, KEY_MAX, LONG_PIECE, SHORT_MAX};
use super::viterbi::with_scratch;
use super::Unigram;
use crate::normalizers::precompiled::CharsMap;
use crate::normalizers::sentencepiece::SentencePieceNormalizer;
use crate::normalizers::Normalizer;
use crate::pattern::Pattern;
use crate::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use crate::pre_tokenizers::PreTokenizer;
use std::cell::RefCell;

/// The text buffers of one thread.
#[derive(Default)]
struct Buffers {
    norm: String,
    word: Vec<u8>,
}

/// Buffers past this capacity are dropped after use.
const KEEP_BYTES: usize = 1 << 24;

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

fn with_buffers<R>(f: impl FnOnce(&mut Buffers) -> R) -> R {
    BUFFERS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut b) => {
            let r = f(&mut b);
            if b.norm.capacity() > KEEP_BYTES {
                b.norm = String::new();
            }
            r
        }
        Err(_) => f(&mut Buffers::default()),
    })
}

/// Pieces encoded together (see `encode_metaspace`).
const BATCH: usize = 16;

/// The pieces of a normalized text as `Metaspace` cuts them: each is
/// `rep` (if `marked`) then `bytes[start..end]`.
struct Scan<'a> {
    bytes: &'a [u8],
    rep: &'a [u8],
    /// runs of spaces count as one (`Replace(" {2,}", " ")`)
    collapse: bool,
    /// where the search for the next cut goes on
    i: usize,
    /// the piece under way
    start: usize,
    marked: bool,
    done: bool,
}

impl Scan<'_> {
    /// The next non-empty piece: `(start, end, marked)`.
    #[inline(always)]
    fn next(&mut self) -> Option<(usize, usize, bool)> {
        let (bytes, rep, n) = (self.bytes, self.rep, self.bytes.len());
        while !self.done {
            let mut i = next_boundary(bytes, self.i, rep[0]);
            while i < n && bytes[i] != b' ' && !bytes[i..].starts_with(rep) {
                // (another character that starts with that byte)
                i = next_boundary(bytes, i + 1, rep[0]);
            }
            let piece = (self.start, i, self.marked);
            if i == n {
                self.done = true;
            } else if bytes[i] == b' ' {
                // a space is the mark that starts the next piece
                i += 1;
                while self.collapse && i < n && bytes[i] == b' ' {
                    i += 1;
                }
                (self.start, self.marked) = (i, true);
            } else {
                (self.start, self.marked) = (i, false);
                i += rep.len();
            }
            self.i = i;
            if piece.1 > piece.0 || piece.2 {
                return Some(piece);
            }
        }
        None
    }
}

/// The first byte at or after `i` that is a space or `r0`, or the end.
#[inline(always)]
fn next_boundary(bytes: &[u8], mut i: usize, r0: u8) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let (space, mark) = (LO * b' ' as u64, LO * r0 as u64);
    while let Some(w) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(w.try_into().unwrap());
        let (a, b) = (w ^ space, w ^ mark);
        // the lowest flagged byte is a zero byte of `a` or `b` (a borrow
        // only flags bytes above a zero one)
        let m = (a.wrapping_sub(LO) & !a | b.wrapping_sub(LO) & !b) & HI;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i] != b' ' && bytes[i] != r0 {
        i += 1;
    }
    i
}

/// The charsmap of a `Precompiled` normalizer alone or followed by the
/// `Replace` of runs of spaces (`Some((map, collapse))`; `map` is `None`
/// without a normalizer), or `None` for anything else.
fn precompiled_chain(n: Option<&Normalizer>) -> Option<(Option<&CharsMap>, bool)> {
    let is_collapse = |n: &Normalizer| match n {
        Normalizer::Replace {
            pattern: Pattern::Regex { source, .. },
            content,
        } => source == " {2,}" && content == " ",
        _ => false,
    };
    match n {
        None => Some((None, false)),
        Some(Normalizer::Precompiled { precompiled_charsmap }) => Some((Some(&precompiled_charsmap.0), false)),
        Some(Normalizer::Sequence { normalizers }) => match normalizers.as_slice() {
            [Normalizer::Precompiled { precompiled_charsmap }] => Some((Some(&precompiled_charsmap.0), false)),
            [Normalizer::Precompiled { precompiled_charsmap }, r] if is_collapse(r) => {
                Some((Some(&precompiled_charsmap.0), true))
            }
            _ => None,
        },
        _ => None,
    }
}

impl Unigram {
    pub(super) fn fused(
        &self,
        normalizer: Option<&Normalizer>,
        pre_tokenizer: Option<&PreTokenizer>,
        text: &str,
        out: &mut Vec<u32>,
    ) -> bool {
        match (normalizer, pre_tokenizer) {
            (n, Some(PreTokenizer::Metaspace(m))) => {
                let Some((map, collapse)) = precompiled_chain(n) else {
                    return false;
                };
                // (`first` depends on where the text sits in the original)
                if !m.split || m.prepend_scheme == PrependScheme::First {
                    return false;
                }
                with_buffers(|b| self.encode_metaspace(map, collapse, m, text, b, out));
                true
            }
            (Some(Normalizer::SentencePiece(n)), None) => {
                with_buffers(|b| self.encode_sentencepiece(n, text, b, out));
                true
            }
            _ => false,
        }
    }

    fn encode_sentencepiece(&self, n: &SentencePieceNormalizer, text: &str, b: &mut Buffers, out: &mut Vec<u32>) {
        n.normalize_into(text, &mut b.norm);
        if b.norm.is_empty() {
            return;
        }
        out.reserve(b.norm.len() / 3);
        let text = &b.norm;
        with_scratch(|s| self.segment(text.as_bytes(), true, s, |segs| self.emit(text, segs, out)));
    }

    /// Normalize, replace spaces (collapsed if `collapse`) by the mark,
    /// prepend it, cut before every mark and encode each piece: what
    /// `Precompiled`, `Replace`, `Metaspace` and `encode_piece` do.
    fn encode_metaspace(
        &self,
        map: Option<&CharsMap>,
        collapse: bool,
        m: &Metaspace,
        text: &str,
        b: &mut Buffers,
        out: &mut Vec<u32>,
    ) {
        let norm: &str = match map {
            Some(map) => {
                b.norm.clear();
                map.normalize_into(text, &mut b.norm);
                &b.norm
            }
            None => text,
        };
        let mut rep_buf = [0u8; 4];
        let rep = m.replacement.encode_utf8(&mut rep_buf).as_bytes();
        let bytes = norm.as_bytes();
        let n = bytes.len();
        out.reserve(n / 4);
        let word = &mut b.word;
        with_cache((self.generation, m.replacement), |cache| {
            let starts = bytes.first() == Some(&b' ') || bytes.starts_with(rep);
            let mut scan = Scan {
                bytes,
                rep,
                collapse,
                i: 0,
                start: 0,
                marked: m.prepend_scheme == PrependScheme::Always && n > 0 && !starts,
                done: false,
            };
            // a batch of pieces at a time: their cache slots are fetched
            // while the ones before are encoded
            let mut batch = [(0usize, 0usize, false); BATCH];
            loop {
                let mut k = 0;
                while k < BATCH {
                    let Some(p) = scan.next() else { break };
                    let len = p.1 - p.0;
                    if len <= SHORT_MAX {
                        cache.prefetch_short(&key16(bytes, p.0, len, p.2));
                    } else if len <= KEY_MAX {
                        cache.prefetch(&key_at(bytes, p.0, len, p.2));
                    }
                    batch[k] = p;
                    k += 1;
                }
                for &(start, end, marked) in &batch[..k] {
                    self.encode_word(rep, marked, bytes, start, end, word, cache, out);
                }
                if k < BATCH {
                    break;
                }
            }
        });
    }

    /// The tokens of the piece `rep` (if `marked`) + `bytes[start..end]`,
    /// from the cache or the Viterbi (`word`: a buffer for the piece).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn encode_word(
        &self,
        rep: &[u8],
        marked: bool,
        bytes: &[u8],
        start: usize,
        end: usize,
        word: &mut Vec<u8>,
        cache: &mut WordCache,
        out: &mut Vec<u32>,
    ) {
        let len = end - start;
        if len == 0 && !marked {
            return;
        }
        if len > KEY_MAX {
            self.encode_long(rep, marked, &bytes[start..end], word, cache, out);
            return;
        }
        // (the cache belongs to this replacement: a key says only whether it is there)
        let short = (len <= SHORT_MAX).then(|| key16(bytes, start, len, marked));
        if let Some(ids) = short.as_ref().and_then(|k| cache.get_short(k)) {
            for &id in ids {
                out.push(id);
            }
            return;
        }
        // (a short piece of more tokens is kept in a long slot)
        let key = Some(key_at(bytes, start, len, marked));
        if let Some(ids) = key.as_ref().and_then(|k| cache.get(k)) {
            for &id in ids {
                out.push(id);
            }
            return;
        }
        word.clear();
        if marked {
            word.extend_from_slice(rep);
        }
        word.extend_from_slice(&bytes[start..end]);
        let first = out.len();
        self.encode_ids(word, out);
        let ids = &out[first..];
        if !short.is_some_and(|k| cache.insert_short(&k, ids)) {
            if let Some(k) = &key {
                cache.insert(k, ids);
            }
        }
    }

    /// [`Unigram::encode_word`] for a piece longer than a slot's key.
    #[cold]
    fn encode_long(
        &self,
        rep: &[u8],
        marked: bool,
        body: &[u8],
        word: &mut Vec<u8>,
        cache: &mut WordCache,
        out: &mut Vec<u32>,
    ) {
        word.clear();
        if marked {
            word.extend_from_slice(rep);
        }
        word.extend_from_slice(body);
        if word.len() > LONG_PIECE {
            self.encode_ids(word, out);
            return;
        }
        if let Some(ids) = cache.long.get(word) {
            out.extend_from_slice(ids);
            return;
        }
        let first = out.len();
        self.encode_ids(word, out);
        cache.long.insert(word, &out[first..]);
    }

    /// The tokens of one metaspace piece: no `▁` past its start, so one chunk.
    fn encode_ids(&self, piece: &[u8], out: &mut Vec<u32>) {
        // SAFETY: a piece is the mark and a part of a str cut before a
        // space or before the mark: whole characters, so UTF-8.
        let text = unsafe { std::str::from_utf8_unchecked(piece) };
        with_scratch(|s| self.segment(piece, false, s, |segs| self.emit(text, segs, out)));
    }
}
