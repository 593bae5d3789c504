//! The normalizer of a SentencePiece `.model`, exactly as `sentencepiece`
//! runs it (`Normalizer::Normalize`):
//!
//! 1. left to right, the longest user-defined symbol at the position is kept
//!    as is; otherwise the longest rule of the compiled charsmap rewrites the
//!    input; otherwise one character passes;
//! 2. with `remove_extra_whitespaces`: spaces at the start are dropped, a
//!    rewrite that follows one ending in a space loses its leading spaces,
//!    and trailing spaces (or `▁`, after escaping) are cut at the end;
//! 3. `add_dummy_prefix` puts one space (`▁`) before the text (after it with
//!    `treat_whitespace_as_suffix`), unless the text is empty;
//! 4. `escape_whitespaces` writes every space as `▁` (U+2581).
//!
//! This differs from the `tokenizer.json` pipelines that converters build
//! (`Precompiled` + `Metaspace`) on runs of spaces, on text that starts with
//! `▁`, and where rules span grapheme clusters; `tokenizers` has no such
//! component, so `tokenizer.json` files that use it load in tokensmith only.

use crate::normalizers::precompiled::Charsmap;
use crate::normalizers::NormalizedString;
use crate::trie::Trie;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

const SPACE_SYMBOL: &str = "\u{2581}";

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SentencePieceSpec {
    #[serde(default)]
    pub precompiled_charsmap: Option<Charsmap>,
    #[serde(default = "yes")]
    pub add_dummy_prefix: bool,
    #[serde(default = "yes")]
    pub remove_extra_whitespaces: bool,
    #[serde(default = "yes")]
    pub escape_whitespaces: bool,
    #[serde(default)]
    pub treat_whitespace_as_suffix: bool,
    #[serde(default)]
    pub user_defined_symbols: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "SentencePieceSpec", into = "SentencePieceSpec")]
pub struct SentencePieceNormalizer {
    pub spec: SentencePieceSpec,
    symbols: Option<Arc<Trie>>,
    /// the first bytes of the user-defined symbols, one bit each
    symbol_first: [u64; 4],
}

impl From<SentencePieceSpec> for SentencePieceNormalizer {
    fn from(spec: SentencePieceSpec) -> Self {
        let symbols = if spec.user_defined_symbols.is_empty() {
            None
        } else {
            let keys = spec
                .user_defined_symbols
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| (s.as_bytes(), 0u32))
                .collect();
            Some(Arc::new(Trie::build(keys)))
        };
        let mut symbol_first = [0u64; 4];
        for s in &spec.user_defined_symbols {
            if let Some(&c) = s.as_bytes().first() {
                symbol_first[c as usize >> 6] |= 1 << (c & 63);
            }
        }
        SentencePieceNormalizer {
            spec,
            symbols,
            symbol_first,
        }
    }
}

impl From<SentencePieceNormalizer> for SentencePieceSpec {
    fn from(n: SentencePieceNormalizer) -> Self {
        n.spec
    }
}

