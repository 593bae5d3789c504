//! SentencePiece's BPE (Llama-2, Mistral `.model` files), as `sentencepiece`
//! encodes: the text is cut into characters (user-defined pieces stay whole
//! and never merge), then any two neighbours whose concatenation is a piece
//! merge, highest piece score first and, among equal scores, leftmost first;
//! unused pieces are split back into what made them; characters no piece
//! covers become `<unk>` (runs of them one `<unk>`) or, with byte fallback,
//! their bytes `<0xXX>`.
//!
//! The tie rule matters: Llama-2 gives every whitespace-only piece the same
//! score, so runs of spaces group from the left. A merge list (the
//! `tokenizer.json` form) gives every merge its own rank and groups them
//! otherwise; `to_json` still writes one (ordered by score) so `tokenizers`
//! can read the file, plus the pieces with scores and types, from which
//! tokensmith rebuilds this model.

mod cache;
mod fused;
mod lines;
mod merge;
mod tables;

use crate::error::{Error, Result};
use crate::models::unigram::{PieceType, SpIndex};
use crate::models::Model;
use crate::trie::Trie;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::RwLock;

const NONE: u32 = u32::MAX;

pub struct SentencePieceBpe {
    pieces: Vec<(String, f64)>,
    types: Vec<PieceType>,
    scores: Vec<f32>,
    index: SpIndex,
    byte_fallback: bool,
    byte_ids: [u32; 256],
    /// user-defined pieces, matched longest first and never merged
    frozen: Option<Trie>,
    token_to_id: FxHashMap<String, u32>,
    /// no piece has `▁` after another character: the text can be cut
    /// before every `▁` that follows something else, and the words encoded
    /// one by one (and cached) with the same result
    word_split: bool,
    cache: RwLock<WordCache>,
    /// the fused pass (`encode_fused`), if the pieces allow it
    fused: Option<fused::Fused>,
}

/// word -> its `(id, byte length)` tokens
type WordCache = FxHashMap<Box<str>, Box<[(u32, u32)]>>;

const CACHE_CAPACITY: usize = 100_000;
const CACHE_MAX_WORD: usize = 64;
const SPACE: char = '\u{2581}';

#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: u32,
    next: u32,
    freeze: bool,
}

/// A candidate merge; the heap pops the highest score, then the leftmost.
struct Cand {
    score: f32,
    left: u32,
    right: u32,
    size: usize,
}

impl PartialEq for Cand {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| other.left.cmp(&self.left))
            .then_with(|| other.right.cmp(&self.right))
            .then_with(|| other.size.cmp(&self.size))
    }
}

impl SentencePieceBpe {
    /// `pieces[i] = (piece, score, type)` for id `i`.
    pub fn new(pieces: Vec<(String, f64, PieceType)>, byte_fallback: bool) -> Result<Self> {
        let vocab: Vec<(String, f64)> = pieces.iter().map(|(p, s, _)| (p.clone(), *s)).collect();
        let types: Vec<PieceType> = pieces.iter().map(|(_, _, t)| *t).collect();
        let index = SpIndex::new(&vocab, &types, byte_fallback)?;
        let mut byte_ids = [NONE; 256];
        for b in 0..=255u8 {
            if let Some(&id) = index.reserved.get(&format!("<0x{b:02X}>")) {
                byte_ids[b as usize] = id;
            }
        }
        let user: Vec<(&[u8], u32)> = vocab
            .iter()
            .zip(&types)
            .enumerate()
            .filter(|(_, (_, t))| **t == PieceType::UserDefined)
            .map(|(i, ((p, _), _))| (p.as_bytes(), i as u32))
            .collect();
        let frozen = (!user.is_empty()).then(|| Trie::build(user));
        let mut token_to_id = FxHashMap::default();
        for (p, &i) in index.normal.iter().chain(index.reserved.iter()) {
            token_to_id.insert(p.clone(), i);
        }
        // (and a lone `▁` is a piece or spelled in bytes, so that unknown
        // characters never fuse across the cut)
        let word_split = (byte_fallback || index.normal.contains_key("\u{2581}"))
            && index
                .normal
                .keys()
                .all(|p| p.trim_start_matches(SPACE).find(SPACE).is_none());
        let fused = fast_path(&vocab, &types, byte_fallback, &byte_ids, index.unk_id);
        Ok(SentencePieceBpe {
            fused,
            word_split,
            cache: RwLock::new(FxHashMap::default()),
            scores: vocab.iter().map(|(_, s)| *s as f32).collect(),
            pieces: vocab,
            types,
            index,
            byte_fallback,
            byte_ids,
            frozen,
            token_to_id,
        })
    }

