//! The per-thread cache of encoded chunks: chunk bytes -> ids.
//!
//! Short chunks (up to `KEY_MAX` bytes, with at most `SLOT_IDS` ids) live
//! in a four-way set-associative table of 64-byte slots: the chunk, zero
//! padded with its length in the last byte, and its ids. A new chunk takes
//! the set's last way (the first empty one), and moves up a way each time
//! it is met again, so the many chunks met once do not push out those met
//! often; four ways, not two, so that the few sets that three or more
//! recurring chunks share do not thrash. The walk asks for a chunk's set
//! (`prefetch`) some chunks before it reads it. Longer chunks (up to
//! `LONG_MAX` bytes: runs of indentation before a word, rules of `─`) go to
//! a hash map of at most `LONG_ENTRIES`, cleared when full. A thread keeps
//! one cache for each of the last `MODELS` models it encoded with (told
//! apart by their `generation`): at most `MODELS * (SLOTS * 64 +
//! LONG_ENTRIES * ~(LONG_MAX + 4 * LONG_MAX))` bytes, about 2 × (4 + 10) MB
//! in the worst case, 2 × 4.5 MB in practice, plus each model's line memo
//! (`lines`: at most about 14 MB, nothing until a text of 4 KB or more). (The table is larger than
//! the core's L2 on purpose: English text has ~17K distinct chunks a MB,
//! and a miss, a merge, costs far more than a slot read from L3.) The cache never decides a
//! result: an entry's ids are those the merge gave for exactly its key.

use super::lines::LineMemo;
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// The longest chunk a slot holds, in bytes.
pub(super) const KEY_MAX: usize = 31;
const SLOT_IDS: usize = 7;
const WAYS: usize = 4;
const SET_BITS: u32 = 14;
const SLOTS: usize = WAYS << SET_BITS;
const MODELS: usize = 2;
const LONG_MAX: usize = 256;
const LONG_ENTRIES: usize = 8192;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    key: [u64; 4],
    ids: [u32; SLOT_IDS],
    n: u32,
}

const EMPTY: Slot = Slot {
    key: [0; 4],
    ids: [0; SLOT_IDS],
    n: 0,
};

pub(super) struct ChunkCache {
    generation: u64,
    slots: Box<[Slot]>,
    long: FxHashMap<Box<[u8]>, Box<[u32]>>,
    /// whole lines met again (used where the model's `Fused::lines`)
    pub memo: LineMemo,
}

/// A chunk as a slot key: its bytes, zero padded, the length last.
#[inline(always)]
pub(super) fn key_of(chunk: &[u8]) -> [u64; 4] {
    debug_assert!(chunk.len() <= KEY_MAX);
    let mut b = [0u8; 32];
    b[..chunk.len()].copy_from_slice(chunk);
    b[31] = chunk.len() as u8;
    let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or_default());
    [w(0), w(1), w(2), w(3)]
}

/// `KEY_MASKS[len]`: the bytes of a key's words that a chunk of `len`
/// bytes fills.
const KEY_MASKS: [[u64; 4]; KEY_MAX + 1] = {
    let mut masks = [[0u64; 4]; KEY_MAX + 1];
    let mut len = 0;
    while len <= KEY_MAX {
        let mut i = 0;
        while i < 4 {
            let keep = len.saturating_sub(i * 8);
            masks[len][i] = if keep >= 8 { u64::MAX } else { (1u64 << (8 * keep)) - 1 };
            i += 1;
        }
        len += 1;
    }
    masks
};

/// `key_of(&text[start..start + len])`, read as whole words when the text
/// has 32 bytes from `start` (no copy of a variable length).
#[inline(always)]
pub(super) fn key_at(text: &[u8], start: usize, len: usize) -> [u64; 4] {
    debug_assert!(len <= KEY_MAX);
    let (Some(window), Some(mask)) = (text.get(start..start + 32), KEY_MASKS.get(len)) else {
        return key_of(&text[start..start + len]);
    };
    let word = |i: usize| u64::from_le_bytes(window[i * 8..i * 8 + 8].try_into().unwrap_or_default()) & mask[i];
    [word(0), word(1), word(2), word(3) | (len as u64) << 56]
}

/// The first slot of the key's set.
#[inline(always)]
pub(super) fn set_of(key: &[u64; 4]) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    // most chunks fit the first word: it is multiplied on its own so that
    // all its bytes reach the top bits the set is taken from
    let h = key[0].wrapping_mul(K) ^ (key[1] ^ key[2].rotate_left(29) ^ key[3]).wrapping_mul(K.rotate_left(17));
    ((h >> (64 - SET_BITS)) as usize) * WAYS
}

impl ChunkCache {
    fn new(generation: u64) -> Self {
        ChunkCache {
            generation,
            slots: vec![EMPTY; SLOTS].into_boxed_slice(),
            long: FxHashMap::default(),
            memo: LineMemo::new(),
        }
    }

