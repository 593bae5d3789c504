//! The working set of the merge trainers (BPE, continued BPE, WordPiece):
//! every distinct word as symbol ids in one arena, and the index from each
//! adjacent pair to the words that hold it.
//!
//! Memory, for W distinct words of S symbols in all: the arena takes
//! 4·S + 20·W bytes (symbols, start, length, count). The index takes 4 bytes
//! per (pair, word) occurrence in a flat array plus about 30 bytes per
//! distinct pair, and the words a merge adds to a pair's list wait in a map
//! until they outnumber the flat array; then the index is built again from
//! the words as they are, which drops every word that no longer holds its
//! pair. So the index never holds more than about twice what the words
//! contain at that moment, where a list per pair that only grows holds every
//! pair ever made (several times the initial index on a large corpus).

use rustc_hash::FxHashMap;

type Pair = (u32, u32);

/// Words as symbol ids, in one arena: word `i` is
/// `syms[start[i] .. start[i] + len[i]]`; a merge shortens it in place.
#[derive(Default)]
pub(crate) struct Words {
    syms: Vec<u32>,
    start: Vec<usize>,
    len: Vec<u32>,
    counts: Vec<u64>,
}

impl Words {
    pub fn with_capacity(words: usize, syms: usize) -> Self {
        Words {
            syms: Vec::with_capacity(syms),
            start: Vec::with_capacity(words),
            len: Vec::with_capacity(words),
            counts: Vec::with_capacity(words),
        }
    }

    /// Add a word of `syms` seen `count` times.
    pub fn push(&mut self, syms: impl IntoIterator<Item = u32>, count: u64) {
        let start = self.syms.len();
        self.syms.extend(syms);
        let len = u32::try_from(self.syms.len() - start).expect("a word of more than 4G symbols");
        self.start.push(start);
        self.len.push(len);
        self.counts.push(count);
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn get(&self, i: usize) -> &[u32] {
        let s = self.start[i];
        &self.syms[s..s + self.len[i] as usize]
    }

    /// How many times word `i` was seen.
    pub fn count(&self, i: usize) -> u64 {
        self.counts[i]
    }

    /// (index, symbols, count) of every word.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[u32], u64)> + '_ {
        (0..self.len()).map(|i| (i, self.get(i), self.counts[i]))
    }

    /// Rename every symbol by `map` (its old id as index).
    pub fn remap(&mut self, map: &[u32]) {
        for s in &mut self.syms {
            *s = map[*s as usize];
        }
    }

    /// Replace every adjacent `(a, b)` in the listed words by `t`, left to
    /// right, as both merge loops (BPE, WordPiece) do: the pair-count changes
    /// around each occurrence go to `deltas` (the merged pair's own count is
    /// the caller's), and each new neighbouring pair gets the word in
    /// `new_pairs`. `on_merge(count)` runs once per occurrence with the
    /// word's count.
    pub fn apply_merge(
        &mut self,
        list: &[u32],
        (a, b): Pair,
        t: u32,
        deltas: &mut FxHashMap<Pair, i64>,
        new_pairs: &mut FxHashMap<Pair, Vec<u32>>,
        mut on_merge: impl FnMut(i64),
    ) {
        let mut note = |pair: Pair, wi: u32| {
            let list = new_pairs.entry(pair).or_default();
            if list.last() != Some(&wi) {
                list.push(wi);
            }
        };
        for &wi in list {
            let (start, n) = (self.start[wi as usize], self.len[wi as usize] as usize);
            let w = &mut self.syms[start..start + n];
            let c = self.counts[wi as usize] as i64;
            // w[..out] is the merged word so far, w[read..] the rest as it was
            let (mut out, mut read) = (0, 0);
            while read < n {
                if read + 1 < n && w[read] == a && w[read + 1] == b {
                    if out > 0 {
                        let left = w[out - 1];
                        *deltas.entry((left, a)).or_insert(0) -= c;
                        *deltas.entry((left, t)).or_insert(0) += c;
                        note((left, t), wi);
                    }
                    if read + 2 < n {
                        let right = w[read + 2];
                        *deltas.entry((b, right)).or_insert(0) -= c;
                        *deltas.entry((t, right)).or_insert(0) += c;
                        note((t, right), wi);
                    }
                    on_merge(c);
                    w[out] = t;
                    read += 2;
                } else {
                    w[out] = w[read];
                    read += 1;
                }
                out += 1;
            }
            self.len[wi as usize] = out as u32;
        }
    }
}

impl Words {
    /// How many symbols word `i` may hold: its slot in the arena, the length
    /// it was pushed with (a merge only shortens a word, a split only gives
    /// back what merges took, so a word never outgrows its slot).
    fn capacity(&self, i: usize) -> usize {
        self.start.get(i + 1).copied().unwrap_or(self.syms.len()) - self.start[i]
    }

