//! Unigram language-model tokenization: every piece has a log-probability
//! (its score) and a text is cut into the pieces whose scores sum highest
//! (Viterbi over a trie of the pieces, linear in the text for a bounded
//! piece length).
//!
//! Two flavours of exactness, chosen by how the model was loaded:
//! - from `tokenizer.json` (`{"type": "Unigram", ...}`): as `tokenizers`
//!   does it: scores in f64, every vocabulary entry can match, a character no
//!   piece covers costs `min score - 10` and runs of them fuse into one
//!   `<unk>` (or their bytes, `<0xXX>`, with byte fallback);
//! - from a SentencePiece `.model` (`piece_types` present): as
//!   `sentencepiece` does it: scores summed in f32, control/unknown/byte
//!   pieces never match text, unused pieces are skipped, user-defined pieces
//!   get the bonus that makes them win, and byte fallback applies to each
//!   unknown piece.
//!
//! N-best segmentations and sampling (`nbest`, `sample`) follow
//! `sentencepiece`'s lattice algorithms.

mod cache;
mod darts;
mod fused;
pub mod lattice;
mod viterbi;

use crate::error::{Error, Result};
use crate::models::Model;
use darts::DoubleArray;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

pub use lattice::Rng;

const NONE: u32 = u32::MAX;
const UNK_PENALTY: f64 = 10.0;
/// `sentencepiece` re-bases its running path score past this (see `viterbi_sp`).
const SP_RESET: f32 = 100_000.0;

/// The score `sentencepiece` gives a user-defined piece of `length` bytes
/// (characters, in its lattice): above any path of shorter pieces (scores
/// are log probabilities, at most 0), so that it is always taken.
fn user_defined_score(length: usize) -> f32 {
    (0.1 * (length as f64 - 1.0)) as f32
}

/// `ModelProto.SentencePiece.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
}

impl PieceType {
    pub fn from_i64(v: i64) -> Option<PieceType> {
        Some(match v {
            1 => PieceType::Normal,
            2 => PieceType::Unknown,
            3 => PieceType::Control,
            4 => PieceType::UserDefined,
            5 => PieceType::Unused,
            6 => PieceType::Byte,
            _ => return None,
        })
    }
}

/// What `sentencepiece` needs beyond the vocabulary.
struct SpSemantics {
    types: Vec<PieceType>,
    scores: Vec<f32>,
    /// the score a piece has when the optimized encoder matches it (its
    /// score, or the user-defined bonus), by id
    match_scores: Vec<f32>,
    /// the lowest score of a normal piece (an unknown character costs 10 less)
    min_score: f32,
}

pub struct Unigram {
    pieces: Vec<(String, f64)>,
    token_to_id: FxHashMap<String, u32>,
    /// the pieces that can match text, by bytes
    dat: DoubleArray,
    /// `pieces`' scores, dense
    scores_f64: Vec<f64>,
    /// No matchable piece has `▁` past its first character: every `▁`
    /// starts a token, and the text between two is solved alone (see
    /// `viterbi`).
    chunk_safe: bool,
    /// Tells this model's per-thread caches from another's (see `cache`).
    generation: u64,
    /// the length of the longest entry of `token_to_id`, in bytes
    longest_piece: usize,
    unk_id: Option<u32>,
    pub byte_fallback: bool,
    min_score: f64,
    byte_ids: [u32; 256],
    sp: Option<SpSemantics>,
    /// Scores as the file wrote them, where they differ from `pieces`: a
    /// `tokenizer.json` is parsed as `tokenizers` parses it (whose float
    /// parsing can be one unit in the last place off, and whose ties the
    /// encoder must break alike), and saved with the file's own values.
    written: FxHashMap<u32, f64>,
}

/// Where tokens go: `(id, byte length)` pairs, or ids alone.
pub(crate) trait Sink {
    fn push(&mut self, id: u32, len: u32);
    /// Lengthen the last token (an unknown run fused into it).
    fn grow_last(&mut self, len: u32);
}

