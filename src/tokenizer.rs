//! The pipeline: added tokens -> normalizer -> pre-tokenizer -> model ->
//! post-processor, and back through the decoder.

use crate::added_tokens::{AddedToken, AddedVocabulary, Allowed, Segment};
use crate::decode_table::DecodeTable;
use crate::decoders::{Decode, Decoder};
use crate::error::{Error, Result};
use crate::models::{Model, ModelKind};
use crate::normalizers::{Normalize, NormalizedString, Normalizer};
use crate::pre_tokenizers::{PreTokenize, PreTokenizedString, PreTokenizer};
use crate::processors::{Encoding, PostProcess, PostProcessor};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// Documents at least this long are cut and encoded in parallel.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
const PARALLEL_CHUNK: usize = 256 << 10;

pub struct Tokenizer {
    pub normalizer: Option<Normalizer>,
    pub pre_tokenizer: Option<PreTokenizer>,
    pub model: ModelKind,
    pub post_processor: Option<PostProcessor>,
    pub decoder: Option<Decoder>,
    pub added: AddedVocabulary,
    /// `version`, `truncation`, `padding` as read, written back unchanged.
    pub extra: Map<String, Value>,
    trims_offsets: bool,
    /// every model token's bytes in one arena, built on the first decode
    decode_table: OnceLock<Option<DecodeTable>>,
}

/// Where the encoded tokens go.
struct Sink<'a> {
    ids: &'a mut Vec<u32>,
    /// original byte offsets, when asked for
    offsets: Option<&'a mut Vec<(usize, usize)>>,
    /// the matched text of added tokens (`None` for model tokens), with offsets
    texts: Vec<Option<String>>,
}

impl Sink<'_> {
    fn push(&mut self, id: u32, range: (usize, usize)) {
        self.ids.push(id);
        if let Some(o) = self.offsets.as_mut() {
            o.push(range);
            self.texts.push(None);
        }
    }

    fn push_added(&mut self, id: u32, range: (usize, usize), text: &str) {
        self.ids.push(id);
        if let Some(o) = self.offsets.as_mut() {
            o.push(range);
            self.texts.push(Some(text.to_string()));
        }
    }
}

impl Tokenizer {
    pub fn new(
        normalizer: Option<Normalizer>,
        pre_tokenizer: Option<PreTokenizer>,
        model: ModelKind,
        post_processor: Option<PostProcessor>,
        decoder: Option<Decoder>,
        added_tokens: Vec<AddedToken>,
    ) -> Result<Self> {
        if let Some(p) = &post_processor {
            p.validate()?;
        }
        let entries = model.vocab_len() + added_tokens.len();
        for t in &added_tokens {
            crate::models::check_id("added_tokens", &t.content, t.id as u64, entries)?;
        }
        for (token, id) in post_processor.iter().flat_map(|p| p.special_ids()) {
            if model.id_to_bytes(id).is_none() && !added_tokens.iter().any(|t| t.id == id) {
                return Err(Error::Format(format!(
                    "post_processor: the special token {token:?} has id {id}, which is not in the vocabulary"
                )));
            }
        }
        let added = AddedVocabulary::new(added_tokens, normalizer.as_ref())?;
        let trims_offsets = has_trim(post_processor.as_ref());
        let mut extra = Map::new();
        extra.insert("version".into(), json!("1.0"));
        extra.insert("truncation".into(), Value::Null);
        extra.insert("padding".into(), Value::Null);
        Ok(Tokenizer {
            normalizer,
            pre_tokenizer,
            model,
            post_processor,
            decoder,
            added,
            extra,
            trims_offsets,
            decode_table: OnceLock::new(),
        })
    }

    /// The split regex when the pre-tokenizer is a single regex split
    /// (plus byte-level mapping), as tiktoken encodings have.
    pub fn split_regex(&self) -> Option<String> {
        self.pre_tokenizer.as_ref()?.split_regex()
    }

