//! Byte-pair encoding, byte-level (GPT-2 and later) and character-level
//! (with a continuing-subword prefix and/or end-of-word suffix).
//!
//! Tokens are stored as the bytes they stand for: for byte-level models the
//! raw bytes, for character-level models the UTF-8 of the token string.

mod backtrack;
mod cache;
mod driver;
pub(crate) mod lean_json;
mod merge;
mod piece;
mod serde_impl;
mod table;

use crate::models::Model;
use cache::*;
use driver::*;
use piece::Strategy;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::RwLock;
use table::{PieceTable, Slot, SLOT_IDS};

const NONE: u32 = u32::MAX;

/// What a `tokenizer.json` may spell in more than one way, as the file
/// that was read spelled it, so that saving an unchanged model writes the
/// same bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct JsonForm {
    /// merges as `["a", "b"]` (the current format), not `"a b"`
    pub merges_as_pairs: bool,
    /// `""` rather than `null` for no prefix / no suffix
    pub empty_prefix: bool,
    pub empty_suffix: bool,
    /// Tokens of a byte-level vocabulary written as plain text (not in the
    /// byte-level alphabet, such as DeepSeek's `<｜begin▁of▁sentence｜>`):
    /// their string is their text, as in `tokenizers`.
    pub raw_tokens: FxHashSet<Box<[u8]>>,
}

pub struct Bpe {
    pub(crate) vocab: FxHashMap<Vec<u8>, u32>,
    pub(crate) vocab_r: Vec<Option<Box<[u8]>>>,
    /// pair -> (rank, merged id); a lower rank merges first.
    pub(crate) merges: FxHashMap<(u32, u32), (u32, u32)>,
    pub byte_level: bool,
    pub unk_token: Option<String>,
    unk_id: Option<u32>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    /// Look the whole piece up before merging (tiktoken and Llama-3 behaviour).
    pub ignore_merges: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub dropout: Option<f32>,
    /// How the `tokenizer.json` this model was read from spelled it (see
    /// `JsonForm`); the default for a model made here.
    pub(crate) json_form: JsonForm,
    byte_ids: [u32; 256],
    /// Every byte is a token (`byte_ids` has no `NONE`).
    all_bytes: bool,
    /// How pieces are merged: chosen when the model is built (`Strategy::of`)
    /// and again when a token is added.
    strategy: Strategy,
    fallback_ids: [u32; 256],
    /// The tokens of at most `SHORT_MAX` bytes by packed key (see `short_key`):
    /// a whole-piece lookup without hashing a slice or comparing bytes.
    short: PieceTable,
    /// `merge::byte_pair_table`, made on first use (byte-level models).
    byte_pairs: std::sync::OnceLock<Box<[(i32, u32)]>>,
    /// `merges` laid out for encoding (see `merge::PairTable`), made on first use.
    pair_table: std::sync::OnceLock<merge::PairTable>,
    /// The token of `n` spaces at `n` (up to `SPACE_RUNS`; `u32::MAX` for
    /// none), made on first use (see `space_run`).
    space_runs: std::sync::OnceLock<Box<[u32]>>,
    /// The backtracking encoder, made on first use, for the models it
    /// applies to (see `backtrack`).
    backtrack: std::sync::OnceLock<Option<backtrack::Backtrack>>,
    /// What a thread's hot cache starts with (see `hot_seed`): made with
    /// the model where it looks whole pieces up, else on first use.
    hot_seed: std::sync::OnceLock<Option<HotSeed>>,
    /// A filter of the tokens longer than `SHORT_MAX` bytes, made on first
    /// use (see `maybe_long_token`).
    long_tokens: std::sync::OnceLock<Box<[u64]>>,
    /// Bytes of long multi-byte pieces met before the backtracking encoder
    /// was built (see `backtracks`).
    multibyte_seen: std::sync::atomic::AtomicUsize,
    cache: RwLock<PieceCache>,
    /// Tells this model's entries in the per-thread hot caches from others';
    /// a new one whenever the vocabulary changes.
    generation: u64,
}

