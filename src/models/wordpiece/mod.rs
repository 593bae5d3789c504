//! WordPiece (BERT): greedy longest-match-first over a word, continuation
//! pieces spelled with a prefix (`##`), the whole word as the unknown token
//! when some position has no match or the word is too long.
//!
//! Matching is LinMaxMatch (`linmax`): one pass over a word's bytes along a
//! trie with failure links. With a BERT normalizer and pre-tokenizer the
//! whole text goes through one fused pass (`fused`).

mod fused;
mod linmax;
mod words;

use crate::error::{Error, Result};
use crate::models::Model;
use linmax::Automaton;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;
use words::WordTable;

pub struct WordPiece {
    vocab: FxHashMap<Vec<u8>, u32>,
    vocab_r: Vec<Option<Box<[u8]>>>,
    pub unk_token: String,
    unk_id: u32,
    pub continuing_subword_prefix: String,
    pub max_input_chars_per_word: usize,
    /// built on first use, dropped when the vocabulary changes
    tables: OnceLock<Tables>,
}

/// The matching structures, derived from the vocabulary.
struct Tables {
    automaton: Automaton,
    /// words that are one token, looked up before matching
    words: WordTable,
}

impl WordPiece {
    /// `vocab`: (token, id). The unknown token must be in it.
    pub fn new(
        vocab: Vec<(String, u32)>,
        unk_token: String,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
    ) -> Result<Self> {
        let max_id = vocab.iter().map(|(_, id)| *id as usize + 1).max().unwrap_or(0);
        if max_id > 4 * vocab.len() + (1 << 20) {
            return Err(Error::Format(format!(
                "model.vocab: ids go up to {} for {} tokens; ids must be (nearly) contiguous",
                max_id - 1,
                vocab.len()
            )));
        }
        let (map, vocab_r) = crate::models::vocab_tables(vocab, max_id)?;
        let unk_id = *map.get(unk_token.as_bytes()).ok_or_else(|| {
            Error::Format(format!(
                "model.unk_token: {unk_token:?} is not in the vocabulary; WordPiece gives it to every \
                 word it cannot split, so the vocabulary must have it (or set unk_token to one of its tokens)"
            ))
        })?;
        Ok(WordPiece {
            vocab: map,
            vocab_r,
            unk_token,
            unk_id,
            continuing_subword_prefix,
            max_input_chars_per_word,
            tables: OnceLock::new(),
        })
    }

    fn tables(&self) -> &Tables {
        self.tables.get_or_init(|| Tables {
            automaton: linmax::from_map(&self.vocab, self.continuing_subword_prefix.as_bytes()),
            words: WordTable::new(&self.vocab, self.continuing_subword_prefix.as_bytes()),
        })
    }

    /// The id of `word` when it is one token.
    #[inline]
    fn whole(&self, word: &[u8]) -> Option<u32> {
        words::key(word).and_then(|k| self.tables().words.get(&k, word.len()))
    }

    /// Whether `word` (non-empty) has more characters than a word may have.
    #[inline]
    fn too_long(&self, word: &[u8]) -> bool {
        word.len() > self.max_input_chars_per_word
            && word.iter().filter(|&&b| (b & 0xC0) != 0x80).count() > self.max_input_chars_per_word
    }

    /// The ids of one non-empty word, appended to `out`.
    #[inline]
    fn encode_word_ids(&self, word: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        if self.too_long(word) {
            out.push(self.unk_id);
            return;
        }
        if let Some(id) = self.whole(word) {
            out.push(id);
            return;
        }
        if !self
            .tables()
            .automaton
            .split(word, &mut |ids, _| out.extend_from_slice(ids))
        {
            out.truncate(start);
            out.push(self.unk_id);
        }
    }

    pub fn from_json(model: &Value) -> Result<Self> {
        let obj = model
            .as_object()
            .ok_or_else(|| Error::Format("model: expected an object".into()))?;
        let string = |key: &str, default: &str| -> Result<String> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(default.to_string()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(Error::Format(format!("model.{key}: expected a string, found {other}"))),
            }
        };
        let unk_token = string("unk_token", "[UNK]")?;
        let prefix = string("continuing_subword_prefix", "##")?;
        let max_chars = match obj.get("max_input_chars_per_word") {
            None | Some(Value::Null) => 100,
            Some(v) => v.as_u64().ok_or_else(|| {
                Error::Format(format!(
                    "model.max_input_chars_per_word: expected a non-negative integer, found {v}"
                ))
            })? as usize,
        };
        let v = crate::models::vocab_from_json(obj)?;
        WordPiece::new(v, unk_token, prefix, max_chars)
    }

    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }
}

