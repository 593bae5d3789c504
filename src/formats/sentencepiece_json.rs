//! How a SentencePiece normalizer and decoder are written in `tokenizer.json`.
//!
//! `tokenizers` has no component for a `.model`'s normalizer or decoder, so a
//! file that named tokensmith's own (`"type": "SentencePiece"`) could not be
//! read there. Instead the file holds the chain of `tokenizers` components that
//! does the same work (as `transformers`' converters build it), and, under the
//! key `"sentencepiece"`, tokensmith's exact settings; `tokenizers` ignores the
//! key and tokensmith reads it back, so neither loses anything.
//!
//! The chain is exact when the model has no character map: the dummy prefix is
//! `Prepend`, escaping is `Replace(" ", "▁")`, and `remove_extra_whitespaces`
//! is three `Replace` regexes (leading spaces, runs of spaces, then trailing
//! `▁` after escaping, as `sentencepiece` strips them). With a character map it
//! uses `Precompiled`, which applies the map per grapheme cluster where
//! `sentencepiece` takes the longest rule (saving warns of it, in Python).
//! Settings no chain expresses (user-defined symbols kept out of the map,
//! whitespace as a suffix) keep the tokensmith component alone.

use crate::decoders::sentencepiece::SentencePieceDecoder;
use crate::error::{Error, Result};
use crate::normalizers::sentencepiece::{SentencePieceNormalizer, SentencePieceSpec};
use serde_json::{json, Map, Value};

const SPACE: &str = "\u{2581}";
const KEY: &str = "sentencepiece";

fn ser<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::Format(format!("cannot serialize: {e}")))
}

/// Whether `tokenizers` components can stand for this normalizer at all.
fn expressible(spec: &SentencePieceSpec) -> bool {
    spec.user_defined_symbols.is_empty() && !spec.treat_whitespace_as_suffix
}

fn replace(pattern: Value, content: &str) -> Value {
    json!({"type": "Replace", "pattern": pattern, "content": content})
}

/// The `tokenizers` chain for `spec` (see the module comment).
fn chain(spec: &SentencePieceSpec) -> Result<Vec<Value>> {
    let space = if spec.escape_whitespaces { SPACE } else { " " };
    let mut steps = Vec::new();
    if let Some(map) = &spec.precompiled_charsmap {
        steps.push(json!({"type": "Precompiled", "precompiled_charsmap": ser(map)?}));
    }
    if spec.remove_extra_whitespaces {
        steps.push(replace(json!({"Regex": "^ +"}), ""));
        steps.push(replace(json!({"Regex": " {2,}"}), " "));
    }
    if spec.add_dummy_prefix {
        steps.push(json!({"type": "Prepend", "prepend": space}));
    }
    if spec.escape_whitespaces {
        steps.push(replace(json!({"String": " "}), SPACE));
    }
    if spec.remove_extra_whitespaces {
        steps.push(replace(json!({"Regex": format!("{space}+$")}), ""));
    }
    Ok(steps)
}

/// The normalizer as `tokenizer.json` holds it.
pub fn write_normalizer(n: &SentencePieceNormalizer) -> Result<Value> {
    let mut exact = ser(&n.spec)?;
    if !expressible(&n.spec) {
        if let Value::Object(m) = &mut exact {
            m.insert("type".into(), json!("SentencePiece"));
        }
        return Ok(exact);
    }
    Ok(json!({"type": "Sequence", "normalizers": chain(&n.spec)?, KEY: exact}))
}

/// The decoder as `tokenizer.json` holds it: `▁` to space, bytes fused, the
/// dummy prefix's space cut from the start.
pub fn write_decoder(d: &SentencePieceDecoder) -> Result<Value> {
    let mut steps = vec![json!({"type": "Replace", "pattern": {"String": SPACE}, "content": " "})];
    if d.byte_fallback {
        steps.push(json!({"type": "ByteFallback"}));
    }
    steps.push(json!({"type": "Fuse"}));
    if d.add_dummy_prefix {
        steps.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    }
    Ok(json!({"type": "Sequence", "decoders": steps, KEY: ser(d)?}))
}

/// The tokensmith component a written chain stands for, when it carries one.
pub fn read_extension(v: &Value) -> Option<Value> {
    let exact = v.as_object()?.get(KEY)?.as_object()?;
    let mut m: Map<String, Value> = exact.clone();
    m.insert("type".into(), json!("SentencePiece"));
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalizers::{Normalize, NormalizedString, Normalizer};

    fn spec(remove: bool, prefix: bool) -> SentencePieceNormalizer {
        serde_json::from_value(json!({
            "precompiled_charsmap": null, "add_dummy_prefix": prefix,
            "remove_extra_whitespaces": remove, "escape_whitespaces": true,
        }))
        .unwrap()
    }

    fn run(n: &Normalizer, text: &str) -> String {
        let mut s = NormalizedString::new(text, 0);
        n.normalize(&mut s).unwrap();
        s.text
    }

    /// Without a character map the written chain normalizes as the exact
    /// component does, and the file reads back as that component.
    #[test]
    fn chain_equals_the_sentencepiece_normalizer() {
        let texts = [
            "",
            " ",
            "a",
            "  a  b   c  ",
            "\u{2581}x \u{2581}",
            "\tt\n",
            "a \u{2581} ",
        ];
        for (remove, prefix) in [(true, true), (false, true), (true, false), (false, false)] {
            let n = spec(remove, prefix);
            let written = write_normalizer(&n).unwrap();
            let chain: Normalizer = serde_json::from_value(written.clone()).unwrap();
            let exact = Normalizer::SentencePiece(n);
            for t in texts {
                assert_eq!(run(&chain, t), run(&exact, t), "{t:?} remove={remove} prefix={prefix}");
            }
            let back: Normalizer = serde_json::from_value(read_extension(&written).unwrap()).unwrap();
            assert!(matches!(back, Normalizer::SentencePiece(_)));
        }
    }
}
