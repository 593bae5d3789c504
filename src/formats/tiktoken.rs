//! tiktoken's rank files: one `base64(token) rank` per line.

use crate::added_tokens::AddedToken;
use crate::decoders::Decoder;
use crate::error::{Error, Result};
use crate::models::{Bpe, Model, ModelKind};
use crate::pre_tokenizers::PreTokenizer;
use crate::tokenizer::Tokenizer;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// Parse a `.tiktoken` file into `(token bytes, rank)` pairs, checking that
/// ranks are unique and contiguous from 0 and tokens are unique.
pub fn parse(data: &[u8]) -> Result<Vec<(Vec<u8>, u32)>> {
    parse_with_holes(data, &[])
}

/// [`parse`], where the ranks may skip ids below the largest id in
/// `specials` (where an encoding's special tokens sit: cl100k leaves
/// 100256-100276 to them, and a vocabulary extended after its special tokens
/// has ranks on both sides). Every other gap is an error, so memory stays
/// bounded by the file's size and the special tokens' ids.
pub fn parse_with_holes(data: &[u8], specials: &[u32]) -> Result<Vec<(Vec<u8>, u32)>> {
    let out = parse_lines(data)?;
    let mut ranks: Vec<(u32, usize)> = out.iter().enumerate().map(|(i, x)| (x.1, i)).collect();
    ranks.sort_unstable();
    // the highest id a gap may reach
    let last_special = specials.iter().copied().max();
    let mut expected: u32 = 0;
    for (k, &(r, i)) in ranks.iter().enumerate() {
        if k > 0 && ranks[k - 1].0 == r {
            return Err(Error::Format(format!(
                "rank {r} appears twice (entries {} and {})",
                ranks[k - 1].1.min(i) + 1,
                ranks[k - 1].1.max(i) + 1
            )));
        }
        if r != expected && last_special.is_none_or(|last| r - 1 > last) {
            let missing = last_special.map_or(expected, |last| expected.max(last + 1));
            return Err(Error::Format(format!(
                "rank {missing} is missing: ranks must run from 0 to {} without gaps",
                out.len() - 1
            )));
        }
        expected = r + 1;
    }
    Ok(out)
}

fn parse_lines(data: &[u8]) -> Result<Vec<(Vec<u8>, u32)>> {
    let mut out: Vec<(Vec<u8>, u32)> = Vec::with_capacity(data.len() / 12);
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let lineno = n + 1;
        let text = std::str::from_utf8(line).map_err(|_| Error::Format(format!("line {lineno}: not ASCII text")))?;
        let mut parts = text.split(' ');
        let (Some(tok), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::Format(format!(
                "line {lineno}: expected `<base64 token> <rank>`, found {text:?}"
            )));
        };
        let bytes = STANDARD
            .decode(tok)
            .map_err(|e| Error::Format(format!("line {lineno}: {tok:?} is not valid base64 ({e})")))?;
        let rank: u32 = rank
            .parse()
            .map_err(|_| Error::Format(format!("line {lineno}: rank {rank:?} is not a non-negative integer")))?;
        out.push((bytes, rank));
    }
    if out.is_empty() {
        return Err(Error::Format("the file has no tokens".into()));
    }
    Ok(out)
}

/// Render ranks as a `.tiktoken` file.
pub fn render(bpe: &Bpe) -> String {
    let mut s = String::with_capacity(bpe.vocab.len() * 12);
    for (id, tok) in bpe.vocab_iter() {
        s.push_str(&STANDARD.encode(tok));
        s.push(' ');
        s.push_str(&id.to_string());
        s.push('\n');
    }
    s
}