impl Model for WordPiece {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        let start = out.len();
        if !self.too_long(piece) {
            if let Some(id) = self.whole(piece) {
                out.push((id, piece.len() as u32));
                return;
            }
        }
        let fits = !self.too_long(piece)
            && self.tables().automaton.split(piece, &mut |ids, lens| {
                out.extend(ids.iter().copied().zip(lens.iter().copied()));
            });
        if !fits {
            out.truncate(start);
            out.push((self.unk_id, piece.len() as u32));
        }
    }

    fn encode_fused(
        &self,
        normalizer: Option<&crate::normalizers::Normalizer>,
        pre_tokenizer: Option<&crate::pre_tokenizers::PreTokenizer>,
        text: &str,
        out: &mut Vec<u32>,
    ) -> bool {
        fused::encode(self, normalizer, pre_tokenizer, text, out)
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
        json!({
            "type": "WordPiece",
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": vocab,
        })
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
        self.tables = OnceLock::new();
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

    fn model(tokens: &[&str]) -> WordPiece {
        let v = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordPiece::new(v, "[UNK]".into(), "##".into(), 100).unwrap()
    }

    fn ids(m: &WordPiece, s: &str) -> Vec<(u32, u32)> {
        let mut out = vec![];
        m.encode_piece(s.as_bytes(), &mut out);
        out
    }

    #[test]
    fn greedy_longest_match_first() {
        let m = model(&["[UNK]", "ba", "##na", "un", "##aff", "##able", "una", "##ffable"]);
        assert_eq!(ids(&m, "banana"), [(1, 2), (2, 2), (2, 2)]);
        assert_eq!(ids(&m, "unaffable"), [(6, 3), (7, 6)]);
        // "na" cannot start a word: the whole word is unknown
        assert_eq!(ids(&m, "nanana"), [(0, 6)]);
        assert_eq!(ids(&m, "banan"), [(0, 5)]);
    }

    #[test]
    fn long_words_are_unknown() {
        let m = model(&["[UNK]", "a", "##a"]);
        assert_eq!(ids(&m, &"a".repeat(100)).len(), 100);
        assert_eq!(ids(&m, &"a".repeat(101)), [(0, 101)]);
        let big = WordPiece::new(
            vec![("[UNK]".into(), 0), ("a".into(), 1), ("##a".into(), 2)],
            "[UNK]".into(),
            "##".into(),
            usize::MAX,
        )
        .unwrap();
        assert_eq!(ids(&big, &"a".repeat(1_000_000)).len(), 1_000_000);
    }

    #[test]
    fn multibyte_and_empty_tokens() {
        let m = model(&["[UNK]", "", "##", "\u{e9}", "##t\u{e9}", "t"]);
        assert_eq!(ids(&m, "\u{e9}t\u{e9}"), [(3, 2), (4, 3)]);
        assert_eq!(ids(&m, "tt"), [(0, 2)]);
    }

    #[test]
    fn missing_unk_and_duplicates_are_errors() {
        let e = WordPiece::new(vec![("a".into(), 0)], "[UNK]".into(), "##".into(), 100).err();
        assert!(e.is_some_and(|e| e.to_string().contains("unk_token")));
        let e = WordPiece::new(
            vec![("[UNK]".into(), 0), ("a".into(), 0)],
            "[UNK]".into(),
            "##".into(),
            100,
        )
        .err();
        assert!(e.is_some_and(|e| e.to_string().contains("used twice")));
    }

    #[test]
    fn json_round_trip() {
        let m = model(&["[UNK]", "a", "##b"]);
        let j = m.to_json();
        let m2 = WordPiece::from_json(&j).unwrap();
        assert_eq!(m2.to_json(), j);
        assert_eq!(ids(&m2, "ab"), [(1, 1), (2, 1)]);
    }
}
