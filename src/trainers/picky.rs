//! PickyBPE (Chizhov, Arnett, Korotkova, Yamshchikov, EMNLP 2024, "BPE Gets
//! Picky: Efficient Vocabulary Refinement During Tokenizer Training"):
//! byte-level BPE that, after each merge, may remove the merge's parts.
//!
//! One step: the most frequent pair (x1, x2) (ties: the smallest pair of
//! ids, as in `bpe`) merges into x3 in every word; n occurrences went. Then
//! x1, and then x2 (once when x1 = x2), if it is not a byte: its IoS is
//! c / (c + f), with c the occurrences of it the merge consumed (n, or 2n
//! when x1 = x2) and f its occurrences left in the words now; at IoS >= τ
//! it is removed: every occurrence left is split into the present tokens it
//! was made of (`parts`), and it leaves the vocabulary. A merge whose token
//! exists already (present, or removed: it comes back) takes its id again.
//! Training stops when the vocabulary (the present tokens) has the size
//! asked for, when no pair is left at `min_frequency`, or after
//! `MAX_MERGES_PER_SLOT` merges per slot (a guard: a low τ could in
//! principle remove and remake the same tokens for ever).
//!
//! Working set: `word_index::Words` and its `PairIndex`, as in `parity`:
//! every pair is tracked with its exact count and a lazy max-heap (no count
//! floor as in `pair_queue`: a removal makes old pairs more frequent, which
//! the floor's argument rules out). Per token: its count in the words and
//! the words that may hold it (a superset, filtered when it is removed;
//! none for bytes, which are never removed).

use super::bpe::{sorted_entries, trained};
use super::word_index::{PairIndex, Words};
use super::TrainEvent;
use crate::error::{Error, Result};
use crate::models::bpe::BpeOptions;
use crate::models::picky::{EventSpec, PickyBpe};
use crate::models::ModelKind;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

type Pair = (u32, u32);

/// The guard on oscillation: at most this many merges per vocabulary slot.
pub const MAX_MERGES_PER_SLOT: usize = 4;

#[derive(Clone, Debug)]
pub struct PickyConfig {
    /// Size of the vocabulary without the special tokens (256 bytes + learned).
    pub vocab_size: usize,
    pub min_frequency: u64,
    /// In bytes.
    pub max_token_length: Option<usize>,
    /// τ: a part whose IoS reaches it is removed (in (0, 1]).
    pub threshold: f64,
    /// Report the first `trace` merges, and their removals, one by one.
    pub trace: usize,
}

/// One training event, replayed in order by the encoder (`models::picky`).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// (left, right) became `new` (`count` occurrences).
    Merge {
        left: u32,
        right: u32,
        new: u32,
        count: u64,
    },
    /// `token` was split into `parts` and left the vocabulary; `ios` is its
    /// IoS, `merge` the index (in the event list) of the merge that
    /// consumed it.
    Remove {
        token: u32,
        parts: Vec<u32>,
        ios: f64,
        merge: usize,
    },
}

pub struct TrainedPicky {
    /// Every token that ever existed, by internal id: the 256 bytes, then
    /// one per distinct merged token in the order they were first made.
    pub tokens: Vec<Vec<u8>>,
    pub events: Vec<Event>,
    /// Whether each token is in the final vocabulary.
    pub present: Vec<bool>,
    /// Training stopped at `MAX_MERGES_PER_SLOT` merges per slot.
    pub stopped_by_guard: bool,
}

impl TrainedPicky {
    pub fn removals(&self) -> usize {
        self.events.iter().filter(|e| matches!(e, Event::Remove { .. })).count()
    }

    /// Whether an ordinary BPE encodes exactly as the events replay: no
    /// removal, and no merge made a token that existed already (a rank
    /// table would apply that token's later merges to it again).
    pub fn is_plain_bpe(&self) -> bool {
        let merges = self.events.iter().filter(|e| matches!(e, Event::Merge { .. })).count();
        self.removals() == 0 && merges == self.tokens.len() - 256
    }
}