impl SentencePieceNormalizer {
    /// `(replacement, bytes consumed)` at the start of `input` (non-empty).
    fn prefix<'a>(&'a self, input: &'a str) -> (&'a str, usize) {
        if let Some(t) = &self.symbols {
            if let Some((n, _)) = t.longest_prefix(input.as_bytes()) {
                return (&input[..n], n);
            }
        }
        if let Some(map) = &self.spec.precompiled_charsmap {
            if let Some((n, rep)) = map.0.longest_prefix(input.as_bytes()) {
                if input.is_char_boundary(n) {
                    return (rep, n);
                }
            }
        }
        let n = input.chars().next().map_or(1, char::len_utf8);
        (&input[..n], n)
    }

    /// [`SentencePieceNormalizer::prefix`] at `input[pos..]`, from the
    /// charsmap's ASCII tables when they answer.
    #[inline(always)]
    fn prefix_at<'a>(&'a self, input: &'a str, pos: usize) -> (&'a str, usize) {
        let b = input.as_bytes();
        let c = b[pos];
        if c < 0x80 && self.symbol_first[c as usize >> 6] >> (c & 63) & 1 == 0 {
            let single = &input[pos..pos + 1];
            match &self.spec.precompiled_charsmap {
                None => return (single, 1),
                Some(map) => {
                    if let Some(rule) = map.0.longest_prefix_ascii(&b[pos..]) {
                        return (rule.unwrap_or(single), 1);
                    }
                }
            }
        }
        self.prefix(&input[pos..])
    }

    /// The length of the character at `b[pos]` if it is not a space and
    /// passes unchanged (no user-defined symbol starts with its first byte
    /// and no rule of the charsmap applies there), else 0. Characters
    /// past the Basic Multilingual Plane are left to the general path.
    #[inline(always)]
    fn passes_len(&self, b: &[u8], pos: usize) -> usize {
        let c = b[pos];
        if c == b' ' || self.symbol_first[c as usize >> 6] >> (c & 63) & 1 == 1 {
            return 0;
        }
        match &self.spec.precompiled_charsmap {
            None if c < 0x80 => 1,
            None => 0,
            Some(map) if c < 0x80 => map.0.ascii_passes(c, b.get(pos + 1).copied()) as usize,
            Some(map) => map.0.bmp_passes_len(b, pos),
        }
    }

    /// The normalized text alone (no alignments) into `out`: the same
    /// steps as [`SentencePieceNormalizer::normalize`] in one pass.
    pub fn normalize_into(&self, input: &str, out: &mut String) {
        out.clear();
        let spec = &self.spec;
        let len = input.len();
        let mut pos = 0;
        if spec.remove_extra_whitespaces {
            while pos < len {
                let (rep, n) = self.prefix_at(input, pos);
                if rep != " " {
                    break;
                }
                pos += n;
            }
        }
        if pos == len {
            return;
        }
        let space: &str = if spec.escape_whitespaces { SPACE_SYMBOL } else { " " };
        if !spec.treat_whitespace_as_suffix && spec.add_dummy_prefix {
            out.push_str(space);
        }
        let mut prev_space = spec.remove_extra_whitespaces;
        let bytes = input.as_bytes();
        while pos < len {
            // a run of characters that pass unchanged, copied at once
            let run = pos;
            while pos < len {
                let n = self.passes_len(bytes, pos);
                if n == 0 {
                    break;
                }
                pos += n;
            }
            if pos > run {
                out.push_str(&input[run..pos]);
                prev_space = false;
                continue;
            }
            let (rep, n) = self.prefix_at(input, pos);
            pos += n;
            let mut sp = rep;
            if prev_space {
                sp = sp.trim_start_matches(' ');
            }
            if !sp.is_empty() {
                prev_space = sp.ends_with(' ');
            }
            if !spec.remove_extra_whitespaces {
                prev_space = false;
            }
            if sp.len() == 1 && sp != " " {
                out.push_str(sp);
            } else if sp == " " {
                out.push_str(space);
            } else if spec.escape_whitespaces && sp.contains(' ') {
                for (i, part) in sp.split(' ').enumerate() {
                    if i > 0 {
                        out.push_str(SPACE_SYMBOL);
                    }
                    out.push_str(part);
                }
            } else {
                out.push_str(sp);
            }
        }
        if spec.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        if spec.treat_whitespace_as_suffix && spec.add_dummy_prefix {
            out.push_str(space);
        }
    }

    pub fn normalize(&self, s: &mut NormalizedString) {
        let input = std::mem::take(&mut s.text);
        let chunks = self.rewrites(&input);
        s.text = input;
        s.transform(chunks);
    }

    /// The rewrites that turn `input` into its normalized form, as
    /// `NormalizedString::transform` chunks (only what changes).
    fn rewrites(&self, input: &str) -> Vec<(usize, usize, String)> {
        let spec = &self.spec;
        let len = input.len();
        if len == 0 {
            return Vec::new();
        }
        let mut pos = 0;
        if spec.remove_extra_whitespaces {
            while pos < len {
                let (rep, n) = self.prefix(&input[pos..]);
                if rep != " " {
                    break;
                }
                pos += n;
            }
        }
        if pos == len {
            return vec![(0, len, String::new())];
        }
        let space: &str = if spec.escape_whitespaces { SPACE_SYMBOL } else { " " };
        let mut chunks: Vec<(usize, usize, String)> = Vec::new();
        if pos > 0 {
            chunks.push((0, pos, String::new()));
        }
        if !spec.treat_whitespace_as_suffix && spec.add_dummy_prefix {
            chunks.push((pos, pos, space.to_string()));
        }
        let mut prev_space = spec.remove_extra_whitespaces;
        while pos < len {
            let (rep, n) = self.prefix(&input[pos..]);
            let mut sp = rep;
            if prev_space {
                sp = sp.trim_start_matches(' ');
            }
            if !sp.is_empty() {
                prev_space = sp.ends_with(' ');
            }
            let escape = spec.escape_whitespaces && sp.contains(' ');
            if escape {
                chunks.push((pos, pos + n, sp.replace(' ', SPACE_SYMBOL)));
            } else if sp != &input[pos..pos + n] {
                chunks.push((pos, pos + n, sp.to_string()));
            }
            pos += n;
            if !spec.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if spec.remove_extra_whitespaces {
            strip_trailing(input, space, &mut chunks);
        }
        if spec.treat_whitespace_as_suffix && spec.add_dummy_prefix {
            chunks.push((len, len, space.to_string()));
        }
        chunks
    }
}