impl Tokenizer {
    /// A tokenizer from a tiktoken rank file, its split pattern and special tokens.
    pub fn from_tiktoken(data: &[u8], pattern: &str, specials: &[(String, u32)]) -> Result<Self> {
        let holes: Vec<u32> = specials.iter().map(|s| s.1).collect();
        let ranks = parse_with_holes(data, &holes)?;
        let ranks_len = ranks.len();
        if let Some((tok, id)) = ranks.iter().max_by_key(|(_, id)| *id) {
            let token = String::from_utf8_lossy(tok);
            crate::models::check_id("ranks", &token, *id as u64, ranks_len + specials.len())?;
        }
        let taken: rustc_hash::FxHashSet<u32> = ranks.iter().map(|r| r.1).collect();
        let mut model = Bpe::from_ranks(ranks)?;
        if let Some(b) = (0..=255u8).find(|b| model.token_to_id(&[*b]).is_none()) {
            return Err(Error::Format(format!(
                "the single byte 0x{b:02X} has no rank: a tiktoken file must give every byte a rank"
            )));
        }
        let mut added = Vec::with_capacity(specials.len());
        for (content, id) in specials {
            crate::models::check_id("special_tokens", content, *id as u64, ranks_len + specials.len())?;
            if taken.contains(id) {
                return Err(Error::Config(format!(
                    "special token {content:?} has id {id}, which is already the rank of a token"
                )));
            }
            // (a second name of an id, an alias, leaves the id's bytes to the first)
            if !added.iter().any(|a: &AddedToken| a.id == *id) {
                model.push_token(content.as_bytes(), *id);
            }
            added.push(AddedToken {
                id: *id,
                content: content.clone(),
                single_word: false,
                lstrip: false,
                rstrip: false,
                normalized: false,
                special: true,
            });
        }
        let pre = PreTokenizer::Sequence {
            pretokenizers: vec![
                PreTokenizer::Split {
                    pattern: crate::pattern::Pattern::regex(pattern)?,
                    behavior: crate::pre_tokenizers::SplitBehavior::Isolated,
                    invert: false,
                },
                PreTokenizer::ByteLevel {
                    add_prefix_space: false,
                    trim_offsets: true,
                    use_regex: false,
                },
            ],
        };
        let decoder = Decoder::ByteLevel {
            add_prefix_space: true,
            trim_offsets: true,
            use_regex: true,
        };
        Tokenizer::new(None, Some(pre), ModelKind::Bpe(model), None, Some(decoder), added)
    }

    /// The model as a tiktoken rank file, when it encodes exactly as tiktoken
    /// would (whole-piece lookup, implied merges, ids as ranks).
    pub fn to_tiktoken(&self) -> Result<String> {
        use base64::Engine as _;
        if self.normalizer.is_some() {
            return Err(Error::Unsupported(
                "a tiktoken file has no normalizer; this tokenizer normalizes text, save it as tokenizer.json".into(),
            ));
        }
        let added = &self.added;
        let exclude = |id: u32| added.get(id).is_some();
        if !self.model.as_bpe().is_some_and(|m| m.is_rank_equivalent(&exclude)) {
            return Err(Error::Unsupported(
                "this BPE model merges by an explicit merge list, which a tiktoken rank file cannot express \
                 exactly (tiktoken merges any two tokens whose concatenation is a token, lowest rank first, \
                 and looks whole pieces up first); save it as tokenizer.json"
                    .into(),
            ));
        }
        let mut s = String::with_capacity(self.model.vocab_len() * 12);
        for (id, tok) in self.model.vocab_entries() {
            if exclude(id) {
                continue;
            }
            s.push_str(&base64::engine::general_purpose::STANDARD.encode(tok));
            s.push(' ');
            s.push_str(&id.to_string());
            s.push('\n');
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_errors() {
        let ok = parse(b"YQ== 0\nYg== 1\nYWI= 2\n").unwrap();
        assert_eq!(ok[2], (b"ab".to_vec(), 2));
        assert!(parse(b"YQ== 0\nYg== 2\n")
            .unwrap_err()
            .to_string()
            .contains("rank 1 is missing"));
        assert!(parse(b"YQ== 0\nYg== 0\n").unwrap_err().to_string().contains("twice"));
        assert!(parse(b"YQ== 0\n!!! 1\n").unwrap_err().to_string().contains("line 2"));
        assert!(parse(b"YQ==0\n").unwrap_err().to_string().contains("line 1"));
        assert!(parse(b"").is_err());
        // a hole only where a special token sits
        let holed = parse_with_holes(b"YQ== 0\nYg== 2\n", &[1]).unwrap();
        assert_eq!(holed[1], (b"b".to_vec(), 2));
        // gaps below the last special id are allowed (cl100k's 100256), none above it
        assert!(parse_with_holes(b"YQ== 0\nYg== 4\n", &[3]).is_ok());
        assert!(parse_with_holes(b"YQ== 0\nYg== 3\n", &[1])
            .unwrap_err()
            .to_string()
            .contains("rank 2 is missing"));
        assert!(parse_with_holes(b"YQ== 0\nYg== 1\n", &[1, 7]).is_ok());
        assert!(parse_with_holes(b"Yg== 1\n", &[0]).is_ok());
    }
}
