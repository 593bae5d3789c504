//! `BertPreTokenizer` (split on whitespace, isolate each punctuation
//! character) and `Punctuation` (split on punctuation with a behaviour).

use super::{apply_behavior, PreTokenizedString, SplitBehavior};
use crate::normalizers::bert::is_bert_punctuation;
use serde::{Deserialize, Serialize};

/// Whitespace is removed; every punctuation character becomes its own piece.
pub fn bert_pre_tokenize(p: &mut PreTokenizedString) {
    let text = p.ns.text.as_str();
    let mut out = Vec::with_capacity(p.pieces.len() * 2 + text.len() / 4);
    for &(ps, pe) in &p.pieces {
        let mut word: Option<usize> = None;
        for (i, c) in text[ps..pe].char_indices() {
            let at = ps + i;
            if c.is_whitespace() {
                if let Some(w) = word.take() {
                    out.push((w, at));
                }
            } else if is_bert_punctuation(c) {
                if let Some(w) = word.take() {
                    out.push((w, at));
                }
                out.push((at, at + c.len_utf8()));
            } else if word.is_none() {
                word = Some(at);
            }
        }
        if let Some(w) = word {
            out.push((w, pe));
        }
    }
    p.pieces = out;
}

fn isolated() -> SplitBehavior {
    SplitBehavior::Isolated
}

/// `{"type": "Punctuation", "behavior": ...}`: every punctuation character is
/// one match (a run of them is several), as in `tokenizers`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Punctuation {
    #[serde(default = "isolated")]
    pub behavior: SplitBehavior,
}

impl Punctuation {
    pub fn pre_tokenize(&self, p: &mut PreTokenizedString) {
        let text = p.ns.text.as_str();
        let mut out = Vec::with_capacity(p.pieces.len() * 2);
        let mut marks: Vec<(usize, usize, bool)> = Vec::new();
        for &(ps, pe) in &p.pieces {
            marks.clear();
            let mut prev = ps;
            for (i, c) in text[ps..pe].char_indices() {
                if is_bert_punctuation(c) {
                    let at = ps + i;
                    if at > prev {
                        marks.push((prev, at, false));
                    }
                    prev = at + c.len_utf8();
                    marks.push((at, prev, true));
                }
            }
            if prev < pe {
                marks.push((prev, pe, false));
            }
            apply_behavior(&marks, self.behavior, &mut out);
        }
        p.pieces = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalizers::NormalizedString;

    fn pieces(p: &PreTokenizedString) -> Vec<&str> {
        p.pieces.iter().map(|&(s, e)| &p.ns.text[s..e]).collect()
    }

    #[test]
    fn bert_splits_whitespace_and_isolates_punctuation() {
        let mut p = PreTokenizedString::new(NormalizedString::new("Hey friend!     How are you?!?", 0));
        bert_pre_tokenize(&mut p);
        assert_eq!(pieces(&p), ["Hey", "friend", "!", "How", "are", "you", "?", "!", "?"]);
    }

    #[test]
    fn punctuation_behaviors() {
        let run = |b: SplitBehavior| {
            let mut p = PreTokenizedString::new(NormalizedString::new("a!!b?", 0));
            Punctuation { behavior: b }.pre_tokenize(&mut p);
            pieces(&p).iter().map(|s| s.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(run(SplitBehavior::Isolated), ["a", "!", "!", "b", "?"]);
        assert_eq!(run(SplitBehavior::MergedWithPrevious), ["a!", "!", "b?"]);
        assert_eq!(run(SplitBehavior::Contiguous), ["a", "!!", "b", "?"]);
        assert_eq!(run(SplitBehavior::Removed), ["a", "b"]);
    }
}