pub struct BpeOptions {
    pub byte_level: bool,
    pub unk_token: Option<String>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    pub ignore_merges: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub dropout: Option<f32>,
}

impl Default for BpeOptions {
    fn default() -> Self {
        BpeOptions {
            byte_level: true,
            unk_token: None,
            fuse_unk: false,
            byte_fallback: false,
            ignore_merges: false,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
            dropout: None,
        }
    }
}

impl Bpe {
    /// `vocab`: (token bytes, id); `merges`: pairs in rank order.
    pub fn new(
        vocab: Vec<(Vec<u8>, u32)>,
        merges: &[(Vec<u8>, Vec<u8>)],
        opts: BpeOptions,
    ) -> crate::error::Result<Self> {
        use crate::error::Error;
        let mut map: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
        map.reserve(vocab.len());
        let max_id = vocab.iter().map(|(_, id)| *id).max().map_or(0, |m| m as usize + 1);
        let mut vocab_r: Vec<Option<Box<[u8]>>> = crate::error::filled(None, max_id, "the id table")?;
        for (tok, id) in vocab {
            if let Some(prev) = &vocab_r[id as usize] {
                return Err(Error::Format(format!(
                    "vocab: id {id} is used twice ({:?} and {:?})",
                    String::from_utf8_lossy(prev),
                    String::from_utf8_lossy(&tok)
                )));
            }
            if map.insert(tok.clone(), id).is_some() {
                return Err(Error::Format(format!(
                    "vocab: token {:?} appears twice",
                    String::from_utf8_lossy(&tok)
                )));
            }
            vocab_r[id as usize] = Some(tok.into_boxed_slice());
        }
        let mut m = FxHashMap::default();
        m.reserve(merges.len());
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut ab = Vec::new(); // (one buffer for every merged token)
        for (rank, (a, b)) in merges.iter().enumerate() {
            let ia = map
                .get(a)
                .ok_or_else(|| Error::Format(format!("merges[{rank}]: token {:?} is not in the vocab", lossy(a))))?;
            let ib = map
                .get(b)
                .ok_or_else(|| Error::Format(format!("merges[{rank}]: token {:?} is not in the vocab", lossy(b))))?;
            let (pa, pb) = (*ia, *ib);
            ab.clear();
            ab.extend_from_slice(a);
            match &opts.continuing_subword_prefix {
                // with a prefix, "a" + "##b" merges into "ab"
                Some(p) if b.starts_with(p.as_bytes()) => ab.extend_from_slice(&b[p.len()..]),
                _ => ab.extend_from_slice(b),
            }
            let suffix_free = &ab[..];
            let new_id = map.get(suffix_free).ok_or_else(|| {
                Error::Format(format!(
                    "merges[{rank}]: the merged token {:?} is not in the vocab",
                    lossy(suffix_free)
                ))
            })?;
            // a repeated pair keeps its last rank, as in `tokenizers`
            m.insert((pa, pb), (rank as u32, *new_id));
        }
        let bpe = Self::from_parts(map, vocab_r, m, opts);
        bpe.prepare_byte_pairs();
        Ok(bpe)
    }

    /// A model whose merges follow from the vocabulary alone: any two adjacent
    /// tokens whose concatenation is a token merge, lowest id first (tiktoken).
    pub fn from_ranks(vocab: Vec<(Vec<u8>, u32)>) -> crate::error::Result<Self> {
        let opts = BpeOptions {
            ignore_merges: true,
            ..BpeOptions::default()
        };
        let mut bpe = Bpe::new(vocab, &[], opts)?;
        bpe.merges = bpe
            .implied_merges(&|_| false)
            .into_iter()
            .map(|(pair, id)| (pair, (id, id)))
            .collect();
        bpe.byte_pairs = std::sync::OnceLock::new();
        bpe.pair_table = std::sync::OnceLock::new();
        bpe.backtrack = std::sync::OnceLock::new();
        bpe.prepare_byte_pairs();
        Ok(bpe)
    }

