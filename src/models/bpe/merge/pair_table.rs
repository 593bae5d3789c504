//! The merges as one flat open-addressing table (`PairTable`): the
//! encoding hot path's `PairLookup`.

use super::*;

/// The merges as one flat open-addressing table, for the encoding hot path:
/// a pair and its rank packed in 8 bytes (see `PairTable::new`), so that a
/// lookup reads one cache line, and the table is half the size a slot of
/// two ids, a rank and an id would make it (cl100k: 2 MB, o200k: 4 MB; a
/// cold piece's merges wait for it). Two bits of one word per pair in
/// front (`filter`, a few hundred KB) turn most pairs that do not merge
/// away without reading the table, where a lookup is not prefetched
/// (`pair`: the backtracking encoder's compatibility checks, most of whose
/// pairs do not merge; one bit a pair let too many through).
pub struct PairTable {
    /// Each merge ranked by its merged id (same order as the ranks): a
    /// slot's rank is its id. Otherwise the id is `ids[rank]`.
    pub by_id: bool,
    /// `pack(a, b, rank)`; `EMPTY` for none
    pub(super) slots: Box<[u64]>,
    pub(super) shift: u32,
    pub(super) mask: usize,
    pub(super) filter: Box<[u64]>,
    filter_shift: u32,
    /// merged id by rank (when not `by_id`)
    ids: Box<[u32]>,
    /// Merges whose ids or ranks do not fit a slot's fields (more than two
    /// million tokens): looked up here, the slots left empty.
    pub(super) big: Option<Box<Merges>>,
}

/// Bits of each of a slot's three fields: first id, second id, rank.
pub(super) const FIELD: u32 = 21;

/// Mask of a field.
pub(super) const FIELD_MASK: u64 = (1 << FIELD) - 1;

/// A slot's pair (its two id fields).
pub(super) const KEY_MASK: u64 = (1 << (2 * FIELD)) - 1;

/// No slot: both id fields all ones (no merge has that id), rank 0, no
/// `FAR`.
pub(super) const EMPTY: u64 = KEY_MASK;

/// The id field of a symbol no merge has (`PAD`, any id past the table's):
/// one below the all-ones of `EMPTY`, so that the key of two of them is
/// not an empty slot's.
pub(super) const NO_ID: u64 = FIELD_MASK - 1;

/// Set in a slot (its top bit) when some pair whose home it is lies two or
/// more slots further: `rank_at` reads two slots and looks further only
/// then. (An empty slot is nobody's home: it is never set there.)
pub(super) const FAR: u64 = 1 << 63;

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
    pub(super) fn key(a: u32, b: u32) -> u64 {
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
    pub(super) fn filter_bits(&self, key: u64) -> (usize, u64) {
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
    pub(super) fn rank_far(&self, key: u64, at: usize) -> (i32, u32) {
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
            crate::prefetch::prefetch(slot);
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
