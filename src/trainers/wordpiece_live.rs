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

/// The tokens MaxMatch may match, as two byte tries: one of every token (a
/// word's first match), one of the tokens that start with the continuation
/// prefix, the prefix left out (every later match). Walking a trie along
/// the word finds the longest match in one pass; the tokens are whole UTF-8
/// strings, so every match ends on a character boundary. (Not the encoder's
/// LinMaxMatch automaton, `models::wordpiece::linmax`: a pruning cost must
/// match as if one token were absent, which a trie walk does by skipping
/// it, and the vocabulary changes at every check and round.)
pub(crate) struct Matcher {
    first: Trie,
    rest: Trie,
}

/// A byte trie: node 0 the root, each node's children a sorted run of
/// `edges`, its token id `NONE` when no token ends there.
#[derive(Default)]
struct Trie {
    /// the root's child per byte (`NONE`: none): the widest node by far
    root: Vec<u32>,
    ids: Vec<u32>,
    /// where each node's children start in `edges` (and end: the next's start)
    starts: Vec<u32>,
    edges: Vec<(u8, u32)>,
}

/// No token (an id no vocabulary reaches).
pub(crate) const NONE: u32 = u32::MAX;

impl Trie {
    /// The trie of `(bytes, id)`, which must be sorted by bytes, distinct.
    fn build(sorted: &[(&[u8], u32)]) -> Self {
        // breadth first: the children of a node are a contiguous run of
        // `sorted` sharing its bytes, found by their byte at `depth`
        let mut t = Trie {
            root: vec![NONE; 256],
            ..Trie::default()
        };
        t.ids.push(NONE);
        t.starts.push(0);
        // (node, depth, range of `sorted` under it)
        let mut queue = std::collections::VecDeque::from([(0u32, 0usize, 0..sorted.len())]);
        while let Some((node, depth, range)) = queue.pop_front() {
            t.starts[node as usize] = t.edges.len() as u32;
            let mut i = range.start;
            if i < range.end && sorted[i].0.len() == depth {
                t.ids[node as usize] = sorted[i].1;
                i += 1;
            }
            while i < range.end {
                let b = sorted[i].0[depth];
                let mut j = i;
                while j < range.end && sorted[j].0[depth] == b {
                    j += 1;
                }
                let child = t.ids.len() as u32;
                t.ids.push(NONE);
                t.starts.push(0);
                t.edges.push((b, child));
                if node == 0 {
                    t.root[b as usize] = child;
                }
                queue.push_back((child, depth + 1, i..j));
                i = j;
            }
        }
        t.starts.push(t.edges.len() as u32);
        // (a node's start was set when it was taken from the queue, in node
        // order, so each node's run ends where the next node's starts)
        t
    }

    fn child(&self, node: u32, b: u8) -> u32 {
        if node == 0 {
            return self.root[b as usize];
        }
        let run = &self.edges[self.starts[node as usize] as usize..self.starts[node as usize + 1] as usize];
        match run.binary_search_by_key(&b, |e| e.0) {
            Ok(i) => run[i].1,
            Err(_) => NONE,
        }
    }

    /// The longest token other than `skip` that starts `bytes`: (its length, id).
    fn longest(&self, bytes: &[u8], skip: u32) -> Option<(usize, u32)> {
        let (mut node, mut best) = (0u32, None);
        for (i, &b) in bytes.iter().enumerate() {
            node = self.child(node, b);
            if node == NONE {
                break;
            }
            let id = self.ids[node as usize];
            if id != NONE && id != skip {
                best = Some((i + 1, id));
            }
        }
        best
    }
}

