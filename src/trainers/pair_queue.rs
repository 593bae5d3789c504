//! The BPE merge loop's pairs: the counts of adjacent pairs, a max-heap to
//! find the best, and the pair -> words index to apply a merge.
//!
//! Order: the highest count first; among equal counts the smallest tie key
//! (`K`, a function of the pair given by the trainer: `()` for BPE as
//! `tokenizers` trains it), then the smallest (left id, right id). The heap
//! is lazy: a popped entry whose count is stale goes back with its current
//! count.
//!
//! Memory: most pairs a corpus holds, and most pairs a merge makes, are rare
//! and never merged, yet a count, a heap entry and a word list for each
//! would be most of the trainer's memory. So only the pairs counted at least
//! `floor` times are tracked (counted, in the heap and in the index). This
//! changes no merge, because a pair's count never grows once both its tokens
//! exist: a merge only makes occurrences of the pairs that hold the token it
//! makes, and those pairs are new, whole in that merge's changes. So every
//! pair at the floor is tracked with its exact count, and the best tracked
//! pair is the best of all. When no tracked pair is left, the pairs are
//! counted again from the words and the floor goes down; when the index has
//! grown stale, the floor goes up to a quarter of the last merge's count.
//! Each rebuild reads every word once.

use super::word_index::{PairIndex, Words};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

type Pair = (u32, u32);

pub(crate) struct PairQueue<K: Ord + Copy = ()> {
    /// Exact counts of the tracked pairs: every pair counted at least
    /// `floor` times, and some below it.
    counts: FxHashMap<Pair, i64>,
    heap: BinaryHeap<(i64, Reverse<(K, Pair)>)>,
    index: PairIndex,
    floor: i64,
    /// Pairs that must never merge (kept out of every recount).
    refused: FxHashSet<Pair>,
    /// The count of the pair popped last, and how many merges are still
    /// wanted (to place the floor).
    last: i64,
    wanted: usize,
    /// How many times the pairs were counted again, and the index built
    /// again (what the tests check was exercised).
    recounts: usize,
    rebuilds: usize,
    /// Scratch of one merge: count changes, and new pairs with their words.
    deltas: FxHashMap<Pair, i64>,
    new_pairs: FxHashMap<Pair, Vec<u32>>,
}

impl<K: Ord + Copy> PairQueue<K> {
    /// The pairs of `words`, for a run of `merges` merges; `tie` gives a
    /// pair's tie key.
    pub fn new(words: &Words, merges: usize, tie: &impl Fn(Pair) -> K) -> Self {
        let mut queue = PairQueue {
            counts: FxHashMap::default(),
            heap: BinaryHeap::new(),
            index: PairIndex::default(),
            floor: 1,
            refused: FxHashSet::default(),
            last: i64::MAX,
            wanted: merges,
            recounts: 0,
            rebuilds: 0,
            deltas: FxHashMap::default(),
            new_pairs: FxHashMap::default(),
        };
        queue.recount(words, tie);
        queue
    }

    /// Count every pair of the words again and track those at the floor:
    /// the count of the best pair the merges still wanted could reach (new
    /// pairs take some of their places; a floor too high costs one more
    /// recount). Returns whether any pair is left.
    fn recount(&mut self, words: &Words, tie: &impl Fn(Pair) -> K) -> bool {
        self.recounts += 1;
        self.index = PairIndex::default();
        self.heap = BinaryHeap::new();
        let mut counts: FxHashMap<Pair, i64> = FxHashMap::default();
        for (_, w, c) in words.iter() {
            for p in w.windows(2) {
                *counts.entry((p[0], p[1])).or_insert(0) += c as i64;
            }
        }
        counts.retain(|p, _| !self.refused.contains(p));
        self.counts = counts;
        if self.counts.is_empty() {
            return false;
        }
        self.rebuild(words, Self::floor_for(&self.counts, self.wanted), tie);
        true
    }

    /// Track only the pairs counted at least `floor` times, with the heap
    /// and the index built again from the words as they are. Past a recount
    /// the floor only goes up: only the counts above the old floor are all
    /// known.
    fn rebuild(&mut self, words: &Words, floor: i64, tie: &impl Fn(Pair) -> K) {
        self.rebuilds += 1;
        self.index = PairIndex::default();
        self.floor = floor;
        self.counts.retain(|_, c| *c >= floor);
        self.counts.shrink_to_fit();
        let counts = &self.counts;
        self.index = PairIndex::build(words, |p| counts.contains_key(&p));
        self.heap = counts.iter().map(|(p, c)| (*c, Reverse((tie(*p), *p)))).collect();
    }

    /// Half the count of the `wanted`-th best pair (1 when fewer are left).
    fn floor_for(counts: &FxHashMap<Pair, i64>, wanted: usize) -> i64 {
        if wanted == 0 || wanted >= counts.len() {
            return 1;
        }
        let mut all: Vec<i64> = counts.values().copied().collect();
        let (_, kth, _) = all.select_nth_unstable_by(wanted - 1, |a, b| b.cmp(a));
        (*kth / 2).max(1)
    }

