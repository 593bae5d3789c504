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

/// Where merges are looked up.
pub trait PairLookup {
    /// The merge of `a` followed by `b`: (rank, merged id).
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)>;

    /// Where `pair(a, b)` looks (for `prefetch_at` and `rank_at`: the
    /// hash is computed once).
    #[inline(always)]
    fn locate(&self, _a: u32, _b: u32) -> usize {
        0
    }

    /// Start loading what `rank_at` will read at `at` (a hint; by default
    /// nothing).
    #[inline(always)]
    fn prefetch_at(&self, _at: usize) {}

    /// `pair(a, b)` as (rank, merged id), `NO_MERGE` for none; `at` is
    /// `locate(a, b)`.
    #[inline(always)]
    fn rank_at(&self, a: u32, b: u32, _at: usize) -> (i32, u32)
    where
        Self: Sized,
    {
        lookup(self, a, b)
    }
}

impl PairLookup for Merges {
    #[inline(always)]
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.get(&(a, b)).copied()
    }
}

/// The merges as one flat open-addressing table, for the encoding hot path:
/// a pair and its rank packed in 8 bytes (see `PairTable::new`), so that a
/// lookup reads one cache line, and the table is half the size a slot of
/// two ids, a rank and an id would make it (cl100k: 2 MB, o200k: 4 MB; a
/// cold piece's merges wait for it). Two bits of one word per pair in
/// front (`filter`, a few hundred KB) turn most pairs that do not merge
/// away without reading the table, where a lookup is not prefetched
/// (`pair`: the backtracking encoder's compatibility checks, most of whose
/// pairs do not merge; with one bit a pair, o200k Chinese was 4-5%
/// slower).
pub struct PairTable {
    /// Each merge ranked by its merged id (same order as the ranks): a
    /// slot's rank is its id. Otherwise the id is `ids[rank]`.
    pub by_id: bool,
    /// `pack(a, b, rank)`; `EMPTY` for none
    slots: Box<[u64]>,
    shift: u32,
    mask: usize,
    filter: Box<[u64]>,
    filter_shift: u32,
    /// merged id by rank (when not `by_id`)
    ids: Box<[u32]>,
    /// Merges whose ids or ranks do not fit a slot's fields (more than two
    /// million tokens): looked up here, the slots left empty.
    big: Option<Box<Merges>>,
}

/// Bits of each of a slot's three fields: first id, second id, rank.
const FIELD: u32 = 21;

/// Mask of a field.
const FIELD_MASK: u64 = (1 << FIELD) - 1;

/// A slot's pair (its two id fields).
const KEY_MASK: u64 = (1 << (2 * FIELD)) - 1;

/// No slot: both id fields all ones (no merge has that id), rank 0, no
/// `FAR`.
const EMPTY: u64 = KEY_MASK;

/// The id field of a symbol no merge has (`PAD`, any id past the table's):
/// one below the all-ones of `EMPTY`, so that the key of two of them is
/// not an empty slot's.
const NO_ID: u64 = FIELD_MASK - 1;

/// Set in a slot (its top bit) when some pair whose home it is lies two or
/// more slots further: `rank_at` reads two slots and looks further only
/// then. (An empty slot is nobody's home: it is never set there.)
const FAR: u64 = 1 << 63;

impl PairTable {
    pub fn new(merges: &Merges) -> Self {
        let mut order: Vec<(u32, u32)> = merges.values().copied().collect();
        order.sort_unstable();
        // (tiktoken's implied merges make a token from each of its splits,
        // all with the token's rank: those are one merge here)
        let by_id = order.windows(2).all(|w| w[0].1 < w[1].1 || w[0] == w[1]);
        let n = merges.len().max(4);
        // at most half full: a lookup rarely reads a second slot
        let cap = (n * 2).next_power_of_two();
        // about ten bits per pair, two set for each: a pair that does not
        // merge passes the filter about one time in thirty
        let bits = (n * 10).next_power_of_two().max(64);
        let mut t = PairTable {
            by_id,
            slots: Box::default(),
            shift: 64 - cap.trailing_zeros(),
            mask: cap - 1,
            filter: vec![0u64; bits / 64].into_boxed_slice(),
            filter_shift: 64 - bits.trailing_zeros(),
            ids: Box::default(),
            big: None,
        };
        // Every id below `NO_ID`, every rank fits its field, and (not
        // `by_id`) each rank makes one id: else the map answers.
        let mut fits = merges.iter().all(|(&(a, b), &(rank, id))| {
            let rank = if by_id { id } else { rank };
            [a, b, id].iter().all(|&x| (x as u64) < NO_ID) && (rank as u64) < FIELD_MASK
        });
        let mut ids = Vec::new();
        if fits && !by_id {
            let top = order.last().map_or(0, |&(rank, _)| rank as usize);
            ids = vec![u32::MAX; top + 1];
            for &(rank, id) in &order {
                let at = &mut ids[rank as usize];
                if *at != u32::MAX && *at != id {
                    fits = false;
                    break;
                }
                *at = id;
            }
        }
        if !fits {
            t.big = Some(Box::new(merges.clone()));
            return t;
        }
        t.ids = ids.into_boxed_slice();
        t.slots = vec![EMPTY; cap].into_boxed_slice();
        for (&(a, b), &(rank, id)) in merges {
            let key = Self::key(a, b);
            let (w, bits) = t.filter_bits(key);
            t.filter[w] |= bits;
            let mut i = t.home(key);
            while t.slots[i] != EMPTY {
                i = (i + 1) & t.mask;
            }
            let rank = if by_id { id } else { rank };
            t.slots[i] = key | ((rank as u64) << (2 * FIELD));
        }
        // (after all insertions: a key's place depends on the keys before it)
        for i in 0..cap {
            let slot = t.slots[i];
            if slot != EMPTY {
                let home = t.home(slot & KEY_MASK);
                if (i.wrapping_sub(home) & t.mask) >= 2 {
                    t.slots[home] |= FAR;
                }
            }
        }
        t
    }

