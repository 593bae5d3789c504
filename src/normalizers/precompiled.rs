//! SentencePiece's compiled normalization rules (`precompiled_charsmap`).
//!
//! The blob is `[u32 trie size in bytes][double-array trie][replacements]`:
//! the trie (darts-clone layout, little-endian 32-bit units) maps an input
//! byte string to an offset into the replacement blob, where the replacement
//! runs up to the next NUL byte.
//!
//! Two ways of applying the rules exist and both are implemented here:
//! - [`Precompiled`] is the `tokenizer.json` component and follows
//!   `tokenizers`: text is cut into extended grapheme clusters; a cluster
//!   shorter than 6 bytes is replaced whole by the rule of its *shortest*
//!   matching prefix, otherwise each character is looked up on its own.
//! - [`CharsMap::longest_prefix`] is what `sentencepiece` does (longest match
//!   from the current position, left to right); the `SentencePiece`
//!   normalizer uses it.

use crate::error::{Error, Result};
use crate::normalizers::NormalizedString;
use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;
use unicode_segmentation::UnicodeSegmentation;

/// A parsed `precompiled_charsmap`.
pub struct CharsMap {
    raw: Vec<u8>,
    units: Vec<u32>,
    /// the replacement strings, NUL-separated
    normalized: Vec<u8>,
}

impl std::fmt::Debug for CharsMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CharsMap({} trie units, {} replacement bytes)",
            self.units.len(),
            self.normalized.len()
        )
    }
}

#[inline]
fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}

#[inline]
fn unit_value(unit: u32) -> u32 {
    unit & ((1 << 31) - 1)
}

#[inline]
fn unit_label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}

#[inline]
fn unit_offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
}

impl CharsMap {
    pub fn parse(blob: &[u8]) -> Result<Self> {
        if blob.len() < 4 {
            return Err(Error::Format(format!(
                "precompiled_charsmap: {} bytes, too short for the 4-byte trie size",
                blob.len()
            )));
        }
        let trie_size = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        if !trie_size.is_multiple_of(4) || trie_size == 0 || 4 + trie_size > blob.len() {
            return Err(Error::Format(format!(
                "precompiled_charsmap: the trie size {trie_size} does not fit the {}-byte blob (corrupt)",
                blob.len()
            )));
        }
        let units: Vec<u32> = blob[4..4 + trie_size]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let normalized = blob[4 + trie_size..].to_vec();
        if let Err(e) = std::str::from_utf8(&normalized) {
            return Err(Error::Format(format!(
                "precompiled_charsmap: the replacement strings are not UTF-8 (byte {})",
                4 + trie_size + e.valid_up_to()
            )));
        }
        Ok(CharsMap {
            raw: blob.to_vec(),
            units,
            normalized,
        })
    }

    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Every rule whose key is a prefix of `key`, shortest first, as
    /// `(key length, replacement offset)`. `stop_at_nul`: end the key at a
    /// NUL byte (as `tokenizers` does; `sentencepiece` passes the length).
    fn prefixes(&self, key: &[u8], stop_at_nul: bool, mut f: impl FnMut(usize, usize) -> bool) {
        let Some(&root) = self.units.first() else { return };
        let mut pos = unit_offset(root);
        for (i, &c) in key.iter().enumerate() {
            if stop_at_nul && c == 0 {
                return;
            }
            pos ^= c as usize;
            let Some(&unit) = self.units.get(pos) else { return };
            if unit_label(unit) != c as u32 {
                return;
            }
            pos ^= unit_offset(unit);
            if has_leaf(unit) {
                let Some(&leaf) = self.units.get(pos) else { return };
                if !f(i + 1, unit_value(leaf) as usize) {
                    return;
                }
            }
        }
    }

    /// The replacement string that starts at `offset`.
    fn replacement(&self, offset: usize) -> Option<&str> {
        let rest = self.normalized.get(offset..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// `tokenizers`' lookup: the replacement of the shortest rule that is a
    /// prefix of `chunk`.
    pub fn first_prefix(&self, chunk: &str) -> Option<&str> {
        let mut found = None;
        self.prefixes(chunk.as_bytes(), true, |_, off| {
            found = Some(off);
            false
        });
        found.and_then(|off| self.replacement(off))
    }

    /// `sentencepiece`'s lookup: `(bytes consumed, replacement)` of the
    /// longest rule that is a prefix of `input`.
    pub fn longest_prefix(&self, input: &[u8]) -> Option<(usize, &str)> {
        let mut found = None;
        self.prefixes(input, false, |len, off| {
            found = Some((len, off));
            true
        });
        let (len, off) = found?;
        Some((len, self.replacement(off)?))
    }
}

/// `precompiled_charsmap` as `tokenizer.json` writes it: base64.
#[derive(Clone, Debug)]
pub struct Charsmap(pub Arc<CharsMap>);

impl Charsmap {
    pub fn from_bytes(blob: &[u8]) -> Result<Self> {
        Ok(Charsmap(Arc::new(CharsMap::parse(blob)?)))
    }
}

impl Serialize for Charsmap {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(self.0.raw()))
    }
}

impl<'de> Deserialize<'de> for Charsmap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let blob = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| serde::de::Error::custom(format!("precompiled_charsmap: not base64: {e}")))?;
        Charsmap::from_bytes(&blob).map_err(serde::de::Error::custom)
    }
}

