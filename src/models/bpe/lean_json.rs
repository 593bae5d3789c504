//! The BPE section of `tokenizer.json` read without building a JSON tree:
//! the vocabulary and the merges are borrowed from the file's text (a
//! string with escapes is the only one copied). Llama-3's section is 128K
//! tokens and 280K merges; as a `serde_json::Value` it is about a million
//! allocations and most of the time a load takes.
//!
//! This is a fast path, never a second reader: [`read`] gives `None` for
//! anything it does not take as given (a duplicate token, a merge that is
//! not a pair, an id that is not an integer, a SentencePiece model...), and
//! the caller then reads the section as a tree, whose errors and rules are
//! the only ones.

use super::Bpe;
use crate::error::Result;
use serde::de::{Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// A string borrowed from the text when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// `"vocab"`: token -> id, in the file's order.
struct Vocab<'a>(Vec<(Cow<'a, str>, u32)>);

impl<'de: 'a, 'a> Deserialize<'de> for Vocab<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vocab<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of token -> id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Vocab<'de>, A::Error> {
                let mut v = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((Text(tok), id)) = map.next_entry::<Text, u32>()? {
                    v.push((tok, id));
                }
                Ok(Vocab(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// One merge, `"a b"` or `["a", "b"]`; `.2`: it was written as a list.
struct Merge<'a>(Cow<'a, str>, Cow<'a, str>, bool);

impl<'de: 'a, 'a> Deserialize<'de> for Merge<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        fn split<'a, E: serde::de::Error>(s: Cow<'a, str>) -> std::result::Result<Merge<'a>, E> {
            let bad = || E::custom("not two tokens separated by one space");
            match s {
                Cow::Borrowed(s) => {
                    let (a, b) = s.split_once(' ').filter(|(_, b)| !b.contains(' ')).ok_or_else(bad)?;
                    Ok(Merge(Cow::Borrowed(a), Cow::Borrowed(b), false))
                }
                Cow::Owned(s) => {
                    let (a, b) = s.split_once(' ').filter(|(_, b)| !b.contains(' ')).ok_or_else(bad)?;
                    Ok(Merge(Cow::Owned(a.to_owned()), Cow::Owned(b.to_owned()), false))
                }
            }
        }
        impl<'de> Visitor<'de> for V {
            type Value = Merge<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"a b\" or [\"a\", \"b\"]")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> std::result::Result<Merge<'de>, E> {
                split(Cow::Borrowed(s))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Merge<'de>, E> {
                split(Cow::Owned(s.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Merge<'de>, A::Error> {
                let (Some(Text(a)), Some(Text(b))) = (seq.next_element()?, seq.next_element()?) else {
                    return Err(A::Error::custom("a pair needs two tokens"));
                };
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom("a pair has two tokens"));
                }
                Ok(Merge(a, b, true))
            }
        }
        d.deserialize_any(V)
    }
}

/// The section: the two large fields typed, every other one kept raw (and
/// read as the tree reader reads it).
#[derive(Deserialize)]
struct Section<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    sentencepiece: Option<&'a RawValue>,
    #[serde(borrow)]
    vocab: Vocab<'a>,
    #[serde(borrow, default)]
    merges: Option<Vec<Merge<'a>>>,
    #[serde(borrow)]
    dropout: Option<&'a RawValue>,
    #[serde(borrow)]
    unk_token: Option<&'a RawValue>,
    #[serde(borrow)]
    continuing_subword_prefix: Option<&'a RawValue>,
    #[serde(borrow)]
    end_of_word_suffix: Option<&'a RawValue>,
    #[serde(borrow)]
    fuse_unk: Option<&'a RawValue>,
    #[serde(borrow)]
    byte_fallback: Option<&'a RawValue>,
    #[serde(borrow)]
    ignore_merges: Option<&'a RawValue>,
}

/// The model of a `"model"` section given as raw JSON text, when it is a
/// byte-level or plain BPE this path reads; `None` for anything else (see
/// the module's documentation).
pub fn read(section: &str, byte_level: bool, added: usize) -> Option<Bpe> {
    let s: Section = serde_json::from_str(section).ok()?;
    let kind = s.kind.map(|k| k.get());
    if s.sentencepiece.is_some() || !(kind.is_none() || kind == Some("\"BPE\"")) {
        return None;
    }
    let options = options(&s).ok()?;
    let vocab: Vec<(&str, u32)> = s.vocab.0.iter().map(|(t, id)| (t.as_ref(), *id)).collect();
    let merges = s.merges.unwrap_or_default();
    let as_pairs = merges.first().is_some_and(|m| m.2);
    let pairs: Vec<(&str, &str)> = merges.iter().map(|m| (m.0.as_ref(), m.1.as_ref())).collect();
    Bpe::from_parsed(&vocab, &pairs, as_pairs, &options, byte_level, added).ok()
}

/// The small fields as the tree reader sees them.
fn options(s: &Section) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    let fields = [
        ("dropout", s.dropout),
        ("unk_token", s.unk_token),
        ("continuing_subword_prefix", s.continuing_subword_prefix),
        ("end_of_word_suffix", s.end_of_word_suffix),
        ("fuse_unk", s.fuse_unk),
        ("byte_fallback", s.byte_fallback),
        ("ignore_merges", s.ignore_merges),
    ];
    for (key, raw) in fields {
        if let Some(raw) = raw {
            let v: Value = serde_json::from_str(raw.get())
                .map_err(|e| crate::error::Error::Format(format!("model.{key}: {e}")))?;
            m.insert(key.into(), v);
        }
    }
    Ok(m)
}