    /// Replace every `x` in the listed words by `parts` (PickyBPE's removal,
    /// `trainers::picky`): the pair-count changes go to `deltas` (every pair
    /// that touched an `x` is lost, every pair that touches a part is
    /// gained; equal ones cancel), and each pair that touches a part gets
    /// the word in `new_pairs`. `on_split(count)` runs once per occurrence.
    /// Words of `list` without `x` are left alone. The parts must spell `x`
    /// with at least one symbol per unit of it (see [`Words::capacity`]).
    pub fn apply_split(
        &mut self,
        list: &[u32],
        x: u32,
        parts: &[u32],
        deltas: &mut FxHashMap<Pair, i64>,
        new_pairs: &mut FxHashMap<Pair, Vec<u32>>,
        mut on_split: impl FnMut(i64),
    ) {
        let mut out: Vec<u32> = Vec::new();
        let mut fresh: Vec<bool> = Vec::new();
        for &wi in list {
            let i = wi as usize;
            let (start, n) = (self.start[i], self.len[i] as usize);
            let w = &self.syms[start..start + n];
            if !w.contains(&x) {
                continue;
            }
            let c = self.counts[i] as i64;
            for p in w.windows(2) {
                if p[0] == x || p[1] == x {
                    *deltas.entry((p[0], p[1])).or_insert(0) -= c;
                }
            }
            out.clear();
            fresh.clear();
            for &s in w {
                if s == x {
                    on_split(c);
                    out.extend_from_slice(parts);
                    fresh.extend(std::iter::repeat_n(true, parts.len()));
                } else {
                    out.push(s);
                    fresh.push(false);
                }
            }
            for j in 1..out.len() {
                if fresh[j - 1] || fresh[j] {
                    let pair = (out[j - 1], out[j]);
                    *deltas.entry(pair).or_insert(0) += c;
                    let list = new_pairs.entry(pair).or_default();
                    if list.last() != Some(&wi) {
                        list.push(wi);
                    }
                }
            }
            debug_assert!(out.len() <= self.capacity(i), "a split outgrew its word");
            let keep = out.len().min(self.capacity(i));
            self.syms[start..start + keep].copy_from_slice(&out[..keep]);
            self.len[i] = keep as u32;
        }
    }
}

/// Where a pair's words sit in [`PairIndex::flat`], and the last word
/// counted for it while building (1 + index; 0 for none).
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    len: u32,
    last: u32,
}

/// Pair -> the words that hold it (a superset: a word may have lost the pair
/// since it was listed).
#[derive(Default)]
pub(crate) struct PairIndex {
    spans: FxHashMap<Pair, Span>,
    flat: Vec<u32>,
    /// Words listed since the last build, per pair.
    recent: FxHashMap<Pair, Vec<u32>>,
    recent_len: usize,
    /// Entries of `flat` whose pair was taken.
    dead: usize,
}

/// The index is built again when what was added and taken since the last
/// build outgrows the flat array, and not before this many entries (few in
/// the tests, so that they rebuild often).
#[cfg(not(test))]
const MIN_REBUILD: usize = 1 << 20;
#[cfg(test)]
const MIN_REBUILD: usize = 8;

impl PairIndex {
    /// The index of every pair of `words` that `keep` accepts, each word
    /// listed once per pair, in word order.
    pub fn build(words: &Words, keep: impl Fn(Pair) -> bool) -> Self {
        let mut spans: FxHashMap<Pair, Span> = FxHashMap::default();
        for (wi, w, _) in words.iter() {
            for p in w.windows(2) {
                let pair = (p[0], p[1]);
                let span = spans.entry(pair).or_insert(Span {
                    start: 0,
                    len: 0,
                    last: 0,
                });
                if span.last != wi as u32 + 1 {
                    span.last = wi as u32 + 1;
                    span.len += 1;
                }
            }
        }
        spans.retain(|p, _| keep(*p));
        let mut total = 0;
        for span in spans.values_mut() {
            span.start = total;
            total += span.len as usize;
            span.len = 0;
            span.last = 0;
        }
        let mut flat = vec![0u32; total];
        for (wi, w, _) in words.iter() {
            for p in w.windows(2) {
                if let Some(span) = spans.get_mut(&(p[0], p[1])) {
                    if span.last != wi as u32 + 1 {
                        span.last = wi as u32 + 1;
                        flat[span.start + span.len as usize] = wi as u32;
                        span.len += 1;
                    }
                }
            }
        }
        PairIndex {
            spans,
            flat,
            recent: FxHashMap::default(),
            recent_len: 0,
            dead: 0,
        }
    }

    /// Build again from `words` as they are now (the old lists go first, so
    /// the two never coexist).
    pub fn rebuild(&mut self, words: &Words, keep: impl Fn(Pair) -> bool) {
        *self = PairIndex::default();
        *self = PairIndex::build(words, keep);
    }

    /// The words listed for `pair`, sorted and each once; the pair leaves
    /// the index.
    pub fn take(&mut self, pair: Pair) -> Vec<u32> {
        let mut list = match self.spans.remove(&pair) {
            Some(span) => {
                self.dead += span.len as usize;
                self.flat[span.start..span.start + span.len as usize].to_vec()
            }
            None => Vec::new(),
        };
        if let Some(more) = self.recent.remove(&pair) {
            self.recent_len -= more.len();
            list.extend(more);
            list.sort_unstable();
            list.dedup();
        }
        list
    }