    /// The count and tie key of the entry on top of the heap (perhaps stale).
    pub fn peek(&self) -> Option<(i64, K)> {
        self.heap.peek().map(|&(count, Reverse((key, _)))| (count, key))
    }

    /// Put back a pair `pop_keyed` gave (not merged after all, for now).
    pub fn push_back(&mut self, pair: Pair, count: i64, key: K) {
        self.heap.push((count, Reverse((key, pair))));
    }

    /// The best pair, its count and tie key, or `None` when no pair is left.
    pub fn pop_keyed(&mut self, words: &Words, tie: &impl Fn(Pair) -> K) -> Option<(Pair, i64, K)> {
        loop {
            let Some((count, Reverse((key, pair)))) = self.heap.pop() else {
                // every pair at the floor is merged or refused: those left
                // are below it
                if self.floor == 1 || !self.recount(words, tie) {
                    return None;
                }
                continue;
            };
            let actual = self.counts.get(&pair).copied().unwrap_or(0);
            if actual == count {
                self.last = count;
                return Some((pair, count, key));
            }
            if actual >= self.floor {
                self.heap.push((actual, Reverse((key, pair))));
            }
        }
    }

    /// `pair` will never be merged.
    pub fn refuse(&mut self, pair: Pair) {
        self.counts.remove(&pair);
        self.index.remove(pair);
        self.refused.insert(pair);
    }

    /// Replace `pair` by `t` in every word that holds it.
    pub fn merge(&mut self, words: &mut Words, pair: Pair, t: u32, tie: &impl Fn(Pair) -> K) {
        let list = self.index.take(pair);
        self.deltas.clear();
        self.new_pairs.clear();
        words.apply_merge(&list, pair, t, &mut self.deltas, &mut self.new_pairs, |_| {});
        self.counts.remove(&pair);
        self.wanted = self.wanted.saturating_sub(1);
        let mut touched: Vec<(Pair, i64)> = self.deltas.drain().filter(|(_, d)| *d != 0).collect();
        touched.sort_unstable();
        for (p, d) in touched {
            if d > 0 {
                // a new pair (it holds `t`): all its occurrences are here
                if d >= self.floor {
                    self.counts.insert(p, d);
                    self.heap.push((d, Reverse((tie(p), p))));
                }
            } else if let Some(c) = self.counts.get_mut(&p) {
                *c += d;
                if *c < self.floor {
                    self.counts.remove(&p);
                }
            }
        }
        for (p, ws) in self.new_pairs.drain() {
            if self.counts.contains_key(&p) {
                self.index.add(p, ws);
            }
        }
        if self.index.stale() {
            // merges to come count at most `last`
            self.rebuild(words, self.floor.max(self.last / 4), tie);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair counted again at every step: the order the queue must keep.
    fn naive(mut words: Vec<(Vec<u32>, u64)>, merges: usize, mut next: u32) -> Vec<(Pair, i64)> {
        let mut out = Vec::new();
        while out.len() < merges {
            let mut counts: FxHashMap<Pair, i64> = FxHashMap::default();
            for (w, c) in &words {
                for p in w.windows(2) {
                    *counts.entry((p[0], p[1])).or_insert(0) += *c as i64;
                }
            }
            let Some((&pair, &count)) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
                break;
            };
            for (w, _) in &mut words {
                let mut merged = Vec::with_capacity(w.len());
                let mut i = 0;
                while i < w.len() {
                    if i + 1 < w.len() && (w[i], w[i + 1]) == pair {
                        merged.push(next);
                        i += 2;
                    } else {
                        merged.push(w[i]);
                        i += 1;
                    }
                }
                *w = merged;
            }
            out.push((pair, count));
            next += 1;
        }
        out
    }

    #[test]
    fn merges_in_the_order_of_a_full_recount() {
        let mut seed = 12345u64;
        let mut rand = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let (mut recounts, mut rebuilds) = (0, 0);
        for (alphabet, merges) in [(3, 40), (6, 30), (6, 300), (20, 15)] {
            let list: Vec<(Vec<u32>, u64)> = (0..400)
                .map(|_| {
                    let len = 1 + rand(12) as usize;
                    ((0..len).map(|_| rand(alphabet) as u32).collect(), 1 + rand(60))
                })
                .collect();
            let want = naive(list.clone(), merges, alphabet as u32);
            let mut words = Words::default();
            for (w, c) in &list {
                words.push(w.iter().copied(), *c);
            }
            let mut queue = PairQueue::new(&words, merges, &|_| ());
            let mut got = Vec::new();
            let mut next = alphabet as u32;
            while got.len() < merges {
                let Some((pair, count, ())) = queue.pop_keyed(&words, &|_| ()) else {
                    break;
                };
                queue.merge(&mut words, pair, next, &|_| ());
                got.push((pair, count));
                next += 1;
            }
            assert_eq!(got, want, "alphabet {alphabet}, {merges} merges");
            recounts += queue.recounts - 1;
            rebuilds += queue.rebuilds - queue.recounts;
        }
        // the floor went down, and up, along the way
        assert!(recounts > 0 && rebuilds > 0, "{recounts} recounts, {rebuilds} rebuilds");
    }
}