    /// The pieces of `text` as `(start, end, id)`, before unknown handling.
    fn segment<'a>(&self, text: &'a str, out: &mut Vec<(&'a str, u32)>) {
        self.segment_with(text, out, &mut || false)
    }

    /// `segment`, skipping each merge for which `skip()` says so
    /// (BPE-dropout, Provilkov et al. 2020, as `sentencepiece` samples it).
    fn segment_with<'a>(&self, text: &'a str, out: &mut Vec<(&'a str, u32)>, skip: &mut dyn FnMut() -> bool) {
        let bytes = text.as_bytes();
        let mut syms: Vec<Symbol> = Vec::with_capacity(text.len());
        let mut pos = 0;
        while pos < bytes.len() {
            let (len, freeze) = match self.frozen.as_ref().and_then(|t| t.longest_prefix(&bytes[pos..])) {
                Some((n, _)) => (n, true),
                None => (text[pos..].chars().next().map_or(1, char::len_utf8), false),
            };
            let i = syms.len() as u32;
            syms.push(Symbol {
                start: pos,
                len,
                prev: if i == 0 { NONE } else { i - 1 },
                next: NONE,
                freeze,
            });
            pos += len;
            if pos < bytes.len() {
                syms[i as usize].next = i + 1;
            }
        }
        let mut agenda: BinaryHeap<Cand> = BinaryHeap::with_capacity(syms.len());
        // for unused pieces: what they were made of
        let mut rev_merge: FxHashMap<&'a str, (&'a str, &'a str)> = FxHashMap::default();
        let try_pair = |syms: &[Symbol],
                        agenda: &mut BinaryHeap<Cand>,
                        rev: &mut FxHashMap<&'a str, (&'a str, &'a str)>,
                        left: u32,
                        right: u32| {
            if left == NONE || right == NONE {
                return;
            }
            let (l, r) = (syms[left as usize], syms[right as usize]);
            if l.freeze || r.freeze {
                return;
            }
            let piece = &text[l.start..l.start + l.len + r.len];
            let Some(&id) = self.index.normal.get(piece) else {
                return;
            };
            agenda.push(Cand {
                score: self.scores[id as usize],
                left,
                right,
                size: piece.len(),
            });
            if self.types[id as usize] == PieceType::Unused {
                rev.insert(
                    piece,
                    (&text[l.start..l.start + l.len], &text[r.start..r.start + r.len]),
                );
            }
        };
        for i in 1..syms.len() as u32 {
            try_pair(&syms, &mut agenda, &mut rev_merge, i - 1, i);
        }
        while let Some(top) = agenda.pop() {
            let (l, r) = (syms[top.left as usize], syms[top.right as usize]);
            if l.len == 0 || r.len == 0 || l.len + r.len != top.size {
                continue; // stale
            }
            if skip() {
                continue; // dropped this time
            }
            syms[top.left as usize].len += r.len;
            syms[top.left as usize].next = r.next;
            if r.next != NONE {
                syms[r.next as usize].prev = top.left;
            }
            syms[top.right as usize].len = 0;
            let prev = syms[top.left as usize].prev;
            let next = syms[top.left as usize].next;
            try_pair(&syms, &mut agenda, &mut rev_merge, prev, top.left);
            try_pair(&syms, &mut agenda, &mut rev_merge, top.left, next);
        }
        let mut i = if syms.is_empty() { NONE } else { 0 };
        while i != NONE {
            let s = syms[i as usize];
            self.resegment(&text[s.start..s.start + s.len], &rev_merge, out, 0);
            i = s.next;
        }
    }