    pub fn vocab_size(&self) -> usize {
        let added_max = self.added.tokens.iter().map(|t| t.id as usize + 1).max().unwrap_or(0);
        self.model.vocab_len().max(added_max)
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        if let Some(t) = self.added.token_str(id) {
            return Some(t.to_string());
        }
        self.model.id_to_bytes(id).map(|b| self.model.token_string(b))
    }

    /// The bytes a token stands for (byte-level tokens decoded to raw
    /// bytes; an added token's text as `decode` gives it, normalized when
    /// the token is matched on normalized text).
    pub fn id_to_bytes(&self, id: u32) -> Option<Vec<u8>> {
        if let Some(t) = self.added.token_str(id) {
            return Some(t.as_bytes().to_vec());
        }
        self.model.id_to_bytes(id).map(|b| b.to_vec())
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        if let Some(id) = self.added.id_of(token) {
            return Some(id);
        }
        if self.model.byte_level() {
            if let Some(b) = crate::bytelevel::string_to_bytes(token) {
                if let Some(id) = self.model.token_to_id(&b) {
                    return Some(id);
                }
            }
        }
        self.model.token_to_id(token.as_bytes())
    }

    fn check_disallowed(&self, text: &str, permitted: Option<&Allowed>) -> Result<()> {
        if let Some(p) = permitted {
            if let Some(found) = self.added.find_disallowed(text, p) {
                return Err(Error::DisallowedSpecial(found.to_string()));
            }
        }
        Ok(())
    }

    /// Encode ordinary text (no added-token splitting) of `text[start..end]`.
    fn encode_text(&self, text: &str, start: usize, allowed: &Allowed, sink: &mut Sink) -> Result<()> {
        // ids only, nothing to normalize: the fast path of `encode_normalized`
        // on the text itself, not a copy
        if sink.offsets.is_none() && self.normalizer.is_none() && !self.added.has_normalized() {
            if let Some(scanner) = self.pre_tokenizer.as_ref().and_then(|p| p.scanner()) {
                if self.model.encode_scanned(scanner, text, sink.ids) {
                    return Ok(());
                }
            }
        }
        // ids only: a model that fuses this normalizer and pre-tokenizer
        // into its own pass (`Model::encode_fused`)
        if sink.offsets.is_none()
            && !self.added.has_normalized()
            && self
                .model
                .encode_fused(self.normalizer.as_ref(), self.pre_tokenizer.as_ref(), text, sink.ids)
        {
            return Ok(());
        }
        let mut ns = NormalizedString::new(text, start);
        if let Some(n) = &self.normalizer {
            n.normalize(&mut ns)?;
        }
        if self.added.has_normalized() {
            let mut segs = Vec::new();
            // (a single text segment: no token matched; a single token
            // segment: the whole text is one token)
            if self.added.split_normalized(&ns.text, allowed, &mut segs)?
                && !matches!(segs.as_slice(), [Segment::Text(..)])
            {
                for seg in segs {
                    match seg {
                        Segment::Token(id, a, b) => sink.push_added(id, ns.original_range(a, b), &ns.text[a..b]),
                        Segment::Text(a, b) => self.encode_normalized(ns.slice(a, b), sink)?,
                    }
                }
                return Ok(());
            }
        }
        self.encode_normalized(ns, sink)
    }

    fn encode_normalized(&self, ns: NormalizedString, sink: &mut Sink) -> Result<()> {
        // Fast path: ids only, a known split pattern and a BPE model: the
        // scanner hands each piece straight to the model.
        if sink.offsets.is_none() {
            if let Some(scanner) = self.pre_tokenizer.as_ref().and_then(|p| p.scanner()) {
                if self.model.encode_scanned(scanner, &ns.text, sink.ids) {
                    return Ok(());
                }
            }
        }
        let mut pt = PreTokenizedString::new(ns);
        if let Some(p) = &self.pre_tokenizer {
            p.pre_tokenize(&mut pt)?;
        }
        let mut buf: Vec<(u32, u32)> = Vec::with_capacity(16);
        let bytes = pt.ns.text.as_bytes();
        for &(s, e) in &pt.pieces {
            buf.clear();
            self.model.encode_piece(&bytes[s..e], &mut buf);
            if sink.offsets.is_some() {
                let mut pos = s;
                for &(id, len) in &buf {
                    let end = pos + len as usize;
                    match pt.ns.text.get(pos..end).filter(|_| self.model.surface_token(id)) {
                        Some(text) => sink.push_added(id, pt.ns.original_range(pos, end), text),
                        None => sink.push(id, pt.ns.original_range(pos, end)),
                    }
                    pos = end;
                }
            } else {
                sink.ids.extend(buf.iter().map(|&(id, _)| id));
            }
        }
        Ok(())
    }

