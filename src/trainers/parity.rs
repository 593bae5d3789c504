//! Parity-aware byte-level BPE (Foroutan, Meister et al. 2025, "Parity-aware
//! Byte-Pair Encoding: Improving Cross-lingual Fairness in Tokenization").
//!
//! The corpus comes per language. Before each merge, every language's cost
//! is measured (see [`Measure`]); the merge is the pair most frequent in the
//! training words of the language that costs most, and it is applied to the
//! words of every language. The first `parity_start` merges are classical
//! (the pair most frequent over all languages together): the paper's hybrid
//! variant.
//!
//! Ties: the worst language is the first in the caller's order among equal
//! costs; among pairs of equal count, the smallest (left id, right id), as
//! in the classical loop. When the worst language has no pair left at
//! `min_frequency` (or every one is too long), the next worst one chooses;
//! training stops when none can.
//!
//! Working set: one arena of words (`word_index::Words`) holding, group by
//! group, each language's training words, then each language's dev words
//! (a word seen in two languages is two entries, so that every entry has
//! one language and one count). One pair -> words index over all of them
//! applies a merge everywhere; each language keeps its own exact pair counts
//! and a lazy max-heap (an entry's key is never below its pair's count, so a
//! popped entry whose key equals the count is the best). Unlike the
//! classical loop, every pair is tracked (no count floor): memory grows with
//! the languages' distinct pairs.

use super::bpe::{sorted_entries, trained, TrainedBpe};
use super::word_index::{PairIndex, Words};
use super::TrainEvent;
use crate::error::{Error, Result};
use crate::models::bpe::BpeOptions;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

type Pair = (u32, u32);
type Counts = FxHashMap<Vec<u8>, u64>;

/// How a language's cost (the higher, the worse its compression) is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Tokens of its dev text: the dev texts are parallel (line *i* is the
    /// same content in every language), so the totals compare directly.
    Dev,
    /// Tokens of its training text per byte of it (the inverse of the
    /// paper's compression rate, bytes per token).
    Bytes,
    /// Tokens of its training text per line; one count of lines per language.
    Lines(Vec<u64>),
}

#[derive(Clone, Debug)]
pub struct ParityConfig {
    /// Size of the vocabulary without the special tokens (256 bytes + merges).
    pub vocab_size: usize,
    pub min_frequency: u64,
    /// In bytes.
    pub max_token_length: Option<usize>,
    /// How many merges to choose classically before parity takes over.
    pub parity_start: usize,
    /// Report the first `trace` merges one by one.
    pub trace: usize,
    pub measure: Measure,
}

pub struct TrainedParity {
    pub bpe: TrainedBpe,
    /// Per merge, the language it was chosen for (`None`: classical).
    pub languages: Vec<Option<usize>>,
    /// Per language, the tokens measured at the end: of the dev text
    /// (`Measure::Dev`) or of the training text.
    pub tokens: Vec<u64>,
}