    pub(crate) fn from_parts(
        vocab: FxHashMap<Vec<u8>, u32>,
        vocab_r: Vec<Option<Box<[u8]>>>,
        merges: FxHashMap<(u32, u32), (u32, u32)>,
        opts: BpeOptions,
    ) -> Self {
        let mut byte_ids = [NONE; 256];
        let mut fallback_ids = [NONE; 256];
        for b in 0..=255u8 {
            if let Some(&id) = vocab.get(&[b][..]) {
                byte_ids[b as usize] = id;
            }
            if let Some(&id) = vocab.get(format!("<0x{b:02X}>").as_bytes()) {
                fallback_ids[b as usize] = id;
            }
        }
        let opts = BpeOptions {
            continuing_subword_prefix: opts.continuing_subword_prefix.filter(|p| !p.is_empty()),
            end_of_word_suffix: opts.end_of_word_suffix.filter(|p| !p.is_empty()),
            ..opts
        };
        let unk_id = opts.unk_token.as_ref().and_then(|u| vocab.get(u.as_bytes()).copied());
        let mut short = PieceTable::with_capacity(vocab.len());
        for (t, &id) in vocab.iter().filter(|(t, _)| t.len() <= SHORT_MAX) {
            let key = short_key(t);
            short.insert(key, PieceTable::hash(&key), &[id]);
        }
        let mut bpe = Bpe {
            vocab,
            vocab_r,
            merges,
            byte_level: opts.byte_level,
            unk_token: opts.unk_token,
            unk_id,
            fuse_unk: opts.fuse_unk,
            byte_fallback: opts.byte_fallback,
            ignore_merges: opts.ignore_merges,
            continuing_subword_prefix: opts.continuing_subword_prefix,
            end_of_word_suffix: opts.end_of_word_suffix,
            dropout: opts.dropout,
            json_form: JsonForm::default(),
            all_bytes: !byte_ids.contains(&NONE),
            strategy: Strategy::Symbols,
            byte_ids,
            fallback_ids,
            short,
            byte_pairs: std::sync::OnceLock::new(),
            pair_table: std::sync::OnceLock::new(),
            space_runs: std::sync::OnceLock::new(),
            backtrack: std::sync::OnceLock::new(),
            hot_seed: std::sync::OnceLock::new(),
            long_tokens: std::sync::OnceLock::new(),
            multibyte_seen: std::sync::atomic::AtomicUsize::new(0),
            cache: RwLock::new(FxHashMap::default()),
            generation: next_generation(),
        };
        bpe.strategy = Strategy::of(&bpe);
        // (made with the model, not at its first encode: 2.5 ms for
        // cl100k's 100K tokens, 4.5 ms for o200k's 200K)
        if bpe.ignore_merges {
            bpe.hot_seed();
        }
        bpe
    }

    /// Every `(a, b)` whose concatenation is a token, mapped to that token:
    /// the merges that a rank file (tiktoken) implies.
    fn implied_merges(&self, exclude: &dyn Fn(u32) -> bool) -> FxHashMap<(u32, u32), u32> {
        let mut merges = FxHashMap::default();
        for (tok, &id) in &self.vocab {
            if exclude(id) {
                continue;
            }
            for cut in 1..tok.len() {
                if let (Some(&a), Some(&b)) = (self.vocab.get(&tok[..cut]), self.vocab.get(&tok[cut..])) {
                    if !exclude(a) && !exclude(b) {
                        merges.insert((a, b), id);
                    }
                }
            }
        }
        merges
    }