    /// The key of a pair: its two ids in a slot's fields (`NO_ID` for one
    /// too large to be in a merge).
    #[inline(always)]
    fn key(a: u32, b: u32) -> u64 {
        let field = |x: u32| (x as u64).min(NO_ID);
        (field(a) << FIELD) | field(b)
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The filter's word for `key` and the two bits of it that `key` sets:
    /// both from one hash (a pair that does not merge finds both set about
    /// one time in thirty, against one in ten with a bit each).
    #[inline(always)]
    fn filter_bits(&self, key: u64) -> (usize, u64) {
        let h = (key ^ (key >> 29)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let w = ((h >> self.filter_shift) >> 6) as usize;
        (w, (1 << ((h >> 32) & 63)) | (1 << ((h >> 38) & 63)))
    }

    /// The (rank, merged id) of a slot's merge.
    #[inline(always)]
    fn merge_of(&self, slot: u64) -> (u32, u32) {
        let rank = ((slot >> (2 * FIELD)) & FIELD_MASK) as u32;
        let id = if self.by_id { rank } else { self.ids[rank as usize] };
        (rank, id)
    }

    /// The merge of `key` in the slots from `i` on (linear probing).
    #[inline(always)]
    fn probe(&self, key: u64, mut i: usize) -> Option<(u32, u32)> {
        loop {
            let s = self.slots[i];
            if s & KEY_MASK == key {
                return Some(self.merge_of(s));
            }
            if s == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// `rank_at` past the two slots it reads: the rest of the probe.
    #[cold]
    #[inline(never)]
    fn rank_far(&self, key: u64, at: usize) -> (i32, u32) {
        match self.probe(key, (at + 2) & self.mask) {
            Some((rank, id)) => (rank as i32, id),
            None => (NO_MERGE, 0),
        }
    }
}

impl PairLookup for PairTable {
    #[inline(always)]
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        if let Some(big) = &self.big {
            // (ranked as the slots would be)
            return big
                .pair(a, b)
                .map(|(rank, id)| if self.by_id { (id, id) } else { (rank, id) });
        }
        let key = Self::key(a, b);
        let (w, bits) = self.filter_bits(key);
        if self.filter[w] & bits != bits {
            return None;
        }
        self.probe(key, self.home(key))
    }

    #[inline(always)]
    fn locate(&self, a: u32, b: u32) -> usize {
        self.home(Self::key(a, b))
    }

    #[inline(always)]
    fn prefetch_at(&self, at: usize) {
        // (no slots where `big` answers)
        if let Some(slot) = self.slots.get(at & self.mask) {
            super::table::prefetch(slot);
        }
    }

    /// The home slot and the next, without a branch on what they hold
    /// (whether a pair merges is a coin toss to the branch predictor);
    /// further only when the home is marked `FAR` (from there on: the
    /// slots after the two are mostly on the line just read). Only the home
    /// is prefetched: the next slot is on its cache line seven times in
    /// eight.
    #[inline(always)]
    fn rank_at(&self, a: u32, b: u32, at: usize) -> (i32, u32) {
        if self.big.is_some() {
            return lookup(self, a, b);
        }
        let key = Self::key(a, b);
        // SAFETY: the table has `mask + 1` slots (`new`)
        let (s0, s1) = unsafe {
            (
                *self.slots.get_unchecked(at & self.mask),
                *self.slots.get_unchecked((at + 1) & self.mask),
            )
        };
        use std::hint::select_unpredictable as select;
        let hit0 = s0 & KEY_MASK == key;
        let hit1 = s1 & KEY_MASK == key;
        let slot = select(hit0, s0, s1);
        // (`&`, not `&&`: one branch, taken only for the few far pairs)
        if !(hit0 | hit1) & (s0 & FAR != 0) {
            return self.rank_far(key, at);
        }
        let rank = select(hit0 | hit1, ((slot >> (2 * FIELD)) & FIELD_MASK) as i32, NO_MERGE);
        let id = if self.by_id {
            select(hit0 | hit1, rank as u32, 0)
        } else {
            // (`NO_MERGE` is past the end: no merge, id 0)
            self.ids.get(rank as usize).copied().unwrap_or(0)
        };
        (rank, id)
    }
}

const SHORT: usize = 48;

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
pub(super) const NO_MERGE: i32 = i32::MAX;

/// A pair's merge for the scan: (rank, merged id), `NO_MERGE` when none.
#[inline(always)]
fn lookup(merges: &impl PairLookup, a: u32, b: u32) -> (i32, u32) {
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
struct Pairs {
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
fn merge_scan(syms: &mut Vec<(u32, u32)>, merges: &impl PairLookup) {
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
fn scan_loop(syms: &mut Vec<(u32, u32)>, pairs: &mut Pairs, merges: &impl PairLookup) {
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

/// Pieces `merge_bytes_many` works on at once.
const LANES: usize = 16;

/// Longest piece `merge_bytes_many` takes.
pub const MANY_MAX: usize = 15;

/// Longest piece `merge_bytes_many_wide` takes.
pub const WIDE_MAX: usize = 31;

/// Longest piece `merge_bytes_many_wider` takes.
pub const WIDER_MAX: usize = 63;

/// A piece of at most `W - 1` bytes (`W` is 16, 32 or 64) being merged by
/// `merge_bytes_many`: `scan_loop`'s state in fixed arrays of `W`, and the
/// two pairs whose ranks are still to be read. Position `W - 1` is never a
/// symbol: it holds `PAD`, its rank stays `NO_MERGE`, and it stands in for a
/// missing neighbour, so that every step reads exactly two ranks and
/// branches on neither end of the piece.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lane<const W: usize> {
    rank: [i32; W],
    id: [u32; W],
    /// the symbols; `PAD` from `n` on
    syms: [u32; W],
    next: [u8; W],
    prev: [u8; W],
    /// positions whose pair with the next symbol needs its rank
    todo: [u8; 2],
    /// where those pairs are in the pair table (`PairLookup::locate`)
    at: [usize; 2],
    n: u8,
    /// symbols left
    left: u8,
    /// index of the piece; `usize::MAX` when the lane is free
    piece: usize,
}

/// The symbol past the end of a lane's piece: no token (`u32::MAX` is not
/// used: a pair key of two of them would be the pair table's `EMPTY`), so
/// no pair with it merges.
const PAD: u32 = u32::MAX - 1;

impl<const W: usize> Lane<W> {
    /// The padding position (see `Lane`).
    const LAST: u8 = (W - 1) as u8;

    /// `next` of a new piece: each position's next, the padding its own.
    const NEXT0: [u8; W] = {
        let mut a = [0u8; W];
        let mut i = 0;
        while i < W {
            a[i] = if i + 1 < W { (i + 1) as u8 } else { (W - 1) as u8 };
            i += 1;
        }
        a
    };

    /// `prev` of a new piece: the first position's is the padding.
    const PREV0: [u8; W] = {
        let mut a = [0u8; W];
        let mut i = 0;
        while i < W {
            a[i] = if i == 0 { (W - 1) as u8 } else { (i - 1) as u8 };
            i += 1;
        }
        a
    };

    const FREE: Self = Lane {
        rank: [NO_MERGE; W],
        id: [0; W],
        syms: [PAD; W],
        next: Self::NEXT0,
        prev: Self::PREV0,
        todo: [Self::LAST; 2],
        at: [0; 2],
        n: 0,
        left: 0,
        piece: usize::MAX,
    };

    /// Start on piece `k` (at least two bytes): its bytes' tokens, and the
    /// first ranks from `table` (see `byte_pair_table`).
    #[inline(always)]
    fn start(&mut self, k: usize, piece: &[u8], byte_ids: &[u32; 256], table: &[(i32, u32)], pad: usize) {
        let n = piece.len();
        debug_assert!((2..W).contains(&n));
        self.piece = k;
        self.n = n as u8;
        self.left = n as u8;
        self.todo = [Self::LAST; 2];
        self.at = [pad; 2];
        self.next = Self::NEXT0;
        self.prev = Self::PREV0;
        self.syms = [PAD; W];
        self.rank = [NO_MERGE; W];
        for (i, &b) in piece.iter().enumerate() {
            self.syms[i] = byte_ids[b as usize];
        }
        for (i, w) in piece.windows(2).enumerate() {
            (self.rank[i], self.id[i]) = table[((w[0] as usize) << 8) | w[1] as usize];
        }
    }

    /// Read the two ranks still to be read, then merge the lowest pair
    /// (leftmost first) and start loading the two pairs that merge makes.
    /// True when no pair merges: the piece is done. With `whole_absent`
    /// (the whole piece is no token), also as soon as two symbols are
    /// left: their merge would be the whole piece.
    #[inline(always)]
    fn step<R: RankVec<W>>(&mut self, merges: &impl PairLookup, whole_absent: bool) -> bool {
        // (the ranks as they were, read before the two new ones are stored:
        // a vector load of bytes just stored one by one waits until the
        // stores are done; the new ranks are put in the vectors instead)
        let mut ranks = R::load(&self.rank);
        for t in 0..2 {
            // (`& (W - 1)`: every position is below `W`; the compiler
            // cannot know that of a byte, and would check)
            let i = self.todo[t] as usize & (W - 1);
            let k = self.next[i] as usize & (W - 1);
            let (rank, id) = merges.rank_at(self.syms[i], self.syms[k], self.at[t]);
            (self.rank[i], self.id[i]) = (rank, id);
            ranks = ranks.with(i, rank);
        }
        let (best, hits) = ranks.lowest();
        if best == NO_MERGE {
            return true;
        }
        let i = hits.trailing_zeros() as usize & (W - 1);
        let j = self.next[i] as usize & (W - 1);
        self.syms[i] = self.id[i];
        self.rank[j] = NO_MERGE;
        let k = self.next[j];
        self.next[i] = k;
        // (`k` may be the end, `n`: its `prev` is never read)
        self.prev[k as usize & (W - 1)] = i as u8;
        self.left -= 1;
        if whole_absent & (self.left == 2) {
            return true;
        }
        let p = self.prev[i];
        self.todo = [i as u8, p];
        self.at = [
            merges.locate(self.syms[i], self.syms[k as usize & (W - 1)]),
            merges.locate(self.syms[p as usize & (W - 1)], self.syms[i]),
        ];
        merges.prefetch_at(self.at[0]);
        merges.prefetch_at(self.at[1]);
        false
    }

    /// The tokens the piece merged into, in order, to `out`; how many.
    #[inline(always)]
    fn finish(&self, out: &mut [u32; W]) -> u8 {
        let (mut w, mut i) = (0, 0);
        while i < self.n as usize {
            out[w] = self.syms[i];
            w += 1;
            i = self.next[i] as usize;
        }
        w as u8
    }
}

/// A lane's `W` ranks in vector registers.
trait RankVec<const W: usize>: Copy {
    /// The ranks of `rank`.
    fn load(rank: &[i32; W]) -> Self;
    /// The ranks with `rank` at position `i` (below `W`).
    fn with(self, i: usize, rank: i32) -> Self;
    /// The lowest rank, and a bit for each position that holds it.
    fn lowest(self) -> (i32, u64);
}

/// `RankVec` in four SSE2 registers (any x86-64), or an array elsewhere.
#[derive(Clone, Copy)]
struct Ranks {
    #[cfg(target_arch = "x86_64")]
    v: [std::arch::x86_64::__m128i; 4],
    #[cfg(not(target_arch = "x86_64"))]
    v: [i32; 16],
}

#[cfg(target_arch = "x86_64")]
impl RankVec<16> for Ranks {
    #[inline(always)]
    fn load(rank: &[i32; 16]) -> Self {
        use std::arch::x86_64::*;
        let p = rank.as_ptr() as *const __m128i;
        // SAFETY: SSE2 is part of x86-64; the loads read the 64 bytes of `rank`.
        unsafe {
            Ranks {
                v: [
                    _mm_loadu_si128(p),
                    _mm_loadu_si128(p.add(1)),
                    _mm_loadu_si128(p.add(2)),
                    _mm_loadu_si128(p.add(3)),
                ],
            }
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            let at = _mm_set1_epi32(i as i32);
            let r = _mm_set1_epi32(rank);
            let mut v = self.v;
            for (k, v) in v.iter_mut().enumerate() {
                let here = _mm_cmpeq_epi32(
                    at,
                    _mm_setr_epi32(4 * k as i32, 4 * k as i32 + 1, 4 * k as i32 + 2, 4 * k as i32 + 3),
                );
                *v = _mm_or_si128(_mm_and_si128(here, r), _mm_andnot_si128(here, *v));
            }
            Ranks { v }
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            #[inline(always)]
            fn min(x: __m128i, y: __m128i) -> __m128i {
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    let gt = _mm_cmpgt_epi32(x, y);
                    _mm_or_si128(_mm_and_si128(gt, y), _mm_andnot_si128(gt, x))
                }
            }
            let [a, b, c, d] = self.v;
            let m = min(min(a, b), min(c, d));
            let m = min(m, _mm_shuffle_epi32(m, 0b01_00_11_10));
            let m = min(m, _mm_shuffle_epi32(m, 0b10_11_00_01));
            let eq = _mm_packs_epi16(
                _mm_packs_epi32(_mm_cmpeq_epi32(a, m), _mm_cmpeq_epi32(b, m)),
                _mm_packs_epi32(_mm_cmpeq_epi32(c, m), _mm_cmpeq_epi32(d, m)),
            );
            (_mm_cvtsi128_si32(m), _mm_movemask_epi8(eq) as u32 as u64)
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl RankVec<16> for Ranks {
    #[inline(always)]
    fn load(rank: &[i32; 16]) -> Self {
        Ranks { v: *rank }
    }

    #[inline(always)]
    fn with(mut self, i: usize, rank: i32) -> Self {
        self.v[i] = rank;
        self
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        let best = self.v.iter().copied().fold(NO_MERGE, i32::min);
        let hits = self
            .v
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &r)| m | (((r == best) as u64) << k));
        (best, hits)
    }
}

/// `RankVec` in two AVX2 registers: a third of the SSE2 instructions.
/// Only made inside `merge_bytes_many_avx2`, which runs where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Ranks8 {
    v: [std::arch::x86_64::__m256i; 2],
}

#[cfg(target_arch = "x86_64")]
impl RankVec<16> for Ranks8 {
    #[inline(always)]
    fn load(rank: &[i32; 16]) -> Self {
        use std::arch::x86_64::*;
        let p = rank.as_ptr() as *const __m256i;
        // SAFETY: made only where AVX2 is (see the type); the loads read
        // the 64 bytes of `rank`.
        unsafe {
            Ranks8 {
                v: [_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))],
            }
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let at = _mm256_set1_epi32(i as i32);
            let r = _mm256_set1_epi32(rank);
            let lo = _mm256_cmpeq_epi32(at, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            let hi = _mm256_cmpeq_epi32(at, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
            Ranks8 {
                v: [
                    _mm256_blendv_epi8(self.v[0], r, lo),
                    _mm256_blendv_epi8(self.v[1], r, hi),
                ],
            }
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let [a, b] = self.v;
            let m = _mm256_min_epi32(a, b);
            let m = _mm256_min_epi32(m, _mm256_permute2x128_si256(m, m, 1));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b01_00_11_10));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b10_11_00_01));
            let lo = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, m))) as u32;
            let hi = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(b, m))) as u32;
            (_mm256_cvtsi256_si32(m), (lo | (hi << 8)) as u64)
        }
    }
}

