//! WordLevel: every pre-tokenized piece is one token, looked up whole; a piece
//! not in the vocabulary is the unknown token. The word-level baseline of the
//! textbooks (a dictionary of words plus `[UNK]`), as `tokenizers` has it.

use crate::error::{Error, Result};
use crate::models::Model;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

pub struct WordLevel {
    vocab: FxHashMap<Vec<u8>, u32>,
    vocab_r: Vec<Option<Box<[u8]>>>,
    pub unk_token: String,
    unk_id: u32,
}

impl WordLevel {
    /// `vocab`: (token, id). The unknown token must be in it: `tokenizers`
    /// loads a vocabulary without it but fails on the first unknown word,
    /// which tokensmith refuses up front.
    pub fn new(vocab: Vec<(String, u32)>, unk_token: String) -> Result<Self> {
        let max_id = vocab.iter().map(|(_, id)| *id as usize + 1).max().unwrap_or(0);
        crate::models::check_id("model.vocab", "", max_id.saturating_sub(1) as u64, vocab.len())?;
        let (map, vocab_r) = crate::models::vocab_tables(vocab, max_id)?;
        let unk_id = *map.get(unk_token.as_bytes()).ok_or_else(|| {
            Error::Format(format!(
                "model.unk_token: {unk_token:?} is not in the vocabulary; WordLevel gives it to every \
                 word it does not know (tokenizers would fail on the first such word), so the \
                 vocabulary must have it"
            ))
        })?;
        Ok(WordLevel {
            vocab: map,
            vocab_r,
            unk_token,
            unk_id,
        })
    }

    pub fn from_json(model: &Value) -> Result<Self> {
        let obj = model
            .as_object()
            .ok_or_else(|| Error::Format("model: expected an object".into()))?;
        let unk_token = match obj.get("unk_token") {
            None | Some(Value::Null) => "<unk>".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(Error::Format(format!(
                    "model.unk_token: expected a string, found {other}"
                )))
            }
        };
        let v = crate::models::vocab_from_json(obj)?;
        WordLevel::new(v, unk_token)
    }

    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }
}

impl Model for WordLevel {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        let id = self.vocab.get(piece).copied().unwrap_or(self.unk_id);
        out.push((id, piece.len() as u32));
    }

    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.vocab_r.get(id as usize).and_then(|t| t.as_deref())
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    fn vocab_len(&self) -> usize {
        self.vocab_r.len()
    }

    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        crate::models::table_entries(&self.vocab_r)
    }

    fn to_json(&self) -> Value {
        let mut vocab = Map::with_capacity(self.vocab.len());
        for (id, tok) in self.vocab_entries() {
            vocab.insert(String::from_utf8_lossy(tok).into_owned(), json!(id));
        }
        json!({"type": "WordLevel", "vocab": vocab, "unk_token": self.unk_token})
    }

    fn push_token(&mut self, token: &[u8], id: u32) {
        if self.vocab_r.len() <= id as usize {
            self.vocab_r.resize(id as usize + 1, None);
        }
        if let Some(old) = self.vocab_r[id as usize].take() {
            if self.vocab.get(&old[..]) == Some(&id) {
                self.vocab.remove(&old[..]);
            }
        }
        self.vocab_r[id as usize] = Some(token.into());
        self.vocab.insert(token.to_vec(), id);
        if token == self.unk_token.as_bytes() {
            self.unk_id = id;
        }
    }

    fn set_unk(&mut self, unk: &str) {
        if let Some(&id) = self.vocab.get(unk.as_bytes()) {
            self.unk_id = id;
            self.unk_token = unk.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[&str]) -> WordLevel {
        let v = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordLevel::new(v, "[UNK]".into()).unwrap()
    }

    fn ids(m: &WordLevel, s: &str) -> Vec<(u32, u32)> {
        let mut out = vec![];
        m.encode_piece(s.as_bytes(), &mut out);
        out
    }

    #[test]
    fn whole_pieces_or_unknown() {
        let m = model(&["[UNK]", "the", "cat", "été"]);
        assert_eq!(ids(&m, "cat"), [(2, 3)]);
        assert_eq!(ids(&m, "été"), [(3, 5)]);
        assert_eq!(ids(&m, "cats"), [(0, 4)]);
        assert_eq!(ids(&m, ""), []);
    }

    #[test]
    fn missing_unk_and_duplicates_are_errors() {
        let e = WordLevel::new(vec![("a".into(), 0)], "[UNK]".into()).err();
        assert!(e.is_some_and(|e| e.to_string().contains("unk_token")));
        let e = WordLevel::new(vec![("[UNK]".into(), 0), ("a".into(), 0)], "[UNK]".into()).err();
        assert!(e.is_some_and(|e| e.to_string().contains("used twice")));
        let e = WordLevel::new(vec![("[UNK]".into(), 0), ("a".into(), u32::MAX - 1)], "[UNK]".into()).err();
        assert!(e.is_some_and(|e| e.to_string().contains("beyond")));
    }

    #[test]
    fn json_round_trip() {
        let m = model(&["[UNK]", "a", "b c"]);
        let j = m.to_json();
        let m2 = WordLevel::from_json(&j).unwrap();
        assert_eq!(m2.to_json(), j);
        assert_eq!(ids(&m2, "b c"), [(2, 3)]);
    }
}