impl TrainedPicky {
    /// The model: an ordinary byte-level BPE when [`is_plain_bpe`]
    /// (`TrainedPicky::is_plain_bpe`; it then exports to every BPE format),
    /// else a [`PickyBpe`] with the present tokens numbered in the order
    /// they were first made (the bytes are ids 0-255).
    pub fn to_model(&self) -> Result<ModelKind> {
        if self.is_plain_bpe() {
            let merges = self
                .events
                .iter()
                .filter_map(|e| match *e {
                    Event::Merge {
                        left,
                        right,
                        new,
                        count,
                    } => Some((left, right, new, count)),
                    Event::Remove { .. } => None,
                })
                .collect();
            let opts = BpeOptions {
                byte_level: true,
                ..BpeOptions::default()
            };
            return Ok(ModelKind::Bpe(trained(self.tokens.clone(), merges, 256, opts).model));
        }
        let specs = self
            .events
            .iter()
            .map(|e| match e {
                Event::Merge { left, right, .. } => EventSpec::Merge(*left, *right),
                Event::Remove { token, parts, .. } => EventSpec::Remove(*token, parts.clone()),
            })
            .collect();
        let vocab = (0..self.tokens.len() as u32)
            .filter(|&s| self.present[s as usize])
            .enumerate()
            .map(|(id, s)| (s, id as u32))
            .collect();
        Ok(ModelKind::PickyBpe(PickyBpe::new(self.tokens.clone(), specs, vocab)?))
    }

    /// Present tokens (the vocabulary without special tokens).
    pub fn vocab_len(&self) -> usize {
        self.present.iter().filter(|p| **p).count()
    }
}

