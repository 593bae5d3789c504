//! Models: turn one pre-tokenized piece into token ids.
//!
//! Every model stores each token as the bytes it stands for in "model space"
//! (raw bytes for byte-level BPE, UTF-8 of the token string otherwise).
//! Adding a model: a module implementing [`Model`], one variant in
//! [`ModelKind`] and one arm in [`ModelKind::from_json`].

pub mod bpe;
pub mod picky;
pub mod sp_bpe;
pub mod unigram;
pub mod wordlevel;
pub mod wordpiece;

pub use bpe::Bpe;
pub use picky::PickyBpe;
pub use sp_bpe::SentencePieceBpe;
pub use unigram::Unigram;
pub use wordlevel::WordLevel;
pub use wordpiece::WordPiece;

use crate::error::{Error, Result};
use serde_json::Value;

/// The largest id a vocabulary of `tokens` entries may use: ids may leave
/// gaps (special tokens placed apart, pruned ids), but memory is sized by
/// the largest id, so it must stay within twice the entries plus 65,536.
pub fn id_limit(tokens: usize) -> u64 {
    2 * tokens as u64 + 65_536
}

/// `Err` when `id` is beyond [`id_limit`] of `tokens` entries.
pub fn check_id(field: &str, token: &str, id: u64, tokens: usize) -> Result<()> {
    let limit = id_limit(tokens);
    if id > limit || id >= u32::MAX as u64 {
        return Err(Error::Format(format!(
            "{field}: {token:?} has id {id}, far beyond the {tokens} tokens there are; ids may \
             leave gaps, but none may exceed {limit} (twice the tokens plus 65,536)"
        )));
    }
    Ok(())
}

/// A token -> id map and an id -> token table, the form WordPiece and WordLevel
/// keep their vocabularies in. An id used twice or a token listed twice is an
/// error; the table is `max_id` long (the caller bounds it).
pub(crate) type VocabTables = (rustc_hash::FxHashMap<Vec<u8>, u32>, Vec<Option<Box<[u8]>>>);

pub(crate) fn vocab_tables(vocab: Vec<(String, u32)>, max_id: usize) -> Result<VocabTables> {
    let mut by_id: Vec<Option<Box<[u8]>>> = crate::error::filled(None, max_id, "the id table")?;
    let mut map = rustc_hash::FxHashMap::default();
    map.reserve(vocab.len());
    for (tok, id) in vocab {
        if let Some(prev) = &by_id[id as usize] {
            return Err(Error::Format(format!(
                "model.vocab: id {id} is used twice ({:?} and {tok:?})",
                String::from_utf8_lossy(prev)
            )));
        }
        if map.insert(tok.as_bytes().to_vec(), id).is_some() {
            return Err(Error::Format(format!("model.vocab: token {tok:?} appears twice")));
        }
        by_id[id as usize] = Some(tok.into_bytes().into_boxed_slice());
    }
    Ok((map, by_id))
}

/// The `"vocab"` object (token -> id) of a model's `tokenizer.json` section.
pub(crate) fn vocab_from_json(obj: &serde_json::Map<String, Value>) -> Result<Vec<(String, u32)>> {
    let vocab = obj
        .get("vocab")
        .ok_or_else(|| Error::Format("model.vocab: missing".into()))?
        .as_object()
        .ok_or_else(|| Error::Format("model.vocab: expected an object of token -> id".into()))?;
    let mut v = Vec::with_capacity(vocab.len());
    for (tok, id) in vocab {
        let id = id.as_u64().filter(|&i| i < u32::MAX as u64).ok_or_else(|| {
            Error::Format(format!(
                "model.vocab[{tok:?}]: expected a non-negative integer id, found {id}"
            ))
        })?;
        v.push((tok.clone(), id as u32));
    }
    Ok(v)
}

/// `(id, token)` for every filled slot of an id table.
pub(crate) fn table_entries(by_id: &[Option<Box<[u8]>>]) -> Vec<(u32, &[u8])> {
    by_id
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_deref().map(|t| (i as u32, t)))
        .collect()
}

