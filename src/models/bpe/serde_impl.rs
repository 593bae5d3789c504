//! The `"model": {"type": "BPE", ...}` section of `tokenizer.json`.

use super::{Bpe, BpeOptions, JsonForm};
use crate::bytelevel;
use crate::error::{Error, Result};
use crate::models::Model;
use serde_json::{json, Map, Value};

fn token_bytes(tok: &str, byte_level: bool) -> Vec<u8> {
    if byte_level {
        if let Some(b) = bytelevel::string_to_bytes(tok) {
            return b;
        }
    }
    tok.as_bytes().to_vec()
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::Format(format!(
            "model.{key}: expected a string or null, found {other}"
        ))),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Error::Format(format!(
            "model.{key}: expected true or false, found {other}"
        ))),
    }
}

impl Bpe {
    /// `added`: the file's added tokens, which may sit in the vocabulary's gaps.
    pub fn from_json(model: &Value, byte_level: bool, added: usize) -> Result<Bpe> {
        let obj = model
            .as_object()
            .ok_or_else(|| Error::Format("model: expected an object".into()))?;
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
            v.push((tok.as_str(), id as u32));
        }
        let merges_v: &[Value] = match obj.get("merges") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(_) => return Err(Error::Format("model.merges: expected a list".into())),
        };
        let merges_as_pairs = merges_v.first().is_some_and(|m| m.is_array());
        let mut merges: Vec<(&str, &str)> = Vec::with_capacity(merges_v.len());
        for (i, m) in merges_v.iter().enumerate() {
            let pair = match m {
                Value::String(s) => s.split_once(' ').filter(|(_, b)| !b.contains(' ')).ok_or_else(|| {
                    Error::Format(format!(
                        "model.merges[{i}]: {s:?} is not two tokens separated by one space"
                    ))
                })?,
                Value::Array(p) if p.len() == 2 && p.iter().all(|x| x.is_string()) => {
                    (p[0].as_str().unwrap_or_default(), p[1].as_str().unwrap_or_default())
                }
                other => {
                    return Err(Error::Format(format!(
                        "model.merges[{i}]: expected \"a b\" or [\"a\", \"b\"], found {other}"
                    )))
                }
            };
            merges.push(pair);
        }
        Bpe::from_parsed(&v, &merges, merges_as_pairs, obj, byte_level, added)
    }

    /// A model from its section's vocabulary and merges, already read (from
    /// the tree, or borrowed from the text by `lean_json`), and the small
    /// fields in `obj`.
    pub(crate) fn from_parsed(
        v: &[(&str, u32)],
        merges: &[(&str, &str)],
        merges_as_pairs: bool,
        obj: &Map<String, Value>,
        byte_level: bool,
        added: usize,
    ) -> Result<Bpe> {
        let dropout = match obj.get("dropout") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => {
                let d = n.as_f64().unwrap_or(0.0) as f32;
                if !(0.0..=1.0).contains(&d) {
                    return Err(Error::Format(format!("model.dropout: {d} is not between 0 and 1")));
                }
                Some(d)
            }
            Some(other) => {
                return Err(Error::Format(format!(
                    "model.dropout: expected a number, found {other}"
                )))
            }
        };
        let opts = BpeOptions {
            byte_level,
            unk_token: opt_string(obj, "unk_token")?,
            fuse_unk: opt_bool(obj, "fuse_unk")?,
            byte_fallback: opt_bool(obj, "byte_fallback")?,
            ignore_merges: opt_bool(obj, "ignore_merges")?,
            continuing_subword_prefix: opt_string(obj, "continuing_subword_prefix")?,
            end_of_word_suffix: opt_string(obj, "end_of_word_suffix")?,
            dropout,
        };
        let mut bpe = Bpe::from_token_strings(v, merges, opts, added)?;
        bpe.json_form.merges_as_pairs = merges_as_pairs;
        Ok(bpe)
    }

    /// A model from tokens and merges as files spell them (byte-level ones
    /// in the byte-level alphabet, when `opts.byte_level`), the way
    /// `tokenizer.json`'s `"model"` section and `vocab.json` + `merges.txt`
    /// give them. `added`: the added tokens, which may sit in the
    /// vocabulary's gaps.
    pub fn from_token_strings<S: AsRef<str>>(
        vocab: &[(&str, u32)],
        merges: &[(S, S)],
        opts: BpeOptions,
        added: usize,
    ) -> Result<Bpe> {
        let byte_level = opts.byte_level;
        let mut form = JsonForm::default();
        let mut v = Vec::with_capacity(vocab.len());
        for &(tok, id) in vocab {
            let bytes = token_bytes(tok, byte_level);
            if byte_level && bytelevel::string_to_bytes(tok).is_none() {
                form.raw_tokens.insert(bytes.clone().into_boxed_slice());
            }
            v.push((bytes, id));
        }
        let merges: Vec<(Vec<u8>, Vec<u8>)> = merges
            .iter()
            .map(|(a, b)| (token_bytes(a.as_ref(), byte_level), token_bytes(b.as_ref(), byte_level)))
            .collect();
        if let Some((tok, id)) = v.iter().max_by_key(|(_, id)| *id) {
            let token = String::from_utf8_lossy(tok);
            crate::models::check_id("model.vocab", &token, *id as u64, v.len() + added)?;
        }
        form.empty_prefix = opts.continuing_subword_prefix.as_deref() == Some("");
        form.empty_suffix = opts.end_of_word_suffix.as_deref() == Some("");
        let mut bpe = Bpe::new(v, &merges, opts)?;
        bpe.json_form = form;
        Ok(bpe)
    }

    pub fn to_json(&self) -> Value {
        let mut vocab = Map::with_capacity(self.vocab.len());
        for (id, tok) in self.vocab_iter() {
            vocab.insert(self.token_string(tok), json!(id));
        }
        let pairs = self.merges_in_order();
        let tok = |id: u32| self.id_to_string(id);
        let any_space =
            self.json_form.merges_as_pairs || pairs.iter().any(|&(a, b)| tok(a).contains(' ') || tok(b).contains(' '));
        let merges: Vec<Value> = pairs
            .iter()
            .map(|&(a, b)| {
                if any_space {
                    json!([tok(a), tok(b)])
                } else {
                    json!(format!("{} {}", tok(a), tok(b)))
                }
            })
            .collect();
        json!({
            "type": "BPE",
            "dropout": self.dropout,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix.as_deref().or(self.json_form.empty_prefix.then_some("")),
            "end_of_word_suffix": self.end_of_word_suffix.as_deref().or(self.json_form.empty_suffix.then_some("")),
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
            "vocab": vocab,
            "merges": merges,
        })
    }

    pub fn id_to_string(&self, id: u32) -> String {
        use crate::models::Model;
        self.id_to_bytes(id).map(|b| self.token_string(b)).unwrap_or_default()
    }
}
