//! What SentencePiece-style trainers (Unigram, BPE on raw text) share: the
//! words of a corpus with their counts, the characters that cover it, and the
//! rule that says which strings may become a piece.
//!
//! Words are the pieces a `WordCounter` in line mode produces: each line
//! normalized as a `.model` normalizer does it (spaces written `▁`, one dummy
//! prefix) and cut before every `▁`, so `"▁Hello"`, `"▁world"`, or a whole
//! line of Chinese with no space in it.

use crate::error::{Error, Result};
use rustc_hash::{FxHashMap, FxHashSet};
use unicode_script::{Script, UnicodeScript};

pub const SPACE: char = '\u{2581}';

/// Which strings may be pieces (SentencePiece's `IsValidSentencePiece` rules).
#[derive(Clone, Debug)]
pub struct PieceRules {
    /// Longest piece, in characters.
    pub max_piece_length: usize,
    /// A piece holds letters of one script only (Hiragana, Katakana and Han
    /// count as one; combining marks join any script).
    pub split_by_unicode_script: bool,
    /// Digits do not join letters or punctuation.
    pub split_by_number: bool,
    /// Every digit is a piece of its own.
    pub split_digits: bool,
    /// `▁` ends pieces instead of starting them.
    pub treat_whitespace_as_suffix: bool,
    /// Pieces made only of `▁` (more than one) are allowed.
    pub allow_whitespace_only_pieces: bool,
}

impl Default for PieceRules {
    fn default() -> Self {
        PieceRules {
            max_piece_length: 16,
            split_by_unicode_script: true,
            split_by_number: true,
            split_digits: false,
            treat_whitespace_as_suffix: false,
            allow_whitespace_only_pieces: false,
        }
    }
}

/// The class of a character for the one-script rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CharClass {
    /// Joins anything: combining marks, and digits when numbers are not split.
    Any,
    Space,
    Script(Script),
}

/// A decimal digit (general category Nd): ASCII digits, and numeric
/// characters outside the ranges of Nl/No numbers (fractions, super- and
/// subscripts, circled and CJK numbers), which `char::is_numeric` also takes.
fn is_decimal(c: char) -> bool {
    c.is_ascii_digit()
        || (!c.is_ascii()
            && c.is_numeric()
            && !matches!(c as u32,
        0x00B2..=0x00B3 | 0x00B9 | 0x00BC..=0x00BE | 0x2070..=0x209F | 0x2150..=0x218F
        | 0x2460..=0x24FF | 0x2776..=0x2793 | 0x3007 | 0x3021..=0x3029 | 0x3038..=0x303A
        | 0x3192..=0x3195 | 0x3220..=0x3229 | 0x3248..=0x324F | 0x3251..=0x325F
        | 0x3280..=0x3289 | 0x32B1..=0x32BF | 0x16EE..=0x16F0 | 0x10107..=0x10133))
}

impl PieceRules {
    pub fn class(&self, c: char) -> CharClass {
        if c == SPACE {
            return CharClass::Space;
        }
        if !self.split_by_unicode_script || (!self.split_by_number && is_decimal(c)) {
            return CharClass::Any;
        }
        match c.script() {
            Script::Inherited => CharClass::Any,
            Script::Hiragana | Script::Katakana => CharClass::Script(Script::Han),
            _ if c == '\u{30FC}' => CharClass::Script(Script::Han), // ー, the long vowel mark
            s => CharClass::Script(s),                              // digits are Common, like punctuation
        }
    }

    /// May `chars` (with `classes[i]` = `class(chars[i])`) be a piece?
    pub fn is_valid(&self, chars: &[char], classes: &[CharClass]) -> bool {
        let n = chars.len();
        if n == 0 || n > self.max_piece_length {
            return false;
        }
        if n == 1 {
            return true;
        }
        let all_space = classes.iter().all(|&c| c == CharClass::Space);
        if all_space {
            return self.allow_whitespace_only_pieces;
        }
        let mut prev = CharClass::Any;
        for (i, &cls) in classes.iter().enumerate() {
            match cls {
                CharClass::Space => {
                    let edge = if self.treat_whitespace_as_suffix {
                        i + 1 == n
                    } else {
                        i == 0
                    };
                    if !edge {
                        return false;
                    }
                    continue;
                }
                _ if self.split_digits && is_decimal(chars[i]) => return false,
                CharClass::Any => continue,
                _ => {}
            }
            if prev != CharClass::Any && prev != cls {
                return false;
            }
            prev = cls;
        }
        true
    }
}

/// The corpus as the trainers see it: distinct words, their counts, and the
/// characters kept (the most frequent ones covering `character_coverage`).
pub struct Words {
    /// Distinct words in a fixed order (sorted), with counts.
    pub words: Vec<(String, u64)>,
    /// Kept characters, most frequent first, with their counts.
    pub chars: Vec<(char, u64)>,
    pub kept: FxHashSet<char>,
    /// Characters dropped by the coverage rule (they encode as unknown or bytes).
    pub dropped: usize,
}

