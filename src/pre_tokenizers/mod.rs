//! Pre-tokenizers: cut the normalized text into pieces the model encodes
//! one at a time. Pieces are byte ranges of the normalized string.

pub mod bert;
pub mod metaspace;

use crate::error::Result;
use crate::normalizers::NormalizedString;
use crate::pattern::Pattern;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

pub use crate::patterns::*;

/// The normalized text and the pieces cut from it so far.
pub struct PreTokenizedString {
    pub ns: NormalizedString,
    pub pieces: Vec<(usize, usize)>,
}

impl PreTokenizedString {
    pub fn new(ns: NormalizedString) -> Self {
        let pieces = if ns.text.is_empty() {
            vec![]
        } else {
            vec![(0, ns.text.len())]
        };
        PreTokenizedString { ns, pieces }
    }
}

/// One pipeline stage.
pub trait PreTokenize {
    fn pre_tokenize(&self, p: &mut PreTokenizedString) -> Result<()>;
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum SplitBehavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

/// The registry of pre-tokenizer components, named as in `tokenizer.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum PreTokenizer {
    Split {
        pattern: Pattern,
        behavior: SplitBehavior,
        #[serde(default)]
        invert: bool,
    },
    ByteLevel {
        #[serde(default = "yes")]
        add_prefix_space: bool,
        #[serde(default = "yes")]
        trim_offsets: bool,
        #[serde(default = "yes")]
        use_regex: bool,
    },
    Sequence {
        pretokenizers: Vec<PreTokenizer>,
    },
    Whitespace,
    WhitespaceSplit,
    Digits {
        #[serde(default)]
        individual_digits: bool,
    },
    BertPreTokenizer,
    Punctuation(bert::Punctuation),
    Metaspace(metaspace::Metaspace),
}

fn yes() -> bool {
    true
}

fn gpt2_pattern() -> &'static Pattern {
    static P: OnceLock<Pattern> = OnceLock::new();
    P.get_or_init(|| Pattern::regex(GPT2_PATTERN).expect("the GPT-2 pattern compiles"))
}

fn whitespace_pattern() -> &'static Pattern {
    static P: OnceLock<Pattern> = OnceLock::new();
    P.get_or_init(|| Pattern::regex(r"\w+|[^\w\s]+").expect("the whitespace pattern compiles"))
}

/// Apply a split behaviour to the alternating match list of one piece.
/// `marks` holds `(start, end, is_match)` covering the piece in order.
pub fn apply_behavior(marks: &[(usize, usize, bool)], behavior: SplitBehavior, out: &mut Vec<(usize, usize)>) {
    let mut acc: Vec<(usize, usize, bool)> = Vec::with_capacity(marks.len());
    match behavior {
        SplitBehavior::Isolated => acc.extend(marks.iter().map(|&(s, e, _)| (s, e, false))),
        SplitBehavior::Removed => acc.extend_from_slice(marks),
        SplitBehavior::Contiguous => {
            let mut prev = false;
            for &(s, e, m) in marks {
                match acc.last_mut() {
                    Some(last) if m == prev => last.1 = e,
                    _ => acc.push((s, e, false)),
                }
                prev = m;
            }
        }
        SplitBehavior::MergedWithPrevious => {
            let mut prev = false;
            for &(s, e, m) in marks {
                match acc.last_mut() {
                    Some(last) if m && !prev => last.1 = e,
                    _ => acc.push((s, e, false)),
                }
                prev = m;
            }
        }
        SplitBehavior::MergedWithNext => {
            let mut prev = false;
            for &(s, e, m) in marks.iter().rev() {
                match acc.last_mut() {
                    Some(last) if m && !prev => last.0 = s,
                    _ => acc.push((s, e, false)),
                }
                prev = m;
            }
            acc.reverse();
        }
    }
    out.extend(
        acc.into_iter()
            .filter(|&(s, e, remove)| !remove && s < e)
            .map(|(s, e, _)| (s, e)),
    );
}