pub fn train(
    counts: &FxHashMap<Vec<u8>, u64>,
    cfg: &PickyConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<TrainedPicky> {
    check(counts, cfg)?;
    let mut state = State::new(counts);
    let limit = (cfg.vocab_size - 256).saturating_mul(MAX_MERGES_PER_SLOT);
    let report_every = ((cfg.vocab_size - 256) / 200).max(1);
    let mut merges = 0usize;
    while state.vocab < cfg.vocab_size && merges < limit {
        let Some((pair, count)) = state.pop() else {
            break;
        };
        if (count as u64) < cfg.min_frequency.max(1) {
            break;
        }
        let (a, b) = pair;
        let len = state.tokens[a as usize].len() + state.tokens[b as usize].len();
        if cfg.max_token_length.is_some_and(|m| len > m) {
            state.refuse(pair);
            continue;
        }
        let index = state.events.len();
        let t = state.merge(pair);
        merges += 1;
        let traced = merges <= cfg.trace;
        if traced {
            on_event(TrainEvent::Merge {
                index: merges - 1,
                left: &state.tokens[a as usize],
                right: &state.tokens[b as usize],
                new_id: t,
                count: count as u64,
            })?;
        }
        let consumed = state.last_consumed;
        let checks: &[(u32, i64)] = if a == b {
            &[(a, 2 * consumed)]
        } else {
            &[(a, consumed), (b, consumed)]
        };
        for &(x, c) in checks {
            let Some(ios) = state.removable(x, c, cfg.threshold) else {
                continue;
            };
            state.remove(x, ios, index);
            if traced {
                on_event(TrainEvent::Removal {
                    index: state.events.len() - 1,
                    token: &state.tokens[x as usize],
                    ios,
                    left: &state.tokens[a as usize],
                    right: &state.tokens[b as usize],
                    merge: merges - 1,
                })?;
            }
        }
        if merges.is_multiple_of(report_every) {
            on_event(TrainEvent::Progress {
                done: state.vocab.saturating_sub(256),
                total: cfg.vocab_size - 256,
            })?;
        }
    }
    on_event(TrainEvent::Progress {
        done: state.vocab.saturating_sub(256),
        total: cfg.vocab_size - 256,
    })?;
    Ok(TrainedPicky {
        tokens: state.tokens,
        events: state.events,
        present: state.present,
        stopped_by_guard: merges >= limit && state.vocab < cfg.vocab_size,
    })
}

/// The core's own guards (the Python layer checks first, naming the options).
fn check(counts: &FxHashMap<Vec<u8>, u64>, cfg: &PickyConfig) -> Result<()> {
    if counts.is_empty() {
        return Err(Error::Corpus("the corpus is empty: no text to learn from".into()));
    }
    if cfg.vocab_size < 256 {
        return Err(Error::VocabSize(format!(
            "vocab_size {} cannot hold the 256 byte tokens",
            cfg.vocab_size
        )));
    }
    if !(cfg.threshold > 0.0 && cfg.threshold <= 1.0) {
        return Err(Error::Config(format!(
            "picky_threshold must be in (0, 1], not {}",
            cfg.threshold
        )));
    }
    Ok(())
}

struct State {
    words: Words,
    index: PairIndex,
    /// Exact count of every pair of the words (positive), and a lazy
    /// max-heap: each pair has an entry whose key is at least its count.
    counts: FxHashMap<Pair, i64>,
    heap: BinaryHeap<(i64, Reverse<Pair>)>,
    refused: FxHashSet<Pair>,
    tokens: Vec<Vec<u8>>,
    by_bytes: FxHashMap<Vec<u8>, u32>,
    /// The pair each learned token was first made from (bytes: unused).
    made_of: Vec<Pair>,
    present: Vec<bool>,
    /// Occurrences of each token in the words (weighted by word counts).
    freq: Vec<i64>,
    /// Words that may hold each learned token (empty for bytes).
    holders: Vec<Vec<u32>>,
    /// Present tokens.
    vocab: usize,
    events: Vec<Event>,
    /// Occurrences the last merge consumed.
    last_consumed: i64,
    deltas: FxHashMap<Pair, i64>,
    new_pairs: FxHashMap<Pair, Vec<u32>>,
}

impl State {
    fn new(counts: &FxHashMap<Vec<u8>, u64>) -> Self {
        let entries = sorted_entries(counts);
        let mut words = Words::with_capacity(entries.len(), entries.iter().map(|e| e.0.len()).sum());
        let mut freq = vec![0i64; 256];
        for (w, c) in entries {
            words.push(w.iter().map(|&b| b as u32), c);
            for &b in w {
                freq[b as usize] += c as i64;
            }
        }
        let mut pair_counts: FxHashMap<Pair, i64> = FxHashMap::default();
        for (_, w, c) in words.iter() {
            for p in w.windows(2) {
                *pair_counts.entry((p[0], p[1])).or_insert(0) += c as i64;
            }
        }
        let index = PairIndex::build(&words, |_| true);
        let heap = pair_counts.iter().map(|(p, c)| (*c, Reverse(*p))).collect();
        let tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let by_bytes = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        State {
            words,
            index,
            counts: pair_counts,
            heap,
            refused: FxHashSet::default(),
            tokens,
            by_bytes,
            made_of: vec![(0, 0); 256],
            present: vec![true; 256],
            freq,
            holders: vec![Vec::new(); 256],
            vocab: 256,
            events: Vec::new(),
            last_consumed: 0,
            deltas: FxHashMap::default(),
            new_pairs: FxHashMap::default(),
        }
    }

    /// The best pair and its count, or `None` when no pair is left.
    fn pop(&mut self) -> Option<(Pair, i64)> {
        while let Some((key, Reverse(pair))) = self.heap.pop() {
            let actual = self.counts.get(&pair).copied().unwrap_or(0);
            if actual == key {
                return Some((pair, key));
            }
            if actual > 0 && actual < key {
                self.heap.push((actual, Reverse(pair)));
            }
        }
        None
    }

    fn refuse(&mut self, pair: Pair) {
        self.counts.remove(&pair);
        self.index.remove(pair);
        self.refused.insert(pair);
    }

    /// Merge `pair` everywhere; returns the merged token's id (a new one, or
    /// that of the token with its bytes, which comes back if removed).
    fn merge(&mut self, pair: Pair) -> u32 {
        let (a, b) = pair;
        let bytes = [self.tokens[a as usize].as_slice(), self.tokens[b as usize].as_slice()].concat();
        let t = match self.by_bytes.get(&bytes) {
            Some(&t) => t,
            None => {
                let t = self.tokens.len() as u32;
                self.by_bytes.insert(bytes.clone(), t);
                self.tokens.push(bytes);
                self.made_of.push(pair);
                self.present.push(false);
                self.freq.push(0);
                self.holders.push(Vec::new());
                t
            }
        };
        if !self.present[t as usize] {
            self.present[t as usize] = true;
            self.vocab += 1;
        }
        let list = self.index.take(pair);
        let mut consumed = 0i64;
        self.deltas.clear();
        self.new_pairs.clear();
        self.words
            .apply_merge(&list, pair, t, &mut self.deltas, &mut self.new_pairs, |c| consumed += c);
        self.counts.remove(&pair);
        self.apply_deltas();
        self.freq[a as usize] -= consumed;
        self.freq[b as usize] -= consumed;
        self.freq[t as usize] += consumed;
        // (a superset: `remove` keeps only the words that hold `t` then)
        self.holders[t as usize].extend_from_slice(&list);
        self.last_consumed = consumed;
        self.events.push(Event::Merge {
            left: a,
            right: b,
            new: t,
            count: consumed as u64,
        });
        t
    }

    /// `x`'s IoS when a merge consumed `c` of its occurrences, if `x` may be
    /// removed and the IoS reaches `threshold`.
    fn removable(&self, x: u32, c: i64, threshold: f64) -> Option<f64> {
        if x < 256 || !self.present[x as usize] || c <= 0 {
            return None;
        }
        let left = self.freq[x as usize].max(0);
        let ios = c as f64 / (c + left) as f64;
        (ios >= threshold).then_some(ios)
    }

    /// The present tokens `x` splits into: its two parts, each split again
    /// where it is itself removed.
    fn parts(&self, x: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![self.made_of[x as usize].1, self.made_of[x as usize].0];
        while let Some(y) = stack.pop() {
            if y < 256 || self.present[y as usize] {
                out.push(y);
            } else {
                let (l, r) = self.made_of[y as usize];
                stack.push(r);
                stack.push(l);
            }
        }
        out
    }

    /// Remove `x`: split its occurrences into its parts, and free its slot.
    fn remove(&mut self, x: u32, ios: f64, merge: usize) {
        self.present[x as usize] = false;
        self.vocab -= 1;
        let parts = self.parts(x);
        let mut list = std::mem::take(&mut self.holders[x as usize]);
        list.sort_unstable();
        list.dedup();
        let mut split = 0i64;
        self.deltas.clear();
        self.new_pairs.clear();
        self.words
            .apply_split(&list, x, &parts, &mut self.deltas, &mut self.new_pairs, |c| split += c);
        self.apply_deltas();
        self.freq[x as usize] -= split;
        for &p in &parts {
            self.freq[p as usize] += split;
        }
        let mut learned: Vec<u32> = parts.iter().copied().filter(|&p| p >= 256).collect();
        learned.sort_unstable();
        learned.dedup();
        for p in learned {
            self.holders[p as usize].extend_from_slice(&list);
        }
        self.events.push(Event::Remove {
            token: x,
            parts,
            ios,
            merge,
        });
    }

    /// Fold `deltas` into the counts, the heap and the index (`new_pairs`).
    fn apply_deltas(&mut self) {
        let mut touched: Vec<(Pair, i64)> = self.deltas.drain().filter(|(_, d)| *d != 0).collect();
        touched.sort_unstable();
        for (p, d) in touched {
            if self.refused.contains(&p) {
                continue;
            }
            let c = self.counts.entry(p).or_insert(0);
            *c += d;
            let now = *c;
            if now <= 0 {
                self.counts.remove(&p);
            } else if d > 0 {
                self.heap.push((now, Reverse(p)));
            }
        }
        for (p, ws) in self.new_pairs.drain() {
            if self.counts.contains_key(&p) {
                self.index.add(p, ws);
            }
        }
        if self.index.stale() {
            let counts = &self.counts;
            self.index.rebuild(&self.words, |p| counts.contains_key(&p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(words: &[(&str, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    fn cfg(vocab_size: usize, threshold: f64) -> PickyConfig {
        PickyConfig {
            vocab_size,
            min_frequency: 0,
            max_token_length: None,
            threshold,
            trace: 0,
        }
    }

    #[test]
    fn an_intermediate_token_is_removed() {
        // "ab" only ever lives inside "abc": merging (ab, c) consumes it all
        let c = counts(&[("abc", 10), ("xy", 3)]);
        let t = train(&c, &cfg(258, 0.9), &mut |_| Ok(())).unwrap();
        let ab = t.tokens.iter().position(|x| x == b"ab").unwrap() as u32;
        assert!(t.events.iter().any(|e| matches!(e, Event::Remove { token, ios, .. }
            if *token == ab && *ios == 1.0)));
        assert!(!t.present[ab as usize]);
        assert!(t.present[t.tokens.iter().position(|x| x == b"abc").unwrap()]);
        // the freed slot went to the next merge, "xy"
        assert_eq!(t.present.iter().filter(|p| **p).count(), 258);
        assert!(t.tokens.iter().any(|x| x == b"xy"));
    }

    #[test]
    fn a_token_used_alone_stays() {
        let c = counts(&[("abc", 10), ("ab", 10)]);
        let t = train(&c, &cfg(258, 0.9), &mut |_| Ok(())).unwrap();
        assert_eq!(t.removals(), 0);
        assert!(t.is_plain_bpe());
    }

    #[test]
    fn the_split_gives_back_the_pairs() {
        // ab (20) -> abc (10 of them): IoS 0.5 at τ 0.5 removes ab; the 10
        // "ab" left become a, b again and (a, b) is the best pair once more
        let c = counts(&[("abc", 10), ("abd", 10)]);
        let t = train(&c, &cfg(258, 0.5), &mut |_| Ok(())).unwrap();
        assert!(matches!(t.events[2], Event::Remove { ios, .. } if ios == 0.5));
        assert!(matches!(
            &t.events[3],
            Event::Merge {
                left: 97,
                right: 98,
                count: 10,
                ..
            }
        ));
    }
}
