//! `BertNormalizer`: BERT's text cleaning, CJK spacing, accent stripping and
//! lowercasing, with the alignments `tokenizers` gives them.
//!
//! The character classes (control characters, non-spacing marks, the
//! punctuation of the BERT pre-tokenizer, and which characters NFD decomposes
//! or reorders) come from `bert_tables.rs`, generated from the behaviour of
//! `tokenizers` so that they match its (older) Unicode versions exactly.

use super::bert_tables::{CONTROL, NFD_COMBINING, NFD_DECOMPOSES, NONSPACING_MARK, PUNCTUATION};
use super::NormalizedString;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    table
        .binary_search_by(|&(a, b)| {
            if b < cp {
                Ordering::Less
            } else if a > cp {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// Characters `clean_text` deletes: NUL, U+FFFD and control/format/private-use
/// characters other than tab, LF and CR.
pub fn is_bert_control(c: char) -> bool {
    if c.is_ascii() {
        return (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\x7f';
    }
    in_table(CONTROL, c)
}

/// Whitespace that `clean_text` turns into a plain space.
pub fn is_bert_whitespace(c: char) -> bool {
    c.is_whitespace()
}

/// Punctuation as the BERT pre-tokenizer and `Punctuation` define it: ASCII
/// punctuation and the Unicode P* categories.
pub fn is_bert_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    in_table(PUNCTUATION, c)
}

pub(crate) fn is_nonspacing_mark(c: char) -> bool {
    !c.is_ascii() && in_table(NONSPACING_MARK, c)
}

/// The CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana).
pub fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// What the BERT stages do to one character, as bits: the per-character
/// facts a fused normalizer + pre-tokenizer needs (see [`char_flags`]).
pub mod flags {
    /// deleted by `clean_text`
    pub const CONTROL: u8 = 1;
    /// `char::is_whitespace`: a space after `clean_text`, a split point after
    pub const SPACE: u8 = 2;
    /// isolated by the BERT pre-tokenizer
    pub const PUNCT: u8 = 4;
    /// spaced by `handle_chinese_chars`
    pub const CHINESE: u8 = 8;
    /// decomposed by the NFD of `strip_accents`
    pub const DECOMPOSES: u8 = 16;
    /// general category Mn: deleted by `strip_accents`
    pub const MARK: u8 = 32;
    /// a non-starter (combining class > 0) that NFD may reorder
    pub const NONSTARTER: u8 = 64;
    /// `char::to_lowercase` changes it
    pub const LOWER: u8 = 128;
}

/// The [`flags`] of `c`, computed from the tables.
pub fn compute_char_flags(c: char) -> u8 {
    let mut f = 0;
    if c == '\0' || c == '\u{FFFD}' || is_bert_control(c) {
        f |= flags::CONTROL;
    }
    if is_bert_whitespace(c) {
        f |= flags::SPACE;
    }
    if is_bert_punctuation(c) {
        f |= flags::PUNCT;
    }
    if is_chinese_char(c) {
        f |= flags::CHINESE;
    }
    if in_table(NFD_DECOMPOSES, c) {
        f |= flags::DECOMPOSES;
    }
    if is_nonspacing_mark(c) {
        f |= flags::MARK;
    }
    if legacy_ccc(c) != 0 {
        f |= flags::NONSTARTER;
    }
    let mut l = c.to_lowercase();
    if (l.next(), l.next()) != (Some(c), None) {
        f |= flags::LOWER;
    }
    f
}

/// The [`flags`] of `c`: a table lookup for the Basic Multilingual Plane
/// (64 KiB, built once per process), computed for the rest.
#[inline]
pub fn char_flags(c: char) -> u8 {
    static BMP: std::sync::OnceLock<Box<[u8]>> = std::sync::OnceLock::new();
    let cp = c as u32;
    if cp < 0x10000 {
        let table = BMP.get_or_init(|| {
            (0..0x10000u32)
                .map(|cp| char::from_u32(cp).map_or(0, compute_char_flags))
                .collect()
        });
        table[cp as usize]
    } else {
        compute_char_flags(c)
    }
}

fn yes() -> bool {
    true
}

/// `{"type": "BertNormalizer", ...}`; `strip_accents: null` follows `lowercase`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BertNormalizer {
    #[serde(default = "yes")]
    pub clean_text: bool,
    #[serde(default = "yes")]
    pub handle_chinese_chars: bool,
    #[serde(default)]
    pub strip_accents: Option<bool>,
    #[serde(default = "yes")]
    pub lowercase: bool,
}

impl Default for BertNormalizer {
    fn default() -> Self {
        BertNormalizer {
            clean_text: true,
            handle_chinese_chars: true,
            strip_accents: None,
            lowercase: true,
        }
    }
}

impl BertNormalizer {
    pub fn normalize(&self, s: &mut NormalizedString) {
        if self.clean_text {
            clean_text(s);
        }
        if self.handle_chinese_chars {
            space_chinese_chars(s);
        }
        if self.strip_accents.unwrap_or(self.lowercase) {
            strip_accents(s);
        }
        if self.lowercase {
            lowercase(s);
        }
    }
}

/// Delete control characters (a deleted character's span is dropped: the
/// kept characters keep their own) and turn whitespace into spaces.
fn clean_text(s: &mut NormalizedString) {
    let mut deletes = false;
    let mut wide_space = false;
    let mut ascii_space = false;
    for c in s.text.chars() {
        if c == '\0' || c == '\u{FFFD}' || is_bert_control(c) {
            deletes = true;
            break;
        }
        if c != ' ' && is_bert_whitespace(c) {
            if c.is_ascii() {
                ascii_space = true;
            } else {
                wide_space = true;
            }
        }
    }
    if !deletes && !wide_space {
        if ascii_space {
            // tab, LF, CR -> space: same byte length, the alignments do not move
            s.text = s.text.replace(['\t', '\n', '\r'], " ");
        }
        return;
    }
    if s.rewrite_untracked(0, |c, out| {
        if !(c == '\0' || c == '\u{FFFD}' || is_bert_control(c)) {
            out.push(if is_bert_whitespace(c) { ' ' } else { c });
        }
    }) {
        return;
    }
    let mut dest: Vec<(char, isize)> = Vec::with_capacity(s.text.len());
    let mut initial_removed = 0usize;
    let mut removed = 0isize;
    let mut last: Option<char> = None;
    for c in s.text.chars() {
        if c == '\0' || c == '\u{FFFD}' || is_bert_control(c) {
            removed += 1;
            continue;
        }
        match last {
            Some(l) => dest.push((l, -removed)),
            None => initial_removed = removed as usize,
        }
        removed = 0;
        last = Some(if is_bert_whitespace(c) { ' ' } else { c });
    }
    match last {
        Some(l) => dest.push((l, -removed)),
        None => initial_removed = removed as usize,
    }
    s.transform_changes(&dest, initial_removed);
}

/// Surround every CJK ideograph with spaces; both spaces take its span.
fn space_chinese_chars(s: &mut NormalizedString) {
    if !s.text.chars().any(is_chinese_char) {
        return;
    }
    // (untracked: 3 bytes of an ideograph become 5)
    if s.rewrite_untracked(s.text.len() / 2 + 16, |c, out| {
        if is_chinese_char(c) {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }) {
        return;
    }
    let mut dest: Vec<(char, isize)> = Vec::with_capacity(s.text.len() + 16);
    for c in s.text.chars() {
        if is_chinese_char(c) {
            dest.extend([(' ', 0), (c, 1), (' ', 1)]);
        } else {
            dest.push((c, 0));
        }
    }
    s.transform_changes(&dest, 0);
}

/// NFD, then delete the non-spacing marks.
fn strip_accents(s: &mut NormalizedString) {
    if s.text.is_ascii() {
        return;
    }
    use unicode_normalization::{is_nfd_quick, IsNormalized};
    if is_nfd_quick(s.text.chars()) != IsNormalized::Yes {
        if s.tracks() {
            let out = legacy_nfd(&s.text);
            s.transform_changes(&out, 0);
        } else {
            s.text = legacy_nfd_text(&s.text);
        }
    }
    if !s.text.chars().any(is_nonspacing_mark) {
        return;
    }
    if s.rewrite_untracked(0, |c, out| {
        if !is_nonspacing_mark(c) {
            out.push(c);
        }
    }) {
        return;
    }
    let mut dest: Vec<(char, isize)> = Vec::with_capacity(s.text.len());
    let mut initial_removed = 0usize;
    let mut removed = 0isize;
    let mut last: Option<char> = None;
    for c in s.text.chars() {
        if is_nonspacing_mark(c) {
            removed += 1;
            continue;
        }
        match last {
            Some(l) => dest.push((l, -removed)),
            None => initial_removed = removed as usize,
        }
        removed = 0;
        last = Some(c);
    }
    match last {
        Some(l) => dest.push((l, -removed)),
        None => initial_removed = removed as usize,
    }
    s.transform_changes(&dest, initial_removed);
}

/// Canonical combining class in the Unicode version of `tokenizers`' NFD:
/// characters assigned since then are starters.
pub(crate) fn legacy_ccc(c: char) -> u8 {
    if c.is_ascii() || !in_table(NFD_COMBINING, c) {
        0
    } else {
        unicode_normalization::char::canonical_combining_class(c)
    }
}

/// The text of [`legacy_nfd`] alone, without a list entry per character
/// (12 to 16 bytes each): for untracked strings. Non-starters wait in `run`
/// until the next starter, then go out stably sorted by class, as there.
fn legacy_nfd_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut run: Vec<(u8, char)> = Vec::new();
    let mut put = |d: char, out: &mut String| match legacy_ccc(d) {
        0 => {
            run.sort_by_key(|e| e.0);
            out.extend(run.drain(..).map(|e| e.1));
            out.push(d);
        }
        class => run.push((class, d)),
    };
    for ch in text.chars() {
        if in_table(NFD_DECOMPOSES, ch) {
            unicode_normalization::char::decompose_canonical(ch, |d| put(d, &mut out));
        } else {
            put(ch, &mut out);
        }
    }
    put('\0', &mut out); // (a starter: flushes the last run)
    out.pop();
    out
}

/// NFD with the `(char, change)` alignment protocol (the first character of a
/// decomposition replaces its source, the others are insertions), decomposing
/// and reordering only what the Unicode version of `tokenizers` knows.
fn legacy_nfd(text: &str) -> Vec<(char, isize)> {
    let mut out: Vec<(u8, char, isize)> = Vec::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if in_table(NFD_DECOMPOSES, ch) {
            let mut first = true;
            unicode_normalization::char::decompose_canonical(ch, |d| {
                out.push((legacy_ccc(d), d, if first { 0 } else { 1 }));
                first = false;
            });
        } else {
            out.push((legacy_ccc(ch), ch, 0));
        }
    }
    // canonical ordering: a stable sort of every run of non-starters by class
    let mut i = 0;
    while i < out.len() {
        if out[i].0 == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < out.len() && out[i].0 != 0 {
            i += 1;
        }
        out[start..i].sort_by_key(|e| e.0);
    }
    out.into_iter().map(|(_, c, change)| (c, change)).collect()
}

/// Unicode lowercase; extra characters of a multi-character lowercase are
/// insertions that take the span of the character they come from.
fn lowercase(s: &mut NormalizedString) {
    if s.text.is_ascii() {
        // same byte lengths: the alignments do not move
        s.text.make_ascii_lowercase();
        return;
    }
    // one character for one character of the same UTF-8 length: the
    // alignments do not move
    let mut same = String::with_capacity(s.text.len());
    let mut changed = false;
    let mut simple = true;
    for c in s.text.chars() {
        let mut l = c.to_lowercase();
        match (l.next(), l.next()) {
            (Some(x), None) if x.len_utf8() == c.len_utf8() => {
                changed |= x != c;
                same.push(x);
            }
            _ => {
                simple = false;
                break;
            }
        }
    }
    if simple {
        if changed {
            s.text = same;
        }
        return;
    }
    drop(same);
    if s.rewrite_untracked(16, |c, out| out.extend(c.to_lowercase())) {
        return;
    }
    let mut dest: Vec<(char, isize)> = Vec::with_capacity(s.text.len());
    for c in s.text.chars() {
        for (k, l) in c.to_lowercase().enumerate() {
            dest.push((l, if k > 0 { 1 } else { 0 }));
        }
    }
    s.transform_changes(&dest, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(n: &BertNormalizer, text: &str) -> NormalizedString {
        let mut s = NormalizedString::new(text, 0);
        n.normalize(&mut s);
        s
    }

    #[test]
    fn cleans_spaces_and_lowercases() {
        let n = BertNormalizer::default();
        let s = norm(&n, "\u{0}H\u{e9}llo\tW\u{7f}orld\u{fffd}");
        assert_eq!(s.text, "hello world");
        // "e" from é (NFD) keeps the span of é
        assert_eq!(s.original_range(1, 2), (2, 4));
        assert_eq!(s.original_range(5, 6), (7, 8));
        assert_eq!(s.original_range(6, 7), (8, 9));
        assert_eq!(s.original_range(7, 8), (10, 11));
    }

    #[test]
    fn chinese_chars_get_spaces_with_their_span() {
        let n = BertNormalizer {
            lowercase: false,
            ..BertNormalizer::default()
        };
        let s = norm(&n, "a\u{4e2d}b");
        assert_eq!(s.text, "a \u{4e2d} b");
        assert_eq!(s.original_range(1, 2), (1, 4));
        assert_eq!(s.original_range(2, 5), (1, 4));
        assert_eq!(s.original_range(5, 6), (1, 4));
        assert_eq!(s.original_range(6, 7), (4, 5));
    }

    #[test]
    fn strip_accents_follows_lowercase_unless_set() {
        let keep = BertNormalizer {
            strip_accents: Some(false),
            ..BertNormalizer::default()
        };
        assert_eq!(norm(&keep, "\u{c9}t\u{e9}").text, "\u{e9}t\u{e9}");
        let strip = BertNormalizer {
            lowercase: false,
            strip_accents: Some(true),
            ..BertNormalizer::default()
        };
        assert_eq!(norm(&strip, "\u{c9}t\u{e9}").text, "Ete");
        let s = norm(&strip, "\u{301}a");
        assert_eq!(s.text, "a");
        assert_eq!(s.original_range(0, 1), (2, 3));
    }

    #[test]
    fn classes() {
        assert!(is_bert_punctuation('$') && is_bert_punctuation('\u{3002}') && !is_bert_punctuation('a'));
        assert!(is_bert_control('\u{200b}') && !is_bert_control('\t') && !is_bert_control('a'));
        assert!(is_nonspacing_mark('\u{301}') && !is_nonspacing_mark('e'));
    }

    #[test]
    fn nfd_follows_the_unicode_version_of_tokenizers() {
        // U+105C9 (Unicode 16) decomposes in newer tables, not in `tokenizers`
        assert_eq!(legacy_nfd("\u{105c9}"), vec![('\u{105c9}', 0)]);
        assert_eq!(legacy_nfd("\u{e9}"), vec![('e', 0), ('\u{301}', 1)]);
        // marks reorder by class: U+0316 (220) before U+0301 (230)
        let out: String = legacy_nfd("a\u{301}\u{316}").iter().map(|c| c.0).collect();
        assert_eq!(out, "a\u{316}\u{301}");
        // U+10D24 (Unicode 11) is a starter there
        let out: String = legacy_nfd("a\u{301}\u{10d24}\u{316}").iter().map(|c| c.0).collect();
        assert_eq!(out, "a\u{301}\u{10d24}\u{316}");
    }

    #[test]
    fn serde_follows_tokenizer_json() {
        let n: BertNormalizer = serde_json::from_str(r#"{"lowercase": false}"#).unwrap();
        assert_eq!(
            n,
            BertNormalizer {
                lowercase: false,
                ..BertNormalizer::default()
            }
        );
    }
}
