//! Pruning a WordPiece vocabulary by what MaxMatch needs: the trainer
//! learns more tokens than asked for (the *candidates*), then takes out, in
//! rounds, the learned tokens whose loss adds the fewest tokens to the
//! training words as the tokenizer segments them.
//!
//! A token's cost is `Σ count(w) · (|MaxMatch(w) without it| − |MaxMatch(w)|)`
//! over the distinct words `w` whose segmentation uses it. The likelihood
//! gain spends slots on chains of rare strings seen only together (their
//! gain grows with `ln(N / k)`); such a token saves few tokens, so pruning
//! trades it for a token the tokenizer uses more. Costs change as tokens
//! leave (a word that loses one token may lean on another), so each round
//! removes a tenth of the excess and the next round measures again.
//! Alphabet tokens never leave: every word stays encodable.

use super::word_index::Words;
use super::wordpiece_live::{spell, Matcher, NONE};
use rayon::prelude::*;

/// Rounds the excess is removed in (each a full MaxMatch of the words).
const ROUNDS: usize = 10;

/// Words spelled out once: their text end to end, where each ends, and
/// their counts.
struct Texts {
    text: String,
    ends: Vec<usize>,
    counts: Vec<u64>,
}

impl Texts {
    fn new(words: &Words, tokens: &[String], prefix: &str) -> Self {
        let (mut text, mut ends, mut word) = (String::new(), Vec::with_capacity(words.len()), String::new());
        for (_, syms, _) in words.iter() {
            spell(syms, tokens, prefix, &mut word);
            text.push_str(&word);
            ends.push(text.len());
        }
        let counts = (0..words.len()).map(|i| words.count(i)).collect();
        Texts { text, ends, counts }
    }