impl Sink for Vec<(u32, u32)> {
    #[inline]
    fn push(&mut self, id: u32, len: u32) {
        Vec::push(self, (id, len));
    }
    fn grow_last(&mut self, len: u32) {
        if let Some(last) = self.last_mut() {
            last.1 += len;
        }
    }
}

impl Sink for Vec<u32> {
    #[inline]
    fn push(&mut self, id: u32, _len: u32) {
        Vec::push(self, id);
    }
    fn grow_last(&mut self, _len: u32) {}
}

/// One segment of a segmentation: start and end byte, id (`NONE`: unknown
/// character and no `<unk>`).
type Seg = (usize, usize, u32);

#[inline]
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// The piece tables `sentencepiece` builds (`ModelInterface::InitializePieces`),
/// with its checks.
pub(crate) struct SpIndex {
    /// normal, user-defined and unused pieces
    pub normal: FxHashMap<String, u32>,
    /// unknown, control and byte pieces
    pub reserved: FxHashMap<String, u32>,
    pub unk_id: u32,
}

impl SpIndex {
    pub fn new(vocab: &[(String, f64)], types: &[PieceType], byte_fallback: bool) -> Result<SpIndex> {
        if types.len() != vocab.len() {
            return Err(Error::Format(format!(
                "model.piece_types: {} types for {} pieces",
                types.len(),
                vocab.len()
            )));
        }
        if vocab.is_empty() {
            return Err(Error::Format("model.vocab: no pieces".into()));
        }
        let mut normal: FxHashMap<String, u32> = FxHashMap::default();
        let mut reserved: FxHashMap<String, u32> = FxHashMap::default();
        let mut unk_id = None;
        let mut bytes_found = [false; 256];
        for (i, ((p, _), t)) in vocab.iter().zip(types).enumerate() {
            if p.is_empty() {
                return Err(Error::Format(format!("model.vocab[{i}]: empty piece")));
            }
            let set = match t {
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused => &mut normal,
                _ => &mut reserved,
            };
            if set.insert(p.clone(), i as u32).is_some() {
                return Err(Error::Format(format!(
                    "model.vocab[{i}]: the piece {p:?} is already defined"
                )));
            }
            match t {
                PieceType::Unknown => {
                    if unk_id.is_some() {
                        return Err(Error::Format(format!("model.vocab[{i}]: a second unknown piece {p:?}")));
                    }
                    unk_id = Some(i as u32);
                }
                PieceType::Byte => {
                    if !byte_fallback {
                        return Err(Error::Format(format!(
                            "model.vocab[{i}]: byte piece {p:?} in a model without byte_fallback"
                        )));
                    }
                    match crate::decoders::sentencepiece::parse_byte_piece(p) {
                        Some(b) => bytes_found[b as usize] = true,
                        None => return Err(Error::Format(format!("model.vocab[{i}]: invalid byte piece {p:?}"))),
                    }
                }
                _ => {}
            }
        }
        let Some(unk) = unk_id else {
            return Err(Error::Format("model: no unknown piece (<unk>) is defined".into()));
        };
        if byte_fallback && bytes_found.iter().any(|f| !f) {
            return Err(Error::Format(
                "model: byte_fallback is set but the 256 byte pieces <0x00>..<0xFF> are not all there".into(),
            ));
        }
        Ok(SpIndex {
            normal,
            reserved,
            unk_id: unk,
        })
    }

    /// `PieceToId`: reserved pieces first, then the others, else `<unk>`.
    pub fn piece_to_id(&self, piece: &str) -> u32 {
        self.reserved
            .get(piece)
            .or_else(|| self.normal.get(piece))
            .copied()
            .unwrap_or(self.unk_id)
    }
}

