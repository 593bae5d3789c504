//! The reference merge: repeatedly merge the adjacent pair of lowest rank,
//! leftmost first. Short sequences use a linear scan (fast for the common
//! case); long ones a heap over a linked list, O(n log n), so a megabyte
//! without a split point does not go quadratic. Every other path (lanes,
//! AVX2, AVX-512, backtracking, the caches) is tested against `merge_symbols`.

use super::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub(super) const SHORT: usize = 48;

pub fn merge_symbols(syms: &mut Vec<(u32, u32)>, merges: &impl PairLookup, dropout: Option<f32>) {
    if syms.len() < 2 {
        return;
    }
    match dropout {
        Some(p) if p > 0.0 => merge_heap(syms, merges, p),
        _ if syms.len() <= SHORT => merge_scan(syms, merges),
        _ => merge_heap(syms, merges, 0.0),
    }
}

/// A pair's rank in the scan arrays when it does not merge. Ranks are below
/// 2^31, so signed 32-bit minimums (which baseline x86-64 vector code has)
/// order them.
pub(crate) const NO_MERGE: i32 = i32::MAX;

/// A pair's merge for the scan: (rank, merged id), `NO_MERGE` when none.
#[inline(always)]
pub(super) fn lookup(merges: &impl PairLookup, a: u32, b: u32) -> (i32, u32) {
    match merges.pair(a, b) {
        Some((rank, id)) if rank < NO_MERGE as u32 => (rank as i32, id),
        _ => (NO_MERGE, 0),
    }
}

/// For every pair of bytes, the merge of their single-byte tokens: the
/// first round of lookups of a byte-level piece without hashing.
pub fn byte_pair_table(merges: &impl PairLookup, byte_ids: &[u32; 256]) -> Box<[(i32, u32)]> {
    let mut t = vec![(NO_MERGE, 0); 1 << 16];
    for (a, &ia) in byte_ids.iter().enumerate() {
        for (b, &ib) in byte_ids.iter().enumerate() {
            t[(a << 8) | b] = lookup(merges, ia, ib);
        }
    }
    t.into_boxed_slice()
}

/// The ranks of the pairs of a short sequence: `rank[i]`, `id[i]` for
/// `syms[i]` + `syms[i + 1]`.
pub(super) struct Pairs {
    rank: [i32; SHORT],
    id: [u32; SHORT],
}

impl Pairs {
    fn new() -> Self {
        Pairs {
            rank: [NO_MERGE; SHORT],
            id: [0; SHORT],
        }
    }

    fn set(&mut self, i: usize, (rank, id): (i32, u32)) {
        self.rank[i] = rank;
        self.id[i] = id;
    }
}

/// The short-sequence merge: each step a linear scan for the lowest rank
/// (a plain minimum over an integer array, which compiles to vector code).
pub(super) fn merge_scan(syms: &mut Vec<(u32, u32)>, merges: &impl PairLookup) {
    if syms.len() > SHORT {
        return merge_heap(syms, merges, 0.0);
    }
    let mut pairs = Pairs::new();
    for i in 0..syms.len() - 1 {
        pairs.set(i, lookup(merges, syms[i].0, syms[i + 1].0));
    }
    scan_loop(syms, &mut pairs, merges);
}

/// `merge_symbols` for a short byte-level piece whose every byte is a token
/// (`byte_ids`), with the first ranks from `byte_pair_table`. Returns false,
/// leaving `syms` alone, when the piece is too long for it.
pub fn merge_bytes(
    piece: &[u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &impl PairLookup,
    syms: &mut Vec<(u32, u32)>,
) -> bool {
    if piece.len() > SHORT {
        return false;
    }
    syms.extend(piece.iter().map(|&b| (byte_ids[b as usize], 1)));
    if piece.len() < 2 {
        return true;
    }
    let mut pairs = Pairs::new();
    for (i, w) in piece.windows(2).enumerate() {
        pairs.set(i, table[((w[0] as usize) << 8) | w[1] as usize]);
    }
    scan_loop(syms, &mut pairs, merges);
    true
}

/// Merge the lowest pair, leftmost first, until no pair merges.
///
/// Merged-away symbols stay in place with the rank `NO_MERGE` and are
/// skipped through `next`/`prev` links, so a step moves no memory: it is a
/// minimum over the ranks (vector code) and the two lookups of the new pairs.
pub(super) fn scan_loop(syms: &mut Vec<(u32, u32)>, pairs: &mut Pairs, merges: &impl PairLookup) {
    let n = syms.len();
    debug_assert!((2..=SHORT).contains(&n));
    const NIL: u8 = u8::MAX;
    let mut next = [0u8; SHORT];
    let mut prev = [NIL; SHORT];
    for i in 0..n {
        next[i] = (i + 1) as u8;
        prev[i] = if i == 0 { NIL } else { (i - 1) as u8 };
    }
    let live = n - 1;
    loop {
        let ranks = &pairs.rank[..live];
        let best = ranks.iter().copied().min().unwrap_or(NO_MERGE);
        if best == NO_MERGE {
            break;
        }
        // the leftmost pair of the lowest rank (dead pairs rank NO_MERGE)
        let i = ranks.iter().position(|&r| r == best).unwrap_or(0);
        let j = next[i] as usize;
        syms[i] = (pairs.id[i], syms[i].1 + syms[j].1);
        pairs.rank[j] = NO_MERGE;
        let k = next[j] as usize;
        next[i] = k as u8;
        if k < n {
            prev[k] = i as u8;
            pairs.set(i, lookup(merges, syms[i].0, syms[k].0));
        } else {
            pairs.rank[i] = NO_MERGE;
        }
        if prev[i] != NIL {
            let p = prev[i] as usize;
            pairs.set(p, lookup(merges, syms[p].0, syms[i].0));
        }
    }
    let (mut w, mut i) = (0, 0);
    while i < n {
        syms[w] = syms[i];
        w += 1;
        i = next[i] as usize;
    }
    syms.truncate(w);
}

pub(super) struct XorShift(u64);

impl XorShift {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

pub(super) fn seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    (t ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)) | 1
}

pub(super) fn merge_heap(syms: &mut Vec<(u32, u32)>, merges: &impl PairLookup, dropout: f32) {
    let n = syms.len();
    // Heap keys pack (rank, position): lower rank first, then leftmost. The
    // merged id is looked up again when an entry is popped, which also tells
    // whether the entry is stale.
    let key = |rank: u32, pos: usize| Reverse(((rank as u64) << 32) | pos as u64);
    let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
    let mut next: Vec<u32> = (1..=n as u32).collect();
    let mut heap: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some((rank, _)) = merges.pair(syms[i].0, syms[i + 1].0) {
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
        let Some((r, new_id)) = merges.pair(syms[i].0, syms[j].0) else {
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
            if let Some((r, _)) = merges.pair(syms[p].0, syms[i].0) {
                heap.push(key(r, p));
            }
        }
        if after < n {
            if let Some((r, _)) = merges.pair(syms[i].0, syms[after].0) {
                heap.push(key(r, i));
            }
        }
    }
    syms.retain(|s| s.1 != GONE);
}