impl Words {
    pub fn new(counts: &FxHashMap<Vec<u8>, u64>, character_coverage: f64) -> Result<Words> {
        if !(character_coverage > 0.0 && character_coverage <= 1.0) {
            return Err(Error::Config(format!(
                "character_coverage must be in (0, 1], got {character_coverage}"
            )));
        }
        let mut words: Vec<(String, u64)> = counts
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, &v)| (String::from_utf8_lossy(k).into_owned(), v))
            .collect();
        if words.is_empty() {
            return Err(Error::Corpus("the corpus is empty: no text to learn from".into()));
        }
        words.sort_unstable();
        let mut freq: FxHashMap<char, u64> = FxHashMap::default();
        for (w, c) in &words {
            for ch in w.chars() {
                *freq.entry(ch).or_insert(0) += c;
            }
        }
        let mut chars: Vec<(char, u64)> = freq.into_iter().collect();
        chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: u64 = chars.iter().map(|c| c.1).sum();
        let mut acc = 0u64;
        let mut keep = 0;
        for (_, c) in &chars {
            keep += 1;
            acc += c;
            if acc as f64 / total as f64 >= character_coverage {
                break;
            }
        }
        let dropped = chars.len() - keep;
        chars.truncate(keep);
        let kept = chars.iter().map(|c| c.0).collect();
        Ok(Words {
            words,
            chars,
            kept,
            dropped,
        })
    }

    pub fn total_count(&self) -> u64 {
        self.words.iter().map(|w| w.1).sum()
    }
}

/// ln Γ'(x)/Γ(x), the digamma function (x > 0), as the Bayesian M-step uses it.
pub fn digamma(mut x: f64) -> f64 {
    let mut result = 0.0;
    while x < 7.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    x -= 0.5;
    let xx = 1.0 / x;
    let xx2 = xx * xx;
    let xx4 = xx2 * xx2;
    result + x.ln() + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2
        - (127.0 / 30720.0) * xx4 * xx4
}

/// Order `chars` (single characters) as `spm_train` lists the characters of
/// a model: the most frequent in the counted words first, equal counts by
/// code point.
pub fn order_by_frequency(counts: &FxHashMap<Vec<u8>, u64>, chars: &mut [String]) {
    let mut freq: FxHashMap<char, u64> = FxHashMap::default();
    for (w, c) in counts {
        for ch in String::from_utf8_lossy(w).chars() {
            *freq.entry(ch).or_insert(0) += c;
        }
    }
    let count = |s: &str| s.chars().next().and_then(|c| freq.get(&c)).copied().unwrap_or(0);
    chars.sort_by(|a, b| count(b).cmp(&count(a)).then_with(|| a.cmp(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(r: &PieceRules, s: &str) -> bool {
        let chars: Vec<char> = s.chars().collect();
        let classes: Vec<CharClass> = chars.iter().map(|&c| r.class(c)).collect();
        r.is_valid(&chars, &classes)
    }

    #[test]
    fn piece_rules() {
        let r = PieceRules::default();
        assert!(valid(&r, "▁the"));
        assert!(valid(&r, "ing"));
        assert!(!valid(&r, "a▁b"));
        assert!(!valid(&r, "the▁"));
        assert!(!valid(&r, "▁▁"));
        assert!(valid(&r, "▁"));
        assert!(!valid(&r, "ab1"));
        assert!(valid(&r, "123"));
        assert!(valid(&r, "2],")); // digits and punctuation are both Common
        assert!(!valid(&r, "a,"));
        assert!(valid(&r, "カタカナと漢字"));
        assert!(!valid(&r, "漢a"));
        assert!(valid(&r, "e\u{301}t")); // combining mark joins its letter
        assert!(!valid(&r, "abcdefghijklmnopq")); // 17 > 16
        let suffix = PieceRules {
            treat_whitespace_as_suffix: true,
            ..PieceRules::default()
        };
        assert!(valid(&suffix, "the▁"));
        assert!(!valid(&suffix, "▁the"));
        let digits = PieceRules {
            split_digits: true,
            ..PieceRules::default()
        };
        assert!(!valid(&digits, "12"));
        let numbers_join = PieceRules {
            split_by_number: false,
            ..PieceRules::default()
        };
        assert!(valid(&numbers_join, "a1b"));
    }

    #[test]
    fn digamma_matches_known_values() {
        // ψ(1) = -γ, ψ(0.5) = -γ - 2 ln 2, ψ(10) = H_9 - γ
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-9);
        assert!((digamma(0.5) + gamma + 2.0 * 2f64.ln()).abs() < 1e-9);
        let h9: f64 = (1..10).map(|k| 1.0 / k as f64).sum();
        assert!((digamma(10.0) - (h9 - gamma)).abs() < 1e-9);
    }

    #[test]
    fn coverage_keeps_the_frequent_characters() {
        let mut counts = FxHashMap::default();
        counts.insert("▁aaa".as_bytes().to_vec(), 100);
        counts.insert("▁b".as_bytes().to_vec(), 1);
        let w = Words::new(&counts, 0.99).unwrap();
        assert_eq!(w.chars.iter().map(|c| c.0).collect::<String>(), "a▁");
        assert_eq!(w.dropped, 1);
        assert!(Words::new(&counts, 0.0).is_err());
        assert!(Words::new(&FxHashMap::default(), 1.0).is_err());
    }
}