    /// Start loading the set `set` (of `set_of`), so that a lookup a
    /// little later does not wait on memory.
    #[inline(always)]
    pub fn prefetch(&self, set: usize) {
        for slot in self.slots.iter().skip(set).take(2) {
            crate::prefetch::prefetch(slot);
        }
    }

    /// Push the ids of the chunk with `key` to `out`, if held.
    #[inline(always)]
    pub fn extend_from(&mut self, key: &[u64; 4], out: &mut Vec<u32>) -> bool {
        self.extend_from_set(set_of(key), key, out)
    }

    /// `extend_from` with the key's set already known.
    #[inline(always)]
    pub fn extend_from_set(&mut self, set: usize, key: &[u64; 4], out: &mut Vec<u32>) -> bool {
        let Some(way) = (0..WAYS).find(|&w| self.slots[set + w].key == *key) else {
            return false;
        };
        // met again: it moves up a way, away from the last, which new
        // chunks overwrite
        let at = set + way.saturating_sub(1);
        if way > 0 {
            self.slots.swap(at, set + way);
        }
        let s = &self.slots[at];
        // (a key with length > 0 is only ever stored with its ids, n >= 1)
        let len = out.len();
        out.reserve(SLOT_IDS);
        // SAFETY: `reserve` made room for `SLOT_IDS` more ids after `len`;
        // all `SLOT_IDS` are copied (a fixed size, no call to memcpy), the
        // first `n <= SLOT_IDS` of them are the chunk's and become the
        // vector's, the rest is spare capacity.
        unsafe {
            std::ptr::copy_nonoverlapping(s.ids.as_ptr(), out.as_mut_ptr().add(len), SLOT_IDS);
            out.set_len(len + s.n as usize);
        }
        true
    }

    /// Keep `ids` for the chunk with `key` (if they fit in a slot).
    #[inline]
    pub fn insert(&mut self, key: &[u64; 4], ids: &[u32]) {
        self.insert_at(set_of(key), key, ids)
    }

    /// `insert` with the key's set already known.
    #[inline]
    pub fn insert_at(&mut self, set: usize, key: &[u64; 4], ids: &[u32]) {
        if ids.is_empty() || ids.len() > SLOT_IDS {
            return;
        }
        // a new chunk takes the last way (the first empty one): a chunk
        // met once does not push out one met twice
        let way = set + (0..WAYS).find(|&w| self.slots[set + w].n == 0).unwrap_or(WAYS - 1);
        let s = &mut self.slots[way];
        s.key = *key;
        s.ids = [0; SLOT_IDS];
        s.ids[..ids.len()].copy_from_slice(ids);
        s.n = ids.len() as u32;
    }

    /// The ids of a chunk longer than `KEY_MAX`, if held.
    pub fn get_long(&self, chunk: &[u8]) -> Option<&[u32]> {
        self.long.get(chunk).map(|ids| &ids[..])
    }

    pub fn insert_long(&mut self, chunk: &[u8], ids: &[u32]) {
        if chunk.len() > LONG_MAX || ids.is_empty() {
            return;
        }
        if self.long.len() >= LONG_ENTRIES {
            self.long.clear();
        }
        self.long.insert(chunk.into(), ids.into());
    }
}

thread_local! {
    static CACHES: RefCell<Vec<ChunkCache>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's cache for the model `generation`.
pub(super) fn with_cache<R>(generation: u64, f: impl FnOnce(&mut ChunkCache) -> R) -> R {
    CACHES.with(|c| {
        let mut caches = c.borrow_mut();
        match caches.iter().position(|c| c.generation == generation) {
            // the one used last goes to the end, so the first is the one to evict
            Some(i) => {
                let c = caches.remove(i);
                caches.push(c);
            }
            None => {
                if caches.len() == MODELS {
                    caches.remove(0);
                }
                caches.push(ChunkCache::new(generation));
            }
        }
        let last = caches.len() - 1;
        f(&mut caches[last])
    })
}

/// A fresh model generation.
pub(super) fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(c: &mut ChunkCache, chunk: &[u8]) -> Option<Vec<u32>> {
        let mut out = vec![9];
        c.extend_from(&key_of(chunk), &mut out).then(|| out[1..].to_vec())
    }

    #[test]
    fn keys_tell_lengths_apart_and_slots_keep_ids() {
        assert_ne!(key_of(b"a"), key_of(b"a\0"));
        let mut c = ChunkCache::new(1);
        assert!(get(&mut c, b"hello").is_none());
        c.insert(&key_of(b"hello"), &[3, 4]);
        assert_eq!(get(&mut c, b"hello"), Some(vec![3, 4]));
        c.insert(&key_of(b"x"), &[1; 8]); // too many ids: not kept
        assert!(get(&mut c, b"x").is_none());
    }

    #[test]
    fn keys_read_in_place_equal_copied_ones() {
        let text = b"the quick brown fox jumps over the lazy dog, twice over";
        for start in 0..text.len() {
            for len in 1..=KEY_MAX.min(text.len() - start) {
                assert_eq!(key_at(text, start, len), key_of(&text[start..start + len]));
            }
        }
    }
}