    fn resegment<'a>(
        &self,
        w: &'a str,
        rev: &FxHashMap<&'a str, (&'a str, &'a str)>,
        out: &mut Vec<(&'a str, u32)>,
        depth: usize,
    ) {
        let id = self.index.piece_to_id(w);
        if self.types[id as usize] != PieceType::Unused || depth > 64 {
            out.push((w, id));
            return;
        }
        match rev.get(w) {
            Some(&(a, b)) => {
                self.resegment(a, rev, out, depth + 1);
                self.resegment(b, rev, out, depth + 1);
            }
            None => out.push((w, id)),
        }
    }
}

/// The fused pass for these pieces, or None if they have what it does not
/// handle: user-defined pieces (never merged, matched first), unused ones
/// (split back after the merge), or byte fallback with a byte missing.
fn fast_path(
    pieces: &[(String, f64)],
    types: &[PieceType],
    byte_fallback: bool,
    byte_ids: &[u32; 256],
    unk: u32,
) -> Option<fused::Fused> {
    if types
        .iter()
        .any(|t| matches!(t, PieceType::UserDefined | PieceType::Unused))
    {
        return None;
    }
    if byte_fallback && byte_ids.contains(&NONE) {
        return None;
    }
    let tables = tables::Tables::build(pieces, types)?;
    // a line encodes alone where `\n` is always cut off and unknowns are
    // bytes (an `<unk>` would fuse with one on the line before)
    let lines = byte_fallback && !tables.joins_any(u32::from(b'\n'));
    Some(fused::Fused {
        tables,
        byte_fallback,
        byte_ids: *byte_ids,
        unk,
        generation: cache::next_generation(),
        lines,
    })
}

impl SentencePieceBpe {
    /// Encode one word (or the whole text), through the cache for short words.
    fn encode_word(&self, text: &str, out: &mut Vec<(u32, u32)>) {
        let cacheable = text.len() <= CACHE_MAX_WORD;
        if cacheable {
            if let Ok(c) = self.cache.read() {
                if let Some(hit) = c.get(text) {
                    out.extend_from_slice(hit);
                    return;
                }
            }
        }
        let from = out.len();
        self.encode_text(text, out);
        if cacheable {
            if let Ok(mut c) = self.cache.write() {
                if c.len() >= CACHE_CAPACITY {
                    c.clear();
                }
                c.insert(text.into(), out[from..].into());
            }
        }
    }

    /// One encoding with BPE-dropout: every merge is skipped with
    /// probability `alpha` (0: the usual encoding; 1: characters).
    pub fn sample_text(
        &self,
        text: &str,
        alpha: f64,
        rng: &mut crate::models::unigram::Rng,
        out: &mut Vec<(u32, u32)>,
    ) {
        let mut segs = Vec::new();
        if alpha <= 0.0 {
            self.segment(text, &mut segs);
        } else {
            self.segment_with(text, &mut segs, &mut || alpha >= 1.0 || rng.uniform() < alpha);
        }
        self.emit(segs, out);
    }

    fn encode_text(&self, text: &str, out: &mut Vec<(u32, u32)>) {
        let mut segs = Vec::new();
        self.segment(text, &mut segs);
        self.emit(segs, out);
    }

    fn emit(&self, segs: Vec<(&str, u32)>, out: &mut Vec<(u32, u32)>) {
        let unk = self.index.unk_id;
        let mut prev_unk = false;
        for (w, id) in segs {
            let is_unk = id == unk;
            if is_unk && self.byte_fallback {
                out.extend(w.bytes().map(|b| (self.byte_ids[b as usize], 1)));
            } else if is_unk && prev_unk {
                if let Some(last) = out.last_mut() {
                    last.1 += w.len() as u32;
                }
            } else {
                out.push((id, w.len() as u32));
            }
            prev_unk = is_unk;
        }
    }
}