    /// Whether this model encodes exactly as tiktoken would with ids as ranks:
    /// whole-piece lookup first, every implied pair a merge, merge order = id order.
    pub fn is_rank_equivalent(&self, exclude: &dyn Fn(u32) -> bool) -> bool {
        if !self.ignore_merges || !self.byte_level || self.dropping() {
            return false;
        }
        if self.continuing_subword_prefix.is_some()
            || self.end_of_word_suffix.is_some()
            || self.byte_ids.contains(&NONE)
        {
            return false;
        }
        let implied = self.implied_merges(exclude);
        if implied.len() != self.merges.len() {
            return false;
        }
        let mut by_rank: Vec<(u32, u32)> = Vec::with_capacity(self.merges.len());
        for (pair, &(rank, new_id)) in &self.merges {
            if implied.get(pair) != Some(&new_id) {
                return false;
            }
            by_rank.push((rank, new_id));
        }
        by_rank.sort_unstable();
        by_rank.windows(2).all(|w| w[0].1 <= w[1].1)
    }

    /// Merges as `(left, right)` ids in rank order.
    pub fn merges_in_order(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<((u32, u32), (u32, u32))> = self.merges.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_by_key(|(pair, (rank, _))| (*rank, *pair));
        v.into_iter().map(|(p, _)| p).collect()
    }

    pub fn vocab_iter(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.vocab_r
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_deref().map(|t| (i as u32, t)))
    }
}

impl Model for Bpe {
    #[inline]
    fn encode_scanned(&self, scanner: &crate::scanner::Scanner, text: &str, out: &mut Vec<u32>) -> bool {
        self.encode_scanned_text(scanner, text, out);
        true
    }
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        if self.ignore_merges {
            if let Some(id) = self.whole(piece) {
                out.push((id, piece.len() as u32));
                return;
            }
        }
        self.encode_merging(piece, out, &mut Vec::new());
    }

    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.vocab_r.get(id as usize).and_then(|t| t.as_deref())
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    fn vocab_len(&self) -> usize {
        self.vocab_r.len()
    }

    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        self.vocab_iter().collect()
    }

    fn token_string(&self, bytes: &[u8]) -> String {
        if self.byte_level && !self.json_form.raw_tokens.contains(bytes) {
            crate::bytelevel::bytes_to_string(bytes)
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        }
    }

    fn byte_level(&self) -> bool {
        self.byte_level
    }

    fn to_json(&self) -> serde_json::Value {
        Bpe::to_json(self)
    }

    fn push_token(&mut self, token: &[u8], id: u32) {
        Bpe::push_token(self, token, id)
    }

    fn set_unk(&mut self, unk: &str) {
        Bpe::set_unk(self, unk)
    }
}

impl Bpe {
    /// Set the unknown token (it must be in the vocabulary to take effect).
    pub fn set_unk(&mut self, unk: &str) {
        self.unk_id = self.vocab.get(unk.as_bytes()).copied();
        self.unk_token = Some(unk.to_string());
    }

    /// Add a token at a given id (used for special tokens kept in the model vocab).
    pub fn push_token(&mut self, token: &[u8], id: u32) {
        if self.vocab_r.len() <= id as usize {
            self.vocab_r.resize(id as usize + 1, None);
        }
        self.vocab_r[id as usize] = Some(token.into());
        self.vocab.insert(token.to_vec(), id);
        if token.len() <= SHORT_MAX {
            let key = short_key(token);
            self.short.insert(key, PieceTable::hash(&key), &[id]);
        }
        // earlier results may no longer hold
        self.strategy = Strategy::of(self);
        self.generation = next_generation();
        self.byte_pairs = std::sync::OnceLock::new();
        self.pair_table = std::sync::OnceLock::new();
        self.space_runs = std::sync::OnceLock::new();
        self.backtrack = std::sync::OnceLock::new();
        self.hot_seed = std::sync::OnceLock::new();
        self.long_tokens = std::sync::OnceLock::new();
        if let Ok(cache) = self.cache.get_mut() {
            cache.clear();
        }
    }
}

#[cfg(test)]
mod tests;