impl Unigram {
    /// A model with the semantics of `tokenizers` (`tokenizer.json`).
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<u32>, byte_fallback: bool) -> Result<Self> {
        if let Some(u) = unk_id {
            if vocab.is_empty() {
                return Err(Error::Format("model.vocab: empty, but unk_id is set".into()));
            }
            if u as usize >= vocab.len() {
                return Err(Error::Format(format!(
                    "model.unk_id: {u} is not in the vocabulary ({} pieces)",
                    vocab.len()
                )));
            }
        }
        if vocab.len() >= NONE as usize {
            return Err(Error::Format("model.vocab: too many pieces".into()));
        }
        let mut token_to_id = FxHashMap::default();
        token_to_id.reserve(vocab.len());
        let mut min_score = f64::INFINITY;
        for (i, (p, s)) in vocab.iter().enumerate() {
            token_to_id.insert(p.clone(), i as u32);
            if *s < min_score {
                min_score = *s;
            }
        }
        // the trie maps a piece to the id `token_to_id` gives it (the last duplicate)
        let mut m = Unigram {
            pieces: vocab,
            token_to_id,
            dat: DoubleArray::default(),
            scores_f64: Vec::new(),
            chunk_safe: false,
            generation: 0,
            longest_piece: 0,
            unk_id,
            byte_fallback,
            min_score,
            byte_ids: [NONE; 256],
            sp: None,
            written: FxHashMap::default(),
        };
        m.index_bytes();
        m.index_pieces();
        Ok(m)
    }

    /// A model with the semantics of `sentencepiece` (a `.model` file):
    /// `types[i]` is the type of piece `i`.
    pub fn with_piece_types(vocab: Vec<(String, f64)>, types: Vec<PieceType>, byte_fallback: bool) -> Result<Self> {
        let index = SpIndex::new(&vocab, &types, byte_fallback)?;
        let unk = index.unk_id;
        let mut min_score = f32::MAX;
        let scores: Vec<f32> = vocab.iter().map(|(_, s)| *s as f32).collect();
        for (s, t) in scores.iter().zip(&types) {
            if *t == PieceType::Normal {
                min_score = min_score.min(*s);
            }
        }
        // `PieceToId`: reserved pieces first, then the others
        let mut token_to_id: FxHashMap<String, u32> = FxHashMap::default();
        for (p, i) in index.normal.iter().chain(index.reserved.iter()) {
            token_to_id.insert(p.clone(), *i);
        }
        let mut m = Unigram {
            token_to_id,
            dat: DoubleArray::default(),
            scores_f64: Vec::new(),
            chunk_safe: false,
            generation: 0,
            longest_piece: 0,
            unk_id: Some(unk),
            byte_fallback,
            min_score: min_score as f64,
            byte_ids: [NONE; 256],
            sp: Some(SpSemantics {
                types,
                scores,
                match_scores: Vec::new(),
                min_score,
            }),
            pieces: vocab,
            written: FxHashMap::default(),
        };
        m.index_bytes();
        m.index_pieces();
        Ok(m)
    }

    /// Build the matching structures from the vocabulary: the trie of the
    /// pieces that can match (all of them for `tokenizers`; normal and
    /// user-defined ones for `sentencepiece`, which skips unused pieces),
    /// their match scores, and whether chunking at `▁` is exact.
    fn index_pieces(&mut self) {
        let matchable = |i: usize| match &self.sp {
            Some(sp) => matches!(sp.types[i], PieceType::Normal | PieceType::UserDefined),
            None => true,
        };
        // (a piece listed twice maps to its last id, as `token_to_id` has it)
        let keys: Vec<(&[u8], u32)> = (self.pieces.iter().enumerate())
            .filter(|(i, _)| matchable(*i))
            .map(|(i, (p, _))| (p.as_bytes(), i as u32))
            .collect();
        // (the mark ▁ is E2 96 81; in UTF-8 those bytes are that character only)
        self.chunk_safe = keys.iter().all(|(k, _)| !k.get(1..).is_some_and(contains_mark));
        self.dat = DoubleArray::build(keys);
        self.scores_f64 = self.pieces.iter().map(|(_, s)| *s).collect();
        if let Some(sp) = &mut self.sp {
            sp.match_scores = (sp.scores.iter().zip(&sp.types).zip(&self.pieces))
                .map(|((&s, &t), (p, _))| match t {
                    // (the optimized encoder measures a user-defined piece in bytes)
                    PieceType::UserDefined => user_defined_score(p.len()),
                    _ => s,
                })
                .collect();
            self.dat.set_weights(|id| sp.match_scores[id as usize]);
        }
        self.longest_piece = self.token_to_id.keys().map(String::len).max().unwrap_or(0);
        self.generation = cache::next_generation();
    }

    fn index_bytes(&mut self) {
        for b in 0..=255u8 {
            if let Some(&id) = self.token_to_id.get(&format!("<0x{b:02X}>")) {
                self.byte_ids[b as usize] = id;
            }
        }
    }

    pub fn unk_id(&self) -> Option<u32> {
        self.unk_id
    }

    /// `(piece, score)` by id.
    pub fn pieces(&self) -> &[(String, f64)] {
        &self.pieces
    }

    pub fn piece_type(&self, id: u32) -> Option<PieceType> {
        self.sp.as_ref().and_then(|sp| sp.types.get(id as usize).copied())
    }

    /// Whether the model follows `sentencepiece` (loaded from a `.model`).
    pub fn is_sentencepiece(&self) -> bool {
        self.sp.is_some()
    }

    /// Turn a segmentation into `(id, byte length)` tokens: unknown runs
    /// fused and byte fallback applied, as the loaded flavour does it.
    fn emit(&self, text: &str, segs: &[Seg], out: &mut impl Sink) {
        if self.sp.is_some() {
            self.emit_sp(text, segs, out)
        } else {
            self.emit_hf(text, segs, out)
        }
    }

    fn emit_hf(&self, text: &str, segs: &[Seg], out: &mut impl Sink) {
        let unk = self.unk_id.unwrap_or(NONE);
        let mut i = 0;
        while i < segs.len() {
            let (s, e, id) = segs[i];
            if id == NONE || id == unk {
                // `tokenizers` fuses runs of unknown pieces, then looks the
                // fused string up again
                let mut end = e;
                let mut j = i + 1;
                if id != NONE {
                    while j < segs.len() && segs[j].2 == unk {
                        end = segs[j].1;
                        j += 1;
                    }
                }
                self.emit_unknown(&text[s..end], out);
                i = j;
            } else {
                out.push(id, (e - s) as u32);
                i += 1;
            }
        }
    }

    fn emit_unknown(&self, piece: &str, out: &mut impl Sink) {
        // (a run longer than every piece is none of them)
        let found = if piece.len() <= self.longest_piece {
            self.token_to_id.get(piece)
        } else {
            None
        };
        if let Some(&id) = found {
            out.push(id, piece.len() as u32);
            return;
        }
        if self.byte_fallback && piece.bytes().all(|b| self.byte_ids[b as usize] != NONE) {
            for b in piece.bytes() {
                out.push(self.byte_ids[b as usize], 1);
            }
            return;
        }
        // without an unknown token `tokenizers` refuses the text; the piece is dropped here
        if let Some(u) = self.unk_id {
            out.push(u, piece.len() as u32);
        }
    }

    fn emit_sp(&self, text: &str, segs: &[Seg], out: &mut impl Sink) {
        let unk = self.unk_id.unwrap_or(NONE);
        let mut prev_unk = false;
        for &(s, e, id) in segs {
            let is_unk = id == unk;
            if is_unk && self.byte_fallback {
                for b in text[s..e].bytes() {
                    out.push(self.byte_ids[b as usize], 1);
                }
            } else if is_unk && prev_unk {
                out.grow_last((e - s) as u32);
            } else {
                out.push(id, (e - s) as u32);
            }
            prev_unk = is_unk;
        }
    }

    /// Encode `text` as one piece (no pre-tokenization).
    pub fn encode_str(&self, text: &str) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        self.encode_piece(text.as_bytes(), &mut out);
        out
    }

    /// Up to `n` best segmentations of `text`, best first, with their scores.
    pub fn nbest(&self, text: &str, n: usize) -> Vec<(Vec<(u32, u32)>, f64)> {
        self.nbest_parts(&[text], n)
    }

    /// Up to `n` best segmentations of pre-tokenized text (no piece crosses
    /// from one part into the next), best first, with their scores.
    pub fn nbest_parts(&self, parts: &[&str], n: usize) -> Vec<(Vec<(u32, u32)>, f64)> {
        let (text, bounds) = join_parts(parts);
        if text.is_empty() {
            return vec![(Vec::new(), 0.0)];
        }
        let n = n.clamp(1, 1024);
        if n == 1 {
            let mut out = Vec::new();
            for p in parts {
                self.encode_piece(p.as_bytes(), &mut out);
            }
            return vec![(out, 0.0)];
        }
        let lat = self.lattice(&text, &bounds);
        lat.nbest(n)
            .into_iter()
            .map(|(segs, score)| (self.emit_parts(&text, &bounds, &segs), score))
            .collect()
    }

    /// A sampled segmentation (subword regularization), as `sentencepiece`'s
    /// `SampleEncode`: `nbest_size` 0 or 1 gives the best segmentation, more
    /// than 1 samples among the `nbest_size` best with probabilities
    /// `∝ exp(alpha · score)`, a negative value samples from the whole
    /// lattice with inverse temperature `alpha`.
    pub fn sample(&self, text: &str, nbest_size: i32, alpha: f64, rng: &mut Rng) -> Vec<(u32, u32)> {
        self.sample_parts(&[text], nbest_size, alpha, rng)
    }

    /// [`Unigram::sample`] over pre-tokenized text.
    pub fn sample_parts(&self, parts: &[&str], nbest_size: i32, alpha: f64, rng: &mut Rng) -> Vec<(u32, u32)> {
        let (text, bounds) = join_parts(parts);
        if text.is_empty() {
            return Vec::new();
        }
        if nbest_size >= 0 && (nbest_size <= 1 || alpha == 0.0) {
            return self.nbest_parts(parts, 1).swap_remove(0).0;
        }
        let lat = self.lattice(&text, &bounds);
        let segs = if nbest_size < 0 {
            lat.sample(alpha, rng)
        } else {
            let mut nb = lat.nbest(nbest_size.min(512) as usize);
            if nb.is_empty() {
                return self.nbest_parts(parts, 1).swap_remove(0).0;
            }
            let logp: Vec<f64> = nb.iter().map(|(_, s)| alpha * s).collect();
            let max = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = logp.iter().map(|l| (l - max).exp()).collect();
            let k = rng.pick(&weights);
            nb.swap_remove(k).0
        };
        self.emit_parts(&text, &bounds, &segs)
    }

    /// Tokens of a lattice path, part by part (unknown runs never fuse across parts).
    fn emit_parts(&self, text: &str, bounds: &[usize], segs: &[Seg]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut k = 0;
        let mut start = 0;
        for &end in bounds {
            let mut local = Vec::new();
            while k < segs.len() && segs[k].1 <= end {
                let (a, b, id) = segs[k];
                local.push((a - start, b - start, id));
                k += 1;
            }
            self.emit(&text[start..end], &local, &mut out);
            start = end;
        }
        out
    }

    /// The lattice of `text`, with no node crossing a part boundary (`bounds`:
    /// the end of every part).
    fn lattice(&self, text: &str, bounds: &[usize]) -> lattice::Lattice {
        // sentencepiece's lattice sums single-precision scores
        let f32_mode = self.sp.is_some();
        let mut lat = lattice::Lattice::new(text, f32_mode);
        let unk_score = match &self.sp {
            Some(sp) => (sp.min_score - UNK_PENALTY as f32) as f64,
            None => self.min_score - UNK_PENALTY,
        };
        let unk = self.unk_id.unwrap_or(NONE);
        let bytes = text.as_bytes();
        let mut part = 0;
        for c in 0..lat.len() {
            let start = lat.byte_of(c);
            while part + 1 < bounds.len() && bounds[part] <= start {
                part += 1;
            }
            let limit = bounds.get(part).copied().unwrap_or(text.len()).max(start);
            let mut single = false;
            self.dat.prefixes(&bytes[start..limit], |len, id| {
                let Some(chars) = lat.chars_between(start, start + len) else {
                    return;
                };
                let score = match &self.sp {
                    Some(sp) => match sp.types[id as usize] {
                        PieceType::Unused => return,
                        // the lattice version counts characters
                        PieceType::UserDefined => user_defined_score(chars) as f64,
                        _ => sp.scores[id as usize] as f64,
                    },
                    None => self.pieces[id as usize].1,
                };
                lat.insert(c, chars, id, score);
                if chars == 1 {
                    single = true;
                }
            });
            if !single {
                lat.insert(c, 1, unk, unk_score);
            }
        }
        lat
    }
}

