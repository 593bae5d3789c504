//! The classic training artifacts of GPT-2 and RoBERTa: `vocab.json` (token
//! -> id, tokens in the byte-level alphabet) and `merges.txt` (one merge per
//! line, `a b`, after an optional `#version` line), and the byte-level BPE
//! pipeline around them: no normalizer, the `ByteLevel` pre-tokenizer (no
//! prefix space, GPT-2's regex), the `ByteLevel` post-processor and decoder,
//! as `tokenizers`' `ByteLevelBPETokenizer` makes it.
//!
//! Errors name the file they are about: the caller gives the names.

use super::py_repr;
use super::vocab_txt::special_token;
use crate::decoders::Decoder;
use crate::error::{Error, Result};
use crate::models::bpe::BpeOptions;
use crate::models::{Bpe, ModelKind};
use crate::pre_tokenizers::PreTokenizer;
use crate::processors::PostProcessor;
use crate::tokenizer::Tokenizer;
use serde_json::Value;

/// What a file is called in error messages (its path).
#[derive(Clone, Copy, Debug)]
pub struct FileNames<'a> {
    pub vocab: &'a str,
    pub merges: &'a str,
}

/// The token -> id entries of a `vocab.json`, in file order (a token given
/// twice keeps its first place and its last id, as Python's `json` reads
/// it). Ids are JSON integers (or `true`/`false`, which Python counts as
/// integers: the model refuses them later, as it does negative ids).
pub fn parse_vocab(data: &[u8], name: &str) -> Result<Vec<(String, Value)>> {
    let text = std::str::from_utf8(data).map_err(|e| {
        Error::Format(format!(
            "{name}: cannot read the vocabulary: not UTF-8 text at byte {}",
            e.valid_up_to()
        ))
    })?;
    let root: Value =
        serde_json::from_str(text).map_err(|e| Error::Format(format!("{name}: cannot read the vocabulary: {e}")))?;
    let integer = |v: &Value| v.is_i64() || v.is_u64() || v.is_boolean();
    match root {
        Value::Object(map) if map.values().all(integer) => Ok(map.into_iter().collect()),
        _ => Err(Error::Format(format!(
            "{name}: expected a JSON object of token -> integer id"
        ))),
    }
}

/// The merges of a `merges.txt`, in rank order. Lines end as Python's
/// `str.splitlines` ends them; empty lines and a first line starting
/// `#version` are skipped; any other line must be two tokens separated by
/// one space.
pub fn parse_merges(data: &[u8], name: &str) -> Result<Vec<(String, String)>> {
    let text = std::str::from_utf8(data).map_err(|e| {
        Error::Format(format!(
            "{name}: cannot read the merges: not UTF-8 text at byte {}",
            e.valid_up_to()
        ))
    })?;
    let mut merges = Vec::new();
    for (i, line) in split_lines(text).enumerate() {
        let n = i + 1;
        if line.is_empty() || (n == 1 && line.starts_with("#version")) {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::Format(format!(
                "{name}:{n}: expected two tokens separated by one space"
            )));
        };
        merges.push((a.to_string(), b.to_string()));
    }
    Ok(merges)
}

/// Python's `str.splitlines()`: lines end at `\n`, `\r`, `\r\n`, `\v`, `\f`,
/// `\x1c`-`\x1e`, `\x85`, U+2028 and U+2029; a final line break starts no
/// line.
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let brk = |c: char| {
            matches!(
                c,
                '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}'
            )
        };
        match rest.find(brk) {
            None => Some(std::mem::take(&mut rest)),
            Some(at) => {
                let line = &rest[..at];
                let c = rest[at..].chars().next().unwrap_or('\n');
                let mut next = at + c.len_utf8();
                if c == '\r' && rest[next..].starts_with('\n') {
                    next += 1;
                }
                rest = &rest[next..];
                Some(line)
            }
        }
    })
}

impl Tokenizer {
    /// The byte-level BPE tokenizer of a `vocab.json` and a `merges.txt`
    /// (their bytes). `special_tokens`: `None` is `<|endoftext|>` when the
    /// vocabulary has it; each must be in the vocabulary.
    pub fn from_vocab_merges(
        vocab: &[u8],
        merges: &[u8],
        special_tokens: Option<&[String]>,
        names: FileNames<'_>,
    ) -> Result<Self> {
        let entries = parse_vocab(vocab, names.vocab)?;
        let merges = parse_merges(merges, names.merges)?;
        let has = |t: &str| entries.iter().any(|e| e.0 == t);
        let default = ["<|endoftext|>".to_string()];
        let specials = special_tokens.unwrap_or(if has(&default[0]) { &default[..] } else { &[] });
        if let Some(t) = specials.iter().find(|t| !has(t)) {
            return Err(Error::Format(format!(
                "{}: the special token {} is not in the vocabulary",
                names.vocab,
                py_repr(t)
            )));
        }
        let mut ids: Vec<(&str, u32)> = Vec::with_capacity(entries.len());
        for (tok, id) in &entries {
            let id = id.as_u64().filter(|&i| i < u32::MAX as u64).ok_or_else(|| {
                Error::Format(format!(
                    "{}: model.vocab[{tok:?}]: expected a non-negative integer id, found {id}",
                    names.merges
                ))
            })?;
            ids.push((tok.as_str(), id as u32));
        }
        let added: Vec<_> = specials
            .iter()
            .filter_map(|t| ids.iter().find(|e| e.0 == t.as_str()).map(|e| special_token(t, e.1)))
            .collect();
        let opts = BpeOptions {
            byte_level: true,
            ..BpeOptions::default()
        };
        let model = Bpe::from_token_strings(&ids, &merges, opts, added.len()).map_err(|e| in_file(names.merges, e))?;
        let pre = PreTokenizer::ByteLevel {
            add_prefix_space: false,
            trim_offsets: true,
            use_regex: true,
        };
        let post = PostProcessor::ByteLevel {
            add_prefix_space: true,
            trim_offsets: false,
            use_regex: true,
        };
        let decoder = Decoder::ByteLevel {
            add_prefix_space: true,
            trim_offsets: true,
            use_regex: true,
        };
        Tokenizer::new(None, Some(pre), ModelKind::Bpe(model), Some(post), Some(decoder), added)
            .map_err(|e| in_file(names.merges, e))
    }
}

