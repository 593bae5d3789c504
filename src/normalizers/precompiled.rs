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
    /// By ASCII byte: the replacement `tokenizers` gives the character
    /// alone ([`CharsMap::first_prefix`]), `None` if it stays.
    ascii_first: Vec<Option<Box<str>>>,
    /// By ASCII byte: the replacement of the rule whose key is that byte
    /// alone, `None` if there is none.
    ascii_single: Vec<Option<Box<str>>>,
    /// Bit `b` set when the ASCII byte `b` stays as it is alone
    /// (`ascii_first[b]` is `None`) and is not CR (which joins LF).
    ascii_kept: u128,
    /// By character of the Basic Multilingual Plane, one bit each: simple
    /// (see `simple_at`) and left as it is alone (no rule of its own).
    bmp_kept: Box<[u64; 1024]>,
    /// By character of the Basic Multilingual Plane past ASCII, one bit
    /// each: no key starts with it nor is a prefix of it, so
    /// [`CharsMap::longest_prefix`] passes it whatever follows.
    bmp_passes: Box<[u64; 1024]>,
    /// Bit `b` set when no rule has the ASCII byte `b` alone as its key.
    ascii_unruled: u128,
    /// By ASCII byte `b`: bit `c` set when some key longer than one byte
    /// starts with `b` then the ASCII byte `c`.
    ascii_pairs: Vec<u128>,
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
        let mut map = CharsMap {
            raw: blob.to_vec(),
            units,
            normalized,
            ascii_first: Vec::new(),
            ascii_single: Vec::new(),
            ascii_pairs: Vec::new(),
            ascii_kept: 0,
            ascii_unruled: 0,
            bmp_kept: Box::new([0; 1024]),
            bmp_passes: Box::new([0; 1024]),
        };
        map.index_ascii();
        Ok(map)
    }

    /// Fill the ASCII tables from the rules, through the lookups they stand for.
    fn index_ascii(&mut self) {
        let boxed = |r: Option<&str>| r.map(Box::<str>::from);
        let first: Vec<_> = (0..128u8)
            .map(|b| boxed(self.first_prefix(std::str::from_utf8(&[b]).unwrap_or(""))))
            .collect();
        let single: Vec<_> = (0..128u8)
            .map(|b| boxed(self.longest_prefix(&[b]).filter(|(n, _)| *n == 1).map(|(_, r)| r)))
            .collect();
        let pairs: Vec<u128> = (0..128u8)
            .map(|b| {
                (0..128u8)
                    .filter(|&c| self.has_path(&[b, c]))
                    .fold(0u128, |m, c| m | 1 << c)
            })
            .collect();
        self.ascii_kept = (0..128u8)
            .filter(|&b| first[b as usize].is_none() && b != b'\r')
            .fold(0u128, |m, b| m | 1 << b);
        self.ascii_unruled = (0..128u8)
            .filter(|&b| single[b as usize].is_none())
            .fold(0u128, |m, b| m | 1 << b);
        self.ascii_first = first;
        let simple = simple_bmp();
        for cp in 0x80..0x10000u32 {
            let Some(ch) = char::from_u32(cp) else { continue };
            let mut buf = [0u8; 4];
            let kept =
                simple[cp as usize >> 6] >> (cp & 63) & 1 == 1 && self.first_prefix(ch.encode_utf8(&mut buf)).is_none();
            self.bmp_kept[cp as usize >> 6] |= (kept as u64) << (cp & 63);
            let key = ch.encode_utf8(&mut buf).as_bytes();
            let passes = self.longest_prefix(key).is_none() && !self.has_path(key);
            self.bmp_passes[cp as usize >> 6] |= (passes as u64) << (cp & 63);
        }
        self.ascii_single = single;
        self.ascii_pairs = pairs;
    }

    /// Whether some key starts with `key` (a node of the trie is there).
    fn has_path(&self, key: &[u8]) -> bool {
        let Some(&root) = self.units.first() else { return false };
        let mut pos = unit_offset(root);
        for &c in key {
            pos ^= c as usize;
            let Some(&unit) = self.units.get(pos) else { return false };
            if unit_label(unit) != c as u32 {
                return false;
            }
            pos ^= unit_offset(unit);
        }
        true
    }

    /// Whether the ASCII byte `b` passes unchanged under
    /// [`CharsMap::longest_prefix`] when `next` follows it: no rule for
    /// it alone, none longer that starts with it and `next`.
    #[inline(always)]
    pub fn ascii_passes(&self, b: u8, next: Option<u8>) -> bool {
        self.ascii_unruled >> b & 1 == 1
            && match next {
                None => true,
                Some(c) => c < 0x80 && self.ascii_pairs[b as usize] >> c & 1 == 0,
            }
    }

    /// The length of the character at `b[i]` (past ASCII, in the Basic
    /// Multilingual Plane) if [`CharsMap::longest_prefix`] passes it
    /// whatever follows, else 0.
    #[inline(always)]
    pub fn bmp_passes_len(&self, b: &[u8], i: usize) -> usize {
        let c = b[i];
        let cp = match c {
            0xC2..=0xDF if i + 1 < b.len() => ((c as u32 & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F),
            0xE0..=0xEF if i + 2 < b.len() => {
                ((c as u32 & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F)
            }
            _ => return 0,
        };
        let len = if c < 0xE0 { 2 } else { 3 };
        (self.bmp_passes[cp as usize >> 6] >> (cp & 63) & 1) as usize * len
    }

    /// [`CharsMap::longest_prefix`] of `input` (non-empty), answered from
    /// the ASCII tables when its first byte is ASCII and no longer key can
    /// start with its first two bytes: `Some(None)` when no rule applies.
    #[inline(always)]
    pub fn longest_prefix_ascii(&self, input: &[u8]) -> Option<Option<&str>> {
        let b = input[0];
        if b >= 0x80 {
            return None;
        }
        match input.get(1) {
            Some(&c) if c >= 0x80 || self.ascii_pairs[b as usize] >> c & 1 == 1 => None,
            _ => Some(self.ascii_single[b as usize].as_deref()),
        }
    }

    /// The length of the character at `b[i]` if it is simple and stays as
    /// it is alone (ASCII or in the Basic Multilingual Plane), else 0.
    #[inline(always)]
    fn kept_len(&self, b: &[u8], i: usize) -> usize {
        let c = b[i];
        if c < 0x80 {
            return (self.ascii_kept >> c & 1) as usize;
        }
        let cp = match c {
            0xC2..=0xDF if i + 1 < b.len() => ((c as u32 & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F),
            0xE0..=0xEF if i + 2 < b.len() => {
                ((c as u32 & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F)
            }
            _ => return 0,
        };
        let len = if c < 0xE0 { 2 } else { 3 };
        (self.bmp_kept[cp as usize >> 6] >> (cp & 63) & 1) as usize * len
    }

    /// The length of the character that ends at `b[..i]`.
    fn last_len(&self, b: &[u8], i: usize) -> usize {
        let mut k = i - 1;
        while k > 0 && b[k] & 0xC0 == 0x80 {
            k -= 1;
        }
        i - k
    }

    /// Append `text` normalized as [`normalize_precompiled`] does it (the
    /// text alone, no alignments). A character that is a grapheme cluster
    /// by itself for certain (see `lone_char`) is looked up alone, ASCII
    /// ones from a table; the other stretches go through the cluster
    /// segmentation, cut where a cluster boundary is certain.
    pub fn normalize_into(&self, text: &str, out: &mut String) {
        let b = text.as_bytes();
        let n = b.len();
        let mut i = 0;
        while i < n {
            // a run of ASCII that stays: copied at once, but for its last
            // character if a non-ASCII one follows (it may join it)
            let run = i;
            while i < n {
                let len = self.kept_len(b, i);
                if len == 0 {
                    break;
                }
                i += len;
            }
            // (its last character stays only if the next one cannot join it)
            if i < n && i > run && !simple_at(b, i).0 {
                i -= self.last_len(b, i);
            }
            out.push_str(&text[run..i]);
            if i == n {
                break;
            }
            let c = b[i];
            if c < 0x80 && (i + 1 == n || (b[i + 1] < 0x80 && !(c == b'\r' && b[i + 1] == b'\n'))) {
                match &self.ascii_first[c as usize] {
                    Some(r) => out.push_str(r),
                    None => out.push(c as char),
                }
                i += 1;
                continue;
            }
            let (simple, len) = simple_at(b, i);
            let j = i + len;
            if simple && (j == n || (simple_at(b, j).0 && !(c == b'\r' && b[j] == b'\n'))) {
                let ch = &text[i..j];
                out.push_str(self.first_prefix(ch).unwrap_or(ch));
                i = j;
                continue;
            }
            // up to the next certain boundary
            let (mut prev_simple, mut prev_cr, mut k) = (simple, c == b'\r', j);
            while k < n {
                let (s, l) = simple_at(b, k);
                if prev_simple && s && !(prev_cr && b[k] == b'\n') {
                    break;
                }
                (prev_simple, prev_cr) = (s, b[k] == b'\r');
                k += l;
            }
            append_graphemes(self, &text[i..k], out);
            i = k;
        }
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

/// `text` normalized by grapheme clusters as [`normalize_precompiled`]
/// does it, appended to `out`.
fn append_graphemes(map: &CharsMap, text: &str, out: &mut String) {
    for grapheme in text.graphemes(true) {
        if grapheme.len() < 6 {
            if let Some(norm) = map.first_prefix(grapheme) {
                out.push_str(norm);
                continue;
            }
        }
        for (i, c) in grapheme.char_indices() {
            let part = &grapheme[i..i + c.len_utf8()];
            out.push_str(map.first_prefix(part).unwrap_or(part));
        }
    }
}

/// Whether the character at `b[i]` (a character boundary) is "simple", and
/// its length. Between two simple characters there is a grapheme cluster
/// boundary for certain, except CR LF: a simple character is ASCII, a
/// character of the Basic Multilingual Plane that no grapheme rule joins
/// to a neighbour (tested once with the segmenter itself: `x c x` is three
/// clusters, so it is not Extend, ZWJ, SpacingMark nor Prepend; Hangul
/// jamo are left out, their rules join them to each other), or a CJK
/// ideograph of planes 2 and 3. Between two such characters no rule of
/// UAX #29 but the default break applies (the rules that join need an
/// Extend, ZWJ, SpacingMark, Prepend, regional indicator or jamo on one
/// side).
#[inline(always)]
fn simple_at(b: &[u8], i: usize) -> (bool, usize) {
    let c = b[i];
    if c < 0x80 {
        return (true, 1);
    }
    let len = match c {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    };
    let Some(s) = b.get(i..i + len).and_then(|s| std::str::from_utf8(s).ok()) else {
        return (false, 1); // (not reached: `b` is a str's bytes)
    };
    let cp = s.chars().next().map_or(0, |ch| ch as u32);
    let simple = if cp < 0x10000 {
        simple_bmp()[cp as usize >> 6] >> (cp & 63) & 1 == 1
    } else {
        (0x20000..0x40000).contains(&cp)
    };
    (simple, len)
}

/// The simple characters of the Basic Multilingual Plane (see `simple_at`),
/// one bit each.
fn simple_bmp() -> &'static [u64; 1024] {
    static TABLE: std::sync::OnceLock<Box<[u64; 1024]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u64; 1024]);
        let jamo = |cp: u32| matches!(cp, 0x1100..=0x11FF | 0xA960..=0xA97F | 0xD7B0..=0xD7FF);
        for cp in 0..0x10000u32 {
            let Some(ch) = char::from_u32(cp) else { continue };
            if jamo(cp) {
                continue;
            }
            let mut buf = [0u8; 6];
            buf[0] = b'x';
            let l = ch.encode_utf8(&mut buf[1..]).len();
            buf[1 + l] = b'x';
            let probe = std::str::from_utf8(&buf[..l + 2]).unwrap_or("");
            if probe.graphemes(true).count() == 3 {
                t[cp as usize >> 6] |= 1 << (cp & 63);
            }
        }
        t
    })
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
    fn normalize_into_matches_the_staged_normalizer() {
        let map = CharsMap::parse(&build(&[
            ("\u{FF21}", "A"),
            ("\u{FB01}", "fi"),
            ("\u{1}", ""),
            ("\r", "R"),
            ("e\u{301}", "\u{E9}"),
            ("a", "a "),
            ("\u{3000}", " "),
        ]))
        .unwrap();
        let texts = [
            "",
            "plain ascii text",
            "\u{FF21}\u{301}x\u{FB01}\u{1}",
            "a\r\nb\rc\n\r",
            "e\u{301} e\u{302}\u{301} \u{915}\u{94d}\u{937}",
            "\u{1F600}\u{200D}\u{1F600} \u{1F1FA}\u{1F1F8}\u{1F1E6}",
            "\u{1100}\u{1161}\u{11A8}\u{AC00}\u{AC01}\u{3000}\u{4E2D}\u{20000}",
            "\u{600}a\u{600}\u{4E2D} x\u{308}",
        ];
        for t in texts {
            let mut s = NormalizedString::new(t, 0);
            normalize_precompiled(&map, &mut s);
            let mut fast = String::new();
            map.normalize_into(t, &mut fast);
            assert_eq!(fast, s.text, "{t:?}");
        }
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