/// `RankVec` of a wide lane (32 ranks) in four AVX2 registers. Only made
/// inside `merge_bytes_many_wide_avx2`, which runs where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Ranks32 {
    v: [std::arch::x86_64::__m256i; 4],
}

#[cfg(target_arch = "x86_64")]
impl RankVec<32> for Ranks32 {
    #[inline(always)]
    fn load(rank: &[i32; 32]) -> Self {
        use std::arch::x86_64::*;
        let p = rank.as_ptr() as *const __m256i;
        // SAFETY: made only where AVX2 is (see the type); the loads read
        // the 128 bytes of `rank`.
        unsafe {
            Ranks32 {
                v: [
                    _mm256_loadu_si256(p),
                    _mm256_loadu_si256(p.add(1)),
                    _mm256_loadu_si256(p.add(2)),
                    _mm256_loadu_si256(p.add(3)),
                ],
            }
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let at = _mm256_set1_epi32(i as i32);
            let r = _mm256_set1_epi32(rank);
            let mut v = self.v;
            for (k, v) in v.iter_mut().enumerate() {
                let k = 8 * k as i32;
                let here = _mm256_cmpeq_epi32(
                    at,
                    _mm256_setr_epi32(k, k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7),
                );
                *v = _mm256_blendv_epi8(*v, r, here);
            }
            Ranks32 { v }
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let [a, b, c, d] = self.v;
            let m = _mm256_min_epi32(_mm256_min_epi32(a, b), _mm256_min_epi32(c, d));
            let m = _mm256_min_epi32(m, _mm256_permute2x128_si256(m, m, 1));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b01_00_11_10));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b10_11_00_01));
            let mask = |x: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, m))) as u32;
            (
                _mm256_cvtsi256_si32(m),
                (mask(a) | (mask(b) << 8) | (mask(c) << 16) | (mask(d) << 24)) as u64,
            )
        }
    }
}

/// `RankVec` of a lane of 64 ranks as two `Ranks32` halves (eight AVX2
/// registers). Only made inside `merge_bytes_many_wider_avx2`, which runs
/// where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Ranks64 {
    lo: Ranks32,
    hi: Ranks32,
}

#[cfg(target_arch = "x86_64")]
impl RankVec<64> for Ranks64 {
    #[inline(always)]
    fn load(rank: &[i32; 64]) -> Self {
        let (lo, hi) = rank.split_at(32);
        Ranks64 {
            lo: Ranks32::load(lo.try_into().expect("32 ranks")),
            hi: Ranks32::load(hi.try_into().expect("32 ranks")),
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        // (a position below 32 is no position of the upper half: `with`
        // compares it with 0..31 there, and nothing matches)
        Ranks64 {
            lo: self.lo.with(i, rank),
            hi: self.hi.with(i.wrapping_sub(32), rank),
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        let ((a, ha), (b, hb)) = (self.lo.lowest(), self.hi.lowest());
        let m = a.min(b);
        let keep = |x: i32, h: u64| if x == m { h } else { 0 };
        (m, keep(a, ha) | (keep(b, hb) << 32))
    }
}

/// `RankVec`s in AVX-512 registers, sixteen ranks each: a rank set with
/// masked moves, the lowest found by one reduction. Only made inside the
/// lanes compiled for AVX-512F (`merge_bytes_many_wide_avx512`,
/// `merge_bytes_many_wider_avx512`), which run where the CPU has it.
macro_rules! ranks_in_zmm {
    ($($(#[$doc:meta])* $name:ident: $regs:literal registers, $w:literal ranks;)*) => {$(
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[derive(Clone, Copy)]
        struct $name {
            v: [std::arch::x86_64::__m512i; $regs],
        }

        #[cfg(target_arch = "x86_64")]
        impl RankVec<$w> for $name {
            #[inline(always)]
            fn load(rank: &[i32; $w]) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type); the
                // loads read the ranks of `rank`, sixteen at a time.
                unsafe {
                    $name {
                        v: std::array::from_fn(|k| _mm512_loadu_si512(rank.as_ptr().add(16 * k).cast())),
                    }
                }
            }

            #[inline(always)]
            fn with(self, i: usize, rank: i32) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type).
                unsafe {
                    let bit = 1u64 << (i & ($w - 1));
                    let r = _mm512_set1_epi32(rank);
                    $name {
                        v: std::array::from_fn(|k| _mm512_mask_mov_epi32(self.v[k], (bit >> (16 * k)) as u16, r)),
                    }
                }
            }

            #[inline(always)]
            fn lowest(self) -> (i32, u64) {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type).
                unsafe {
                    let low = self.v.iter().skip(1).fold(self.v[0], |m, &v| _mm512_min_epi32(m, v));
                    let m = _mm512_reduce_min_epi32(low);
                    let x = _mm512_set1_epi32(m);
                    let hits = self
                        .v
                        .iter()
                        .enumerate()
                        .fold(0u64, |h, (k, &v)| h | ((_mm512_cmpeq_epi32_mask(v, x) as u64) << (16 * k)));
                    (m, hits)
                }
            }
        }
    )*};
}

ranks_in_zmm! {
    /// `RankVec` of a wide lane (32 ranks) in two AVX-512 registers.
    Ranks32x2: 2 registers, 32 ranks;
    /// `RankVec` of a lane of 64 ranks in four AVX-512 registers.
    Ranks64x4: 4 registers, 64 ranks;
}

/// `RankVec` as a plain array, for any width (the reference the vector
/// versions are tested against).
#[cfg(test)]
#[derive(Clone, Copy)]
struct RankArray<const W: usize>([i32; W]);

#[cfg(test)]
impl<const W: usize> RankVec<W> for RankArray<W> {
    fn load(rank: &[i32; W]) -> Self {
        RankArray(*rank)
    }

    fn with(mut self, i: usize, rank: i32) -> Self {
        self.0[i] = rank;
        self
    }

    fn lowest(self) -> (i32, u64) {
        let best = self.0.iter().copied().fold(NO_MERGE, i32::min);
        let hits = (0..W).filter(|&k| self.0[k] == best).fold(0u64, |m, k| m | (1 << k));
        (best, hits)
    }
}

/// `merge_bytes` of several pieces (each of 1 to `MANY_MAX` bytes, every
/// byte a token), several at a time: a merge step of one piece, then of the
/// next, each step starting the loads of the pairs its merge makes and
/// reading them one round later. A piece merged pair by pair waits for each
/// lookup in turn (the pair table does not stay in the caches); here up to
/// `LANES` of those waits overlap. The tokens of `pieces[k]` go to
/// `ids[k][..counts[k]]`; the results are `merge_bytes`'s exactly.
#[allow(clippy::too_many_arguments)]
pub fn merge_bytes_many<'a>(
    count: usize,
    piece: impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &impl PairLookup,
    ids: &mut [[u32; MANY_MAX + 1]],
    counts: &mut [u8],
    whole_absent: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if crate::has_avx2() {
        // SAFETY: AVX2 is there.
        unsafe { merge_bytes_many_avx2(count, piece, byte_ids, table, merges, ids, counts, whole_absent) };
        return;
    }
    merge_bytes_many_with::<16, Ranks>(count, piece, byte_ids, table, merges, ids, counts, whole_absent);
}

