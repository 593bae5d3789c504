//! BERT's `vocab.txt`: one WordPiece token per line, its id the line number
//! (from 0), and the pipeline `transformers`' `BertTokenizerFast` writes
//! into `tokenizer.json` around it (`BertNormalizer`, `BertPreTokenizer`,
//! `WordPiece`, a `[CLS] $A [SEP]` template and the `WordPiece` decoder),
//! so that a `vocab.txt` and the `tokenizer.json` made from it encode
//! identically.
//!
//! Lines are split at `\n` only (a vocabulary may hold U+2028 and other
//! line-like characters inside tokens) and trailing whitespace (Rust's
//! `char::is_whitespace`) is trimmed, as `tokenizers` reads the file.

use super::py_repr;
use crate::added_tokens::AddedToken;
use crate::decoders::wordpiece::WordPieceDecoder;
use crate::decoders::Decoder;
use crate::error::{Error, Result};
use crate::models::{ModelKind, WordPiece};
use crate::normalizers::bert::BertNormalizer;
use crate::normalizers::Normalizer;
use crate::pre_tokenizers::PreTokenizer;
use crate::processors::{PostProcessor, Seq, SpecialTokenDef, TemplatePiece};
use crate::tokenizer::Tokenizer;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The settings a `vocab.txt` leaves out (`BertTokenizerFast`'s arguments);
/// the defaults are `bert-base-uncased`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BertOptions {
    pub lowercase: bool,
    /// `None`: strip accents exactly when lowercasing, as BERT does.
    pub strip_accents: Option<bool>,
    pub tokenize_chinese_chars: bool,
    pub clean_text: bool,
    pub unk_token: String,
    pub sep_token: String,
    pub cls_token: String,
    pub pad_token: String,
    pub mask_token: String,
    pub continuing_subword_prefix: String,
    pub max_input_chars_per_word: usize,
}

impl Default for BertOptions {
    fn default() -> Self {
        BertOptions {
            lowercase: true,
            strip_accents: None,
            tokenize_chinese_chars: true,
            clean_text: true,
            unk_token: "[UNK]".into(),
            sep_token: "[SEP]".into(),
            cls_token: "[CLS]".into(),
            pad_token: "[PAD]".into(),
            mask_token: "[MASK]".into(),
            continuing_subword_prefix: "##".into(),
            max_input_chars_per_word: 100,
        }
    }
}

/// The tokens of a `vocab.txt`, in id order. Not UTF-8, a token on two
/// lines (after trimming) and no token at all are `Format` errors.
pub fn parse(data: &[u8]) -> Result<Vec<String>> {
    let text =
        std::str::from_utf8(data).map_err(|e| Error::Format(format!("not UTF-8 text at byte {}", e.valid_up_to())))?;
    if text.is_empty() {
        return Err(Error::Format("the vocabulary is empty".into()));
    }
    // (the newline that ends the last line starts no line)
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut first: FxHashMap<&str, usize> = FxHashMap::default();
    let mut tokens = Vec::new();
    for (i, line) in body.split('\n').enumerate() {
        let token = line.trim_end_matches(char::is_whitespace);
        if let Some(&j) = first.get(token) {
            return Err(Error::Format(format!(
                "lines {} and {} hold the same token {} (trailing whitespace is ignored); each token must appear once",
                j + 1,
                i + 1,
                py_repr(token)
            )));
        }
        first.insert(token, i);
        tokens.push(token.to_string());
    }
    Ok(tokens)
}

impl Tokenizer {
    /// The BERT tokenizer of a `vocab.txt`'s bytes: special tokens missing
    /// from the vocabulary get new ids after it (as `transformers` adds
    /// them); the unknown token must be in it.
    pub fn from_vocab_txt(data: &[u8], options: &BertOptions) -> Result<Self> {
        let tokens = parse(data)?;
        let o = options;
        let mut ids: FxHashMap<&str, u32> = tokens.iter().enumerate().map(|(i, t)| (t.as_str(), i as u32)).collect();
        if !ids.contains_key(o.unk_token.as_str()) {
            return Err(Error::Format(format!(
                "the unknown token {} is not in the vocabulary; WordPiece needs it for words it cannot \
                 split (pass unk_token=... naming the vocabulary's own)",
                py_repr(&o.unk_token)
            )));
        }
        let mut next_id = tokens.len() as u32;
        let mut specials: Vec<(&str, u32)> = Vec::new();
        for t in [&o.pad_token, &o.unk_token, &o.cls_token, &o.sep_token, &o.mask_token] {
            if specials.iter().any(|s| s.0 == t.as_str()) {
                continue;
            }
            let id = *ids.entry(t.as_str()).or_insert_with(|| {
                next_id += 1;
                next_id - 1
            });
            specials.push((t.as_str(), id));
        }
        specials.sort_by_key(|s| s.1);
        let added = specials.iter().map(|&(t, id)| special_token(t, id)).collect();
        let id_of = |t: &str| specials.iter().find(|s| s.0 == t).map_or(0, |s| s.1);
        let post = template(&o.cls_token, id_of(&o.cls_token), &o.sep_token, id_of(&o.sep_token));
        let normalizer = Normalizer::BertNormalizer(BertNormalizer {
            clean_text: o.clean_text,
            handle_chinese_chars: o.tokenize_chinese_chars,
            strip_accents: o.strip_accents,
            lowercase: o.lowercase,
        });
        let decoder = Decoder::WordPiece(WordPieceDecoder {
            prefix: o.continuing_subword_prefix.clone(),
            cleanup: true,
        });
        let vocab = tokens.into_iter().enumerate().map(|(i, t)| (t, i as u32)).collect();
        let model = WordPiece::new(
            vocab,
            o.unk_token.clone(),
            o.continuing_subword_prefix.clone(),
            o.max_input_chars_per_word,
        )?;
        Tokenizer::new(
            Some(normalizer),
            Some(PreTokenizer::BertPreTokenizer),
            ModelKind::WordPiece(model),
            Some(post),
            Some(decoder),
            added,
        )
    }
}

