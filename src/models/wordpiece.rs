//! WordPiece (BERT): greedy longest-match-first over a word, continuation
//! pieces spelled with a prefix (`##`), the whole word as the unknown token
//! when some position has no match or the word is too long.
//!
//! Matching walks a byte trie, so a word costs at most (its length) x (the
//! longest token) steps and no re-hashing of substrings.

use crate::error::{Error, Result};
use crate::models::Model;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

const NONE: u32 = u32::MAX;
const ROOT_WORD: u32 = 0;
const ROOT_CONTINUATION: u32 = 1;

/// Two tries in one table: from `ROOT_WORD` every token as written (a word's
/// first piece), from `ROOT_CONTINUATION` the tokens that start with the
/// prefix, without it (the following pieces).
#[derive(Default)]
struct Trie {
    next: FxHashMap<(u32, u8), u32>,
    /// the token id ending at each node
    id: Vec<u32>,
}

impl Trie {
    fn new() -> Self {
        Trie {
            next: FxHashMap::default(),
            id: vec![NONE, NONE],
        }
    }

    fn insert(&mut self, root: u32, key: &[u8], id: u32) {
        let mut node = root;
        for &b in key {
            node = match self.next.get(&(node, b)) {
                Some(&n) => n,
                None => {
                    let n = self.id.len() as u32;
                    self.id.push(NONE);
                    self.next.insert((node, b), n);
                    n
                }
            };
        }
        if node != root {
            self.id[node as usize] = id;
        }
    }

    /// The longest token that `text` starts with: (id, byte length).
    fn longest(&self, root: u32, text: &[u8]) -> Option<(u32, usize)> {
        let mut node = root;
        let mut best = None;
        for (i, &b) in text.iter().enumerate() {
            match self.next.get(&(node, b)) {
                Some(&n) => node = n,
                None => break,
            }
            let id = self.id[node as usize];
            if id != NONE {
                best = Some((id, i + 1));
            }
        }
        best
    }
}

pub struct WordPiece {
    vocab: FxHashMap<Vec<u8>, u32>,
    vocab_r: Vec<Option<Box<[u8]>>>,
    pub unk_token: String,
    unk_id: u32,
    pub continuing_subword_prefix: String,
    pub max_input_chars_per_word: usize,
    trie: Trie,
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
        let mut wp = WordPiece {
            vocab: FxHashMap::default(),
            vocab_r,
            unk_token,
            unk_id,
            continuing_subword_prefix,
            max_input_chars_per_word,
            trie: Trie::new(),
        };
        for (tok, id) in &map {
            wp.index(tok, *id);
        }
        wp.vocab = map;
        Ok(wp)
    }

    fn index(&mut self, tok: &[u8], id: u32) {
        self.trie.insert(ROOT_WORD, tok, id);
        if let Some(rest) = tok.strip_prefix(self.continuing_subword_prefix.as_bytes()) {
            self.trie.insert(ROOT_CONTINUATION, rest, id);
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
        let unk = (self.unk_id, piece.len() as u32);
        let chars = piece.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
        if chars > self.max_input_chars_per_word {
            out.push(unk);
            return;
        }
        if let Some(&id) = self.vocab.get(piece) {
            out.push((id, piece.len() as u32));
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        while start < piece.len() {
            let root = if start == 0 { ROOT_WORD } else { ROOT_CONTINUATION };
            match self.trie.longest(root, &piece[start..]) {
                Some((id, len)) => {
                    out.push((id, len as u32));
                    start += len;
                }
                None => {
                    out.truncate(start_len);
                    out.push(unk);
                    return;
                }
            }
        }
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
        self.index(token, id);
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
