//! Applying merges to a sequence of symbols: repeatedly merge the adjacent
//! pair of lowest rank, leftmost first.
//!
//! Short sequences use a linear scan (fast for the common case); long ones a
//! heap over a linked list, O(n log n), so a megabyte without a split point
//! does not go quadratic.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

type Merges = FxHashMap<(u32, u32), (u32, u32)>;

const SHORT: usize = 48;

pub fn merge_symbols(syms: &mut Vec<(u32, u32)>, merges: &Merges, dropout: Option<f32>) {
    if syms.len() < 2 {
        return;
    }
    match dropout {
        Some(p) if p > 0.0 => merge_heap(syms, merges, p),
        _ if syms.len() <= SHORT => merge_scan(syms, merges),
        _ => merge_heap(syms, merges, 0.0),
    }
}

fn merge_scan(syms: &mut Vec<(u32, u32)>, merges: &Merges) {
    let rank = |a: (u32, u32), b: (u32, u32)| merges.get(&(a.0, b.0)).copied();
    let mut ranks: Vec<Option<(u32, u32)>> = syms.windows(2).map(|w| rank(w[0], w[1])).collect();
    loop {
        let mut best: Option<(usize, u32, u32)> = None;
        for (i, r) in ranks.iter().enumerate() {
            if let Some((rk, new_id)) = r {
                if best.is_none_or(|(_, br, _)| *rk < br) {
                    best = Some((i, *rk, *new_id));
                }
            }
        }
        let Some((i, _, new_id)) = best else { break };
        syms[i] = (new_id, syms[i].1 + syms[i + 1].1);
        syms.remove(i + 1);
        ranks.remove(i);
        if i > 0 {
            ranks[i - 1] = rank(syms[i - 1], syms[i]);
        }
        if i < ranks.len() {
            ranks[i] = rank(syms[i], syms[i + 1]);
        }
    }
}

struct XorShift(u64);

impl XorShift {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    (t ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)) | 1
}

fn merge_heap(syms: &mut Vec<(u32, u32)>, merges: &Merges, dropout: f32) {
    let n = syms.len();
    // Heap keys pack (rank, position): lower rank first, then leftmost. The
    // merged id is looked up again when an entry is popped, which also tells
    // whether the entry is stale.
    let key = |rank: u32, pos: usize| Reverse(((rank as u64) << 32) | pos as u64);
    let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
    let mut next: Vec<u32> = (1..=n as u32).collect();
    let mut heap: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some(&(rank, _)) = merges.get(&(syms[i].0, syms[i + 1].0)) {
            heap.push(key(rank, i));
        }
    }
    const GONE: u32 = u32::MAX;
    let mut rng = XorShift(if dropout > 0.0 { seed() } else { 1 });
    let mut skipped: Vec<Reverse<u64>> = Vec::new();
    while let Some(Reverse(k)) = heap.pop() {
        let (rank, i) = ((k >> 32) as u32, (k & 0xFFFF_FFFF) as usize);
        if syms[i].1 == GONE {
            continue;
        }
        let j = next[i] as usize;
        if j >= n {
            continue;
        }
        // stale entry: the pair at this position changed since it was pushed
        let Some(&(r, new_id)) = merges.get(&(syms[i].0, syms[j].0)) else {
            continue;
        };
        if r != rank {
            continue;
        }
        if dropout > 0.0 && rng.next_f32() < dropout {
            skipped.push(Reverse(k));
            continue;
        }
        syms[i] = (new_id, syms[i].1 + syms[j].1);
        syms[j].1 = GONE;
        let after = next[j] as usize;
        next[i] = after as u32;
        if after < n {
            prev[after] = i as u32;
        }
        heap.extend(skipped.drain(..));
        let p = prev[i] as usize;
        if p < n {
            if let Some(&(r, _)) = merges.get(&(syms[p].0, syms[i].0)) {
                heap.push(key(r, p));
            }
        }
        if after < n {
            if let Some(&(r, _)) = merges.get(&(syms[i].0, syms[after].0)) {
                heap.push(key(r, i));
            }
        }
    }
    syms.retain(|s| s.1 != GONE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_and_heap_agree() {
        // a tiny alphabet with merges chosen to create overlaps
        let mut merges = Merges::default();
        merges.insert((0, 0), (0, 2));
        merges.insert((2, 1), (1, 3));
        merges.insert((1, 1), (2, 4));
        merges.insert((2, 2), (3, 5));
        merges.insert((5, 3), (4, 6));
        let mut x = 12345u64;
        for len in 2..200 {
            let seq: Vec<(u32, u32)> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (((x >> 33) % 2) as u32, 1)
                })
                .collect();
            let mut a = seq.clone();
            merge_scan(&mut a, &merges);
            let mut b = seq.clone();
            merge_heap(&mut b, &merges, 0.0);
            assert_eq!(a, b, "len {len}");
            assert_eq!(a.iter().map(|s| s.1).sum::<u32>(), len);
        }
    }

    #[test]
    fn dropout_one_merges_nothing() {
        let mut merges = Merges::default();
        merges.insert((0, 0), (0, 1));
        let mut s = vec![(0, 1); 10];
        merge_heap(&mut s, &merges, 1.0);
        assert_eq!(s.len(), 10);
    }
}
