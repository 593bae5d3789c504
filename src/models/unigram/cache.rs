//! The per-thread cache of encoded pieces (pre-tokenized words such as
//! `▁the`), for pipelines whose pieces are encoded independently.
//!
//! Each thread keeps, for each model it used last (up to `MODELS`, told
//! apart by the model's generation and its mark), two two-way
//! set-associative tables: 64K short slots of 32 bytes (2 MB), a piece of
//! at most 15 bytes and 3 tokens each, and 32K slots of 64 bytes (2 MB), a
//! piece of at most 31 bytes and 7 tokens each (more go to a spill arena of
//! at most 2 MB, cleared with that table when full); longer pieces, up to
//! 1 KB, go to a hash map of at most 4 MB, cleared when full: so about
//! 10 MB a model and a thread, 40 MB a thread at most. A key holds all the
//! piece's bytes, so a hit is always the piece itself.

use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// A fresh model generation.
pub(super) fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

const BITS: u32 = 15;
const SHORT_BITS: u32 = 16;
/// The longest piece a short slot holds.
pub(super) const SHORT_MAX: usize = 15;
/// The most tokens a short slot holds.
const SHORT_IDS: usize = 3;

/// A slot for a piece of at most `SHORT_MAX` bytes and `SHORT_IDS`
/// tokens: half a cache line, so that the pieces met most often take
/// half the room.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct ShortSlot {
    /// `key16` of the piece (all zero when empty)
    key: [u64; 2],
    ids: [u32; SHORT_IDS],
    n: u32,
}

const SHORT_EMPTY: ShortSlot = ShortSlot {
    key: [0; 2],
    ids: [0; SHORT_IDS],
    n: 0,
};

/// The key of the piece `bytes[start..start + len]` (`len` at most
/// `SHORT_MAX`), preceded by the mark if `marked`, as `key_at` makes it
/// in 16 bytes.
#[inline(always)]
pub(super) fn key16(bytes: &[u8], start: usize, len: usize, marked: bool) -> [u64; 2] {
    debug_assert!(len <= SHORT_MAX);
    let mut key = [0u64; 2];
    if let Some(w) = bytes.get(start..start + 16) {
        for (k, word) in key.iter_mut().enumerate() {
            let v = u64::from_le_bytes(w[8 * k..8 * k + 8].try_into().unwrap());
            let keep = len.saturating_sub(8 * k).min(8);
            *word = if keep == 8 { v } else { v & ((1u64 << (8 * keep)) - 1) };
        }
    } else {
        let mut buf = [0u8; 16];
        buf[..len].copy_from_slice(&bytes[start..start + len]);
        for (k, word) in key.iter_mut().enumerate() {
            *word = u64::from_le_bytes(buf[8 * k..8 * k + 8].try_into().unwrap());
        }
    }
    key[1] |= ((len as u64) | (marked as u64) << 7) << 56;
    key
}

#[inline(always)]
fn index16(key: &[u64; 2]) -> usize {
    let h = key[0] ^ key[1].rotate_left(29);
    // (the first slot of a set of two)
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHORT_BITS)) as usize & !1
}
const SLOTS: usize = 1 << BITS;
const MODELS: usize = 4;
/// The longest piece a slot holds.
pub(super) const KEY_MAX: usize = 31;
/// The most tokens a slot holds.
const IDS: usize = 7;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    /// `key_at` of the piece (an empty slot is all zero; no key is: a
    /// piece is marked or not empty)
    key: [u64; 4],
    ids: [u32; IDS],
    n: u32,
}

const EMPTY: Slot = Slot {
    key: [0; 4],
    ids: [0; IDS],
    n: 0,
};

pub(super) struct WordCache {
    owner: Owner,
    short: Box<[ShortSlot]>,
    slots: Box<[Slot]>,
    /// the tokens of pieces with more than `IDS` (a slot then holds their
    /// offset and count here, and `SPILLED`)
    spill: Vec<u32>,
    /// pieces longer than `KEY_MAX`, up to `LONG_PIECE` bytes
    pub(super) long: LongCache,
}

/// The longest piece `LongCache` holds.
pub(super) const LONG_PIECE: usize = 1024;
/// What `LongCache` holds at most (pieces' bytes and tokens) before it is
/// cleared.
const LONG_BYTES: usize = 4 << 20;

/// Pieces longer than a slot's key, by their bytes.
#[derive(Default)]
pub(super) struct LongCache {
    map: FxHashMap<Box<[u8]>, Box<[u32]>>,
    bytes: usize,
}

impl LongCache {
    #[inline]
    pub(super) fn get(&self, piece: &[u8]) -> Option<&[u32]> {
        self.map.get(piece).map(|ids| &ids[..])
    }

    pub(super) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        let size = piece.len() + 4 * ids.len() + 64;
        if self.bytes + size > LONG_BYTES {
            self.map = FxHashMap::default();
            self.bytes = 0;
        }
        self.bytes += size;
        self.map.insert(piece.into(), ids.into());
    }
}

/// The `n` of a slot whose tokens are in `spill`.
const SPILLED: u32 = u32::MAX;
/// The most tokens `spill` holds before the cache is cleared (2 MB).
const SPILL_MAX: usize = 1 << 19;