    fn encode_into(&self, text: &str, allowed: &Allowed, sink: &mut Sink) -> Result<()> {
        if self.added.is_empty() {
            return self.encode_text(text, 0, allowed, sink);
        }
        let mut segs = Vec::new();
        self.added.split_raw(text, allowed, &mut segs)?;
        for seg in segs {
            match seg {
                Segment::Token(id, a, b) => sink.push_added(id, (a, b), &text[a..b]),
                Segment::Text(a, b) => self.encode_text(&text[a..b], a, allowed, sink)?,
            }
        }
        Ok(())
    }

    /// Ids only: the fast path.
    pub fn encode(
        &self,
        text: &str,
        allowed: &Allowed,
        permitted: Option<&Allowed>,
        add_special_tokens: bool,
    ) -> Result<Vec<u32>> {
        // (on ordinary pages: see `huge_pages`)
        // (a short text's room is reserved as usual: only a big reservation,
        // sized by the text, is one that can fail)
        let room = text.len() / 3 + 4;
        let mut ids = if room < 1 << 16 {
            crate::huge_pages::plain(|| Vec::with_capacity(room))
        } else {
            crate::huge_pages::plain(|| crate::error::with_room(room, "the ids of the text"))?
        };
        if self.templated(add_special_tokens) {
            return self.encode_templated(text, allowed, permitted, add_special_tokens, ids);
        }
        self.encode_append(text, allowed, permitted, add_special_tokens, &mut ids)?;
        Ok(ids)
    }

    /// `encode`, its ids appended to `out` (a batch's documents one after
    /// another in one vector, without a vector each). On an error `out` is
    /// as it was.
    pub fn encode_append(
        &self,
        text: &str,
        allowed: &Allowed,
        permitted: Option<&Allowed>,
        add_special_tokens: bool,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        if self.templated(add_special_tokens) {
            let ids = self.encode_templated(text, allowed, permitted, add_special_tokens, Vec::new())?;
            out.extend_from_slice(&ids);
            return Ok(());
        }
        self.encode_plain(text, allowed, permitted, out)
    }

    /// `encode_append` without the post-processor.
    fn encode_plain(
        &self,
        text: &str,
        allowed: &Allowed,
        permitted: Option<&Allowed>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        self.check_disallowed(text, permitted)?;
        let start = out.len();
        let done = if text.len() >= PARALLEL_MIN_BYTES && self.splits_at_lines() {
            self.encode_chunked(text, allowed, out)
        } else {
            self.encode_into(
                text,
                allowed,
                &mut Sink {
                    ids: out,
                    offsets: None,
                    texts: Vec::new(),
                },
            )
        };
        if done.is_err() {
            out.truncate(start);
        }
        done
    }

    /// Whether the post-processor changes an encoding's ids (see
    /// `PostProcessor::rewrites_ids`).
    fn templated(&self, add_special_tokens: bool) -> bool {
        self.post_processor
            .as_ref()
            .is_some_and(|pp| pp.rewrites_ids(add_special_tokens))
    }