/// One pipeline stage.
pub trait Model: Send + Sync {
    /// Encode a piece into `(id, byte length)` pairs that cover it in order.
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>);
    fn id_to_bytes(&self, id: u32) -> Option<&[u8]>;
    fn token_to_id(&self, token: &[u8]) -> Option<u32>;
    /// One more than the largest id.
    fn vocab_len(&self) -> usize;
    /// `(id, token bytes)` for every token.
    fn vocab_entries(&self) -> Vec<(u32, &[u8])>;
    /// The token as `tokenizer.json` writes it.
    fn token_string(&self, bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }
    /// Whether tokens are raw bytes in the GPT-2 byte-level alphabet.
    fn byte_level(&self) -> bool {
        false
    }
    /// The `"model"` section of `tokenizer.json`.
    fn to_json(&self) -> Value;
    /// Register a token (special tokens live in the model vocabulary too).
    fn push_token(&mut self, token: &[u8], id: u32);
    fn set_unk(&mut self, _unk: &str) {}
    /// Whether an encoding shows token `id` as the text it covers rather
    /// than its vocabulary string (`tokenizers`' Unigram does for `<unk>`).
    fn surface_token(&self, _id: u32) -> bool {
        false
    }
    /// Encode a whole text that `scanner` splits into pieces, ids only, if
    /// the model has its own encoder for that (the fast path: each piece
    /// goes straight to the model's caches); false, and nothing written,
    /// if not: the pipeline then pre-tokenizes and calls `encode_piece`.
    fn encode_scanned(&self, _scanner: &crate::scanner::Scanner, _text: &str, _out: &mut Vec<u32>) -> bool {
        false
    }
    /// Encode a whole text (no added tokens in it) through `normalizer` and
    /// `pre_tokenizer` and this model in one fused pass, ids only, if the
    /// model has such an encoder for that pair of stages; false, and nothing
    /// written, if not (the pipeline then runs the stages one by one). The
    /// ids must equal the staged pipeline's for every text.
    fn encode_fused(
        &self,
        _normalizer: Option<&crate::normalizers::Normalizer>,
        _pre_tokenizer: Option<&crate::pre_tokenizers::PreTokenizer>,
        _text: &str,
        _out: &mut Vec<u32>,
    ) -> bool {
        false
    }
}

/// The registry of models, named as in `tokenizer.json`.
// one per tokenizer: the variants' sizes (byte tables inline) do not matter
#[allow(clippy::large_enum_variant)]
pub enum ModelKind {
    Bpe(Bpe),
    WordPiece(WordPiece),
    Unigram(Unigram),
    WordLevel(WordLevel),
    /// SentencePiece's BPE (a `.model`), written as `"type": "BPE"`
    SentencePieceBpe(SentencePieceBpe),
    /// PickyBPE (`trainers::picky`): merges and removals, replayed
    PickyBpe(PickyBpe),
}

impl ModelKind {
    /// `byte_level`: the pre-tokenizer maps text to the byte-level alphabet.
    /// `added`: how many added tokens the file has (they may fill the gaps
    /// between the model's ids, see [`id_limit`]).
    pub fn from_json(model: &Value, byte_level: bool, added: usize) -> Result<Self> {
        match model.get("type").and_then(Value::as_str) {
            Some("BPE") if model.get("sentencepiece").is_some() => {
                Ok(ModelKind::SentencePieceBpe(SentencePieceBpe::from_json(model)?))
            }
            Some("BPE") | None => Ok(ModelKind::Bpe(Bpe::from_json(model, byte_level, added)?)),
            Some("WordPiece") => Ok(ModelKind::WordPiece(WordPiece::from_json(model)?)),
            Some("Unigram") => Ok(ModelKind::Unigram(Unigram::from_json(model)?)),
            Some("WordLevel") => Ok(ModelKind::WordLevel(WordLevel::from_json(model)?)),
            Some("PickyBPE") => Ok(ModelKind::PickyBpe(PickyBpe::from_json(model)?)),
            Some(other) => Err(Error::Unsupported(format!(
                "model.type: {other:?} is not a model tokensmith reads (BPE, WordPiece, Unigram, WordLevel, \
                 PickyBPE)"
            ))),
        }
    }

