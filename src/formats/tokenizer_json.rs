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
        let mut t = Tokenizer::new(normalizer, pre_tokenizer, model, post_processor, decoder, added)?;
        for key in ["version", "truncation", "padding"] {
            if let Some(v) = root.get(key) {
                t.extra.insert(key.into(), v.clone());
            }
        }
        Ok(t)
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