/// A dispatcher of long pieces' lanes: the AVX-512F version where the CPU
/// has it, else the AVX2 one; false (and nothing done) without AVX2, where
/// the caller merges the pieces one by one.
macro_rules! wide_lanes_for {
    ($($(#[$doc:meta])* $name:ident: $w:expr, $avx512:ident, $avx2:ident;)*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<'a>(
            count: usize,
            piece: impl Fn(usize) -> &'a [u8],
            byte_ids: &[u32; 256],
            table: &[(i32, u32)],
            merges: &impl PairLookup,
            ids: &mut [[u32; $w]],
            counts: &mut [u8],
            whole_absent: bool,
        ) -> bool {
            #[cfg(target_arch = "x86_64")]
            if crate::has_avx2() {
                if crate::simd::allows(crate::simd::Level::Avx512) && std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: AVX-512F and AVX2 are there.
                    unsafe { $avx512(count, piece, byte_ids, table, merges, ids, counts, whole_absent) };
                    return true;
                }
                // SAFETY: AVX2 is there.
                unsafe { $avx2(count, piece, byte_ids, table, merges, ids, counts, whole_absent) };
                return true;
            }
            let _ = (count, piece, byte_ids, table, merges, ids, counts, whole_absent);
            false
        }
    )*};
}

wide_lanes_for! {
    /// `merge_bytes_many` for pieces of up to `WIDE_MAX` bytes (the lanes
    /// twice as wide).
    merge_bytes_many_wide: WIDE_MAX + 1, merge_bytes_many_wide_avx512, merge_bytes_many_wide_avx2;
    /// `merge_bytes_many_wide` for pieces of up to `WIDER_MAX` bytes (lanes
    /// of 64). Such pieces (separator lines of code, long names) merged one
    /// by one wait for the pair table at each of their dozens of merges.
    merge_bytes_many_wider: WIDER_MAX + 1, merge_bytes_many_wider_avx512, merge_bytes_many_wider_avx2;
}

/// `merge_bytes_many_with` compiled for a set of CPU features, lanes of
/// `W` ranks in `R`: the versions the dispatchers above choose from.
macro_rules! lanes_compiled_for {
    ($(#[$doc:meta] $name:ident: $features:literal, $w:literal, $r:ty;)*) => {$(
        #[$doc]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name<'a>(
            count: usize,
            piece: impl Fn(usize) -> &'a [u8],
            byte_ids: &[u32; 256],
            table: &[(i32, u32)],
            merges: &impl PairLookup,
            ids: &mut [[u32; $w]],
            counts: &mut [u8],
            whole_absent: bool,
        ) {
            merge_bytes_many_with::<$w, $r>(count, piece, byte_ids, table, merges, ids, counts, whole_absent);
        }
    )*};
}

lanes_compiled_for! {
    /// `merge_bytes_many` compiled for AVX2.
    merge_bytes_many_avx2: "avx2", 16, Ranks8;
    /// `merge_bytes_many_wide` compiled for AVX2.
    merge_bytes_many_wide_avx2: "avx2", 32, Ranks32;
    /// `merge_bytes_many_wide` compiled for AVX-512F, the ranks in two registers.
    merge_bytes_many_wide_avx512: "avx2,avx512f", 32, Ranks32x2;
    /// `merge_bytes_many_wider` compiled for AVX2.
    merge_bytes_many_wider_avx2: "avx2", 64, Ranks64;
    /// `merge_bytes_many_wider` compiled for AVX-512F, the ranks in four registers.
    merge_bytes_many_wider_avx512: "avx2,avx512f", 64, Ranks64x4;
}

/// Pieces `merge_bytes_across` merges at once: one in each 32-bit lane of
/// an AVX-512 register.
const ACROSS: usize = 16;

/// Rows of `Across`: a symbol position each, `MANY_MAX` of them and one
/// past every piece (padding: when the rows after a merge move down, the
/// last one takes the row after it).
const ACROSS_ROWS: usize = MANY_MAX + 1;

/// The state of sixteen pieces merged side by side, transposed: row `p`
/// holds position `p` of every piece (lane `l`: piece `l`). A merge at
/// position `i` puts the merged token at `i` and moves the positions after
/// `i + 1` down by one, in every lane at once (a masked move a row).
#[repr(C, align(64))]
struct Across {
    /// the symbols; `PAD` past a piece's end
    syms: [[u32; ACROSS]; ACROSS_ROWS],
    /// the rank of each symbol's pair with the next; `NO_MERGE` when none
    rank: [[i32; ACROSS]; ACROSS_ROWS],
}

/// `merge_bytes_many` where merges are ranked by the ids they make (the
/// tiktoken files: a pair's rank is its merged token) and the CPU has
/// AVX-512 (F and DQ): sixteen pieces merged at once, one in each 32-bit
/// lane of a vector, the pieces sorted by length (pieces merged together
/// take about as many steps). A step finds every lane's lowest pair with a
/// minimum over the rows, merges it with masked moves (reading the merged
/// token's neighbours on the way), and prefetches the two new pairs' slots
/// in the pair table; the group's next step, after a step of each other
/// group, reads them with gathers. The scalar lanes' unpredictable
/// branches (a piece that is done, the lowest pair's place) become masks.
/// Where it does not apply (`across_applies`), `merge_bytes_many` merges
/// the pieces; the results are `merge_bytes_many`'s exactly.
#[allow(clippy::too_many_arguments)]
pub fn merge_bytes_across<'a>(
    count: usize,
    piece: impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &PairTable,
    ids: &mut [[u32; MANY_MAX + 1]],
    counts: &mut [u8],
    whole_absent: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if across_applies(merges) {
        // SAFETY: AVX-512F and DQ are there (`across_lanes`).
        unsafe { merge_bytes_across_avx512(count, piece, byte_ids, table, merges, ids, counts, whole_absent) };
        return;
    }
    merge_bytes_many(count, piece, byte_ids, table, merges, ids, counts, whole_absent);
}

/// Whether `merge_bytes_across` merges across vector lanes: merges ranked
/// by the ids they make, all in the pair table's slots, on a CPU with
/// AVX-512 F and DQ.
pub fn across_applies(merges: &PairTable) -> bool {
    merges.by_id && merges.big.is_none() && across_lanes()
}

/// Whether this CPU has what `merge_bytes_across` needs.
fn across_lanes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::simd::allows(crate::simd::Level::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && crate::has_avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Groups of `ACROSS` pieces `merge_bytes_across` keeps going at once: a
/// group's lookups, prefetched at the end of its step, are read in its
/// next step, after a step of each of the others.
const GROUPS: usize = 8;

/// A group of `merge_bytes_across`: its rows, and the pairs its last merge
/// made, whose ranks are still to be read.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Group {
    s: Across,
    /// symbols of each lane
    len: std::arch::x86_64::__m512i,
    /// the row of the last merge in each lane
    pos: std::arch::x86_64::__m512i,
    /// the pairs the last merge made: the merged token with the symbol
    /// before it, and with the one after (`keys`, `homes`: as the pair
    /// table has them, lanes 0-7 and 8-15 of each)
    keys: [std::arch::x86_64::__m512i; 4],
    homes: [std::arch::x86_64::__m512i; 4],
    /// lanes that merged; of those, the lanes with a symbol before the
    /// merged one; and the lanes whose pairs are looked up (with a symbol
    /// before / after the merged one, but not when two symbols are left
    /// of a piece that is no token: their pair is the whole piece)
    active: u16,
    left: u16,
    look_left: u16,
    look_right: u16,
    /// rows to look at: the most symbols of a lane
    rows: usize,
    /// the pieces of its lanes (`count`: how many)
    members: [u32; ACROSS],
    count: usize,
}

/// Sixteen 32-bit lanes from a row (`merge_bytes_across`'s rows and lane
/// arrays): a reference to sixteen four-byte values is 64 readable bytes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn load16<T: Lane32>(row: &[T; ACROSS]) -> std::arch::x86_64::__m512i {
    // SAFETY: 64 bytes readable at `row` (`Lane32` types are four bytes)
    unsafe { std::arch::x86_64::_mm512_loadu_si512(row.as_ptr().cast()) }
}

/// Sixteen 32-bit lanes into a row.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn store16<T: Lane32>(row: &mut [T; ACROSS], v: std::arch::x86_64::__m512i) {
    // SAFETY: 64 bytes writable at `row`; any bits are a valid `Lane32`
    unsafe { std::arch::x86_64::_mm512_storeu_si512(row.as_mut_ptr().cast(), v) }
}

/// Four-byte plain integers: any 32 bits are one.
trait Lane32: Copy {}
impl Lane32 for u32 {}
impl Lane32 for i32 {}