/// A special added token, as `transformers` writes one.
pub(crate) fn special_token(content: &str, id: u32) -> AddedToken {
    AddedToken {
        id,
        content: content.to_string(),
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
    }
}

/// BERT's template: `[CLS] $A [SEP]` and `[CLS] $A [SEP] $B:1 [SEP]:1`.
fn template(cls: &str, cls_id: u32, sep: &str, sep_id: u32) -> PostProcessor {
    let special = |t: &str, type_id| TemplatePiece::SpecialToken {
        id: t.to_string(),
        type_id,
    };
    let seq = |id, type_id| TemplatePiece::Sequence { id, type_id };
    let def = |t: &str, id| SpecialTokenDef {
        id: t.to_string(),
        ids: vec![id],
        tokens: vec![t.to_string()],
    };
    let mut special_tokens = BTreeMap::new();
    special_tokens.insert(cls.to_string(), def(cls, cls_id));
    special_tokens.insert(sep.to_string(), def(sep, sep_id));
    PostProcessor::TemplateProcessing {
        single: vec![special(cls, 0), seq(Seq::A, 0), special(sep, 0)],
        pair: vec![
            special(cls, 0),
            seq(Seq::A, 0),
            special(sep, 0),
            seq(Seq::B, 1),
            special(sep, 1),
        ],
        special_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl Sized>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parse_lines() {
        assert_eq!(
            parse("a\nb \r\n\nc\u{2028}d".as_bytes()).unwrap(),
            ["a", "b", "", "c\u{2028}d"]
        );
        assert_eq!(parse(b"a\n").unwrap(), ["a"]);
        // one empty line is one empty token
        assert_eq!(parse(b"\n").unwrap(), [""]);
        assert_eq!(parse(b" ").unwrap(), [""]);
    }

    #[test]
    fn parse_errors() {
        let dup = message(parse(b"[UNK]\na\nb\na \nc\n"));
        assert!(dup.contains("lines 2 and 4") && dup.contains("'a'"), "{dup}");
        assert!(message(parse(b"\n\nx\n")).contains("lines 1 and 2"));
        assert!(message(parse(b"")).contains("the vocabulary is empty"));
        assert!(message(parse(b"\n\n")).contains("lines 1 and 2"));
        assert!(message(parse(b"[UNK]\n\xff\n")).contains("not UTF-8 text at byte 6"));
    }

    #[test]
    fn unk_token_required() {
        let e = message(Tokenizer::from_vocab_txt(b"a\n##b\n", &BertOptions::default()));
        assert!(e.contains("'[UNK]'") && e.contains("unk_token"), "{e}");
        let o = BertOptions {
            unk_token: "a".into(),
            ..BertOptions::default()
        };
        assert!(Tokenizer::from_vocab_txt(b"a\n##b\n", &o).is_ok());
    }

    #[test]
    fn encodes_a_tiny_vocabulary() {
        let data = b"[PAD]\n[UNK]\n[CLS]\nhello\n##s\nworld\n";
        let t = Tokenizer::from_vocab_txt(data, &BertOptions::default()).unwrap();
        // [SEP] and [MASK] are missing: they follow the vocabulary, in that order
        assert_eq!(t.added.get(6).map(|a| a.content.as_str()), Some("[SEP]"));
        assert_eq!(t.added.get(7).map(|a| a.content.as_str()), Some("[MASK]"));
        assert_eq!(
            t.encode("Hellos, World!", &crate::added_tokens::Allowed::All, None, true)
                .unwrap(),
            [2, 3, 4, 1, 5, 1, 6]
        );
    }
}