fn contains_mark(t: &[u8]) -> bool {
    t.windows(3).any(|w| w == "\u{2581}".as_bytes())
}

/// The parts joined, and where each ends.
fn join_parts(parts: &[&str]) -> (String, Vec<usize>) {
    let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    let mut bounds = Vec::with_capacity(parts.len());
    for p in parts {
        text.push_str(p);
        bounds.push(text.len());
    }
    (text, bounds)
}

impl Model for Unigram {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        let text = match std::str::from_utf8(piece) {
            Ok(t) => t,
            Err(_) => return, // pieces are cut at character boundaries of a String
        };
        viterbi::with_scratch(|s| self.segment(piece, true, s, |segs| self.emit(text, segs, out)));
    }

    fn encode_fused(
        &self,
        normalizer: Option<&crate::normalizers::Normalizer>,
        pre_tokenizer: Option<&crate::pre_tokenizers::PreTokenizer>,
        text: &str,
        out: &mut Vec<u32>,
    ) -> bool {
        self.fused(normalizer, pre_tokenizer, text, out)
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
        let vocab: Vec<Value> = (self.pieces.iter().enumerate())
            .map(|(i, (p, s))| json!([p, self.written.get(&(i as u32)).unwrap_or(s)]))
            .collect();
        let mut m = serde_json::Map::new();
        m.insert("type".into(), json!("Unigram"));
        m.insert("unk_id".into(), json!(self.unk_id));
        m.insert("vocab".into(), Value::Array(vocab));
        m.insert("byte_fallback".into(), json!(self.byte_fallback));
        if let Some(sp) = &self.sp {
            // tokensmith's extension (`tokenizers` ignores it): sentencepiece semantics
            let types: Vec<u8> = sp.types.iter().map(|t| *t as u8).collect();
            m.insert("piece_types".into(), json!(types));
        }
        Value::Object(m)
    }

    fn push_token(&mut self, token: &[u8], id: u32) {
        let Ok(tok) = std::str::from_utf8(token) else { return };
        if (id as usize) < self.pieces.len() || id as usize != self.pieces.len() {
            // already a piece (special tokens are in the vocabulary), or a gap
            // a Unigram vocabulary cannot have
            return;
        }
        self.pieces.push((tok.to_string(), 0.0));
        self.token_to_id.insert(tok.to_string(), id);
        if let Some(sp) = &mut self.sp {
            sp.types.push(PieceType::UserDefined);
            sp.scores.push(0.0);
        }
        self.index_pieces();
    }

    fn set_unk(&mut self, unk: &str) {
        if let Some(&id) = self.token_to_id.get(unk) {
            self.unk_id = Some(id);
        }
    }
    fn surface_token(&self, id: u32) -> bool {
        Some(id) == self.unk_id
    }
}