impl Matcher {
    /// A matcher over the tokens `live` accepts (by id), continuations
    /// spelled with `prefix`.
    pub fn new(tokens: &[String], prefix: &str, live: impl Fn(u32) -> bool) -> Self {
        let mut all: Vec<(&[u8], u32)> = tokens
            .iter()
            .enumerate()
            .filter(|&(i, _)| live(i as u32))
            .map(|(i, t)| (t.as_bytes(), i as u32))
            .collect();
        all.sort_unstable();
        all.dedup_by(|a, b| a.0 == b.0);
        let rest: Vec<(&[u8], u32)> = all
            .iter()
            .filter_map(|&(t, id)| t.strip_prefix(prefix.as_bytes()).map(|r| (r, id)))
            .filter(|(r, _)| !r.is_empty())
            .collect();
        Matcher {
            first: Trie::build(&all),
            rest: Trie::build(&rest),
        }
    }

    /// MaxMatch on `word` (its characters, no prefix): each token's id goes
    /// to `emit`. False when some position has no match (the tokenizer
    /// would give the unknown token for the whole word).
    pub fn segment(&self, word: &str, emit: impl FnMut(u32)) -> bool {
        self.segment_from(word, 0, NONE, emit)
    }

    /// MaxMatch on `word` from byte `start` on, where a previous match
    /// ended, as if token `skip` were not in the vocabulary (`NONE`: all are).
    pub fn segment_from(&self, word: &str, start: usize, skip: u32, mut emit: impl FnMut(u32)) -> bool {
        self.spans(word, start, skip, |id, _| emit(id))
    }

    /// [`Matcher::segment_from`], each token with the byte where it starts.
    pub fn spans(&self, word: &str, mut start: usize, skip: u32, mut emit: impl FnMut(u32, usize)) -> bool {
        let bytes = word.as_bytes();
        while start < bytes.len() {
            let trie = if start == 0 { &self.first } else { &self.rest };
            let Some((len, id)) = trie.longest(&bytes[start..], skip) else {
                return false;
            };
            emit(id, start);
            start += len;
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
    let matcher = Matcher::new(tokens, prefix, live);
    let n = words.len();
    // each block: its words' symbols end to end, and each word's length
    let blocks: Vec<(Vec<u32>, Vec<u32>)> = crate::parallel::install(None, || {
        (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let (mut syms, mut lens) = (Vec::new(), Vec::new());
                let mut word = String::new();
                for i in b * BLOCK..n.min((b + 1) * BLOCK) {
                    let old = words.get(i);
                    spell(old, tokens, prefix, &mut word);
                    let start = syms.len();
                    if !matcher.segment(&word, |id| syms.push(id)) {
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
        let m = Matcher::new(&tokens, "##", |_| true);
        let mut out = Vec::new();
        assert!(m.segment("abca", |i| out.push(tokens[i as usize].clone())));
        // "abc" then "##a"; "##ca" is never reached: greedy, not best
        assert_eq!(out, ["abc", "##a"]);
        // without "abc": "ab", then "##ca"
        let m = Matcher::new(&tokens, "##", |i| i != 7);
        out.clear();
        assert!(m.segment("abca", |i| out.push(tokens[i as usize].clone())));
        assert_eq!(out, ["ab", "##ca"]);
        assert!(!m.segment("abd", |_| {}));
        // skipping a token is as if it were not there
        let all = Matcher::new(&tokens, "##", |_| true);
        out.clear();
        assert!(all.segment_from("abca", 0, 7, |i| out.push(tokens[i as usize].clone())));
        assert_eq!(out, ["ab", "##ca"]);
        // multi-byte characters, and a prefix that is not "##"
        let tokens = toks(&["é", "@@é", "@@t", "t", "té", "@@été"]);
        let m = Matcher::new(&tokens, "@@", |_| true);
        out.clear();
        assert!(m.segment("tété", |i| out.push(tokens[i as usize].clone())));
        assert_eq!(out, ["té", "@@t", "@@é"]);
        out.clear();
        assert!(m.segment("téété", |i| out.push(tokens[i as usize].clone())));
        assert_eq!(out, ["té", "@@été"]);
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