impl Model for SentencePieceBpe {
    fn encode_fused(
        &self,
        normalizer: Option<&crate::normalizers::Normalizer>,
        pre_tokenizer: Option<&crate::pre_tokenizers::PreTokenizer>,
        text: &str,
        out: &mut Vec<u32>,
    ) -> bool {
        let (Some(f), None, Some(crate::normalizers::Normalizer::SentencePiece(n))) =
            (&self.fused, pre_tokenizer, normalizer)
        else {
            return false;
        };
        if !fused::spec_fits(&n.spec) {
            return false;
        }
        let long = |t: &str, o: &mut Vec<(u32, u32)>| self.encode_text(t, o);
        cache::with_cache(f.generation, |c| f.encode(text, n.spec.add_dummy_prefix, &long, c, out));
        true
    }

    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        let Ok(text) = std::str::from_utf8(piece) else { return };
        if !self.word_split {
            return self.encode_text(text, out);
        }
        // cut before every `▁` that follows another character
        let mut start = 0;
        let mut prev_space = true;
        for (i, c) in text.char_indices() {
            let is_space = c == SPACE;
            if is_space && !prev_space && i > start {
                self.encode_word(&text[start..i], out);
                start = i;
            }
            prev_space = is_space;
        }
        if start < text.len() {
            self.encode_word(&text[start..], out);
        }
    }

    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.pieces.get(id as usize).map(|(p, _)| p.as_bytes())
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        std::str::from_utf8(token)
            .ok()
            .and_then(|t| self.token_to_id.get(t).copied())
    }

    fn vocab_len(&self) -> usize {
        self.pieces.len()
    }

    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        self.pieces
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (i as u32, p.as_bytes()))
            .collect()
    }

    fn to_json(&self) -> Value {
        // the `tokenizers` form: vocabulary and merges ordered by score ...
        let mut vocab = Map::new();
        for (i, (p, _)) in self.pieces.iter().enumerate() {
            if !vocab.contains_key(p) {
                vocab.insert(p.clone(), json!(i));
            }
        }
        let mut order: Vec<u32> = (0..self.pieces.len() as u32)
            .filter(|&i| self.types[i as usize] == PieceType::Normal)
            .collect();
        order.sort_by(|&a, &b| {
            self.scores[b as usize]
                .partial_cmp(&self.scores[a as usize])
                .unwrap_or(Ordering::Equal)
                .then(a.cmp(&b))
        });
        let mut merges = Vec::new();
        for id in order {
            let p = &self.pieces[id as usize].0;
            for (cut, _) in p.char_indices().skip(1) {
                let (a, b) = p.split_at(cut);
                if self.index.normal.contains_key(a) && self.index.normal.contains_key(b) {
                    merges.push(json!([a, b]));
                }
            }
        }
        // ... and what tokensmith reads back: pieces, scores, types
        let sp: Vec<Value> = self
            .pieces
            .iter()
            .zip(&self.types)
            .map(|((p, s), t)| json!([p, s, *t as u8]))
            .collect();
        json!({
            "type": "BPE",
            "dropout": null,
            "unk_token": self.pieces[self.index.unk_id as usize].0,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": true,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": false,
            "vocab": vocab,
            "merges": merges,
            "sentencepiece": sp,
        })
    }

    fn push_token(&mut self, _token: &[u8], _id: u32) {
        // the vocabulary of a .model is fixed; special tokens are already pieces
    }

    fn surface_token(&self, id: u32) -> bool {
        id == self.index.unk_id
    }
}