/// The AVX-512 body of `merge_bytes_across`.
///
/// # Safety
/// The CPU has AVX2, AVX-512F and DQ; `merges` is a pair table by id.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq")]
#[allow(clippy::too_many_arguments)]
unsafe fn merge_bytes_across_avx512<'a>(
    count: usize,
    piece: impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &PairTable,
    ids: &mut [[u32; MANY_MAX + 1]],
    counts: &mut [u8],
    whole_absent: bool,
) {
    use std::arch::x86_64::*;
    debug_assert!(ids.len() >= count && counts.len() >= count);
    // the pieces that need no merging; the others, by length
    let at_once = bytes_as_tokens(count, &piece, byte_ids, ids, counts, whole_absent);
    let mut by_len = [0usize; MANY_MAX + 2];
    for k in 0..count {
        let n = piece(k).len();
        if n > at_once {
            by_len[n + 1] += 1;
        }
    }
    for n in 1..by_len.len() {
        by_len[n] += by_len[n - 1];
    }
    let mut order = [0u32; 256];
    let mut order_vec;
    let order: &mut [u32] = if count <= order.len() {
        &mut order[..count]
    } else {
        order_vec = vec![0u32; count];
        &mut order_vec
    };
    let mut waiting = 0;
    for k in 0..count {
        let n = piece(k).len();
        if n > at_once {
            order[by_len[n]] = k as u32;
            by_len[n] += 1;
            waiting += 1;
        }
    }
    let no_merge = _mm512_set1_epi32(NO_MERGE);
    let one = _mm512_set1_epi32(1);
    let slots = merges.slots.as_ptr().cast::<i64>();
    let shift = _mm_cvtsi32_si128(merges.shift as i32);
    let table_mask = _mm512_set1_epi64(merges.mask as i64);

    // (groups are made as they are needed: a flush of a few pieces sets up one)
    let mut store = [const { std::mem::MaybeUninit::<Group>::uninit() }; GROUPS];
    let mut groups = 0;
    let mut queue = order[..waiting].chunks(ACROSS);
    // Start group `g` on the next pieces: transposed in, first ranks from
    // `table`; false when there are none.
    let start = |g: &mut Group, queue: &mut std::slice::Chunks<'_, u32>| -> bool {
        let Some(members) = queue.next() else { return false };
        g.count = members.len();
        g.members[..members.len()].copy_from_slice(members);
        let mut len = [0u32; ACROSS];
        for (l, &k) in members.iter().enumerate() {
            let p = piece(k as usize);
            len[l] = p.len() as u32;
            for (i, &b) in p.iter().enumerate() {
                g.s.syms[i][l] = byte_ids[b as usize];
            }
            for (i, w) in p.windows(2).enumerate() {
                g.s.rank[i][l] = table[((w[0] as usize) << 8) | w[1] as usize].0;
            }
        }
        g.rows = len.iter().copied().max().unwrap_or(0) as usize;
        g.len = load16(&len);
        // (no merge made pairs to put in the rows)
        (g.active, g.left) = (0, 0);
        true
    };
    while groups < GROUPS {
        let mut g = Group {
            s: Across {
                syms: [[PAD; ACROSS]; ACROSS_ROWS],
                rank: [[NO_MERGE; ACROSS]; ACROSS_ROWS],
            },
            len: _mm512_setzero_si512(),
            pos: _mm512_setzero_si512(),
            keys: [_mm512_setzero_si512(); 4],
            homes: [_mm512_setzero_si512(); 4],
            active: 0,
            left: 0,
            look_left: 0,
            look_right: 0,
            rows: 0,
            members: [0; ACROSS],
            count: 0,
        };
        if !start(&mut g, &mut queue) {
            break;
        }
        store[groups].write(g);
        groups += 1;
    }
    // SAFETY: the first `groups` were written just above
    let all = unsafe { std::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<Group>(), groups) };
    let mut busy = groups;
    let mut done = [false; GROUPS];
    while busy > 0 {
        for (gi, g) in all.iter_mut().enumerate() {
            if done[gi] {
                continue;
            }
            // the ranks of the pairs the last step made
            let join = |lo: __m256i, hi: __m256i| _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
            let (rank_left, rank_right) = if g.active != 0 {
                // SAFETY: `slots` are the pair table's, and `table_mask`
                // keeps every home within it
                unsafe {
                    (
                        join(
                            ranks_at(slots, g.keys[0], g.homes[0], table_mask, g.look_left as u8, merges),
                            ranks_at(
                                slots,
                                g.keys[1],
                                g.homes[1],
                                table_mask,
                                (g.look_left >> 8) as u8,
                                merges,
                            ),
                        ),
                        join(
                            ranks_at(slots, g.keys[2], g.homes[2], table_mask, g.look_right as u8, merges),
                            ranks_at(
                                slots,
                                g.keys[3],
                                g.homes[3],
                                table_mask,
                                (g.look_right >> 8) as u8,
                                merges,
                            ),
                        ),
                    )
                }
            } else {
                (no_merge, no_merge)
            };
            // ... into their rows (the merged token's pair with the one
            // before, at `pos - 1`, and with the one after, at `pos`, the
            // merged pair's row: `NO_MERGE` where there is none), and the
            // lowest rank of each lane
            let rows = g.rows;
            let (last, last_left, last_active) = (g.pos, g.left, g.active);
            let mut best = no_merge;
            for p in 0..rows {
                let at = _mm512_set1_epi32(p as i32);
                let rank = load16(&g.s.rank[p]);
                let rank = _mm512_mask_mov_epi32(
                    rank,
                    _mm512_mask_cmpeq_epi32_mask(last_left, last, _mm512_add_epi32(at, one)),
                    rank_left,
                );
                let rank = _mm512_mask_mov_epi32(rank, _mm512_mask_cmpeq_epi32_mask(last_active, last, at), rank_right);
                store16(&mut g.s.rank[p], rank);
                best = _mm512_min_epi32(best, rank);
            }
            let active = _mm512_cmpneq_epi32_mask(best, no_merge);
            g.active = active;
            if active == 0 {
                // the tokens out, the rows back to padding, the next pieces
                let mut n = [0u32; ACROSS];
                store16(&mut n, g.len);
                let mut longest = 0;
                for (l, (&k, &n)) in g.members.iter().zip(&n).take(g.count).enumerate() {
                    let k = k as usize;
                    for (id, row) in ids[k].iter_mut().zip(&g.s.syms).take(n as usize) {
                        *id = row[l];
                    }
                    counts[k] = n as u8;
                    longest = longest.max(piece(k).len());
                }
                for p in 0..longest {
                    g.s.syms[p] = [PAD; ACROSS];
                    g.s.rank[p] = [NO_MERGE; ACROSS];
                }
                if !start(g, &mut queue) {
                    done[gi] = true;
                    busy -= 1;
                }
                continue;
            }
            let mut pos = _mm512_setzero_si512();
            for p in (0..rows).rev() {
                let here = _mm512_cmpeq_epi32_mask(load16(&g.s.rank[p]), best);
                pos = _mm512_mask_mov_epi32(pos, here, _mm512_set1_epi32(p as i32));
            }
            // merge: the merged token (its rank) at `pos`, the rows after
            // `pos + 1` one down; on the way, the symbols before and after
            // the merged one
            let pad = _mm512_set1_epi32(PAD as i32);
            let (mut a, mut b) = (pad, pad);
            for p in 0..rows {
                let at = _mm512_set1_epi32(p as i32);
                let eq = _mm512_mask_cmpeq_epi32_mask(active, pos, at);
                let after = _mm512_mask_cmplt_epi32_mask(active, pos, at);
                let sym = load16(&g.s.syms[p]);
                a = _mm512_mask_mov_epi32(
                    a,
                    _mm512_mask_cmpeq_epi32_mask(active, pos, _mm512_add_epi32(at, one)),
                    sym,
                );
                let sym = _mm512_mask_mov_epi32(sym, eq, best);
                let sym = _mm512_mask_mov_epi32(sym, after, load16(&g.s.syms[p + 1]));
                store16(&mut g.s.syms[p], sym);
                b = _mm512_mask_mov_epi32(
                    b,
                    _mm512_mask_cmpeq_epi32_mask(active, _mm512_add_epi32(pos, one), at),
                    sym,
                );
                let rank = load16(&g.s.rank[p]);
                let rank = _mm512_mask_mov_epi32(rank, after, load16(&g.s.rank[p + 1]));
                store16(&mut g.s.rank[p], rank);
            }
            let len = _mm512_mask_sub_epi32(g.len, active, g.len, one);
            g.len = len;
            g.pos = pos;
            g.rows = _mm512_reduce_max_epu32(len) as usize;
            // the new pairs: the merged token with its neighbours
            g.left = _mm512_mask_cmpgt_epi32_mask(active, pos, _mm512_setzero_si512());
            let right = _mm512_mask_cmplt_epi32_mask(active, _mm512_add_epi32(pos, one), len);
            // (`whole_absent`: two symbols left are the piece's tokens)
            let open = if whole_absent {
                _mm512_cmpneq_epi32_mask(len, _mm512_set1_epi32(2))
            } else {
                u16::MAX
            };
            g.look_left = g.left & open;
            g.look_right = right & open;
            // their keys and homes, and the homes prefetched (lanes with
            // nothing to look up: the first slot, one line for all)
            let no_id = _mm512_set1_epi32(NO_ID as i32);
            let (a, m, b) = (
                _mm512_min_epu32(a, no_id),
                _mm512_min_epu32(best, no_id),
                _mm512_min_epu32(b, no_id),
            );
            let key = |x: __m256i, y: __m256i| {
                _mm512_or_si512(
                    _mm512_slli_epi64(_mm512_cvtepu32_epi64(x), FIELD),
                    _mm512_cvtepu32_epi64(y),
                )
            };
            let lo = |v: __m512i| _mm512_castsi512_si256(v);
            let hi = |v: __m512i| _mm512_extracti64x4_epi64::<1>(v);
            g.keys = [
                key(lo(a), lo(m)),
                key(hi(a), hi(m)),
                key(lo(m), lo(b)),
                key(hi(m), hi(b)),
            ];
            let k = _mm512_set1_epi64(0x9E37_79B9_7F4A_7C15u64 as i64);
            let looks = [
                g.look_left as u8,
                (g.look_left >> 8) as u8,
                g.look_right as u8,
                (g.look_right >> 8) as u8,
            ];
            let mut lines = [0u64; 32];
            let base = _mm512_set1_epi64(slots as i64);
            for i in 0..4 {
                let home = _mm512_and_si512(_mm512_srl_epi64(_mm512_mullo_epi64(g.keys[i], k), shift), table_mask);
                g.homes[i] = home;
                let line = _mm512_maskz_slli_epi64(looks[i], home, 3);
                // SAFETY: eight u64 from `8 * i` (i < 4) in `lines`
                unsafe { _mm512_storeu_si512(lines[8 * i..].as_mut_ptr().cast(), _mm512_add_epi64(line, base)) };
            }
            for &line in &lines {
                _mm_prefetch::<_MM_HINT_T0>(line as *const i8);
            }
        }
    }
}

