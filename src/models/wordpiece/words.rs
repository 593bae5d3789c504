//! Whole words that are one token: an open-addressing table with the key
//! bytes inline, so a hit costs one hash and one probe (usually one cache
//! line), where walking the trie costs a dependent load per byte.
//!
//! Greedy longest-match-first takes the whole word when the vocabulary has
//! it, so a hit here is exactly the WordPiece result.

use rustc_hash::FxHashMap;

/// Longest key kept inline; longer words go to the automaton.
pub const MAX_KEY: usize = 16;

/// A key: the word's bytes, little-endian, zero-padded to 16.
pub type Key = [u64; 2];

#[derive(Clone, Copy)]
struct Entry {
    key: Key,
    /// 0: an empty slot
    len: u8,
    id: u32,
}

pub struct WordTable {
    entries: Vec<Entry>,
    /// 64 - log2(entries.len())
    shift: u32,
}

#[inline(always)]
fn hash(key: &Key, len: usize) -> u64 {
    let h = (key[0] ^ (len as u64).rotate_right(8)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h.rotate_left(29) ^ key[1]).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

/// The key of `word`; None if longer than [`MAX_KEY`] or empty.
#[inline]
pub fn key(word: &[u8]) -> Option<Key> {
    if word.is_empty() || word.len() > MAX_KEY {
        return None;
    }
    let mut k = [0u64; 2];
    for (i, &b) in word.iter().enumerate() {
        k[i / 8] |= (b as u64) << (8 * (i % 8));
    }
    Some(k)
}

/// The key of a one-character word.
#[inline(always)]
pub fn char_key(c: char) -> Key {
    let cp = c as u64;
    let bytes = match c.len_utf8() {
        1 => cp,
        2 => (0xC0 | cp >> 6) | (0x80 | (cp & 0x3F)) << 8,
        3 => (0xE0 | cp >> 12) | (0x80 | (cp >> 6 & 0x3F)) << 8 | (0x80 | (cp & 0x3F)) << 16,
        _ => {
            (0xF0 | cp >> 18)
                | (0x80 | (cp >> 12 & 0x3F)) << 8
                | (0x80 | (cp >> 6 & 0x3F)) << 16
                | (0x80 | (cp & 0x3F)) << 24
        }
    };
    [bytes, 0]
}

/// The key of an ASCII word of `len` (1..=16) bytes at `bytes[at..]`,
/// lowercased if `lower`.
#[inline(always)]
pub fn ascii_key(bytes: &[u8], at: usize, len: usize, lower: bool) -> Key {
    let mut k = match bytes.get(at..at + MAX_KEY) {
        Some(w) => {
            let (a, b) = w.split_at(8);
            [
                u64::from_le_bytes(a.try_into().unwrap_or_default()),
                u64::from_le_bytes(b.try_into().unwrap_or_default()),
            ]
        }
        None => key(&bytes[at..at + len]).unwrap_or_default(),
    };
    // keep the first `len` bytes
    let keep = |n: usize| if n >= 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
    k[0] &= keep(len);
    k[1] &= keep(len.saturating_sub(8));
    if lower {
        k = [lower_ascii(k[0]), lower_ascii(k[1])];
    }
    k
}

/// ASCII lowercase of 8 bytes, each below 0x80: +0x3F sets the top bit of a
/// byte >= 'A', +0x25 of a byte > 'Z', without carries between bytes.
#[inline(always)]
fn lower_ascii(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let ge_a = x.wrapping_add(0x3F * ONES);
    let gt_z = x.wrapping_add(0x25 * ONES);
    let upper = ge_a & !gt_z & (0x80 * ONES);
    x | (upper >> 2)
}

impl WordTable {
    /// Every token of at most [`MAX_KEY`] bytes that does not start with
    /// `prefix` (a word so spelled is left to the automaton, which finds the
    /// same token), at load factor <= 4/5: small enough to stay in cache,
    /// probes still short.
    pub fn new(vocab: &FxHashMap<Vec<u8>, u32>, prefix: &[u8]) -> Self {
        let kept = |t: &&Vec<u8>| key(t).is_some() && (prefix.is_empty() || !t.starts_with(prefix));
        let n = vocab.keys().filter(kept).count();
        let size = (n + n / 4 + 1).next_power_of_two().max(16);
        let empty = Entry {
            key: [0; 2],
            len: 0,
            id: 0,
        };
        let mut table = WordTable {
            entries: vec![empty; size],
            shift: 64 - size.trailing_zeros(),
        };
        for (tok, &id) in vocab.iter().filter(|e| kept(&e.0)) {
            if let Some(k) = key(tok) {
                table.insert(k, tok.len(), id);
            }
        }
        table
    }

    fn insert(&mut self, key: Key, len: usize, id: u32) {
        let mask = self.entries.len() - 1;
        let mut i = (hash(&key, len) >> self.shift) as usize;
        while self.entries[i].len != 0 {
            i = (i + 1) & mask;
        }
        self.entries[i] = Entry {
            key,
            len: len as u8,
            id,
        };
    }

    /// The id of the token spelled by the first `len` bytes of `key`
    /// (zero-padded), if there is one.
    #[inline(always)]
    pub fn get(&self, key: &Key, len: usize) -> Option<u32> {
        let mask = self.entries.len() - 1;
        let mut i = (hash(key, len) >> self.shift) as usize;
        loop {
            let e = &self.entries[i];
            if e.len as usize == len && e.key == *key {
                return Some(e.id);
            }
            if e.len == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tokens_and_only_tokens() {
        let mut vocab = FxHashMap::default();
        for (i, t) in [
            "a",
            "ab",
            "abc",
            "\u{4e2d}",
            "0123456789abcdef",
            "0123456789abcdefg",
            "",
        ]
        .iter()
        .enumerate()
        {
            vocab.insert(t.as_bytes().to_vec(), i as u32);
        }
        vocab.insert(b"##ing".to_vec(), 9);
        let t = WordTable::new(&vocab, b"##");
        let get = |w: &str| key(w.as_bytes()).and_then(|k| t.get(&k, w.len()));
        assert_eq!(get("a"), Some(0));
        assert_eq!(get("abc"), Some(2));
        assert_eq!(get("\u{4e2d}"), Some(3));
        assert_eq!(get("0123456789abcdef"), Some(4));
        assert_eq!(get("0123456789abcdefg"), None);
        assert_eq!(get("abcd"), None);
        assert_eq!(get("b"), None);
        assert_eq!(get(""), None);
        assert_eq!(get("##ing"), None);
        assert_eq!(char_key('\u{4e2d}'), key("\u{4e2d}".as_bytes()).unwrap());
        for c in ['a', '\u{e9}', '\u{4e2d}', '\u{1f600}'] {
            assert_eq!(Some(char_key(c)), key(c.to_string().as_bytes()));
        }
        let text = b"xHello-World0123456789ABCDEFGHIJ";
        for at in 0..text.len() {
            for len in 1..=MAX_KEY.min(text.len() - at) {
                let lower = text[at..at + len].to_ascii_lowercase();
                assert_eq!(ascii_key(text, at, len, true), key(&lower).unwrap());
                assert_eq!(ascii_key(text, at, len, false), key(&text[at..at + len]).unwrap());
            }
        }
    }
}