impl SentencePieceBpe {
    /// `{"type": "BPE", ..., "sentencepiece": [[piece, score, type], ...]}`.
    pub fn from_json(model: &Value) -> Result<Self> {
        let rows = model
            .get("sentencepiece")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Format("model.sentencepiece: expected a list of [piece, score, type]".into()))?;
        let mut pieces = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            let parsed = r.as_array().filter(|a| a.len() == 3).and_then(|a| {
                Some((
                    a[0].as_str()?.to_string(),
                    a[1].as_f64()?,
                    PieceType::from_i64(a[2].as_i64()?)?,
                ))
            });
            match parsed {
                Some(p) => pieces.push(p),
                None => {
                    return Err(Error::Format(format!(
                        "model.sentencepiece[{i}]: expected [piece, score, type 1-6], found {r}"
                    )))
                }
            }
        }
        let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool).unwrap_or(false);
        SentencePieceBpe::new(pieces, byte_fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(byte_fallback: bool) -> SentencePieceBpe {
        use PieceType::*;
        let mut v: Vec<(String, f64, PieceType)> = vec![
            ("<unk>".into(), 0.0, Unknown),
            ("<s>".into(), 0.0, Control),
            ("\u{2581}\u{2581}".into(), -1e9, Normal),
            ("\u{2581}\u{2581}\u{2581}\u{2581}".into(), -1e9, Normal),
            ("ab".into(), -1.0, Normal),
            ("abc".into(), -2.0, Normal),
            ("bc".into(), -0.5, Unused),
            ("a".into(), -3.0, Normal),
            ("b".into(), -3.0, Normal),
            ("c".into(), -3.0, Normal),
            ("\u{2581}".into(), -3.0, Normal),
            ("xy".into(), 0.0, UserDefined),
            ("x".into(), -3.0, Normal),
            ("y".into(), -3.0, Normal),
        ];
        if byte_fallback {
            for b in 0..=255u8 {
                v.push((format!("<0x{b:02X}>"), 0.0, Byte));
            }
        }
        SentencePieceBpe::new(v, byte_fallback).unwrap()
    }

    fn ids(m: &SentencePieceBpe, s: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.encode_piece(s.as_bytes(), &mut out);
        out.into_iter().map(|(i, _)| i).collect()
    }

    #[test]
    fn merges_by_score_then_leftmost() {
        let m = model(false);
        // the unused "bc" (-0.5) merges before "ab" (-1), then "abc" forms
        assert_eq!(ids(&m, "abc"), [5]);
        // alone, an unused piece is split back into what made it
        assert_eq!(ids(&m, "bc"), [8, 9]);
        assert_eq!(ids(&m, "ab"), [4]);
        // equal scores: leftmost first, so 5 spaces are ▁▁▁▁ + ▁ (not ▁ + ▁▁▁▁)
        assert_eq!(ids(&m, "\u{2581}\u{2581}\u{2581}\u{2581}\u{2581}"), [3, 10]);
        assert_eq!(ids(&m, "\u{2581}\u{2581}\u{2581}"), [2, 10]);
    }

    #[test]
    fn user_defined_pieces_stay_whole_and_unknowns_fall_back() {
        let m = model(false);
        assert_eq!(ids(&m, "axy"), [7, 11]);
        assert_eq!(ids(&m, "\u{e9}\u{e9}a"), [0, 7]);
        let m = model(true);
        let n = 14; // the byte pieces follow the 14 others
        assert_eq!(ids(&m, "\u{e9}a"), [n + 0xC3, n + 0xA9, 7]);
        // text spelling a control piece is characters
        assert_eq!(ids(&m, "<s>"), [n + b'<' as u32, n + b's' as u32, n + b'>' as u32]);
    }

    #[test]
    fn json_round_trip() {
        let m = model(true);
        let j = m.to_json();
        assert_eq!(j["merges"][0], json!(["a", "b"]));
        let back = SentencePieceBpe::from_json(&j).unwrap();
        assert_eq!(ids(&back, "abcxy\u{e9}"), ids(&m, "abcxy\u{e9}"));
    }
}