/// The ranks of eight pairs (`keys`, at `homes`) in `merges` (by id),
/// from gathers of the two slots `rank_at` reads; `NO_MERGE` in lanes
/// outside `mask` and for pairs that do not merge. Pairs further from
/// home than two slots (rare) are looked up one by one.
///
/// # Safety
/// `slots` are `merges`' slots, and every home masked by `table_mask` is
/// one of them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq")]
#[inline]
unsafe fn ranks_at(
    slots: *const i64,
    key: std::arch::x86_64::__m512i,
    home: std::arch::x86_64::__m512i,
    table_mask: std::arch::x86_64::__m512i,
    mask: u8,
    merges: &PairTable,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    if mask == 0 {
        return _mm256_set1_epi32(NO_MERGE);
    }
    let next = _mm512_and_si512(_mm512_add_epi64(home, _mm512_set1_epi64(1)), table_mask);
    let empty = _mm512_set1_epi64(EMPTY as i64);
    // SAFETY: `home` and `next` are within the table (`table_mask`), whose
    // slots are at `slots` (the caller's promise)
    let (s0, s1) = unsafe {
        (
            _mm512_mask_i64gather_epi64::<8>(empty, mask, home, slots),
            _mm512_mask_i64gather_epi64::<8>(empty, mask, next, slots),
        )
    };
    let key_mask = _mm512_set1_epi64(KEY_MASK as i64);
    let hit0 = _mm512_cmpeq_epi64_mask(_mm512_and_si512(s0, key_mask), key);
    let hit1 = _mm512_cmpeq_epi64_mask(_mm512_and_si512(s1, key_mask), key);
    let slot = _mm512_mask_mov_epi64(s1, hit0, s0);
    let rank = _mm512_and_si512(_mm512_srli_epi64(slot, 2 * FIELD), _mm512_set1_epi64(FIELD_MASK as i64));
    let mut rank = _mm512_mask_mov_epi64(_mm512_set1_epi64(NO_MERGE as i64), hit0 | hit1, rank);
    let far = mask & !(hit0 | hit1) & _mm512_test_epi64_mask(s0, _mm512_set1_epi64(FAR as i64));
    if far != 0 {
        let mut r = [0i64; 8];
        let (mut k, mut t) = ([0u64; 8], [0u64; 8]);
        // SAFETY: each array is 64 writable bytes
        unsafe {
            _mm512_storeu_si512(r.as_mut_ptr().cast(), rank);
            _mm512_storeu_si512(k.as_mut_ptr().cast(), key);
            _mm512_storeu_si512(t.as_mut_ptr().cast(), home);
        }
        let mut bits = far;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            r[i] = merges.rank_far(k[i], t[i] as usize).0 as i64;
            bits &= bits - 1;
        }
        // SAFETY: `r` is 64 readable bytes
        rank = unsafe { _mm512_loadu_si512(r.as_ptr().cast()) };
    }
    _mm512_cvtepi64_epi32(rank)
}

/// Whether `merge_bytes_many_wide` (and `_wider`) works on this CPU.
pub fn wide_lanes() -> bool {
    crate::has_avx2()
}