/// Learn byte-level merges from `train[l]` (word -> count of language `l`)
/// with the cost of `Measure::Dev` read on `dev[l]` (empty otherwise).
pub fn train(
    train: &[&Counts],
    dev: &[&Counts],
    cfg: &ParityConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<TrainedParity> {
    check(train, dev, cfg)?;
    let target = cfg.vocab_size - 256;
    let mut state = State::new(train, dev, cfg);
    let mut merges: Vec<(u32, u32, u32, u64)> = Vec::with_capacity(target.min(1 << 20));
    let mut languages = Vec::with_capacity(merges.capacity());
    let report_every = (target / 200).max(1);
    while merges.len() < target {
        if merges.len() == cfg.parity_start {
            state.global = None;
        }
        let Some((lang, pair, count)) = state.choose(cfg) else {
            break;
        };
        let new_id = state.tokens.len() as u32;
        let (a, b) = pair;
        let bytes = [state.tokens[a as usize].as_slice(), state.tokens[b as usize].as_slice()].concat();
        state.tokens.push(bytes);
        merges.push((a, b, new_id, count as u64));
        languages.push(lang);
        let index = merges.len() - 1;
        if index < cfg.trace {
            on_event(TrainEvent::LanguageMerge {
                index,
                left: &state.tokens[a as usize],
                right: &state.tokens[b as usize],
                new_id,
                count: count as u64,
                language: lang,
            })?;
        }
        if merges.len().is_multiple_of(report_every) {
            on_event(TrainEvent::Progress {
                done: merges.len(),
                total: target,
            })?;
        }
        state.merge(pair, new_id);
    }
    on_event(TrainEvent::Progress {
        done: merges.len(),
        total: target,
    })?;
    let tokens = match cfg.measure {
        Measure::Dev => &state.dev_tokens,
        _ => &state.train_tokens,
    };
    let tokens = tokens.iter().map(|&t| t.max(0) as u64).collect();
    let opts = BpeOptions {
        byte_level: true,
        ..BpeOptions::default()
    };
    Ok(TrainedParity {
        bpe: trained(state.tokens, merges, 256, opts),
        languages,
        tokens,
    })
}

/// The inputs the loop relies on (the Python layer checks them first, naming
/// the options; these are the core's own guards).
fn check(train: &[&Counts], dev: &[&Counts], cfg: &ParityConfig) -> Result<()> {
    let n = train.len();
    if n < 2 {
        return Err(Error::Config(format!(
            "parity-aware BPE needs at least two languages, got {n}"
        )));
    }
    if train.iter().any(|c| c.is_empty()) {
        return Err(Error::Corpus("a language's training text is empty".into()));
    }
    match &cfg.measure {
        Measure::Dev if dev.len() != n => {
            return Err(Error::Config(format!(
                "{} dev texts for {n} languages: give one per language",
                dev.len()
            )))
        }
        Measure::Lines(lines) if lines.len() != n || lines.contains(&0) => {
            return Err(Error::Config("one non-zero line count per language is needed".into()))
        }
        _ => {}
    }
    if cfg.vocab_size < 256 {
        return Err(Error::VocabSize(format!(
            "vocab_size {} cannot hold the 256 byte tokens",
            cfg.vocab_size
        )));
    }
    if cfg.parity_start > cfg.vocab_size - 256 {
        return Err(Error::Config(format!(
            "parity_start {} is more than the {} merges vocab_size leaves",
            cfg.parity_start,
            cfg.vocab_size - 256
        )));
    }
    Ok(())
}

/// One language's (or all languages') pair counts and its lazy max-heap:
/// every pair with a positive count has an entry whose key is at least that
/// count, because counts only grow for pairs a merge makes, and those are
/// pushed with their new count.
#[derive(Default)]
struct PairCounts {
    counts: FxHashMap<Pair, i64>,
    heap: BinaryHeap<(i64, Reverse<Pair>)>,
}

impl PairCounts {
    fn add(&mut self, pair: Pair, delta: i64) {
        let c = self.counts.entry(pair).or_insert(0);
        *c += delta;
        let now = *c;
        if now <= 0 {
            self.counts.remove(&pair);
        } else if delta > 0 {
            self.heap.push((now, Reverse(pair)));
        }
    }

    /// The best pair and its count, or `None` when no pair is left.
    fn best(&mut self) -> Option<(Pair, i64)> {
        while let Some(&(key, Reverse(pair))) = self.heap.peek() {
            let actual = self.counts.get(&pair).copied().unwrap_or(0);
            if actual == key {
                return Some((pair, key));
            }
            self.heap.pop();
            if actual > 0 {
                self.heap.push((actual, Reverse(pair)));
            }
        }
        None
    }
}

struct State {
    words: Words,
    /// Word groups: group `g` holds words `starts[g]..starts[g + 1]`; groups
    /// `0..n` are the languages' training words, `n..2n` their dev words.
    starts: Vec<usize>,
    langs: usize,
    index: PairIndex,
    per_lang: Vec<PairCounts>,
    /// All languages together, while merges are still chosen classically.
    global: Option<PairCounts>,
    refused: FxHashSet<Pair>,
    tokens: Vec<Vec<u8>>,
    /// Tokens of each language's training and dev words as they stand.
    train_tokens: Vec<i64>,
    dev_tokens: Vec<i64>,
    /// The denominators of the costs (1 for `Measure::Dev`).
    per: Vec<u64>,
    deltas: FxHashMap<Pair, i64>,
    new_pairs: FxHashMap<Pair, Vec<u32>>,
}

impl State {
    fn new(train: &[&Counts], dev: &[&Counts], cfg: &ParityConfig) -> Self {
        let langs = train.len();
        let groups: Vec<&Counts> = match cfg.measure {
            Measure::Dev => train.iter().chain(dev.iter()).copied().collect(),
            _ => train.to_vec(),
        };
        let total_words = groups.iter().map(|c| c.len()).sum();
        let total_syms = groups.iter().map(|c| c.keys().map(|k| k.len()).sum::<usize>()).sum();
        let mut words = Words::with_capacity(total_words, total_syms);
        let mut starts = vec![0];
        let mut sizes = Vec::with_capacity(groups.len());
        for counts in &groups {
            let mut size = 0i64;
            for (w, c) in sorted_entries(counts) {
                words.push(w.iter().map(|&b| b as u32), c);
                size += (w.len() as i64) * c as i64;
            }
            starts.push(words.len());
            sizes.push(size);
        }
        let mut per_lang: Vec<PairCounts> = (0..langs).map(|_| PairCounts::default()).collect();
        let mut global = PairCounts::default();
        for (l, counts) in per_lang.iter_mut().enumerate() {
            for wi in starts[l]..starts[l + 1] {
                let (w, c) = (words.get(wi), words.count(wi));
                for p in w.windows(2) {
                    *counts.counts.entry((p[0], p[1])).or_insert(0) += c as i64;
                    *global.counts.entry((p[0], p[1])).or_insert(0) += c as i64;
                }
            }
            counts.heap = counts.counts.iter().map(|(p, c)| (*c, Reverse(*p))).collect();
        }
        global.heap = global.counts.iter().map(|(p, c)| (*c, Reverse(*p))).collect();
        let train_tokens = sizes[..langs].to_vec();
        let dev_tokens = if sizes.len() > langs {
            sizes[langs..].to_vec()
        } else {
            vec![0; langs]
        };
        let per = match &cfg.measure {
            Measure::Dev => vec![1; langs],
            Measure::Bytes => train_tokens.iter().map(|&t| t as u64).collect(),
            Measure::Lines(lines) => lines.clone(),
        };
        State {
            index: PairIndex::build(&words, |_| true),
            words,
            starts,
            langs,
            per_lang,
            global: (cfg.parity_start > 0).then_some(global),
            refused: FxHashSet::default(),
            tokens: (0..=255u8).map(|b| vec![b]).collect(),
            train_tokens,
            dev_tokens,
            per,
            deltas: FxHashMap::default(),
            new_pairs: FxHashMap::default(),
        }
    }

    /// Language `l`'s cost as a fraction (tokens, per).
    fn cost(&self, l: usize, measure: &Measure) -> (u128, u128) {
        let tokens = match measure {
            Measure::Dev => self.dev_tokens[l],
            _ => self.train_tokens[l],
        };
        (tokens.max(0) as u128, self.per[l].max(1) as u128)
    }

    /// The languages from the worst compressed to the best (ties: the
    /// caller's order), compared exactly by cross-multiplication.
    fn worst_first(&self, measure: &Measure) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.langs).collect();
        order.sort_by(|&x, &y| {
            let ((tx, px), (ty, py)) = (self.cost(x, measure), self.cost(y, measure));
            match (ty * px).cmp(&(tx * py)) {
                Ordering::Equal => x.cmp(&y),
                other => other,
            }
        });
        order
    }

    /// The next merge: (language it is for, pair, count there).
    fn choose(&mut self, cfg: &ParityConfig) -> Option<(Option<usize>, Pair, i64)> {
        if self.global.is_some() {
            return self.pick(None, cfg).map(|(p, c)| (None, p, c));
        }
        for l in self.worst_first(&cfg.measure) {
            if let Some((p, c)) = self.pick(Some(l), cfg) {
                return Some((Some(l), p, c));
            }
        }
        None
    }

    /// The best pair of language `lang` (all together for `None`) that may
    /// merge, refusing those too long on the way.
    fn pick(&mut self, lang: Option<usize>, cfg: &ParityConfig) -> Option<(Pair, i64)> {
        loop {
            let counts = match lang {
                Some(l) => &mut self.per_lang[l],
                None => self.global.as_mut()?,
            };
            let (pair, count) = counts.best()?;
            if (count as u64) < cfg.min_frequency.max(1) {
                return None;
            }
            let len = self.tokens[pair.0 as usize].len() + self.tokens[pair.1 as usize].len();
            if cfg.max_token_length.is_some_and(|m| len > m) {
                self.refuse(pair);
                continue;
            }
            return Some((pair, count));
        }
    }

    /// `pair` never merges: out of every count and of the index.
    fn refuse(&mut self, pair: Pair) {
        for c in self.per_lang.iter_mut().chain(self.global.as_mut()) {
            c.counts.remove(&pair);
        }
        self.index.remove(pair);
        self.refused.insert(pair);
    }

    /// Replace `pair` by `t` in every word of every group; update the pair
    /// counts of the training groups and the token totals of all.
    fn merge(&mut self, pair: Pair, t: u32) {
        let list = self.index.take(pair);
        self.new_pairs.clear();
        let mut i = 0;
        while i < list.len() {
            // (the list is ascending and groups are contiguous)
            let group = self.starts.partition_point(|&s| s <= list[i] as usize) - 1;
            let end = self.starts[group + 1];
            let j = i + list[i..].partition_point(|&w| (w as usize) < end);
            self.deltas.clear();
            let mut merged = 0i64;
            self.words
                .apply_merge(&list[i..j], pair, t, &mut self.deltas, &mut self.new_pairs, |c| {
                    merged += c
                });
            if group < self.langs {
                self.train_tokens[group] -= merged;
                let mut touched: Vec<(Pair, i64)> = self.deltas.drain().filter(|(_, d)| *d != 0).collect();
                touched.sort_unstable();
                for (p, d) in touched {
                    self.per_lang[group].add(p, d);
                    if let Some(g) = self.global.as_mut() {
                        g.add(p, d);
                    }
                }
            } else {
                self.dev_tokens[group - self.langs] -= merged;
            }
            i = j;
        }
        for c in self.per_lang.iter_mut().chain(self.global.as_mut()) {
            c.counts.remove(&pair);
        }
        // every new pair holds `t`, so none of them was refused
        for (p, ws) in self.new_pairs.drain() {
            self.index.add(p, ws);
        }
        if self.index.stale() {
            let refused = &self.refused;
            self.index.rebuild(&self.words, |p| !refused.contains(&p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(words: &[(&str, u64)]) -> Counts {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    fn cfg(vocab_size: usize, measure: Measure) -> ParityConfig {
        ParityConfig {
            vocab_size,
            min_frequency: 0,
            max_token_length: None,
            parity_start: 0,
            trace: 0,
            measure,
        }
    }

    fn run(train: &[&Counts], dev: &[&Counts], cfg: &ParityConfig) -> TrainedParity {
        super::train(train, dev, cfg, &mut |_| Ok(())).unwrap()
    }

    #[test]
    fn the_worst_language_chooses() {
        // "aaaa" x10 dominates globally; language 1's dev text "bcbc" is longest
        let l0 = counts(&[("aaaa", 10)]);
        let l1 = counts(&[("bcbc", 2)]);
        let d0 = counts(&[("aaaa", 1)]);
        let d1 = counts(&[("bcbcbc", 1)]);
        let t = run(&[&l0, &l1], &[&d0, &d1], &cfg(258, Measure::Dev));
        assert_eq!(t.languages, vec![Some(1), Some(0)]);
        assert_eq!(t.bpe.tokens[256], b"bc".to_vec());
        assert_eq!(t.bpe.tokens[257], b"aa".to_vec());
        // dev: "bcbcbc" -> 3 tokens, "aaaa" -> 2
        assert_eq!(t.tokens, vec![2, 3]);
    }

    #[test]
    fn hybrid_starts_classical() {
        let l0 = counts(&[("aaaa", 10)]);
        let l1 = counts(&[("bcbc", 2)]);
        let d = [counts(&[("aaaa", 1)]), counts(&[("bcbcbc", 1)])];
        let mut c = cfg(258, Measure::Dev);
        c.parity_start = 1;
        let t = run(&[&l0, &l1], &[&d[0], &d[1]], &c);
        assert_eq!(t.languages, vec![None, Some(1)]);
        assert_eq!(t.bpe.tokens[256], b"aa".to_vec());
    }

    #[test]
    fn an_exhausted_language_passes_its_turn() {
        // language 1 has only one-byte words: no pair ever
        let l0 = counts(&[("abab", 3)]);
        let l1 = counts(&[("x", 100)]);
        let t = run(&[&l0, &l1], &[], &cfg(258, Measure::Lines(vec![1, 1])));
        assert_eq!(t.languages, vec![Some(0), Some(0)]);
        assert_eq!(t.bpe.merges.len(), 2);
    }

    #[test]
    fn per_byte_cost_and_length_limit() {
        // tokens per byte: both start at 1; ties go to language 0
        let l0 = counts(&[("abc", 4)]);
        let l1 = counts(&[("xyz", 5)]);
        let mut c = cfg(259, Measure::Bytes);
        c.max_token_length = Some(2);
        let t = run(&[&l0, &l1], &[], &c);
        assert_eq!(t.languages, vec![Some(0), Some(1)]);
        assert_eq!(t.bpe.merges.len(), 2, "'abc' and 'xyz' are too long to make");
        assert_eq!(t.tokens, vec![8, 10]);
    }

    #[test]
    fn bad_input_is_refused() {
        let l0 = counts(&[("ab", 1)]);
        let one = super::train(&[&l0], &[], &cfg(300, Measure::Bytes), &mut |_| Ok(()));
        assert!(matches!(one, Err(Error::Config(_))));
        let no_dev = super::train(&[&l0, &l0], &[&l0], &cfg(300, Measure::Dev), &mut |_| Ok(()));
        assert!(matches!(no_dev, Err(Error::Config(_))));
        let mut c = cfg(300, Measure::Bytes);
        c.parity_start = 45;
        let late = super::train(&[&l0, &l0], &[], &c, &mut |_| Ok(()));
        assert!(matches!(late, Err(Error::Config(_))));
    }
}