    /// `encode` where the post-processor changes the ids (`templated`), in
    /// `ids` (empty).
    fn encode_templated(
        &self,
        text: &str,
        allowed: &Allowed,
        permitted: Option<&Allowed>,
        add_special_tokens: bool,
        mut ids: Vec<u32>,
    ) -> Result<Vec<u32>> {
        self.encode_plain(text, allowed, permitted, &mut ids)?;
        let Some(pp) = &self.post_processor else {
            return Ok(ids);
        };
        let e = Encoding {
            type_ids: vec![0; ids.len()],
            offsets: vec![(0, 0); ids.len()],
            special_mask: vec![0; ids.len()],
            spaces: vec![(0, 0); ids.len()],
            tokens: Vec::new(),
            ids,
        };
        Ok(pp.process(e, None, add_special_tokens)?.0.ids)
    }

    /// Whether the text can be cut after a newline between two non-space
    /// characters without changing any piece: no normalizer, and a
    /// pre-tokenizer from the GPT-2 / GPT-4 / GPT-4o family (see `cut_point`).
    fn splits_at_lines(&self) -> bool {
        self.normalizer.is_none()
            && !self.added.has_normalized()
            && self.split_regex().is_some_and(|r| crate::pattern::is_line_safe(&r))
    }

    /// A big document encoded on all cores: cut at safe line breaks, each
    /// chunk encoded on its own, the ids joined in order. Same ids as one pass.
    fn encode_chunked(&self, text: &str, allowed: &Allowed, ids: &mut Vec<u32>) -> Result<()> {
        use rayon::prelude::*;
        let mut segs = Vec::new();
        if self.added.is_empty() {
            segs.push(Segment::Text(0, text.len()));
        } else {
            self.added.split_raw(text, allowed, &mut segs)?;
        }
        let rule = crate::cut::cut_rule(self.pre_tokenizer.as_ref());
        // (start, end, added-token id)
        let mut jobs: Vec<(usize, usize, Option<u32>)> = Vec::new();
        for seg in segs {
            match seg {
                Segment::Token(id, a, b) => jobs.push((a, b, Some(id))),
                Segment::Text(a, b) => {
                    let mut start = a;
                    while start < b {
                        let rest = &text.as_bytes()[start..b];
                        let cut = if rest.len() <= PARALLEL_CHUNK {
                            rest.len()
                        } else {
                            crate::cut::cut_point(rest, PARALLEL_CHUNK, rule).unwrap_or(rest.len())
                        };
                        jobs.push((start, start + cut, None));
                        start += cut;
                    }
                }
            }
        }
        let parts: Vec<Vec<u32>> = crate::parallel::install(None, || {
            jobs.par_iter()
                .map(|&(a, b, tok)| match tok {
                    Some(id) => Ok(vec![id]),
                    None => {
                        let mut part = Vec::with_capacity((b - a) / 3 + 4);
                        self.encode_text(
                            &text[a..b],
                            a,
                            allowed,
                            &mut Sink {
                                ids: &mut part,
                                offsets: None,
                                texts: Vec::new(),
                            },
                        )?;
                        Ok(part)
                    }
                })
                .collect::<Result<Vec<_>>>()
        })?;
        for p in parts {
            ids.extend(p);
        }
        Ok(())
    }

    fn encode_one_full(&self, text: &str, allowed: &Allowed, type_id: u32) -> Result<Encoding> {
        let mut ids = Vec::new();
        let mut offs = Vec::new();
        let mut sink = Sink {
            ids: &mut ids,
            offsets: Some(&mut offs),
            texts: Vec::new(),
        };
        self.encode_into(text, allowed, &mut sink)?;
        let texts = std::mem::take(&mut sink.texts);
        // token strings: the matched text of added tokens, the vocabulary string otherwise
        let tokens: Vec<String> = texts
            .into_iter()
            .zip(&ids)
            .map(|(t, &id)| t.unwrap_or_else(|| self.id_to_token(id).unwrap_or_default()))
            .collect();
        // byte offsets -> character offsets
        let mut char_of = vec![0usize; text.len() + 1];
        let mut n = 0;
        for (i, c) in text.char_indices() {
            for k in 0..c.len_utf8() {
                char_of[i + k] = n;
            }
            n += 1;
        }
        char_of[text.len()] = n;
        let offsets: Vec<(usize, usize)> = offs
            .iter()
            .map(|&(s, e)| {
                if e > s {
                    (char_of[s], char_of[e - 1] + 1)
                } else {
                    (char_of[s], char_of[s])
                }
            })
            .collect();
        let spaces = if self.trims_offsets {
            ids.iter().map(|&id| self.token_spaces(id)).collect()
        } else {
            vec![(0, 0); ids.len()]
        };
        Ok(Encoding {
            type_ids: vec![type_id; ids.len()],
            special_mask: vec![0; ids.len()],
            offsets,
            spaces,
            tokens,
            ids,
        })
    }