fn split_pieces(
    p: &mut PreTokenizedString,
    behavior: SplitBehavior,
    invert: bool,
    mut find: impl FnMut(&str, &mut Vec<(usize, usize)>) -> Result<()>,
) -> Result<()> {
    let mut out = Vec::with_capacity(p.pieces.len() * 4);
    let mut found = Vec::new();
    let mut marks = Vec::new();
    for &(ps, pe) in &p.pieces {
        found.clear();
        marks.clear();
        find(&p.ns.text[ps..pe], &mut found)?;
        let mut prev = 0;
        for &(s, e) in &found {
            if s > prev {
                marks.push((ps + prev, ps + s, invert));
            }
            marks.push((ps + s, ps + e, !invert));
            prev = e;
        }
        if prev < pe - ps {
            marks.push((ps + prev, pe, invert));
        }
        apply_behavior(&marks, behavior, &mut out);
    }
    p.pieces = out;
    Ok(())
}

/// Runs of characters for which `pred` holds, as matches.
fn char_runs(text: &str, pred: impl Fn(char) -> bool, each: bool, out: &mut Vec<(usize, usize)>) {
    let mut run: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if pred(c) {
            if each {
                out.push((i, i + c.len_utf8()));
            } else if run.is_none() {
                run = Some(i);
            }
        } else if let Some(s) = run.take() {
            out.push((s, i));
        }
    }
    if let Some(s) = run {
        out.push((s, text.len()));
    }
}

impl PreTokenize for PreTokenizer {
    fn pre_tokenize(&self, p: &mut PreTokenizedString) -> Result<()> {
        match self {
            PreTokenizer::Split {
                pattern,
                behavior,
                invert,
            } => split_pieces(p, *behavior, *invert, |t, out| pattern.find_iter(t, out)),
            PreTokenizer::ByteLevel {
                add_prefix_space,
                use_regex,
                ..
            } => {
                if *add_prefix_space {
                    let needs: Vec<usize> = p
                        .pieces
                        .iter()
                        .filter(|&&(s, _)| !p.ns.text[s..].starts_with(' '))
                        .map(|&(s, _)| s)
                        .collect();
                    if !needs.is_empty() {
                        let chunks = needs.iter().map(|&s| (s, s, " ".to_string())).collect();
                        p.ns.transform(chunks);
                        let mut shift = 0;
                        let mut k = 0;
                        for piece in p.pieces.iter_mut() {
                            let inserts = k < needs.len() && needs[k] == piece.0;
                            piece.0 += shift;
                            if inserts {
                                shift += 1;
                                k += 1;
                            }
                            piece.1 += shift;
                        }
                    }
                }
                if *use_regex {
                    let pat = gpt2_pattern();
                    split_pieces(p, SplitBehavior::Isolated, false, |t, out| pat.find_iter(t, out))?;
                }
                Ok(())
            }
            PreTokenizer::BertPreTokenizer => {
                bert::bert_pre_tokenize(p);
                Ok(())
            }
            PreTokenizer::Metaspace(m) => {
                m.pre_tokenize(p);
                Ok(())
            }
            PreTokenizer::Punctuation(punct) => {
                punct.pre_tokenize(p);
                Ok(())
            }
            PreTokenizer::Sequence { pretokenizers } => {
                if let Some(scanner) = self.sequence_scanner() {
                    // (the scanner's pieces are the sequence's)
                    return split_pieces(p, SplitBehavior::Isolated, false, |t, out| {
                        scanner.find_iter(t, out);
                        Ok(())
                    });
                }
                for pt in pretokenizers {
                    pt.pre_tokenize(p)?;
                }
                Ok(())
            }
            PreTokenizer::Whitespace => {
                let pat = whitespace_pattern();
                split_pieces(p, SplitBehavior::Removed, true, |t, out| pat.find_iter(t, out))
            }
            PreTokenizer::WhitespaceSplit => split_pieces(p, SplitBehavior::Removed, false, |t, out| {
                char_runs(t, char::is_whitespace, false, out);
                Ok(())
            }),
            PreTokenizer::Digits { individual_digits } => {
                let each = *individual_digits;
                let behavior = if each {
                    SplitBehavior::Isolated
                } else {
                    SplitBehavior::Contiguous
                };
                split_pieces(p, behavior, false, |t, out| {
                    char_runs(t, char::is_numeric, each, out);
                    Ok(())
                })
            }
        }
    }
}