/// The tokens of the pieces (of 1 to `W - 1` bytes) that need no merging,
/// each byte its token: a single byte, and with `whole_absent` (the whole
/// piece is no token) two bytes, whose only merge would make the whole.
/// Returns the longest such length; the lanes merge the longer pieces.
#[inline(always)]
fn bytes_as_tokens<'a, const W: usize>(
    count: usize,
    piece: &impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    ids: &mut [[u32; W]],
    counts: &mut [u8],
    whole_absent: bool,
) -> usize {
    let at_once = 1 + whole_absent as usize;
    for k in 0..count {
        let p = piece(k);
        debug_assert!((1..W).contains(&p.len()));
        if p.len() <= at_once {
            for (i, &b) in p.iter().enumerate() {
                ids[k][i] = byte_ids[b as usize];
            }
            counts[k] = p.len() as u8;
        }
    }
    at_once
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn merge_bytes_many_with<'a, const W: usize, R: RankVec<W>>(
    count: usize,
    piece: impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &impl PairLookup,
    ids: &mut [[u32; W]],
    counts: &mut [u8],
    whole_absent: bool,
) {
    debug_assert!(ids.len() >= count && counts.len() >= count);
    let at_once = bytes_as_tokens(count, &piece, byte_ids, ids, counts, whole_absent);
    let pad = merges.locate(PAD, PAD);
    let mut taken = 0;
    // the next piece that needs merging
    let mut next_piece = || {
        while taken < count {
            let (k, p) = (taken, piece(taken));
            taken += 1;
            if p.len() > at_once {
                return Some((k, p));
            }
        }
        None
    };
    // (only as many lanes as there are pieces are made: a flush of a few
    // long pieces would otherwise spend more on setting lanes up than on
    // merging)
    let mut store = [const { std::mem::MaybeUninit::<Lane<W>>::uninit() }; LANES];
    let mut busy = 0;
    while busy < LANES {
        let Some((k, p)) = next_piece() else { break };
        let mut lane = Lane::FREE;
        lane.start(k, p, byte_ids, table, pad);
        store[busy].write(lane);
        busy += 1;
    }
    // SAFETY: the first `busy` lanes were written just above
    let lanes = unsafe { std::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<Lane<W>>(), busy) };
    // start a lane on the next piece that needs merging
    let mut take = |lane: &mut Lane<W>| {
        if let Some((k, p)) = next_piece() {
            lane.start(k, p, byte_ids, table, pad);
            return true;
        }
        lane.piece = usize::MAX;
        false
    };
    while busy > 0 {
        for lane in lanes.iter_mut() {
            if lane.piece == usize::MAX || !lane.step::<R>(merges, whole_absent) {
                continue;
            }
            let k = lane.piece;
            counts[k] = lane.finish(&mut ids[k]);
            if !take(lane) {
                busy -= 1;
            }
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

fn merge_heap(syms: &mut Vec<(u32, u32)>, merges: &impl PairLookup, dropout: f32) {
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
    fn byte_table_merge_agrees_with_scan() {
        // bytes 0..4 are tokens 10..14; a few merges between them and their results
        let mut byte_ids = [u32::MAX; 256];
        for b in 0..4u32 {
            byte_ids[b as usize] = 10 + b;
        }
        let mut merges = Merges::default();
        merges.insert((10, 11), (3, 20));
        merges.insert((11, 12), (1, 21));
        merges.insert((20, 12), (2, 22));
        merges.insert((21, 21), (0, 23));
        merges.insert((13, 13), (5, 24));
        let pairs = byte_pair_table(&merges, &byte_ids);
        let mut x = 99u64;
        for len in 0..=SHORT + 1 {
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((x >> 33) % 4) as u8
                })
                .collect();
            let mut a = Vec::new();
            if !merge_bytes(&piece, &byte_ids, &pairs, &merges, &mut a) {
                assert!(len > SHORT);
                continue;
            }
            let mut b: Vec<(u32, u32)> = piece.iter().map(|&c| (byte_ids[c as usize], 1)).collect();
            merge_symbols(&mut b, &merges, None);
            assert_eq!(a, b, "{piece:?}");
        }
    }

    #[test]
    fn rank_at_finds_pairs_near_and_far_from_home() {
        // enough pairs that linear probing puts some two or more slots past
        // their home; merged ids in rank order (the table ranks by id) and
        // not (it keeps the ranks)
        for by_id in [true, false] {
            let mut merges = Merges::default();
            let mut x = 7u64;
            let mut next = || {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 40) as u32 % 5000
            };
            for r in 0..20_000u32 {
                let id = if by_id {
                    100_000 + r
                } else {
                    100_000 + (r * 7919) % 20_000
                };
                let (a, b) = (next(), next());
                merges.entry((a, b)).or_insert((r, id));
            }
            let table = PairTable::new(&merges);
            assert_eq!(table.by_id, by_id);
            let far = table.slots.iter().filter(|&&s| s != EMPTY && s & FAR != 0).count();
            assert!(far > 100, "{far} far homes");
            for (&(a, b), &(rank, id)) in &merges {
                let rank = if by_id { id } else { rank };
                assert_eq!(table.rank_at(a, b, table.locate(a, b)), (rank as i32, id), "{a} {b}");
                assert_eq!(table.pair(a, b), Some((rank, id)));
            }
            let mut absent = 0;
            for _ in 0..50_000 {
                let (a, b) = (next(), next() + 3000);
                if !merges.contains_key(&(a, b)) {
                    absent += 1;
                    assert_eq!(table.rank_at(a, b, table.locate(a, b)), (NO_MERGE, 0));
                    assert_eq!(table.pair(a, b), None);
                }
            }
            assert!(absent > 40_000);
            // the padding symbol merges with nothing
            assert_eq!(table.rank_at(PAD, PAD, table.locate(PAD, PAD)), (NO_MERGE, 0));
        }
    }

    /// Bytes 0..4 as tokens 10..14, merges that overlap and chain, and
    /// 400 pieces of 1 to `max` of those bytes.
    fn toy_pieces(max: usize) -> ([u32; 256], Merges, Vec<Vec<u8>>) {
        let mut byte_ids = [u32::MAX; 256];
        for b in 0..4u32 {
            byte_ids[b as usize] = 10 + b;
        }
        let mut merges = Merges::default();
        for (k, &(a, b)) in [
            (10, 11),
            (11, 12),
            (20, 12),
            (21, 21),
            (13, 13),
            (22, 10),
            (24, 24),
            (12, 10),
            (25, 23),
        ]
        .iter()
        .enumerate()
        {
            merges.insert((a, b), (20 + k as u32, 20 + k as u32));
        }
        let mut x = 5u64;
        let pieces: Vec<Vec<u8>> = (0..400)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let len = 1 + (x >> 33) as usize % max;
                (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        ((x >> 33) % 4) as u8
                    })
                    .collect()
            })
            .collect();
        (byte_ids, merges, pieces)
    }

    #[test]
    fn many_at_once_merge_like_one_at_a_time() {
        let (byte_ids, merges, pieces) = toy_pieces(MANY_MAX);
        let table = PairTable::new(&merges);
        let bytes = byte_pair_table(&table, &byte_ids);
        let want: Vec<Vec<u32>> = pieces
            .iter()
            .map(|p| {
                let mut syms = Vec::new();
                assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
                syms.iter().map(|s| s.0).collect()
            })
            .collect();
        assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 3));
        // batches of every size around the lane count, through both lookups
        let mut start = 0;
        for size in [1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 3, 40, 300]
            .into_iter()
            .cycle()
        {
            if start >= pieces.len() {
                break;
            }
            let end = (start + size).min(pieces.len());
            let batch: Vec<&[u8]> = pieces[start..end].iter().map(Vec::as_slice).collect();
            let mut ids = vec![[0u32; MANY_MAX + 1]; batch.len()];
            let mut counts = vec![0u8; batch.len()];
            merge_bytes_many(
                batch.len(),
                |i| batch[i],
                &byte_ids,
                &bytes,
                &table,
                &mut ids,
                &mut counts,
                false,
            );
            for (k, w) in want[start..end].iter().enumerate() {
                assert_eq!(&ids[k][..counts[k] as usize], &w[..], "{:?}", batch[k]);
            }
            let mut counts2 = vec![0u8; batch.len()];
            merge_bytes_many(
                batch.len(),
                |i| batch[i],
                &byte_ids,
                &bytes,
                &merges,
                &mut ids,
                &mut counts2,
                false,
            );
            assert_eq!(counts, counts2);
            // the portable (SSE2) lanes too, whatever this machine has
            let mut ids3 = vec![[0u32; MANY_MAX + 1]; batch.len()];
            let mut counts3 = vec![0u8; batch.len()];
            merge_bytes_many_with::<16, Ranks>(
                batch.len(),
                |i| batch[i],
                &byte_ids,
                &bytes,
                &table,
                &mut ids3,
                &mut counts3,
                false,
            );
            assert_eq!(counts, counts3);
            for k in 0..batch.len() {
                assert_eq!(ids[k][..counts[k] as usize], ids3[k][..counts[k] as usize]);
            }
            start = end;
        }
    }

    #[test]
    fn wide_lanes_merge_like_one_at_a_time() {
        let (byte_ids, merges, pieces) = toy_pieces(WIDE_MAX);
        let table = PairTable::new(&merges);
        let bytes = byte_pair_table(&table, &byte_ids);
        let want: Vec<Vec<u32>> = pieces
            .iter()
            .map(|p| {
                let mut syms = Vec::new();
                assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
                syms.iter().map(|s| s.0).collect()
            })
            .collect();
        // pieces that use the lanes' second half, and merge a lot
        assert!(pieces.iter().filter(|p| p.len() > MANY_MAX).count() > 150);
        assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 8));
        let mut wide = wide_lanes();
        if !wide {
            eprintln!("no wide lanes on this machine: only the portable ones tested");
        }
        for size in [1, LANES, LANES + 1, 37, 400] {
            for (c, batch) in pieces.chunks(size).enumerate() {
                let k = batch.len();
                let (mut ids, mut counts) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
                // the portable lanes, on any machine
                merge_bytes_many_with::<32, RankArray<32>>(
                    k,
                    |i| &batch[i],
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids,
                    &mut counts,
                    false,
                );
                for (i, w) in want[c * size..][..k].iter().enumerate() {
                    assert_eq!(&ids[i][..counts[i] as usize], &w[..], "{:?}", batch[i]);
                }
                let (mut ids2, mut counts2) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
                wide = merge_bytes_many_wide(
                    k,
                    |i| &batch[i],
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids2,
                    &mut counts2,
                    false,
                );
                assert_eq!(wide, wide_lanes());
                if wide {
                    assert_eq!(counts, counts2);
                    for i in 0..k {
                        assert_eq!(ids[i][..counts[i] as usize], ids2[i][..counts[i] as usize]);
                    }
                }
            }
        }
    }

    /// Merges that chain (each from two tokens made before it, ranked by
    /// the id they make), over eight byte tokens, enough of them that the
    /// pair table has pairs two or more slots from home; and `count` pieces
    /// of 1 to `max` of those bytes.
    fn chained_pieces(max: usize, count: usize) -> ([u32; 256], Merges, Vec<Vec<u8>>) {
        let mut byte_ids = [u32::MAX; 256];
        for b in 0..8u32 {
            byte_ids[b as usize] = b;
        }
        let mut x = 11u64;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut merges = Merges::default();
        let mut id = 8u32;
        while id < 6000 {
            // (mostly recent tokens, so that merges build on merges)
            let pick = |r: u64| {
                if r.is_multiple_of(3) {
                    r % id as u64
                } else {
                    id as u64 - 1 - r % (id as u64).min(64)
                }
            };
            let (a, b) = (pick(next(1 << 20)) as u32, pick(next(1 << 20)) as u32);
            if let std::collections::hash_map::Entry::Vacant(e) = merges.entry((a, b)) {
                e.insert((id, id));
                id += 1;
            }
        }
        let pieces = (0..count)
            .map(|_| {
                let len = 1 + next(max as u64) as usize;
                (0..len).map(|_| next(8) as u8).collect()
            })
            .collect();
        (byte_ids, merges, pieces)
    }

    /// Sixteen pieces a vector (`merge_bytes_across`) merge like one piece
    /// at a time, with and without `whole_absent`, in batches of every size
    /// around a group and past the stack's room for the pieces' order
    /// (256); pairs far from their home in the pair table are found.
    #[test]
    fn pieces_merged_across_vector_lanes_merge_like_one_at_a_time() {
        let (byte_ids, merges, pieces) = chained_pieces(MANY_MAX, 3000);
        let table = PairTable::new(&merges);
        assert!(table.by_id);
        let far = table.slots.iter().filter(|&&s| s != EMPTY && s & FAR != 0).count();
        assert!(far > 20, "{far} far homes");
        let bytes = byte_pair_table(&table, &byte_ids);
        let want: Vec<Vec<u32>> = pieces
            .iter()
            .map(|p| {
                let mut syms = Vec::new();
                assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
                syms.iter().map(|s| s.0).collect()
            })
            .collect();
        // pieces that merge into one, into many, and not at all
        assert!(want.iter().filter(|w| w.len() == 1).count() > 50);
        assert!(want.iter().any(|w| w.len() > 6));
        assert!(want.iter().zip(&pieces).any(|(w, p)| p.len() > 3 && w.len() == p.len()));
        assert_eq!(across_applies(&table), across_lanes());
        if !across_lanes() {
            eprintln!("this CPU lacks AVX-512 F/DQ: only merge_bytes_across's fallback to the scalar lanes is tested");
        }
        for whole_absent in [false, true] {
            // (with `whole_absent`: only pieces whose whole is no token)
            let chosen: Vec<usize> = (0..pieces.len())
                .filter(|&i| !whole_absent || want[i].len() != 1)
                .collect();
            let mut start = 0;
            for size in [1, 2, ACROSS - 1, ACROSS, ACROSS + 1, 40, 64, 65, 300]
                .into_iter()
                .cycle()
            {
                if start >= chosen.len() {
                    break;
                }
                let batch = &chosen[start..(start + size).min(chosen.len())];
                let (mut ids, mut counts) = (vec![[0u32; MANY_MAX + 1]; batch.len()], vec![0u8; batch.len()]);
                let piece = |i: usize| pieces[batch[i]].as_slice();
                merge_bytes_across(
                    batch.len(),
                    piece,
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids,
                    &mut counts,
                    whole_absent,
                );
                for (k, &i) in batch.iter().enumerate() {
                    assert_eq!(
                        &ids[k][..counts[k] as usize],
                        &want[i][..],
                        "{:?} {whole_absent}",
                        pieces[i]
                    );
                }
                start += batch.len();
            }
        }
        // merges not ranked by the ids they make: the scalar lanes' work
        let mut other = merges.clone();
        for (k, (_, v)) in other.iter_mut().enumerate() {
            v.1 = 100_000 + (k as u32 * 7919) % 10_000;
        }
        let other = PairTable::new(&other);
        assert!(!other.by_id && !across_applies(&other));
    }

    /// With `whole_absent`, a piece stops merging when two symbols are left
    /// (or is two bytes): the same tokens as merging to the end, for every
    /// piece whose whole is no token (in these toy merges: those that do
    /// not merge into one), narrow and wide lanes alike.
    #[test]
    fn lanes_stop_at_two_symbols_when_the_whole_piece_is_no_token() {
        for max in [MANY_MAX, WIDE_MAX] {
            let (byte_ids, merges, pieces) = toy_pieces(max);
            let table = PairTable::new(&merges);
            let bytes = byte_pair_table(&table, &byte_ids);
            let (pieces, want): (Vec<Vec<u8>>, Vec<Vec<u32>>) = pieces
                .into_iter()
                .map(|p| {
                    let mut syms = Vec::new();
                    assert!(merge_bytes(&p, &byte_ids, &bytes, &merges, &mut syms));
                    (p, syms.iter().map(|s| s.0).collect::<Vec<u32>>())
                })
                .filter(|(_, w)| w.len() != 1)
                .unzip();
            // pieces that reach two symbols after merging, and two-byte ones
            assert!(want.iter().filter(|w| w.len() == 2).count() > 10);
            assert!(pieces.iter().any(|p| p.len() == 2) && pieces.iter().any(|p| p.len() > 8));
            for batch in (0..pieces.len()).collect::<Vec<_>>().chunks(LANES + 3) {
                let k = batch.len();
                let piece = |i: usize| pieces[batch[i]].as_slice();
                let got: Vec<Vec<u32>> = if max == MANY_MAX {
                    let (mut ids, mut counts) = (vec![[0u32; MANY_MAX + 1]; k], vec![0u8; k]);
                    merge_bytes_many(k, piece, &byte_ids, &bytes, &table, &mut ids, &mut counts, true);
                    (0..k).map(|i| ids[i][..counts[i] as usize].to_vec()).collect()
                } else {
                    let (mut ids, mut counts) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
                    merge_bytes_many_with::<32, RankArray<32>>(
                        k,
                        piece,
                        &byte_ids,
                        &bytes,
                        &table,
                        &mut ids,
                        &mut counts,
                        true,
                    );
                    (0..k).map(|i| ids[i][..counts[i] as usize].to_vec()).collect()
                };
                for (i, &j) in batch.iter().enumerate() {
                    assert_eq!(got[i], want[j], "{:?}", pieces[j]);
                }
            }
        }
    }

    /// Lanes of 64 (pieces of up to `WIDER_MAX` bytes, past what
    /// `merge_bytes` takes) merge like the general merge of the same bytes,
    /// the portable lanes on any machine and the vector ones where the CPU
    /// has them; with `whole_absent`, pieces that do not merge into one
    /// stop at two symbols with the same tokens.
    #[test]
    fn wider_lanes_merge_like_the_general_merge() {
        let (byte_ids, merges, pieces) = toy_pieces(WIDER_MAX);
        let table = PairTable::new(&merges);
        let bytes = byte_pair_table(&table, &byte_ids);
        let want: Vec<Vec<u32>> = pieces
            .iter()
            .map(|p| {
                let mut syms: Vec<(u32, u32)> = p.iter().map(|&b| (byte_ids[b as usize], 1)).collect();
                merge_symbols(&mut syms, &merges, None);
                syms.iter().map(|s| s.0).collect()
            })
            .collect();
        // pieces past the wide lanes and past `merge_bytes`, merging a lot
        assert!(pieces.iter().filter(|p| p.len() > SHORT).count() > 50);
        assert!(pieces.iter().filter(|p| p.len() > WIDE_MAX).count() > 150);
        assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 16));
        if !wide_lanes() {
            eprintln!("no wide lanes on this machine: only the portable wider ones tested");
        }
        for whole_absent in [false, true] {
            // (`whole_absent` is only ever set for pieces that are no token)
            let chosen: Vec<usize> = (0..pieces.len())
                .filter(|&j| !whole_absent || want[j].len() != 1)
                .collect();
            for batch in chosen.chunks(LANES + 5) {
                let k = batch.len();
                let piece = |i: usize| pieces[batch[i]].as_slice();
                let (mut ids, mut counts) = (vec![[0u32; WIDER_MAX + 1]; k], vec![0u8; k]);
                merge_bytes_many_with::<64, RankArray<64>>(
                    k,
                    piece,
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids,
                    &mut counts,
                    whole_absent,
                );
                let (mut ids2, mut counts2) = (vec![[0u32; WIDER_MAX + 1]; k], vec![0u8; k]);
                let vector = merge_bytes_many_wider(
                    k,
                    piece,
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids2,
                    &mut counts2,
                    whole_absent,
                );
                assert_eq!(vector, wide_lanes());
                for (i, &j) in batch.iter().enumerate() {
                    assert_eq!(&ids[i][..counts[i] as usize], &want[j][..], "{:?}", pieces[j]);
                    if vector {
                        assert_eq!(&ids2[i][..counts2[i] as usize], &want[j][..], "{:?}", pieces[j]);
                    }
                }
            }
        }
    }

    /// `RankVec::with` and `lowest` against a plain array.
    fn rank_vec_like_an_array<const W: usize, R: RankVec<W>>() {
        let mut x = 11u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for _ in 0..2000 {
            // few distinct ranks, so that the lowest is often repeated
            let mut rank = [NO_MERGE; W];
            for r in rank.iter_mut() {
                if next(3) > 0 {
                    *r = next(6) as i32;
                }
            }
            let (i, j) = (next(W as u64) as usize, next(W as u64) as usize);
            let (ri, rj) = (next(6) as i32, if next(4) == 0 { NO_MERGE } else { next(6) as i32 });
            let got = R::load(&rank).with(i, ri).with(j, rj).lowest();
            rank[i] = ri;
            rank[j] = rj;
            let best = *rank.iter().min().unwrap();
            let hits = (0..W).filter(|&k| rank[k] == best).fold(0u64, |m, k| m | (1 << k));
            assert_eq!(got, (best, hits), "{rank:?}");
        }
    }

    #[test]
    fn rank_vectors_find_the_lowest_and_where() {
        rank_vec_like_an_array::<16, Ranks>();
        rank_vec_like_an_array::<32, RankArray<32>>();
        rank_vec_like_an_array::<64, RankArray<64>>();
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is there.
            unsafe { avx2_rank_vec() };
        } else {
            eprintln!("no AVX2 on this machine: its rank vectors not tested");
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F is there.
            unsafe { avx512_rank_vec() };
        } else {
            eprintln!("no AVX-512F on this machine: its rank vector not tested");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2_rank_vec() {
        rank_vec_like_an_array::<16, Ranks8>();
        rank_vec_like_an_array::<32, Ranks32>();
        rank_vec_like_an_array::<64, Ranks64>();
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_rank_vec() {
        rank_vec_like_an_array::<32, Ranks32x2>();
        rank_vec_like_an_array::<64, Ranks64x4>();
    }

    /// Pseudo-random 31-bit numbers from `seed` (a linear congruential
    /// generator: the tests' pairs, the same every run).
    fn lcg(mut x: u64) -> impl FnMut() -> u32 {
        move || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as u32
        }
    }

    #[test]
    fn the_pair_filter_turns_most_pairs_that_do_not_merge_away() {
        // 50K merges of ids below 100K, as in a rank file; then pairs of
        // such ids that do not merge: about one in thirty gets past the
        // filter (two bits a pair, ten bits a merge), every merge does
        let mut merges = Merges::default();
        let mut ids = lcg(11);
        let mut next = || ids() % 100_000;
        for rank in 0..50_000u32 {
            merges.insert((next(), next()), (rank, 100_000 + rank));
        }
        let t = PairTable::new(&merges);
        let passes = |a: u32, b: u32| {
            let (w, bits) = t.filter_bits(PairTable::key(a, b));
            t.filter[w] & bits == bits
        };
        assert!(merges.keys().all(|&(a, b)| passes(a, b)));
        let (mut tried, mut passed) = (0, 0);
        while tried < 200_000 {
            let (a, b) = (next(), next());
            if !merges.contains_key(&(a, b)) {
                tried += 1;
                passed += passes(a, b) as usize;
            }
        }
        assert!(passed * 20 < tried, "{passed} of {tried} pairs passed");
    }

    #[test]
    fn pair_table_answers_like_the_map() {
        let mut merges = Merges::default();
        let mut next = lcg(7);
        for rank in 0..5000u32 {
            merges.insert((next() % 300, next() % 300), (rank, 1000 + rank * 2));
        }
        // ranks in id order: ranked by id; once two merges make one token, by rank
        let by_id = PairTable::new(&merges);
        assert!(by_id.by_id);
        let mut twice = merges.clone();
        twice.insert((7000, 7001), (9000, 1000));
        let by_rank = PairTable::new(&twice);
        assert!(!by_rank.by_id);
        for a in 0..300 {
            for b in 0..300 {
                let want = merges.get(&(a, b)).copied();
                assert_eq!(by_id.pair(a, b), want.map(|(_, id)| (id, id)), "({a}, {b})");
                assert_eq!(by_rank.pair(a, b), want, "({a}, {b})");
            }
        }
        assert_eq!(by_rank.pair(7000, 7001), Some((9000, 1000)));
        let t = by_id;
        // ids far apart, and an empty table
        assert_eq!(t.pair(u32::MAX - 1, 0), None);
        assert_eq!(PairTable::new(&Merges::default()).pair(1, 2), None);
    }

    #[test]
    fn pair_tables_too_large_for_a_slot_answer_like_the_map() {
        // ids past a slot's field (more than two million tokens), and ranks
        // that each make two ids: the map answers, the same as it would
        let mut x = 3u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as u32 % 400
        };
        let mut big_ids = Merges::default();
        let mut shared_rank = Merges::default();
        for r in 0..3000u32 {
            let (a, b) = (next(), next());
            big_ids.entry((a, b)).or_insert((r, 3_000_000 + r));
            shared_rank.entry((a, b)).or_insert((r / 2, 1000 + (r * 7919) % 3000));
        }
        big_ids.insert((5_000_000, 7), (4000, 5_000_001));
        for merges in [big_ids, shared_rank] {
            let table = PairTable::new(&merges);
            assert!(table.big.is_some());
            for a in (0..400).chain([5_000_000, PAD]) {
                for b in (0..400).chain([7, PAD]) {
                    let want = merges.get(&(a, b)).copied();
                    let want = want.map(|(rank, id)| if table.by_id { (id, id) } else { (rank, id) });
                    assert_eq!(table.pair(a, b), want, "({a}, {b})");
                    let ranked = want.map_or((NO_MERGE, 0), |(rank, id)| (rank as i32, id));
                    assert_eq!(table.rank_at(a, b, table.locate(a, b)), ranked, "({a}, {b})");
                }
            }
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