/// The key of the piece `bytes[start..start + len]` (`len` at most
/// `KEY_MAX`), preceded by the mark if `marked`: the bytes zero-padded,
/// then the length with the mark as its top bit.
#[inline(always)]
pub(super) fn key_at(bytes: &[u8], start: usize, len: usize, marked: bool) -> [u64; 4] {
    debug_assert!(len <= KEY_MAX);
    let mut key = [0u64; 4];
    if let Some(w) = bytes.get(start..start + 32) {
        // read in place, then the bytes past the piece masked off
        for (k, word) in key.iter_mut().enumerate() {
            let v = u64::from_le_bytes(w[8 * k..8 * k + 8].try_into().unwrap());
            let keep = len.saturating_sub(8 * k).min(8);
            *word = if keep == 8 { v } else { v & ((1u64 << (8 * keep)) - 1) };
        }
    } else {
        let mut buf = [0u8; 32];
        buf[..len].copy_from_slice(&bytes[start..start + len]);
        for (k, word) in key.iter_mut().enumerate() {
            *word = u64::from_le_bytes(buf[8 * k..8 * k + 8].try_into().unwrap());
        }
    }
    key[3] |= ((len as u64) | (marked as u64) << 7) << 56;
    key
}

#[inline(always)]
fn index(key: &[u64; 4]) -> usize {
    let h = key[0] ^ key[1].rotate_left(21) ^ key[2].rotate_left(42) ^ key[3].rotate_left(7);
    // (the first slot of a set of two)
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize & !1
}

impl WordCache {
    fn new(owner: Owner) -> WordCache {
        WordCache {
            owner,
            short: vec![SHORT_EMPTY; 1 << SHORT_BITS].into_boxed_slice(),
            slots: vec![EMPTY; SLOTS].into_boxed_slice(),
            spill: Vec::new(),
            long: LongCache::default(),
        }
    }

    /// The tokens of a piece cached in a short slot.
    #[inline(always)]
    pub(super) fn get_short(&self, key: &[u64; 2]) -> Option<&[u32]> {
        let set = index16(key);
        let slot = if self.short[set].key == *key {
            &self.short[set]
        } else if self.short[set + 1].key == *key {
            &self.short[set + 1]
        } else {
            return None;
        };
        Some(&slot.ids[..slot.n as usize])
    }

    /// Start loading the set where `get_short(key)` will look.
    #[inline(always)]
    pub(super) fn prefetch_short(&self, key: &[u64; 2]) {
        crate::prefetch::prefetch(&self.short[index16(key)]);
    }

    /// Keep a piece's tokens in a short slot; false if they do not fit.
    #[inline]
    pub(super) fn insert_short(&mut self, key: &[u64; 2], ids: &[u32]) -> bool {
        if ids.is_empty() || ids.len() > SHORT_IDS {
            return false;
        }
        let set = index16(key);
        self.short[set + 1] = self.short[set];
        let slot = &mut self.short[set];
        slot.key = *key;
        slot.ids[..ids.len()].copy_from_slice(ids);
        slot.n = ids.len() as u32;
        true
    }

    /// The tokens of a cached piece.
    #[inline(always)]
    pub(super) fn get(&self, key: &[u64; 4]) -> Option<&[u32]> {
        let set = index(key);
        let hit = |slot: &'_ Slot| slot.key == *key;
        let slot = if hit(&self.slots[set]) {
            &self.slots[set]
        } else if hit(&self.slots[set + 1]) {
            &self.slots[set + 1]
        } else {
            return None;
        };
        if slot.n == SPILLED {
            let (at, n) = (slot.ids[0] as usize, slot.ids[1] as usize);
            return Some(&self.spill[at..at + n]);
        }
        Some(&slot.ids[..slot.n as usize])
    }

    /// Start loading the set where `get(key)` will look.
    #[inline(always)]
    pub(super) fn prefetch(&self, key: &[u64; 4]) {
        crate::prefetch::prefetch(&self.slots[index(key)]);
    }

    /// Keep a piece's tokens (if they fit a slot).
    #[inline]
    pub(super) fn insert(&mut self, key: &[u64; 4], ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        if ids.len() > IDS && self.spill.len() + ids.len() > SPILL_MAX {
            // (the old spilled tokens go, and every slot that points there)
            self.spill.clear();
            self.slots.fill(EMPTY);
        }
        // the newest piece of a set in its first way, the one before in the second
        let set = index(key);
        self.slots[set + 1] = self.slots[set];
        let slot = &mut self.slots[set];
        slot.key = *key;
        if ids.len() <= IDS {
            slot.ids[..ids.len()].copy_from_slice(ids);
            slot.n = ids.len() as u32;
        } else {
            slot.ids[0] = self.spill.len() as u32;
            slot.ids[1] = ids.len() as u32;
            slot.n = SPILLED;
            self.spill.extend_from_slice(ids);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Vec<WordCache>> = const { RefCell::new(Vec::new()) };
}

/// Whose pieces a cache holds: a model's generation, and the mark its
/// pieces start with.
pub(super) type Owner = (u64, char);

/// Run `f` with this thread's cache for `owner` (a fresh one, dropped
/// afterwards, if the caches are in use further up the stack).
pub(super) fn with_cache<R>(owner: Owner, f: impl FnOnce(&mut WordCache) -> R) -> R {
    LOCAL.with(|cell| match cell.try_borrow_mut() {
        Ok(mut caches) => {
            let at = match caches.iter().position(|c| c.owner == owner) {
                Some(i) => i,
                None => {
                    if caches.len() >= MODELS {
                        caches.remove(0);
                    }
                    caches.push(WordCache::new(owner));
                    caches.len() - 1
                }
            };
            f(&mut caches[at])
        }
        Err(_) => f(&mut WordCache::new(owner)),
    })
}