/// Append `new` in place of `old` to a change list, with the counting rules
/// of `tokenizers` (extra characters are insertions; a shorter replacement
/// charges the removed count to the last entry, even an earlier one).
fn push_replacement(changes: &mut Vec<(char, isize)>, old: &str, new: &str) {
    let diff = new.chars().count() as isize - old.chars().count() as isize;
    changes.extend(new.chars().map(|c| (c, 0)));
    if diff > 0 {
        let n = changes.len();
        for ch in &mut changes[n - diff as usize..] {
            ch.1 = 1;
        }
    } else if diff < 0 {
        if let Some(last) = changes.last_mut() {
            last.1 += diff;
        }
    }
}

/// The `Precompiled` normalizer of `tokenizer.json`, as `tokenizers` applies it.
pub fn normalize_precompiled(map: &CharsMap, s: &mut NormalizedString) {
    let mut changes: Vec<(char, isize)> = Vec::with_capacity(s.text.len());
    let mut modified = false;
    for grapheme in s.text.graphemes(true) {
        if grapheme.len() < 6 {
            if let Some(norm) = map.first_prefix(grapheme) {
                modified = true;
                push_replacement(&mut changes, grapheme, norm);
                continue;
            }
        }
        for (i, c) in grapheme.char_indices() {
            let part = &grapheme[i..i + c.len_utf8()];
            match map.first_prefix(part) {
                Some(norm) => {
                    modified = true;
                    push_replacement(&mut changes, part, norm);
                }
                None => changes.push((c, 0)),
            }
        }
    }
    if modified {
        s.transform_changes(&changes, 0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny darts-clone trie, built by hand-rolled search (test only).
    pub(crate) fn build(rules: &[(&str, &str)]) -> Vec<u8> {
        // replacements blob
        let mut normalized = Vec::new();
        let mut values = Vec::new();
        for (_, to) in rules {
            values.push(normalized.len() as u32);
            normalized.extend_from_slice(to.as_bytes());
            normalized.push(0);
        }
        let mut keys: Vec<(Vec<u8>, u32)> = rules
            .iter()
            .zip(&values)
            .map(|((k, _), v)| (k.as_bytes().to_vec(), *v))
            .collect();
        keys.sort();
        let units = darts_build(&keys);
        let mut blob = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        for u in units {
            blob.extend_from_slice(&u.to_le_bytes());
        }
        blob.extend(normalized);
        blob
    }

    /// Minimal double-array construction with the darts-clone unit layout
    /// (children of a node in one 256-unit block; offsets < 2^21).
    fn darts_build(keys: &[(Vec<u8>, u32)]) -> Vec<u32> {
        let mut units: Vec<u32> = vec![0; 256];
        let mut used = vec![false; 256];
        used[0] = true;
        let mut stack = vec![(0usize, 0usize, 0usize, keys.len())];
        let mut next_block = 1usize;
        while let Some((node, depth, lo, hi)) = stack.pop() {
            // children labels: 0 for a key that ends here, else the byte
            let mut children: Vec<(u8, usize)> = Vec::new();
            let mut i = lo;
            while i < hi {
                let label = keys[i].0.get(depth).copied().unwrap_or(0);
                let mut j = i;
                while j < hi && keys[j].0.get(depth).copied().unwrap_or(0) == label {
                    j += 1;
                }
                children.push((label, i));
                if label != 0 {
                    stack.push((usize::MAX, depth + 1, i, j));
                }
                i = j;
            }
            // a fresh block for the children of every node: simple and collision-free
            let base = next_block * 256;
            next_block += 1;
            units.resize(base + 256, 0);
            used.resize(base + 256, false);
            let offset = node ^ base;
            let has_leaf = children.first().is_some_and(|c| c.0 == 0);
            units[node] |= ((offset as u32) << 10) | if has_leaf { 1 << 8 } else { 0 };
            let n_new = children.iter().filter(|c| c.0 != 0).count();
            let first_new = stack.len() - n_new;
            let mut k = first_new;
            for &(label, a) in &children {
                let p = base ^ label as usize;
                used[p] = true;
                if label == 0 {
                    units[p] = keys[a].1 | (1 << 31);
                } else {
                    units[p] = label as u32;
                    stack[k].0 = p;
                    k += 1;
                }
            }
        }
        units
    }

    #[test]
    fn longest_and_first_prefix() {
        let map = CharsMap::parse(&build(&[("a", "A"), ("ab", "X"), ("\u{FB01}", "fi")])).unwrap();
        assert_eq!(map.first_prefix("abc"), Some("A"));
        assert_eq!(map.longest_prefix(b"abc"), Some((2, "X")));
        assert_eq!(map.longest_prefix("\u{FB01}x".as_bytes()), Some((3, "fi")));
        assert_eq!(map.longest_prefix(b"zz"), None);
    }

    #[test]
    fn corrupt_blobs_are_errors() {
        assert!(CharsMap::parse(b"").is_err());
        assert!(CharsMap::parse(&[8, 0, 0, 0, 1, 2]).is_err());
        assert!(CharsMap::parse(&[4, 0, 0, 0, 1, 2, 3, 4, 0xFF]).is_err());
    }

    #[test]
    fn precompiled_replaces_graphemes_like_tokenizers() {
        let map = CharsMap::parse(&build(&[("\u{FF21}", "A"), ("\u{FB01}", "fi"), ("\u{1}", "")])).unwrap();
        let mut s = NormalizedString::new("\u{FF21}\u{301}x\u{FB01}", 0);
        normalize_precompiled(&map, &mut s);
        // the accent goes with the grapheme, as in `tokenizers`
        assert_eq!(s.text, "Axfi");
        let mut s = NormalizedString::new("a\u{1}b", 0);
        normalize_precompiled(&map, &mut s);
        assert_eq!(s.text, "ab");
    }
}