    fn word(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// Every word's MaxMatch length, and for each token the words that use it
/// (compressed rows: `users[starts[t]..starts[t + 1]]`, each word once).
struct Usage {
    lens: Vec<u32>,
    starts: Vec<usize>,
    users: Vec<Use>,
}

/// A word that uses a token: the word, where the token first starts in it
/// (bytes) and how many tokens come before. MaxMatch without the token
/// matches the same up to there, so a cost re-segments from there only.
#[derive(Clone, Copy, Default)]
struct Use {
    word: u32,
    at: u32,
    before: u32,
}

fn usage(texts: &Texts, matcher: &Matcher, n_tokens: usize) -> Usage {
    const BLOCK: usize = 4096;
    let n = texts.len();
    // each block: its words' token ids with their uses (each id once per
    // word, at its first occurrence) end to end, and each word's MaxMatch
    // length
    type Block = (Vec<(u32, Use)>, Vec<u32>);
    let blocks: Vec<Block> = crate::parallel::install(None, || {
        (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|b| {
                let (mut ids, mut lens) = (Vec::new(), Vec::new());
                for i in b * BLOCK..n.min((b + 1) * BLOCK) {
                    let start = ids.len();
                    let mut before = 0u32;
                    let ok = matcher.spans(texts.word(i), 0, NONE, |id, at| {
                        if !ids[start..].iter().any(|&(x, _)| x == id) {
                            ids.push((
                                id,
                                Use {
                                    word: i as u32,
                                    at: at as u32,
                                    before,
                                },
                            ));
                        }
                        before += 1;
                    });
                    lens.push(if ok { before } else { 1 });
                    if !ok {
                        ids.truncate(start);
                    }
                }
                (ids, lens)
            })
            .collect()
    });
    let mut starts = vec![0usize; n_tokens + 1];
    for (ids, _) in &blocks {
        for &(id, _) in ids {
            starts[id as usize + 1] += 1;
        }
    }
    for t in 0..n_tokens {
        starts[t + 1] += starts[t];
    }
    let mut fill = starts.clone();
    let mut users = vec![Use::default(); starts[n_tokens]];
    let mut lens = Vec::with_capacity(n);
    for (ids, block_lens) in &blocks {
        for &(id, use_) in ids {
            users[fill[id as usize]] = use_;
            fill[id as usize] += 1;
        }
        lens.extend_from_slice(block_lens);
    }
    Usage { lens, starts, users }
}

/// The tokens `words` add without token `t`; `None` when some word could not
/// be segmented without it (then `t` stays).
fn cost(t: u32, texts: &Texts, use_: &Usage, matcher: &Matcher) -> Option<u64> {
    let mut added = 0u64;
    for u in &use_.users[use_.starts[t as usize]..use_.starts[t as usize + 1]] {
        let w = u.word as usize;
        let mut len = u64::from(u.before);
        if !matcher.segment_from(texts.word(w), u.at as usize, t, |_| len += 1) {
            return None;
        }
        added += texts.counts[w] * len.saturating_sub(u64::from(use_.lens[w]));
    }
    Some(added)
}

/// Take live learned tokens (ids from `first_learned`) out of `live` until
/// `target` are left, the cheapest first (ties: the latest made). Returns
/// how many left.
pub(crate) fn prune(
    words: &Words,
    tokens: &[String],
    live: &mut [bool],
    prefix: &str,
    first_learned: usize,
    target: usize,
) -> usize {
    let learned = |live: &[bool]| live[first_learned..].iter().filter(|&&l| l).count();
    let excess = learned(live).saturating_sub(target);
    if excess == 0 {
        return 0;
    }
    let texts = Texts::new(words, tokens, prefix);
    let step = excess.div_ceil(ROUNDS);
    let mut removed = 0;
    while removed < excess {
        let matcher = Matcher::new(tokens, prefix, |i| live[i as usize]);
        let use_ = usage(&texts, &matcher, tokens.len());
        let candidates: Vec<u32> = (first_learned..tokens.len())
            .filter(|&i| live[i])
            .map(|i| i as u32)
            .collect();
        let mut costs: Vec<(u64, u32)> = crate::parallel::install(None, || {
            candidates
                .par_iter()
                .filter_map(|&t| cost(t, &texts, &use_, &matcher).map(|c| (c, t)))
                .collect()
        });
        costs.sort_unstable_by_key(|&(c, t)| (c, std::cmp::Reverse(t)));
        let take = step.min(excess - removed).min(costs.len());
        if take == 0 {
            break;
        }
        for &(_, t) in &costs[..take] {
            live[t as usize] = false;
        }
        removed += take;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn words(list: &[(&[u32], u64)]) -> Words {
        let mut w = Words::default();
        for &(syms, n) in list {
            w.push(syms.iter().copied(), n);
        }
        w
    }

    #[test]
    fn the_token_that_saves_least_leaves_first() {
        // alphabet a ##a b ##b (0-3); learned: ab (4), ##bb (5), abb (6)
        let tokens = toks(&["a", "##a", "b", "##b", "ab", "##bb", "abb"]);
        // "ab" x10 uses ab; "abb" x3 uses abb; "bbb" x1 uses ##bb
        let w = words(&[(&[0, 3], 10), (&[0, 3, 3], 3), (&[2, 3, 3], 1)]);
        let mut live = vec![true; tokens.len()];
        // without abb, "abb" is ab ##b: +1 x3; without ##bb, "bbb" is b ##b ##b: +1 x1;
        // without ab, "ab" is a ##b: +1 x10
        assert_eq!(prune(&w, &tokens, &mut live, "##", 4, 2), 1);
        assert_eq!(live, vec![true, true, true, true, true, false, true]);
        assert_eq!(prune(&w, &tokens, &mut live, "##", 4, 1), 1);
        assert_eq!(live, vec![true, true, true, true, true, false, false]);
    }

    #[test]
    fn ties_take_the_latest_token_and_the_alphabet_stays() {
        let tokens = toks(&["a", "##a", "aa", "##aa"]);
        let w = words(&[(&[0, 1, 1, 1], 1)]);
        let mut live = vec![true; tokens.len()];
        // "aaaa" = aa ##aa; without either it takes one more token: a tie
        assert_eq!(prune(&w, &tokens, &mut live, "##", 2, 1), 1);
        assert_eq!(live, vec![true, true, true, false]);
        assert_eq!(prune(&w, &tokens, &mut live, "##", 2, 0), 1);
        assert_eq!(live, vec![true, true, false, false]);
        assert_eq!(prune(&w, &tokens, &mut live, "##", 2, 0), 0);
    }
}