    fn token_spaces(&self, id: u32) -> (u32, u32) {
        let Some(t) = self.id_to_token(id) else {
            return (0, 0);
        };
        let sp = |c: &char| *c == '\u{120}' || c.is_whitespace();
        (
            t.chars().take_while(sp).count() as u32,
            t.chars().rev().take_while(sp).count() as u32,
        )
    }

    pub fn encode_full(
        &self,
        text: &str,
        pair: Option<&str>,
        allowed: &Allowed,
        permitted: Option<&Allowed>,
        add_special_tokens: bool,
    ) -> Result<Encoding> {
        self.check_disallowed(text, permitted)?;
        if let Some(p) = pair {
            self.check_disallowed(p, permitted)?;
        }
        let a = self.encode_one_full(text, allowed, 0)?;
        let b = pair.map(|p| self.encode_one_full(p, allowed, 1)).transpose()?;
        let (mut a, b) = match &self.post_processor {
            Some(pp) => pp.process(a, b, add_special_tokens)?,
            None => (a, b),
        };
        if let Some(b) = b {
            a.append(b);
        }
        Ok(a)
    }

    pub fn token_strings(&self, ids: &[u32], skip_special: bool) -> Result<Vec<String>> {
        let mut tokens = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(t) = self.added.get(id) {
                if !(skip_special && t.special) {
                    tokens.push(self.added.token_str(id).unwrap_or(&t.content).to_string());
                }
            } else {
                let b = self.model.id_to_bytes(id).ok_or(Error::UnknownId(id))?;
                tokens.push(self.model.token_string(b));
            }
        }
        Ok(tokens)
    }

    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        let mut bytes = Vec::new();
        if let Some(done) = self.decode_raw(ids.iter().copied(), skip_special, &mut bytes) {
            done?;
            return Ok(String::from_utf8_lossy(&bytes).into_owned());
        }
        let tokens = self.token_strings(ids, skip_special)?;
        Ok(match &self.decoder {
            Some(d) => d.decode_chain(tokens).concat(),
            None => tokens.join(" "),
        })
    }

    /// The decode table, unless the tokenizer changed since it was built.
    fn decode_table(&self) -> Option<&DecodeTable> {
        let shape = (self.model.vocab_len(), self.added.tokens.len());
        let ids = shape
            .0
            .max(self.added.tokens.iter().map(|t| t.id as usize + 1).max().unwrap_or(0));
        self.decode_table
            .get_or_init(|| {
                DecodeTable::build(
                    ids,
                    |id| self.model.id_to_bytes(id),
                    |id| self.added.get(id).is_some(),
                    shape,
                )
            })
            .as_ref()
            .filter(|t| t.fits(shape))
    }

    /// The bytes `decode` turns into text (lossily), appended to `out`, when
    /// the model is byte-level and the decoder a plain ByteLevel one (the
    /// text is then exactly those bytes); `None`, and nothing written, for
    /// other decoders. Special added tokens are left out if `skip_special`.
    pub fn decode_raw(
        &self,
        ids: impl ExactSizeIterator<Item = u32>,
        skip_special: bool,
        out: &mut Vec<u8>,
    ) -> Option<Result<()>> {
        if !(self.model.byte_level() && self.decoder.as_ref().is_some_and(|d| d.is_plain_byte_level())) {
            return None;
        }
        let table = self.decode_table()?;
        Some(self.reserve(out, ids.len()).and_then(|()| {
            table.decode_into(ids, out, |id, out| {
                let Some(t) = self.added.get(id) else { return };
                if !(skip_special && t.special) {
                    let content = self.added.token_str(id).unwrap_or(&t.content);
                    match crate::bytelevel::string_to_bytes(content) {
                        Some(b) => out.extend(b),
                        None => out.extend_from_slice(content.as_bytes()),
                    }
                }
            })
        }))
    }

    /// Room in `out` for about `ids` tokens' bytes (a typical token is under
    /// four bytes: a longer text grows the vector as usual).
    fn reserve(&self, out: &mut Vec<u8>, ids: usize) -> Result<()> {
        out.try_reserve(ids.saturating_mul(4))
            .map_err(|_| Error::Memory(format!("the decoded bytes of {ids} ids")))
    }

    /// The raw bytes of a sequence of ids, without any decoder.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.decode_bytes_into(ids.iter().copied(), &mut bytes)?;
        Ok(bytes)
    }

    /// `decode_bytes`, appended to `out`.
    pub fn decode_bytes_into(&self, ids: impl ExactSizeIterator<Item = u32>, out: &mut Vec<u8>) -> Result<()> {
        self.reserve(out, ids.len())?;
        let Some(table) = self.decode_table() else {
            for id in ids {
                out.extend(self.id_to_bytes(id).ok_or(Error::UnknownId(id))?);
            }
            return Ok(());
        };
        table.decode_into(ids, out, |id, out| {
            if let Some(t) = self.added.token_str(id) {
                out.extend_from_slice(t.as_bytes());
            }
        })
    }
}

