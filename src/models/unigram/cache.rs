//! The per-thread cache of encoded pieces (pre-tokenized words such as
//! `▁the`), for pipelines whose pieces are encoded independently.
//!
//! Each thread keeps one direct-mapped table per model it used last (up to
//! `MODELS`, told apart by the model's generation): `SLOTS` slots of 64
//! bytes, a piece of at most 31 bytes and at most 7 tokens a slot, so 2 MB
//! a model and a thread, 8 MB a thread at most. A slot's key holds all the
//! piece's bytes and its length, so a hit is always the piece itself; a
//! piece that does not fit a slot is simply not cached.

use std::cell::RefCell;

/// A fresh model generation.
pub(super) fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

const BITS: u32 = 15;
const SLOTS: usize = 1 << BITS;
const MODELS: usize = 4;
/// The longest piece a slot holds.
pub(super) const KEY_MAX: usize = 31;
/// The most tokens a slot holds.
const IDS: usize = 7;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    /// the piece's bytes, zero-padded, with its length in the last byte
    /// (an empty slot has length 0; no cached piece is empty)
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
    generation: u64,
    slots: Box<[Slot]>,
}

/// The key of the piece `prefix` + `body`, at most `KEY_MAX` bytes.
#[inline(always)]
pub(super) fn key_of(prefix: &[u8], body: &[u8]) -> [u64; 4] {
    let len = prefix.len() + body.len();
    debug_assert!(len <= KEY_MAX);
    let mut buf = [0u8; 32];
    buf[..prefix.len()].copy_from_slice(prefix);
    buf[prefix.len()..len].copy_from_slice(body);
    buf[31] = len as u8;
    let w = |i: usize| u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
    [w(0), w(1), w(2), w(3)]
}

#[inline(always)]
fn index(key: &[u64; 4]) -> usize {
    let h = key[0] ^ key[1].rotate_left(21) ^ key[2].rotate_left(42) ^ key[3].rotate_left(7);
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize
}

impl WordCache {
    fn new(generation: u64) -> WordCache {
        WordCache {
            generation,
            slots: vec![EMPTY; SLOTS].into_boxed_slice(),
        }
    }

    /// The tokens of a cached piece.
    #[inline(always)]
    pub(super) fn get(&self, key: &[u64; 4]) -> Option<&[u32]> {
        let slot = &self.slots[index(key)];
        (slot.key == *key).then(|| &slot.ids[..slot.n as usize])
    }

    /// Keep a piece's tokens (if they fit a slot).
    #[inline]
    pub(super) fn insert(&mut self, key: &[u64; 4], ids: &[u32]) {
        if ids.len() > IDS || ids.is_empty() {
            return;
        }
        let slot = &mut self.slots[index(key)];
        slot.key = *key;
        slot.ids[..ids.len()].copy_from_slice(ids);
        slot.n = ids.len() as u32;
    }
}

thread_local! {
    static LOCAL: RefCell<Vec<WordCache>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's cache for the model of `generation` (a fresh
/// one, dropped afterwards, if the caches are in use further up the stack).
pub(super) fn with_cache<R>(generation: u64, f: impl FnOnce(&mut WordCache) -> R) -> R {
    LOCAL.with(|cell| match cell.try_borrow_mut() {
        Ok(mut caches) => {
            let at = match caches.iter().position(|c| c.generation == generation) {
                Some(i) => i,
                None => {
                    if caches.len() >= MODELS {
                        caches.remove(0);
                    }
                    caches.push(WordCache::new(generation));
                    caches.len() - 1
                }
            };
            f(&mut caches[at])
        }
        Err(_) => f(&mut WordCache::new(generation)),
    })
}