/// Cut every trailing `space` from the output that `chunks` make of `input`,
/// across rewrites and unchanged text alike.
fn strip_trailing(input: &str, space: &str, chunks: &mut Vec<(usize, usize, String)>) {
    // the output before input position `end`, with chunks[..ci] still ahead of it
    let mut end = input.len();
    let mut ci = chunks.len();
    loop {
        if ci > 0 && chunks[ci - 1].1 == end {
            let c = &mut chunks[ci - 1];
            if c.2.is_empty() {
                end = c.0;
                ci -= 1;
                continue;
            }
            if !c.2.ends_with(space) {
                return;
            }
            let keep = c.2.len() - space.len();
            c.2.truncate(keep);
            continue;
        }
        // unchanged input before `end`
        let start = if ci > 0 { chunks[ci - 1].1 } else { 0 };
        let region = &input[start..end];
        let kept = region.trim_end_matches(space).len();
        if kept == region.len() {
            return;
        }
        chunks.insert(ci, (start + kept, end, String::new()));
        end = start + kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalizers::precompiled::tests::build;

    fn norm(spec: SentencePieceSpec, text: &str) -> String {
        let n = SentencePieceNormalizer::from(spec);
        let mut s = NormalizedString::new(text, 0);
        n.normalize(&mut s);
        s.text
    }

    fn spec() -> SentencePieceSpec {
        SentencePieceSpec {
            precompiled_charsmap: None,
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
            user_defined_symbols: Vec::new(),
        }
    }

    #[test]
    fn whitespace_rules_follow_sentencepiece() {
        assert_eq!(norm(spec(), "  Hello   world  "), "\u{2581}Hello\u{2581}world");
        assert_eq!(norm(spec(), "   "), "");
        assert_eq!(norm(spec(), ""), "");
        // a literal ▁ at the end is cut too; one at the start is kept after the dummy prefix
        assert_eq!(norm(spec(), "\u{2581}a\u{2581}"), "\u{2581}\u{2581}a");
        assert_eq!(norm(spec(), "\u{2581}"), "");
        let keep = SentencePieceSpec {
            remove_extra_whitespaces: false,
            ..spec()
        };
        assert_eq!(
            norm(keep, "  a  b "),
            "\u{2581}\u{2581}\u{2581}a\u{2581}\u{2581}b\u{2581}"
        );
        let suffix = SentencePieceSpec {
            treat_whitespace_as_suffix: true,
            ..spec()
        };
        assert_eq!(norm(suffix, "a b"), "a\u{2581}b\u{2581}");
        let plain = SentencePieceSpec {
            escape_whitespaces: false,
            add_dummy_prefix: false,
            ..spec()
        };
        assert_eq!(norm(plain, " a  b "), "a b");
    }

    #[test]
    fn charsmap_longest_match_and_user_symbols() {
        let map = Charsmap::from_bytes(&build(&[("a", "A"), ("ab", "X"), ("\u{3000}", " "), ("\u{1}", "")])).unwrap();
        let s = SentencePieceSpec {
            precompiled_charsmap: Some(map),
            user_defined_symbols: vec!["ab!".into()],
            ..spec()
        };
        assert_eq!(norm(s.clone(), "abc a\u{3000} \u{1}x"), "\u{2581}Xc\u{2581}A\u{2581}x");
        assert_eq!(norm(s, "ab!ab"), "\u{2581}ab!X");
    }

    #[test]
    fn normalize_into_matches_normalize() {
        let map = Charsmap::from_bytes(&build(&[
            ("a", "A"),
            ("ab", "X"),
            ("\u{3000}", " "),
            ("\u{1}", ""),
            ("q", " q "),
            ("\u{FF0C}", ","),
        ]))
        .unwrap();
        let specs = [
            spec(),
            SentencePieceSpec {
                precompiled_charsmap: Some(map.clone()),
                user_defined_symbols: vec!["ab!".into(), "\u{4E2D}\u{6587}".into()],
                ..spec()
            },
            SentencePieceSpec {
                precompiled_charsmap: Some(map.clone()),
                remove_extra_whitespaces: false,
                ..spec()
            },
            SentencePieceSpec {
                precompiled_charsmap: Some(map),
                treat_whitespace_as_suffix: true,
                escape_whitespaces: false,
                ..spec()
            },
        ];
        let texts = [
            "",
            "   ",
            "  Hello   world  ",
            "abc a\u{3000} \u{1}x ab!ab",
            "\u{2581}a\u{2581} q q  qq",
            "\u{4E2D}\u{6587}\u{FF0C}\u{4E2D} \u{1F600}\u{e9}",
            "\u{1}\u{1} \u{1}",
        ];
        for sp in specs {
            let n = SentencePieceNormalizer::from(sp);
            for t in texts {
                let mut s = NormalizedString::new(t, 0);
                n.normalize(&mut s);
                let mut fast = String::new();
                n.normalize_into(t, &mut fast);
                assert_eq!(fast, s.text, "{t:?}");
            }
        }
    }

    #[test]
    fn alignments_point_into_the_original() {
        let n = SentencePieceNormalizer::from(spec());
        let mut s = NormalizedString::new("  ab  c", 0);
        n.normalize(&mut s);
        assert_eq!(s.text, "\u{2581}ab\u{2581}c");
        assert_eq!(s.original_range(3, 5), (2, 4));
        assert_eq!(s.original_range(8, 9), (6, 7));
    }
}
