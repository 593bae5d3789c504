//! Which learned WordPiece tokens the tokenizer can emit on the training
//! words: BERT's greedy longest-match-first (MaxMatch) run over every
//! distinct word with the vocabulary learned so far.
//!
//! A merge makes the token `a b`, but MaxMatch does not replay merges: it
//! takes the longest token that starts the rest of the word. A token whose
//! occurrences were all merged into longer tokens (`descri` once
//! `description` and `describe` exist) is, on the training words, never the
//! longest match: it takes a slot and encodes nothing. Such a token is
//! *dead*. Taking a dead token out of the vocabulary leaves the MaxMatch
//! segmentation of every training word as it was (at no position was it the
//! match), so the trainer can drop it and merge on to fill its slot.

use super::word_index::Words;
use rustc_hash::FxHashMap;

/// The tokens MaxMatch may match: their ids by string, and the longest
/// one's length in bytes (no match is tried past it).
pub(crate) struct Matcher<'a> {
    ids: FxHashMap<&'a str, u32>,
    longest: usize,
}

impl<'a> Matcher<'a> {
    /// A matcher over the tokens `live` accepts (by id).
    pub fn new(tokens: &'a [String], live: impl Fn(u32) -> bool) -> Self {
        let ids: FxHashMap<&str, u32> = tokens
            .iter()
            .enumerate()
            .filter(|&(i, _)| live(i as u32))
            .map(|(i, t)| (t.as_str(), i as u32))
            .collect();
        let longest = ids.keys().map(|t| t.len()).max().unwrap_or(0);
        Matcher { ids, longest }
    }

    /// MaxMatch on `word` (its characters, no prefix): each token's id goes
    /// to `emit`. False when some position has no match (the tokenizer
    /// would give the unknown token for the whole word).
    pub fn segment(&self, word: &str, prefix: &str, key: &mut String, emit: impl FnMut(u32)) -> bool {
        self.segment_without(word, prefix, u32::MAX, key, emit)
    }

    /// [`Matcher::segment`] as if token `skip` were not in the vocabulary.
    pub fn segment_without(
        &self,
        word: &str,
        prefix: &str,
        skip: u32,
        key: &mut String,
        mut emit: impl FnMut(u32),
    ) -> bool {
        let mut start = 0;
        while start < word.len() {
            let lead = if start == 0 { "" } else { prefix };
            let mut end = word.len().min(start + self.longest.saturating_sub(lead.len()));
            let found = loop {
                while !word.is_char_boundary(end) {
                    end -= 1;
                }
                if end <= start {
                    break None;
                }
                key.clear();
                key.push_str(lead);
                key.push_str(&word[start..end]);
                match self.ids.get(key.as_str()) {
                    Some(&id) if id != skip => break Some(id),
                    _ => {}
                }
                end -= 1;
            };
            let Some(id) = found else { return false };
            emit(id);
            start = end;
        }
        true
    }
}

/// The text of word `syms` (token ids) spelled out: each token without its
/// continuation prefix after the first.
pub(crate) fn spell(syms: &[u32], tokens: &[String], prefix: &str, out: &mut String) {
    out.clear();
    for (i, &s) in syms.iter().enumerate() {
        let t = tokens[s as usize].as_str();
        out.push_str(if i == 0 { t } else { t.strip_prefix(prefix).unwrap_or(t) });
    }
}

/// The words as MaxMatch segments them with the tokens `live` accepts, and
/// for each token id whether it is emitted on some word. A word that
/// MaxMatch cannot segment (no live token at some position; not with a
/// whole alphabet) keeps its symbols. Blocks of words run in parallel.
pub(crate) fn maxmatch_words(
    words: &Words,
    tokens: &[String],
    prefix: &str,
    live: impl Fn(u32) -> bool,
) -> (Words, Vec<bool>) {
    use rayon::prelude::*;
    const BLOCK: usize = 4096;
    let matcher = Matcher::new(tokens, live);
    let n = words.len();
    // each block: its words' symbols end to end, and each word's length
    let blocks: Vec<(Vec<u32>, Vec<u32>)> = crate::parallel::install(None, || {
        (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let (mut syms, mut lens) = (Vec::new(), Vec::new());
                let (mut word, mut key) = (String::new(), String::new());
                for i in b * BLOCK..n.min((b + 1) * BLOCK) {
                    let old = words.get(i);
                    spell(old, tokens, prefix, &mut word);
                    let start = syms.len();
                    if !matcher.segment(&word, prefix, &mut key, |id| syms.push(id)) {
                        syms.truncate(start);
                        syms.extend_from_slice(old);
                    }
                    lens.push((syms.len() - start) as u32);
                }
                (syms, lens)
            })
            .collect()
    });
    let mut out = Words::with_capacity(n, blocks.iter().map(|b| b.0.len()).sum());
    let mut emitted = vec![false; tokens.len()];
    let mut i = 0;
    for (syms, lens) in &blocks {
        let mut at = 0;
        for &len in lens {
            let w = &syms[at..at + len as usize];
            for &id in w {
                emitted[id as usize] = true;
            }
            out.push(w.iter().copied(), words.count(i));
            at += len as usize;
            i += 1;
        }
    }
    (out, emitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn maxmatch_takes_the_longest_token_first() {
        let tokens = toks(&["a", "b", "c", "##a", "##b", "##c", "ab", "abc", "##bc", "##ca"]);
        let m = Matcher::new(&tokens, |_| true);
        let mut out = Vec::new();
        let mut key = String::new();
        assert!(m.segment("abca", "##", &mut key, |i| out.push(tokens[i as usize].clone())));
        // "abc" then "##a"; "##ca" is never reached: greedy, not best
        assert_eq!(out, ["abc", "##a"]);
        // without "abc": "ab", then "##ca"
        let m = Matcher::new(&tokens, |i| i != 7);
        out.clear();
        assert!(m.segment("abca", "##", &mut key, |i| out.push(tokens[i as usize].clone())));
        assert_eq!(out, ["ab", "##ca"]);
        assert!(!m.segment("abd", "##", &mut key, |_| {}));
    }

    #[test]
    fn a_token_every_longer_match_hides_is_dead() {
        let tokens = toks(&["a", "b", "##a", "##b", "ab", "aba", "##ab"]);
        let mut words = Words::default();
        // "aba" and "abab" (as their merge segmentations: aba, aba ##b)
        words.push([5u32], 3);
        words.push([5u32, 3], 1);
        let emitted = |live: &dyn Fn(u32) -> bool| {
            let (w, e) = maxmatch_words(&words, &tokens, "##", live);
            let segs: Vec<Vec<u32>> = w.iter().map(|x| x.1.to_vec()).collect();
            (segs, (0..tokens.len()).filter(|&i| e[i]).collect::<Vec<_>>())
        };
        // "ab" is always hidden by "aba"; "##ab" never starts a continuation
        assert_eq!(emitted(&|_| true), (vec![vec![5], vec![5, 3]], vec![3, 5]));
        // with "aba" gone, "ab" comes back, and "##ab" ends "abab"
        assert_eq!(emitted(&|i| i != 5), (vec![vec![4, 2], vec![4, 6]], vec![2, 4, 6]));
    }
}