fn has_trim(p: Option<&PostProcessor>) -> bool {
    match p {
        Some(PostProcessor::ByteLevel { trim_offsets, .. }) => *trim_offsets,
        Some(PostProcessor::Sequence { processors }) => processors.iter().any(|p| has_trim(Some(p))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pre_tokenizers::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN};
    use std::path::PathBuf;

    /// `../shared`, where the reference tokenizers and corpora are, when present.
    fn shared() -> Option<PathBuf> {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
        p.join("assets").is_dir().then_some(p)
    }

    /// A token BPE never makes (no two tokens join into it) is still found
    /// when a whole piece is that token, as tiktoken finds it, also where
    /// long multi-byte pieces take the backtracking encoder.
    #[test]
    fn a_token_bpe_never_makes_is_found_whole() {
        use base64::Engine as _;
        let b64 = |t: &[u8]| base64::engine::general_purpose::STANDARD.encode(t);
        let long = "中文中文中文".as_bytes();
        let mut ranks: Vec<String> = (0..=255u8).map(|b| format!("{} {b}", b64(&[b]))).collect();
        // "中" and "文" are tokens, their pairs are not: only the bytes join into them
        ranks.push(format!("{} 256", b64(&"中".as_bytes()[..2])));
        ranks.push(format!("{} 257", b64("中".as_bytes())));
        ranks.push(format!("{} 258", b64(long)));
        let tok = Tokenizer::from_tiktoken(ranks.join("\n").as_bytes(), CL100K_PATTERN, &[]).unwrap();
        for text in ["中文中文中文", "x 中文中文中文", "中文中文中文中"] {
            let fast = tok.encode(text, &Allowed::None, None, false).unwrap();
            let general = tok.encode_full(text, None, &Allowed::None, None, false).unwrap().ids;
            assert_eq!(fast, general, "{text}");
        }
        assert_eq!(
            tok.encode("中文中文中文", &Allowed::None, None, false).unwrap(),
            vec![258]
        );
        // longer, no token: merged, each "中" one token, each "文" three bytes
        let ids = tok.encode("中文中文中文中", &Allowed::None, None, false).unwrap();
        assert_eq!(ids, [257, 230, 150, 135, 257, 230, 150, 135, 257, 230, 150, 135, 257]);
    }

    /// The backtracking encoder applies to the models whose merge ranks
    /// follow their ids (each merge makes a new token, later merges higher
    /// ids): tiktoken's, and tokenizer.json files made the same way.
    #[test]
    fn backtracking_applies_where_ranks_follow_ids() {
        let Some(shared) = shared() else {
            eprintln!("skipped: ../shared/assets not found");
            return;
        };
        for (file, applies) in [
            ("qwen2.5/tokenizer.json", true),
            ("qwen3/tokenizer.json", true),
            ("deepseek-v3/tokenizer.json", true),
            ("gpt2/tokenizer.json", true),
            // several merges make the same token: ranks cannot be ids
            ("llama3/tokenizer.json", false),
        ] {
            let json = std::fs::read_to_string(shared.join("assets").join(file)).unwrap();
            let tok = Tokenizer::from_json(&json).unwrap();
            let bpe = tok.model.as_bpe().unwrap();
            assert_eq!(bpe.backtracking(), applies, "{file}");
        }
        for (file, pattern) in [
            ("cl100k_base/cl100k_base.tiktoken", CL100K_PATTERN),
            ("o200k_base/o200k_base.tiktoken", O200K_PATTERN),
            ("gpt2/r50k_base.tiktoken", GPT2_PATTERN),
        ] {
            let data = std::fs::read(shared.join("assets").join(file)).unwrap();
            let tok = Tokenizer::from_tiktoken(&data, pattern, &[]).unwrap();
            assert!(tok.model.as_bpe().unwrap().backtracking(), "{file}");
        }
    }

    /// The ids-only fast path (scanner straight into BPE) gives the ids of
    /// the general path (pieces, then the model, with offsets).
    #[test]
    fn fast_path_ids_equal_the_general_path() {
        let Some(shared) = shared() else {
            eprintln!("skipped: ../shared/assets not found");
            return;
        };
        let assets = shared.join("assets");
        let mut tokenizers: Vec<(String, Tokenizer)> = Vec::new();
        for (file, pattern) in [
            ("cl100k_base/cl100k_base.tiktoken", CL100K_PATTERN),
            ("o200k_base/o200k_base.tiktoken", O200K_PATTERN),
            ("gpt2/r50k_base.tiktoken", GPT2_PATTERN),
        ] {
            let data = std::fs::read(assets.join(file)).unwrap();
            tokenizers.push((file.into(), Tokenizer::from_tiktoken(&data, pattern, &[]).unwrap()));
        }
        for file in [
            "gpt2/tokenizer.json",
            "llama3/tokenizer.json",
            "qwen2.5/tokenizer.json",
            "deepseek-v3/tokenizer.json",
        ] {
            let json = std::fs::read_to_string(assets.join(file)).unwrap();
            tokenizers.push((file.into(), Tokenizer::from_json(&json).unwrap()));
        }
        let mut texts: Vec<String> = vec![
            "it's  'S  x\r\n  \r\n\t y  Hello WORLD'S ABCdef \u{301}x 12345 \u{4e2d}\u{6587}  ".into(),
            "\n\n   \t".into(),
            "a".repeat(300),
        ];
        for corpus in ["en.txt", "code.txt", "zh.txt"] {
            let text = std::fs::read_to_string(shared.join("corpus").join(corpus)).unwrap();
            let mut cut = 60_000.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            texts.push(text[..cut].to_string());
        }
        for (name, tok) in &tokenizers {
            assert!(tok.pre_tokenizer.as_ref().and_then(|p| p.scanner()).is_some(), "{name}");
            for text in &texts {
                // twice: the second pass runs on a warm piece cache
                for _ in 0..2 {
                    let fast = tok.encode(text, &Allowed::None, None, false).unwrap();
                    let general = tok.encode_full(text, None, &Allowed::None, None, false).unwrap().ids;
                    assert_eq!(fast, general, "{name}");
                }
            }
        }
    }
}