/// A `Format` error of the pipeline, about the file `name` (as Python's
/// loader named the merges file for every error of the model it built).
fn in_file(name: &str, e: Error) -> Error {
    match e {
        Error::Format(m) => Error::Format(format!("{name}: {m}")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: FileNames<'static> = FileNames {
        vocab: "v.json",
        merges: "m.txt",
    };

    fn load(vocab: &str, merges: &str, specials: Option<&[String]>) -> Result<Tokenizer> {
        Tokenizer::from_vocab_merges(vocab.as_bytes(), merges.as_bytes(), specials, NAMES)
    }

    fn message(r: Result<impl Sized>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn lines_split_as_python_splitlines() {
        let lines: Vec<&str> = split_lines("a\r\nb\rc\n\nd\u{2028}e\x0cf\n").collect();
        assert_eq!(lines, ["a", "b", "c", "", "d", "e", "f"]);
        assert_eq!(split_lines("").count(), 0);
        assert_eq!(split_lines("\n").collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn merges_lines() {
        let m = parse_merges(b"#version: 0.2\na b\n\nab c\n", "m").unwrap();
        assert_eq!(m, [("a".into(), "b".into()), ("ab".into(), "c".into())]);
        // `#version` only on the first line
        assert!(message(parse_merges(b"a b\n#version: 0.2 x\n", "m")).contains("m:2: expected two tokens"));
        assert!(message(parse_merges(b"#version: 0.2\na b c\n", "m")).contains("m:2: expected two tokens"));
        assert!(message(parse_merges(b"a\n", "m")).contains("m:1:"));
        assert!(message(parse_merges(b"\xff", "m")).contains("m: cannot read the merges: not UTF-8"));
    }

    #[test]
    fn vocab_errors() {
        assert!(message(load("[]", "", None)).contains("v.json: expected a JSON object"));
        assert!(message(load(r#"{"a": 1.5}"#, "", None)).contains("v.json: expected a JSON object"));
        assert!(message(load(r#"{"a": "#, "", None)).contains("v.json: cannot read the vocabulary"));
        assert!(message(load(r#"{"a": -1}"#, "", None)).contains("m.txt: model.vocab[\"a\"]"));
        assert!(message(load(r#"{"a": true}"#, "", None)).contains("non-negative integer id"));
        assert!(message(Tokenizer::from_vocab_merges(b"\xff", b"", None, NAMES)).contains("not UTF-8"));
        let e = message(load(r#"{"a": 0}"#, "", Some(&["<s>".to_string()])));
        assert!(
            e.contains("v.json: the special token '<s>' is not in the vocabulary"),
            "{e}"
        );
        // a merge of unknown tokens, or into an unknown token
        let e = message(load(r#"{"a": 0, "b": 1}"#, "#version: 0.2\na b\n", None));
        assert!(e.starts_with("m.txt: ") && e.contains("\"ab\""), "{e}");
        assert!(message(load(r#"{"a": 0}"#, "a c\n", None)).contains("merges[0]: token \"c\""));
        assert!(message(load(r#"{"a": 0, "b": 0}"#, "", None)).contains("id 0 is used twice"));
    }

    #[test]
    fn encodes_a_tiny_vocabulary() {
        let vocab = r#"{"h": 0, "i": 1, "Ġ": 2, "hi": 3, "Ġhi": 4, "<|endoftext|>": 5}"#;
        let t = load(vocab, "#version: 0.2\nh i\nĠ hi\n", None).unwrap();
        assert_eq!(t.added.get(5).map(|a| a.content.as_str()), Some("<|endoftext|>"));
        let all = crate::added_tokens::Allowed::All;
        assert_eq!(t.encode("hi hi<|endoftext|>", &all, None, true).unwrap(), [3, 4, 5]);
        assert_eq!(t.decode(&[3, 4], false).unwrap(), "hi hi");
        // no default special token when the vocabulary lacks it
        let t = load(r#"{"h": 0}"#, "", None).unwrap();
        assert!(t.added.get(0).is_none());
    }
}