/// What the sole splitter of a pre-tokenizer cuts by.
enum SplitPattern<'a> {
    Own(&'a Pattern),
    /// `ByteLevel` with its regex: GPT-2's pattern.
    Gpt2,
}

impl PreTokenizer {
    /// The one component that cuts the text, when this pre-tokenizer is a
    /// single splitter, possibly in a sequence with byte-level mapping that
    /// does not split (`ByteLevel` without its regex): the shape tiktoken
    /// encodings have.
    fn sole_splitter(&self) -> Option<&PreTokenizer> {
        match self {
            PreTokenizer::Sequence { pretokenizers } => {
                let mut found = None;
                for p in pretokenizers {
                    match p {
                        // byte-level mapping without the regex leaves pieces as they are
                        PreTokenizer::ByteLevel {
                            use_regex: false,
                            add_prefix_space: false,
                            ..
                        } => {}
                        other => {
                            if found.is_some() {
                                return None;
                            }
                            found = Some(other);
                        }
                    }
                }
                found
            }
            other => Some(other),
        }
    }

    /// The pattern of the sole splitter, when it is a regex split with
    /// `Isolated` behaviour or GPT-2's byte-level regex.
    fn sole_split_pattern(&self) -> Option<SplitPattern<'_>> {
        match self.sole_splitter()? {
            PreTokenizer::Split {
                pattern: pattern @ Pattern::Regex { .. },
                behavior: SplitBehavior::Isolated,
                invert: false,
            } => Some(SplitPattern::Own(pattern)),
            PreTokenizer::ByteLevel {
                use_regex: true,
                add_prefix_space: false,
                ..
            } => Some(SplitPattern::Gpt2),
            _ => None,
        }
    }

    /// The split regex when this is one regex split (with `Isolated`
    /// behaviour) plus byte-level mapping, as tiktoken encodings have.
    pub fn split_regex(&self) -> Option<String> {
        match self.sole_split_pattern()? {
            SplitPattern::Own(Pattern::Regex { source, .. }) => Some(source.clone()),
            SplitPattern::Own(Pattern::Literal(_)) => None,
            SplitPattern::Gpt2 => Some(GPT2_PATTERN.to_string()),
        }
    }

    /// The hand-written scanner, when this pre-tokenizer is one split by a
    /// known pattern (as [`PreTokenizer::split_regex`] finds it) whose
    /// pieces are exactly the scanner's.
    pub fn scanner(&self) -> Option<&crate::scanner::Scanner> {
        use crate::pattern::Engine;
        if let Some(s) = self.sequence_scanner() {
            return Some(s);
        }
        let pattern = match self.sole_split_pattern()? {
            SplitPattern::Own(p) => p,
            SplitPattern::Gpt2 => gpt2_pattern(),
        };
        match pattern {
            Pattern::Regex { re, .. } => match re.as_ref() {
                Engine::Scan(s) => Some(s),
                _ => None,
            },
            Pattern::Literal(_) => None,
        }
    }

    /// The scanner of a whole sequence of splits, when this is one a scanner
    /// exists for: DeepSeek-V3's three splits (`DEEPSEEK_DIGITS`,
    /// `DEEPSEEK_CJK`, `DEEPSEEK_WORDS`, each isolating) with byte-level
    /// mapping that does not split.
    fn sequence_scanner(&self) -> Option<&'static crate::scanner::Scanner> {
        let PreTokenizer::Sequence { pretokenizers } = self else {
            return None;
        };
        // (no allocation: this runs on every encode call)
        let mut want = [DEEPSEEK_DIGITS, DEEPSEEK_CJK, DEEPSEEK_WORDS].into_iter();
        for p in pretokenizers {
            match p {
                PreTokenizer::Split {
                    pattern: Pattern::Regex { source, .. },
                    behavior: SplitBehavior::Isolated,
                    invert: false,
                } if want.next() == Some(source.as_str()) => {}
                PreTokenizer::ByteLevel {
                    use_regex: false,
                    add_prefix_space: false,
                    ..
                } => {}
                _ => return None,
            }
        }
        if want.next().is_some() {
            return None;
        }
        static S: OnceLock<crate::scanner::Scanner> = OnceLock::new();
        Some(S.get_or_init(crate::scanner::Scanner::deepseek))
    }

    /// Whether this pre-tokenizer maps text to the byte-level alphabet.
    pub fn is_byte_level(&self) -> bool {
        match self {
            PreTokenizer::ByteLevel { .. } => true,
            PreTokenizer::Sequence { pretokenizers } => pretokenizers.iter().any(|p| p.is_byte_level()),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pt: &PreTokenizer, text: &str) -> Vec<String> {
        let mut p = PreTokenizedString::new(NormalizedString::new(text, 0));
        pt.pre_tokenize(&mut p).unwrap();
        p.pieces.iter().map(|&(s, e)| p.ns.text[s..e].to_string()).collect()
    }

    fn split(behavior: SplitBehavior, invert: bool) -> PreTokenizer {
        PreTokenizer::Split {
            pattern: Pattern::Literal("-".into()),
            behavior,
            invert,
        }
    }

    #[test]
    fn split_behaviors_follow_the_tokenizers_definitions() {
        let t = "the-final--countdown";
        assert_eq!(
            run(&split(SplitBehavior::Removed, false), t),
            ["the", "final", "countdown"]
        );
        assert_eq!(
            run(&split(SplitBehavior::Isolated, false), t),
            ["the", "-", "final", "-", "-", "countdown"]
        );
        assert_eq!(
            run(&split(SplitBehavior::MergedWithPrevious, false), t),
            ["the-", "final-", "-", "countdown"]
        );
        assert_eq!(
            run(&split(SplitBehavior::MergedWithNext, false), t),
            ["the", "-final", "-", "-countdown"]
        );
        assert_eq!(
            run(&split(SplitBehavior::Contiguous, false), t),
            ["the", "-", "final", "--", "countdown"]
        );
        assert_eq!(run(&split(SplitBehavior::Removed, true), t), ["-", "-", "-"]);
    }

    #[test]
    fn byte_level_gpt2_split_and_prefix_space() {
        let pt = PreTokenizer::ByteLevel {
            add_prefix_space: true,
            trim_offsets: true,
            use_regex: true,
        };
        assert_eq!(run(&pt, "Hello  world's"), [" Hello", " ", " world", "'s"]);
        let mut p = PreTokenizedString::new(NormalizedString::new("Hi", 0));
        pt.pre_tokenize(&mut p).unwrap();
        assert_eq!(p.ns.original_range(0, 1), (0, 1));
    }

    #[test]
    fn whitespace_and_digits() {
        assert_eq!(
            run(&PreTokenizer::Whitespace, "Hey, you 12!"),
            ["Hey", ",", "you", "12", "!"]
        );
        assert_eq!(run(&PreTokenizer::WhitespaceSplit, " a  b\n"), ["a", "b"]);
        assert_eq!(
            run(
                &PreTokenizer::Digits {
                    individual_digits: true
                },
                "a123"
            ),
            ["a", "1", "2", "3"]
        );
        assert_eq!(
            run(
                &PreTokenizer::Digits {
                    individual_digits: false
                },
                "a123b"
            ),
            ["a", "123", "b"]
        );
    }
}