    /// Forget `pair` (it will never be merged).
    pub fn remove(&mut self, pair: Pair) {
        if let Some(span) = self.spans.remove(&pair) {
            self.dead += span.len as usize;
        }
        if let Some(more) = self.recent.remove(&pair) {
            self.recent_len -= more.len();
        }
    }

    /// List `words` (ascending) under `pair`.
    pub fn add(&mut self, pair: Pair, words: Vec<u32>) {
        self.recent_len += words.len();
        match self.recent.entry(pair) {
            std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().extend(words),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(words);
            }
        }
    }

    /// Whether the lists added and the entries taken since the last build
    /// outweigh the rest: then [`PairIndex::build`] again.
    pub fn stale(&self) -> bool {
        self.recent_len + self.dead > self.flat.len().max(MIN_REBUILD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&[u32]]) -> Words {
        let mut w = Words::default();
        for (i, s) in ws.iter().enumerate() {
            w.push(s.iter().copied(), i as u64 + 1);
        }
        w
    }

    #[test]
    fn merge_in_place_matches_left_to_right_replacement() {
        let mut w = words(&[&[1, 2, 1, 2, 1], &[2, 1, 1, 2], &[1, 2], &[3]]);
        let (mut deltas, mut new_pairs) = (FxHashMap::default(), FxHashMap::default());
        let mut merged = 0;
        w.apply_merge(&[0, 1, 2, 3], (1, 2), 9, &mut deltas, &mut new_pairs, |c| merged += c);
        assert_eq!(w.get(0), &[9, 9, 1]);
        assert_eq!(w.get(1), &[2, 1, 9]);
        assert_eq!(w.get(2), &[9]);
        assert_eq!(w.get(3), &[3]);
        assert_eq!(merged, 2 + 2 + 3);
        // word 0 (count 1): (2,1) twice lost, (9,9) and (9,1) made
        assert_eq!(deltas[&(2, 1)], -2);
        assert_eq!(deltas[&(9, 9)], 1);
        assert_eq!(deltas[&(9, 1)], 1);
        // word 1 (count 2): (1,1) lost, (1,9) made
        assert_eq!(deltas[&(1, 1)], -2);
        assert_eq!(deltas[&(1, 9)], 2);
        assert_eq!(new_pairs[&(9, 9)], vec![0]);
        assert_eq!(new_pairs[&(1, 9)], vec![1]);
    }

    #[test]
    fn split_gives_back_the_parts_and_their_pairs() {
        // 9 = (1, 2) merged earlier; word 0 count 1, word 1 count 2
        let mut w = words(&[&[1, 2, 1, 2], &[3, 1, 2]]);
        let (mut d, mut np) = (FxHashMap::default(), FxHashMap::default());
        w.apply_merge(&[0, 1], (1, 2), 9, &mut d, &mut np, |_| {});
        assert_eq!(w.get(0), &[9, 9]);
        let (mut deltas, mut new_pairs) = (FxHashMap::default(), FxHashMap::default());
        let mut split = 0;
        w.apply_split(&[0, 1], 9, &[1, 2], &mut deltas, &mut new_pairs, |c| split += c);
        assert_eq!(w.get(0), &[1, 2, 1, 2]);
        assert_eq!(w.get(1), &[3, 1, 2]);
        assert_eq!(split, 2 + 2);
        assert_eq!(deltas[&(9, 9)], -1);
        assert_eq!(deltas[&(3, 9)], -2);
        assert_eq!(deltas[&(1, 2)], 2 + 2);
        assert_eq!(deltas[&(2, 1)], 1);
        assert_eq!(deltas[&(3, 1)], 2);
        assert_eq!(new_pairs[&(1, 2)], vec![0, 1]);
    }

    #[test]
    fn index_lists_each_word_once_and_rebuilds_exact() {
        let mut w = words(&[&[1, 2, 1, 2], &[2, 1], &[1, 2, 3]]);
        let mut idx = PairIndex::build(&w, |_| true);
        assert_eq!(idx.take((1, 2)), vec![0, 2]);
        assert_eq!(idx.take((1, 2)), Vec::<u32>::new());
        idx.add((2, 1), vec![2]);
        assert_eq!(idx.take((2, 1)), vec![0, 1, 2]);
        let (mut deltas, mut new_pairs) = (FxHashMap::default(), FxHashMap::default());
        w.apply_merge(&[0, 2], (1, 2), 7, &mut deltas, &mut new_pairs, |_| {});
        let mut idx = PairIndex::build(&w, |p| p != (7, 3));
        assert_eq!(idx.take((7, 7)), vec![0]);
        assert_eq!(idx.take((7, 3)), Vec::<u32>::new());
        assert_eq!(idx.take((2, 1)), vec![1]);
    }
}