/// The scores of a `tokenizer.json` Unigram section, as written.
#[derive(serde::Deserialize)]
struct Scores<'a> {
    #[serde(borrow)]
    vocab: Vec<(serde::de::IgnoredAny, &'a serde_json::value::RawValue)>,
}

impl Unigram {
    /// Keep the scores of `tokenizer.json` (its whole text) that parsing
    /// rounded otherwise (see `written`): read again exactly, as text.
    pub fn keep_written_scores(&mut self, json: &str) {
        #[derive(serde::Deserialize)]
        struct Doc<'a> {
            #[serde(borrow)]
            model: Scores<'a>,
        }
        // (the file has loaded, so this parse succeeds; if it does not, the
        // scores are saved as parsed)
        if let Ok(doc) = serde_json::from_str::<Doc<'_>>(json) {
            self.keep_scores(&doc.model);
        }
    }

    /// `keep_written_scores` from the text of the `"model"` section alone.
    pub fn keep_written_section_scores(&mut self, section: &str) {
        if let Ok(scores) = serde_json::from_str::<Scores<'_>>(section) {
            self.keep_scores(&scores);
        }
    }

    fn keep_scores(&mut self, scores: &Scores<'_>) {
        for (i, (_, raw)) in scores.vocab.iter().enumerate().take(self.pieces.len()) {
            if let Ok(exact) = raw.get().trim().parse::<f64>() {
                if exact != self.pieces[i].1 {
                    self.written.insert(i as u32, exact);
                }
            }
        }
    }

    /// The `"model"` section of `tokenizer.json`.
    pub fn from_json(model: &Value) -> Result<Self> {
        let obj = model
            .as_object()
            .ok_or_else(|| Error::Format("model: expected an object".into()))?;
        let unk_id = match obj.get("unk_id") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|&u| u < NONE as u64)
                    .ok_or_else(|| Error::Format(format!("model.unk_id: expected a non-negative integer, found {v}")))?
                    as u32,
            ),
        };
        let byte_fallback = match obj.get("byte_fallback") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(Error::Format(format!(
                    "model.byte_fallback: expected true or false, found {v}"
                )))
            }
        };
        let arr = obj
            .get("vocab")
            .ok_or_else(|| Error::Format("model.vocab: missing".into()))?
            .as_array()
            .ok_or_else(|| Error::Format("model.vocab: expected a list of [piece, score] pairs".into()))?;
        let mut vocab = Vec::with_capacity(arr.len());
        for (i, e) in arr.iter().enumerate() {
            let pair = e.as_array().filter(|p| p.len() == 2);
            let parsed = pair.and_then(|p| Some((p[0].as_str()?.to_string(), p[1].as_f64()?)));
            if let Some((piece, score)) = &parsed {
                if !score.is_finite() {
                    return Err(Error::Format(format!(
                        "model.vocab[{i}]: the score of piece {piece:?} is {score}; scores must be finite numbers"
                    )));
                }
            }
            match parsed {
                Some(x) => vocab.push(x),
                None => {
                    return Err(Error::Format(format!(
                        "model.vocab[{i}]: expected [piece, score], found {e}"
                    )))
                }
            }
        }
        match obj.get("piece_types") {
            None | Some(Value::Null) => Unigram::new(vocab, unk_id, byte_fallback),
            Some(Value::Array(ts)) => {
                let mut types = Vec::with_capacity(ts.len());
                for (i, t) in ts.iter().enumerate() {
                    let ty = t.as_i64().and_then(PieceType::from_i64).ok_or_else(|| {
                        Error::Format(format!("model.piece_types[{i}]: {t} is not a piece type (1-6)"))
                    })?;
                    types.push(ty);
                }
                let m = Unigram::with_piece_types(vocab, types, byte_fallback)?;
                if unk_id.is_some() && unk_id != m.unk_id {
                    return Err(Error::Format(format!(
                        "model.unk_id: {unk_id:?} is not the unknown piece ({:?})",
                        m.unk_id
                    )));
                }
                Ok(m)
            }
            Some(v) => Err(Error::Format(format!("model.piece_types: expected a list, found {v}"))),
        }
    }
}

#[cfg(test)]
mod tests;
