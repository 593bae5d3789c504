//! `tokenizer.json`, the `tokenizers` library's file: a tokenizer read from
//! it and written to it, component by component (each component's serde
//! form is in its own module; SentencePiece pipelines have their own
//! spelling, `sentencepiece_json`).

use super::sentencepiece_json;
use crate::added_tokens::AddedToken;
use crate::decoders::Decoder;
use crate::error::{Error, Result};
use crate::models::{Model, ModelKind};
use crate::normalizers::Normalizer;
use crate::pre_tokenizers::PreTokenizer;
use crate::processors::PostProcessor;
use crate::tokenizer::Tokenizer;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

fn component<T: DeserializeOwned>(root: &Map<String, Value>, key: &str) -> Result<Option<T>> {
    match root.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            // (a chain of `tokenizers` components that carries tokensmith's exact
            // SentencePiece settings is read as those settings)
            let exact = match key {
                "normalizer" | "decoder" => sentencepiece_json::read_extension(v),
                _ => None,
            };
            serde_json::from_value(exact.unwrap_or_else(|| v.clone()))
                .map(Some)
                .map_err(|e| {
                    let msg = e.to_string();
                    if msg.contains("unknown variant") {
                        Error::Unsupported(format!(
                            "{key}: {msg}; tokensmith does not implement this component yet"
                        ))
                    } else {
                        Error::Format(format!("{key}: {msg}"))
                    }
                })
        }
    }
}

impl Tokenizer {
    pub fn from_json(text: &str) -> Result<Self> {
        // (the parsed document is dropped once the tokenizer is built: its
        // large arrays go on ordinary pages, see `huge_pages`)
        crate::huge_pages::plain(|| Self::from_json_split(text)).unwrap_or_else(|| Self::from_json_tree(text))
    }

    /// `from_json` from the top level split into raw values: each section is
    /// parsed on its own, once, and a BPE model's vocabulary and merges are
    /// borrowed from the text instead of parsed into a tree
    /// (`bpe::lean_json`). The same steps in the same order as
    /// `from_json_tree`, so the same tokenizer and the same errors; `None`
    /// when the text cannot be split so (not JSON, not an object, escaped
    /// keys, no model), which the tree reader then reads and reports on.
    fn from_json_split(text: &str) -> Option<Result<Self>> {
        use std::collections::BTreeMap;
        let raw: BTreeMap<&str, &serde_json::value::RawValue> = serde_json::from_str(text).ok()?;
        let model_raw = raw.get("model")?.get();
        let mut root = Map::new();
        for (&key, value) in &raw {
            if key != "model" {
                root.insert(key.to_owned(), serde_json::from_str(value.get()).ok()?);
            }
        }
        Some(Self::from_sections(model_raw, &root))
    }

    fn from_sections(model_raw: &str, root: &Map<String, Value>) -> Result<Self> {
        let (normalizer, pre_tokenizer, post_processor, decoder, added) = Self::components(root)?;
        let byte_level = pre_tokenizer.as_ref().is_some_and(|p| p.is_byte_level());
        let model = match crate::models::bpe::lean_json::read(model_raw, byte_level, added.len()) {
            Some(bpe) => ModelKind::Bpe(bpe),
            None => {
                let model_v: Value =
                    serde_json::from_str(model_raw).map_err(|e| Error::Format(format!("not valid JSON: {e}")))?;
                let mut model = ModelKind::from_json(&model_v, byte_level, added.len())?;
                if let ModelKind::Unigram(m) = &mut model {
                    m.keep_written_section_scores(model_raw);
                }
                model
            }
        };
        let t = Tokenizer::new(normalizer, pre_tokenizer, model, post_processor, decoder, added)?;
        Ok(Self::with_extra(t, root))
    }

    /// The pipeline's components other than the model.
    #[allow(clippy::type_complexity)]
    fn components(
        root: &Map<String, Value>,
    ) -> Result<(
        Option<Normalizer>,
        Option<PreTokenizer>,
        Option<PostProcessor>,
        Option<Decoder>,
        Vec<AddedToken>,
    )> {
        Ok((
            component(root, "normalizer")?,
            component(root, "pre_tokenizer")?,
            component(root, "post_processor")?,
            component(root, "decoder")?,
            component(root, "added_tokens")?.unwrap_or_default(),
        ))
    }

    /// `t` with the file's `version`, `truncation` and `padding`, kept to be written back.
    fn with_extra(mut t: Tokenizer, root: &Map<String, Value>) -> Tokenizer {
        for key in ["version", "truncation", "padding"] {
            if let Some(v) = root.get(key) {
                t.extra.insert(key.into(), v.clone());
            }
        }
        t
    }

    /// `from_json` through a parsed tree: every file, every error.
    fn from_json_tree(text: &str) -> Result<Self> {
        let root: Value = crate::huge_pages::plain(|| serde_json::from_str(text))
            .map_err(|e| Error::Format(format!("not valid JSON: {e}")))?;
        let root = root
            .as_object()
            .ok_or_else(|| Error::Format("the top level must be a JSON object".into()))?;
        let model_v = root
            .get("model")
            .ok_or_else(|| Error::Format("model: missing".into()))?;
        let normalizer: Option<Normalizer> = component(root, "normalizer")?;
        let pre_tokenizer: Option<PreTokenizer> = component(root, "pre_tokenizer")?;
        let post_processor: Option<PostProcessor> = component(root, "post_processor")?;
        let decoder: Option<Decoder> = component(root, "decoder")?;
        let added: Vec<AddedToken> = component(root, "added_tokens")?.unwrap_or_default();
        let byte_level = pre_tokenizer.as_ref().is_some_and(|p| p.is_byte_level());
        let mut model = ModelKind::from_json(model_v, byte_level, added.len())?;
        if let ModelKind::Unigram(m) = &mut model {
            m.keep_written_scores(text);
        }
        let t = Tokenizer::new(normalizer, pre_tokenizer, model, post_processor, decoder, added)?;
        Ok(Self::with_extra(t, root))
    }