    fn inner(&self) -> &dyn Model {
        match self {
            ModelKind::Bpe(m) => m,
            ModelKind::WordPiece(m) => m,
            ModelKind::Unigram(m) => m,
            ModelKind::WordLevel(m) => m,
            ModelKind::SentencePieceBpe(m) => m,
            ModelKind::PickyBpe(m) => m,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn Model {
        match self {
            ModelKind::Bpe(m) => m,
            ModelKind::WordPiece(m) => m,
            ModelKind::Unigram(m) => m,
            ModelKind::WordLevel(m) => m,
            ModelKind::SentencePieceBpe(m) => m,
            ModelKind::PickyBpe(m) => m,
        }
    }

    pub fn as_bpe(&self) -> Option<&Bpe> {
        match self {
            ModelKind::Bpe(m) => Some(m),
            ModelKind::WordPiece(_) => None,
            ModelKind::Unigram(_) => None,
            ModelKind::WordLevel(_) => None,
            ModelKind::SentencePieceBpe(_) => None,
            ModelKind::PickyBpe(_) => None,
        }
    }

    /// The model's `"type"` in `tokenizer.json`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ModelKind::Bpe(_) => "BPE",
            ModelKind::WordPiece(_) => "WordPiece",
            ModelKind::Unigram(_) => "Unigram",
            ModelKind::WordLevel(_) => "WordLevel",
            ModelKind::SentencePieceBpe(_) => "BPE",
            ModelKind::PickyBpe(_) => "PickyBPE",
        }
    }

    pub fn id_to_string(&self, id: u32) -> String {
        self.id_to_bytes(id).map(|b| self.token_string(b)).unwrap_or_default()
    }
}

impl Model for ModelKind {
    #[inline]
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        match self {
            ModelKind::Bpe(m) => m.encode_piece(piece, out),
            ModelKind::WordPiece(m) => m.encode_piece(piece, out),
            ModelKind::Unigram(m) => m.encode_piece(piece, out),
            ModelKind::WordLevel(m) => m.encode_piece(piece, out),
            ModelKind::SentencePieceBpe(m) => m.encode_piece(piece, out),
            ModelKind::PickyBpe(m) => m.encode_piece(piece, out),
        }
    }
    #[inline]
    fn encode_scanned(&self, scanner: &crate::scanner::Scanner, text: &str, out: &mut Vec<u32>) -> bool {
        match self {
            ModelKind::Bpe(m) => m.encode_scanned(scanner, text, out),
            ModelKind::WordPiece(m) => m.encode_scanned(scanner, text, out),
            ModelKind::Unigram(m) => m.encode_scanned(scanner, text, out),
            ModelKind::WordLevel(m) => m.encode_scanned(scanner, text, out),
            ModelKind::SentencePieceBpe(m) => m.encode_scanned(scanner, text, out),
            ModelKind::PickyBpe(m) => m.encode_scanned(scanner, text, out),
        }
    }
    fn encode_fused(
        &self,
        normalizer: Option<&crate::normalizers::Normalizer>,
        pre_tokenizer: Option<&crate::pre_tokenizers::PreTokenizer>,
        text: &str,
        out: &mut Vec<u32>,
    ) -> bool {
        self.inner().encode_fused(normalizer, pre_tokenizer, text, out)
    }
    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.inner().id_to_bytes(id)
    }
    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.inner().token_to_id(token)
    }
    fn vocab_len(&self) -> usize {
        self.inner().vocab_len()
    }
    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        self.inner().vocab_entries()
    }
    fn token_string(&self, bytes: &[u8]) -> String {
        self.inner().token_string(bytes)
    }
    fn byte_level(&self) -> bool {
        self.inner().byte_level()
    }
    fn to_json(&self) -> Value {
        self.inner().to_json()
    }
    fn push_token(&mut self, token: &[u8], id: u32) {
        self.inner_mut().push_token(token, id)
    }
    fn set_unk(&mut self, unk: &str) {
        self.inner_mut().set_unk(unk)
    }
    fn surface_token(&self, id: u32) -> bool {
        self.inner().surface_token(id)
    }
}