    pub fn to_json(&self, pretty: bool) -> Result<String> {
        let ser = |v: &dyn erased::Ser| v.to_value();
        let mut root = Map::new();
        root.insert(
            "version".into(),
            self.extra.get("version").cloned().unwrap_or(json!("1.0")),
        );
        root.insert(
            "truncation".into(),
            self.extra.get("truncation").cloned().unwrap_or(Value::Null),
        );
        root.insert(
            "padding".into(),
            self.extra.get("padding").cloned().unwrap_or(Value::Null),
        );
        root.insert("added_tokens".into(), ser(&self.added.tokens)?);
        let normalizer = match &self.normalizer {
            Some(Normalizer::SentencePiece(n)) => sentencepiece_json::write_normalizer(n)?,
            other => ser(other)?,
        };
        root.insert("normalizer".into(), normalizer);
        root.insert("pre_tokenizer".into(), ser(&self.pre_tokenizer)?);
        root.insert("post_processor".into(), ser(&self.post_processor)?);
        let decoder = match &self.decoder {
            Some(Decoder::SentencePiece(d)) => sentencepiece_json::write_decoder(d)?,
            other => ser(other)?,
        };
        root.insert("decoder".into(), decoder);
        root.insert("model".into(), self.model.to_json());
        let v = Value::Object(root);
        let s = if pretty {
            serde_json::to_string_pretty(&v)
        } else {
            serde_json::to_string(&v)
        };
        s.map_err(|e| Error::Format(format!("cannot serialize: {e}")))
    }
}

mod erased {
    use crate::error::{Error, Result};
    use serde_json::Value;

    pub trait Ser {
        fn to_value(&self) -> Result<Value>;
    }

    impl<T: serde::Serialize> Ser for T {
        fn to_value(&self) -> Result<Value> {
            serde_json::to_value(self).map_err(|e| Error::Format(format!("cannot serialize: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::added_tokens::Allowed;

    /// A byte-level BPE file with `merges` written as given and `extra`
    /// spliced into the model section.
    fn file(vocab: &str, merges: &str, extra: &str) -> String {
        format!(
            r#"{{"version": "1.0", "added_tokens": [], "normalizer": null,
              "pre_tokenizer": {{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}},
              "post_processor": null, "decoder": {{"type": "ByteLevel"}},
              "model": {{"type": "BPE", {extra} "vocab": {vocab}, "merges": {merges}}}}}"#
        )
    }

    /// The split reader and the tree reader give the same tokenizer (or the
    /// same error); whether the BPE section was read the lean way.
    fn same(text: &str) -> bool {
        let split = Tokenizer::from_json_split(text);
        let tree = Tokenizer::from_json_tree(text);
        match (&split, &tree) {
            (Some(Ok(l)), Ok(t)) => {
                assert_eq!(l.to_json(false).unwrap(), t.to_json(false).unwrap());
                for s in ["abc cab", "aab", "\u{e9}t\u{e9}", ""] {
                    let ids = |x: &Tokenizer| x.encode(s, &Allowed::None, None, false).unwrap();
                    assert_eq!(ids(l), ids(t), "{s:?}");
                }
            }
            (Some(Err(a)), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (None, _) => {}
            _ => panic!("the readers disagree on {text}"),
        }
        let raw: Option<std::collections::BTreeMap<&str, &serde_json::value::RawValue>> =
            serde_json::from_str(text).ok();
        let model = raw.and_then(|r| r.get("model").map(|m| m.get()));
        model.is_some_and(|m| crate::models::bpe::lean_json::read(m, true, 0).is_some())
    }

    const VOCAB: &str = r#"{"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "abc": 5, "Ã": 6, "©": 7, "t": 8, "Ã©": 9}"#;

    #[test]
    fn the_lean_reader_reads_what_the_tree_reader_reads() {
        assert!(same(&file(VOCAB, r#"["a b", "ab c", "Ã ©"]"#, "")));
        let ignore = r#""ignore_merges": true,"#;
        assert!(same(&file(VOCAB, r#"[["a", "b"], ["ab", "c"]]"#, ignore)));
        let nulls = r#""dropout": null, "unk_token": null, "fuse_unk": false,"#;
        assert!(same(&file(VOCAB, "[]", nulls)));
        // an escaped token is copied, not borrowed
        assert!(same(&file(r#"{"\u0061": 0, "b": 1, "ab": 2}"#, r#"["a b"]"#, "")));
    }

    #[test]
    fn what_the_lean_reader_declines_the_tree_reader_decides() {
        let declined = [
            file(r#"{"a": 0, "a": 1, "b": 2}"#, "[]", ""), // a duplicate token
            file(VOCAB, r#"["a  b"]"#, ""),                // not one space
            file(VOCAB, r#"[["a", "b", "c"]]"#, ""),       // not a pair
            file(VOCAB, r#"["a x"]"#, ""),                 // not in the vocabulary
            file(r#"{"a": 0.5}"#, "[]", ""),               // not an integer id
            file(VOCAB, "[]", r#""dropout": 2.0,"#),       // out of range
            file(VOCAB, "[]", r#""sentencepiece": {},"#),  // another reader's
            r#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#.to_string(),
            "[1, 2]".to_string(),
        ];
        for text in &declined {
            assert!(!same(text), "{text}");
        }
        assert!(Tokenizer::from_json(&declined[3]).is_err());
        assert!(Tokenizer::from_json(&declined[8]).is_err());
    }
}
