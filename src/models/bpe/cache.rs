//! The caches of encoded pieces, and the keys they are looked up by.
//!
//! Every tier answers the same three questions for the driver: get (the
//! tokens of a piece, if held), insert (keep a piece's tokens) and
//! prefetch (start loading where a get will look). A thread keeps one
//! `LocalCache` per model it used last (up to `LOCAL_MODELS`), told apart
//! by the model's `generation`; the driver reaches it only through the
//! methods below `LocalCache::begin`.
//!
//! | tier | key | holds | bound |
//! |---|---|---|---|
//! | hot (`LocalCache::hot`, `fp`) | a short piece (≤ `SHORT_MAX` bytes) packed in 16 bytes | ≤ `SLOT_IDS` tokens, direct mapped | 64K slots × 32 B = 2 MB, + 64 KB of fingerprints, a thread and model |
//! | long hot (`long_hot`) | a piece of 16-31 bytes in 32 | ≤ `LONG_SLOT_IDS` tokens, direct mapped | 4K × 64 B = 256 KB |
//! | table (`table`, `spill`) | a short piece | any number of tokens | `LOCAL_WORKING` entries (2 MB of slots), then cleared |
//! | long (`long`) | a piece of 16-63 bytes met twice | its tokens | `LONG_ENTRIES` pieces, then cleared; 8 KB of seen bits |
//! | global (`Bpe::cache`) | any piece ≤ `CACHE_MAX_PIECE` bytes (models that do not merge from bytes) | its tokens | `CACHE_CAPACITY` pieces a model |
//! | seed (`HotSeed`) | the vocabulary's short tokens | their ids | 1.3 MB a model, copied into each new thread's hot cache |
//!
//! So a thread holds at most about 5 MB a model (the hot tiers, the table
//! at its working size, the long cache full), for at most `LOCAL_MODELS`
//! models; a model holds its seed and, if it does not merge from bytes,
//! its global cache. The caches never decide a result: a held piece's
//! tokens are those the merge gave it, and a key compares all its bytes.

use super::*;

/// piece -> (id, byte length) of its tokens
pub(super) type PieceCache = FxHashMap<Box<[u8]>, Box<[(u32, u32)]>>;

pub(super) const CACHE_CAPACITY: usize = 200_000;

pub(super) const CACHE_MAX_PIECE: usize = 128;

/// A fresh model generation (see `Bpe::generation`).
pub(super) fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The short pieces a thread has merged, for one model: piece -> tokens,
/// up to `SLOT_IDS` in the slot, more in `spill` (the slot then holds the
/// offset there). Thread-local, so encoding threads never wait for each other.
/// (Pieces merged together in `flush`, those of byte-level models, are kept
/// in `hot` only: `table` then stays empty. See `look_up`.)
pub(super) struct LocalCache {
    pub(super) generation: u64,
    /// Direct-mapped, the pieces seen last (any of the tables' entries with
    /// at most `SLOT_IDS` tokens): small enough to stay in the core's cache.
    /// (Its size in its type: an index made of the hash's top `HOT_BITS`
    /// bits needs no bounds check, nor the length read from memory, on
    /// the path every piece takes.)
    pub(super) hot: Box<[Slot; 1 << HOT_BITS]>,
    /// A byte of each hot slot's hash (`hot_fp`), 64 KB: the window loop
    /// reads it before the slot, and a piece whose byte differs is a miss
    /// at once, instead of after its slot's line came from memory (a
    /// mispredicted branch that waits for a cold line). Only a hint: the
    /// slot's key decides.
    pub(super) fp: Box<[u8; 1 << HOT_BITS]>,
    /// Direct-mapped too, the pieces of `SHORT_MAX + 1` to `WIDE_MAX`
    /// bytes seen last with at most `LONG_SLOT_IDS` tokens (a long name
    /// that comes back: looked up by the scanner's loop, not hashed as a
    /// slice into `vocab` and `long`).
    pub(super) long_hot: Box<[LongSlot; 1 << LONG_HOT_BITS]>,
    pub(super) table: PieceTable,
    pub(super) spill: Vec<u32>,
    /// Pieces longer than `SHORT_MAX` (up to `merge::WIDER_MAX` bytes) met
    /// at least twice.
    pub(super) long: LongCache,
    pub(super) work: Work,
    /// An encode is under way: `hot` may hold `PENDING` slots (left there
    /// only if that encode never finished).
    pub(super) busy: bool,
}

/// Set in the key of a hot slot whose piece waits in `Work::merging` (at
/// index `ids[0]`) to be merged in the next `flush`: a later instance of
/// the piece shares that merge. No piece's key has it (its top byte is the
/// length, at most `SHORT_MAX`), so the scanner's loop, which compares
/// keys only, never takes such a slot for the piece's tokens.
pub(super) const PENDING: u64 = 1 << 63;

/// The key a hot slot has while its piece waits to be merged (`PENDING`).
#[inline(always)]
pub(super) fn pending_key([lo, hi]: [u64; 2]) -> [u64; 2] {
    [lo, hi | PENDING]
}

/// A thread's tokens of long pieces (`look_up_long`): piece ->
/// `ids[start..][..len]`. A piece is kept the second time it is merged
/// (`seen`): long pieces of random text (base64, hex) never come back, and
/// keeping each would cost more than merging it.
#[derive(Default)]
pub(super) struct LongCache {
    pub(super) map: FxHashMap<Box<[u8]>, (u32, u32)>,
    pub(super) ids: Vec<u32>,
    /// a bit per hash of the pieces merged (made on first use)
    pub(super) seen: Vec<u64>,
    /// bits set in `seen` since it was last cleared
    pub(super) marked: usize,
}

/// Bits of `LongCache::seen` (8 KB).
pub(super) const SEEN_BITS: u32 = 16;

/// Pieces a `LongCache` holds before it starts over (and bits it sets in
/// `seen`: a quarter of them, so that few pieces pass for seen by chance).
pub(super) const LONG_ENTRIES: usize = 1 << 14;

impl LongCache {
    #[inline]
    pub(super) fn get(&self, piece: &[u8]) -> Option<&[u32]> {
        if self.map.is_empty() {
            return None;
        }
        let &(start, len) = self.map.get(piece)?;
        Some(&self.ids[start as usize..(start + len) as usize])
    }

    /// Whether `piece`, about to be merged, was merged before (as far as a
    /// bit per hash can tell): then it is worth keeping.
    pub(super) fn seen_before(&mut self, piece: &[u8]) -> bool {
        use std::hash::BuildHasher;
        if self.seen.is_empty() || self.marked >= LONG_ENTRIES {
            self.seen.clear();
            self.seen.resize(1 << (SEEN_BITS - 6), 0);
            self.marked = 0;
        }
        let h = (rustc_hash::FxBuildHasher.hash_one(piece) >> (64 - SEEN_BITS)) as usize;
        let (word, bit) = (h >> 6, 1u64 << (h & 63));
        let before = self.seen[word] & bit != 0;
        if !before {
            self.seen[word] |= bit;
            self.marked += 1;
        }
        before
    }

    pub(super) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if self.map.len() >= LONG_ENTRIES {
            self.map.clear();
            self.ids.clear();
        }
        let start = self.ids.len() as u32;
        self.ids.extend_from_slice(ids);
        self.map.insert(piece.into(), (start, ids.len() as u32));
    }
}

/// Bits of the hot cache index: 64K slots of 32 bytes (2 MB), as large as
/// the second-level cache of the cores it was tuned on, so that a
/// document's pieces rarely evict each other and the seed (the
/// vocabulary's short tokens) fits beside them; the price is a new
/// thread's first encode, which zeroes and seeds it. Each size tried is
/// in `docs/encoder.md` (constants).
pub(super) const HOT_BITS: u32 = 16;

/// A piece's slot in the hot cache, from its hash's top bits.
#[inline(always)]
pub(super) fn hot_index(h: u64) -> usize {
    (h >> (64 - HOT_BITS)) as usize
}

/// The byte of a hash a hot slot's `LocalCache::fp` keeps (the eight bits
/// below the index).
#[inline(always)]
pub(super) fn hot_fp(h: u64) -> u8 {
    (h >> (56 - HOT_BITS)) as u8
}

/// Bits of the long hot cache index: 4K slots of 64 bytes (256 KB).
pub(super) const LONG_HOT_BITS: u32 = 12;

/// Most tokens a `LongSlot` holds.
pub(super) const LONG_SLOT_IDS: usize = 7;

/// A slot of `LocalCache::long_hot`: a piece of `SHORT_MAX + 1` to
/// `WIDE_MAX` bytes as four words (`long_key_at`), its tokens, how many.
/// An all-zero key is an empty slot (a real key holds the length).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub(super) struct LongSlot {
    pub(super) key: [u64; 4],
    pub(super) ids: [u32; LONG_SLOT_IDS],
    pub(super) n: u32,
}

/// The key of `text[s..s + len]` (`SHORT_MAX < len <= WIDE_MAX`): its bytes
/// zero-padded to 32, the length in the last (past any piece's end).
#[inline(always)]
pub(super) fn long_key_at(text: &[u8], s: usize, len: usize) -> [u64; 4] {
    debug_assert!(len > SHORT_MAX && len <= merge::WIDE_MAX);
    // (read in place where 32 bytes are there to read, else copied)
    let mut buf = [0u8; 32];
    let src = match text.get(s..s + 32) {
        Some(b) => b,
        None => {
            buf[..len].copy_from_slice(&text[s..s + len]);
            &buf
        }
    };
    let w: [u64; 4] = std::array::from_fn(|k| u64::from_le_bytes(src[8 * k..8 * k + 8].try_into().unwrap()));
    let [m2, m3] = LONG_KEY_MASKS[len - SHORT_MAX - 1];
    [w[0], w[1], w[2] & m2, (w[3] & m3) | ((len as u64) << 56)]
}

/// For each length from `SHORT_MAX + 1` to `WIDE_MAX`, the masks of that
/// many bytes in the third and fourth words of a long key.
pub(super) static LONG_KEY_MASKS: [[u64; 2]; merge::WIDE_MAX - SHORT_MAX] = {
    let mut m = [[0u64; 2]; merge::WIDE_MAX - SHORT_MAX];
    let mut len = SHORT_MAX + 1;
    while len <= merge::WIDE_MAX {
        m[len - SHORT_MAX - 1] = if len < 24 {
            [(1u64 << (8 * (len - 16))) - 1, 0]
        } else {
            [!0, (1u64 << (8 * (len - 24))) - 1]
        };
        len += 1;
    }
    m
};

/// A long key's slot in `LocalCache::long_hot`.
#[inline(always)]
pub(super) fn long_index(key: &[u64; 4]) -> usize {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xD6E8_FEB8_6659_FD93;
    let h = (key[0].wrapping_mul(K1) ^ key[1]).wrapping_mul(K2) ^ key[2].wrapping_mul(K1) ^ key[3];
    (h.wrapping_mul(K2) >> (64 - LONG_HOT_BITS)) as usize
}

/// Keep a long piece's tokens in a `LocalCache::long_hot` (when they and
/// the piece fit; where the tokens do not, a slot that says the piece
/// waits to be merged is cleared).
#[inline]
pub(super) fn keep_long(long_hot: &mut [LongSlot; 1 << LONG_HOT_BITS], piece: &[u8], ids: &[u32]) {
    if piece.len() > merge::WIDE_MAX {
        return;
    }
    let key = long_key_at(piece, 0, piece.len());
    let slot = &mut long_hot[long_index(&key)];
    if ids.len() <= LONG_SLOT_IDS {
        *slot = LongSlot {
            key,
            n: ids.len() as u32,
            ..LongSlot::default()
        };
        slot.ids[..ids.len()].copy_from_slice(ids);
    } else if slot.key == long_pending_key(key) {
        *slot = LongSlot::default();
    }
}

/// The key a `LongSlot` has while its piece waits in `Work::wide` (at
/// index `ids[0]`) to be merged in the next `flush`: a later copy of the
/// piece shares that merge (a megabyte of code queued 415 long pieces for
/// the wide lanes, 181 of them copies of one queued earlier in the same
/// flush). No piece's key has the bit (its top byte is the length, at
/// most `WIDE_MAX`), so a lookup never takes the slot for tokens.
#[inline(always)]
pub(super) fn long_pending_key([a, b, c, d]: [u64; 4]) -> [u64; 4] {
    [a, b, c, d | PENDING]
}

/// What a thread's hot cache starts with (`Bpe::hot_seed`): per slot, a
/// token's key (all zero: none) and id. (Apart, and not as slots: two
/// blocks, 1 MB of keys and 256 KB of ids, copied into each new thread's
/// hot cache.)
pub(super) struct HotSeed {
    pub(super) keys: Box<[[u64; 2]]>,
    pub(super) ids: Box<[u32]>,
    /// the keys' `hot_fp`
    pub(super) fps: Box<[u8]>,
}

/// Entries a `LocalCache` holds before it starts over: its working size,
/// so that the table never grows past it. Random text (base64) merges a new
/// piece every few bytes and filled a table allowed 128K entries (8 MB),
/// growing it twice on the way: a fifth of the time of a megabyte of
/// base64 went to moving entries and to the kernel zeroing new pages (1M
/// characters after the benchmark's documents, fresh processes: o200k 44-46
/// -> 29-32 ms, cl100k 39-47 -> 34-41). Starting over at 32K costs a 2 MB
/// clear; English and code, one 1 MB document or 31 MB in 64 KB documents
/// on one thread, encode as fast as before (the hot cache and the pieces
/// of the last 32K merges hold what comes back). (Measured when the pieces
/// merged in `flush` were kept here too; they no longer are.)
pub(super) const LOCAL_MAX: usize = LOCAL_WORKING;

/// Entries a `LocalCache` table has room for when it is made (64 KB of
/// slots: a thread that encodes a few short texts needs no more).
pub(super) const LOCAL_START: usize = 1 << 10;

/// Entries it has room for once it first fills up: 2 MB of slots, one huge
/// page, zeroed by the kernel as it is first touched. A megabyte of English
/// or code leaves 8-16 thousand merged pieces here; doubling from the start
/// size, the table grew again (a new block, every entry moved) in the middle
/// of the second megabyte a thread encoded, and in a virtual machine a block
/// of never-used memory costs far more than its zeroing. So its first growth goes straight to this size, within
/// the first few tens of kilobytes of a thread's text (at 4K entries, the
/// 1 MB of code that warmed o200k up had not filled it yet).
pub(super) const LOCAL_WORKING: usize = 1 << 15;

impl LocalCache {
    pub(super) fn new(generation: u64, seed: Option<&HotSeed>) -> Self {
        let mut hot: Box<[Slot; 1 << HOT_BITS]> = table::zeroed_array();
        // SAFETY: all-zero bytes are a `[u8; N]`
        let mut fp = unsafe { Box::<[u8; 1 << HOT_BITS]>::new_zeroed().assume_init() };
        if let Some(seed) = seed {
            for ((slot, &key), &id) in hot.iter_mut().zip(&*seed.keys).zip(&*seed.ids) {
                if key != [0, 0] {
                    *slot = Slot::new(key, &[id]);
                }
            }
            fp.copy_from_slice(&seed.fps);
        }
        LocalCache {
            generation,
            hot,
            fp,
            // SAFETY: all-zero bytes are a `LongSlot` (integers only): empty
            long_hot: unsafe { Box::<[LongSlot; 1 << LONG_HOT_BITS]>::new_zeroed().assume_init() },
            table: PieceTable::with_capacity(LOCAL_START),
            spill: Vec::new(),
            long: LongCache::default(),
            work: Work::default(),
            busy: false,
        }
    }

    // The interface the driver uses, tier by tier: get, insert, prefetch
    // (the fields stay visible to the engine's tests, which set up states).

    /// Start an encode on this cache: the thread's buffers, and the hot
    /// slots cleared if an earlier encode stopped half-way (it may have
    /// left `PENDING` slots).
    pub(super) fn begin(&mut self) -> Work {
        if self.busy {
            self.hot.fill(Slot::default());
            self.fp.fill(0);
            self.long_hot.fill(LongSlot::default());
        }
        self.busy = true;
        std::mem::take(&mut self.work)
    }

    /// End an encode: its buffers kept for the next.
    pub(super) fn end(&mut self, work: Work) {
        self.work = work;
        self.busy = false;
    }

    /// The hot slots and their fingerprints, for loops that read them in
    /// place (their addresses stay in registers).
    #[inline(always)]
    pub(super) fn hot_arrays(&self) -> (&[Slot; 1 << HOT_BITS], &[u8; 1 << HOT_BITS]) {
        (&self.hot, &self.fp)
    }

    /// The hot slot at `x` (`hot_index`), and whether its fingerprint is
    /// `h`'s (a hint: the slot's key decides).
    #[inline(always)]
    pub(super) fn hot_probe(&self, x: usize, h: u64) -> (&Slot, bool) {
        (&self.hot[x], self.fp[x] == hot_fp(h))
    }

    /// Clear the hot slot at `x` if it still says `key` waits to be merged
    /// (its tokens turned out more than a slot holds).
    #[inline]
    pub(super) fn drop_pending(&mut self, x: usize, key: [u64; 2]) {
        if self.hot[x].key == pending_key(key) {
            self.hot[x] = Slot::default();
        }
    }

    /// The thread's table entry of a short piece.
    #[inline(always)]
    pub(super) fn table_get(&self, key: &[u64; 2], h: u64) -> Option<&Slot> {
        self.table.get(key, h)
    }

    /// Start loading the thread table's slot of `h`.
    #[inline(always)]
    pub(super) fn prefetch(&self, h: u64) {
        self.table.prefetch(h);
    }

    /// The long hot slot a long key (`long_key_at`) maps to.
    #[inline(always)]
    pub(super) fn long_slot(&self, key: &[u64; 4]) -> &LongSlot {
        &self.long_hot[long_index(key)]
    }

    /// Mark a long piece as waiting in `Work::wide` at `start`: a later
    /// copy shares its merge (`long_pending_key`).
    #[inline]
    pub(super) fn long_pending(&mut self, key: [u64; 4], start: u32) {
        self.long_hot[long_index(&key)] = LongSlot {
            key: long_pending_key(key),
            ids: [start, 0, 0, 0, 0, 0, 0],
            n: 0,
        };
    }

    /// The thread's tokens of a long piece, kept in the long hot slots too
    /// when found (the next copy is found by the scanner's loop).
    #[inline]
    pub(super) fn long_get(&mut self, piece: &[u8]) -> Option<&[u32]> {
        let ids = self.long.get(piece)?;
        keep_long(&mut self.long_hot, piece, ids);
        Some(ids)
    }

    /// Whether a long piece about to be merged was merged before (then it
    /// is kept: `LongCache::seen_before`).
    #[inline]
    pub(super) fn long_seen_before(&mut self, piece: &[u8]) -> bool {
        self.long.seen_before(piece)
    }

    /// Keep a long piece's tokens in the thread's long cache.
    #[inline]
    pub(super) fn long_insert(&mut self, piece: &[u8], ids: &[u32]) {
        self.long.insert(piece, ids);
    }

    /// Keep a long piece's tokens in the long hot slots (`keep_long`).
    #[inline]
    pub(super) fn keep_long(&mut self, piece: &[u8], ids: &[u32]) {
        keep_long(&mut self.long_hot, piece, ids);
    }

    /// Put `slot` in the hot cache at `x`, the slot of hash `h`.
    #[inline(always)]
    pub(super) fn set_hot(&mut self, x: usize, h: u64, slot: Slot) {
        self.hot[x] = slot;
        self.fp[x] = hot_fp(h);
    }

    #[inline]
    pub(super) fn insert(&mut self, key: [u64; 2], h: u64, ids: &[u32]) {
        if self.table.len() >= LOCAL_MAX {
            // (text of pieces that do not come back, such as base64: the
            // table fills again, at this size)
            self.table.clear();
            self.spill.clear();
        } else if self.table.len() == LOCAL_START {
            self.table.reserve(LOCAL_WORKING);
        }
        if ids.len() <= SLOT_IDS {
            self.table.insert(key, h, ids);
        } else {
            let at = self.spill.len() as u32;
            self.spill.extend_from_slice(ids);
            self.table.insert(key, h, &[at, ids.len() as u32, SPILLED]);
        }
    }

    /// The tokens of a cached piece.
    #[inline(always)]
    pub(super) fn tokens<'a>(&'a self, slot: &'a Slot) -> &'a [u32] {
        if slot.n == SLOT_IDS as u32 && slot.ids[2] == SPILLED {
            &self.spill[slot.ids[0] as usize..(slot.ids[0] + slot.ids[1]) as usize]
        } else {
            &slot.ids[..slot.n as usize]
        }
    }
}

/// Marks a `LocalCache` slot whose tokens are in `spill` (no token id is this).
pub(super) const SPILLED: u32 = u32::MAX;

thread_local! {
    /// The caches of the models this thread used last (a few, so that
    /// alternating between models does not wipe them).
    pub(super) static LOCAL: std::cell::RefCell<Vec<LocalCache>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(super) const LOCAL_MODELS: usize = 4;

/// Longest token kept in `Bpe::short`.
pub(super) const SHORT_MAX: usize = 15;

/// A token of at most `SHORT_MAX` bytes as two words: the bytes, zero-padded,
/// with the length in the top byte (so that trailing zero bytes count).
#[inline(always)]
pub(super) fn short_key(t: &[u8]) -> [u64; 2] {
    debug_assert!(t.len() <= SHORT_MAX);
    let mut buf = [0u8; 16];
    buf[..t.len()].copy_from_slice(t);
    buf[15] = t.len() as u8;
    [
        u64::from_le_bytes(buf[..8].try_into().unwrap()),
        u64::from_le_bytes(buf[8..].try_into().unwrap()),
    ]
}

/// Whether a short key's piece has a byte outside ASCII.
#[inline(always)]
pub(super) fn not_ascii([lo, hi]: [u64; 2]) -> bool {
    // (the length in the top byte left out)
    (lo | (hi & !(0xFF << 56))) & 0x8080_8080_8080_8080 != 0
}

/// `short_key(&text[s..s + len])`, read straight from the text when 16 bytes
/// are there to read (a copy through a buffer stalls the loads after it).
#[inline(always)]
pub(super) fn short_key_at(text: &[u8], s: usize, len: usize) -> [u64; 2] {
    debug_assert!(len <= SHORT_MAX);
    let Some(w) = text.get(s..s + 16) else {
        return short_key(&text[s..s + len]);
    };
    let lo = u64::from_le_bytes(w[..8].try_into().unwrap());
    let hi = u64::from_le_bytes(w[8..].try_into().unwrap());
    masked_key([lo, hi], len)
}

/// The key of a piece of `len` bytes (at most `SHORT_MAX`) from the 16
/// bytes at its start, as two little-endian words: the first `len` kept
/// (masks from a table: a branch on the length would be mispredicted
/// often), the length in the top byte.
#[inline(always)]
pub(super) fn masked_key([lo, hi]: [u64; 2], len: usize) -> [u64; 2] {
    let [mlo, mhi] = KEY_MASKS[len];
    [lo & mlo, (hi & mhi) | ((len as u64) << 56)]
}

/// For each length up to `SHORT_MAX`, the masks of that many bytes in
/// the two words of a key.
pub(super) static KEY_MASKS: [[u64; 2]; SHORT_MAX + 1] = {
    let mut m = [[0u64; 2]; SHORT_MAX + 1];
    let mut len = 0;
    while len <= SHORT_MAX {
        m[len] = if len < 8 {
            [(1u64 << (8 * len)) - 1, 0]
        } else {
            [!0, (1u64 << (8 * (len - 8))) - 1]
        };
        len += 1;
    }
    m
};

impl Bpe {
    /// For a model that looks whole pieces up (`ignore_merges`), the
    /// tokens of at most `SHORT_MAX` bytes in a hot cache's slots, the
    /// lowest id where two share a slot (in rank files and most trained
    /// vocabularies, the more frequent token): a thread's hot cache starts
    /// with them, so that a common token met for the first time is found
    /// there instead of waiting in `look_up` (a third of the pieces that
    /// miss the hot cache after a warm-up on other text are such tokens).
    pub(super) fn hot_seed(&self) -> Option<&HotSeed> {
        self.hot_seed
            .get_or_init(|| {
                if !self.ignore_merges || self.dropping() {
                    return None;
                }
                // (by id, lowest first: a slot keeps the first token put
                // there; where two ids share their bytes, only the one the
                // vocabulary answers for them may go in)
                let twins = self.vocab.len() != self.vocab_r.iter().flatten().count();
                let mut seed = HotSeed {
                    keys: vec![[0; 2]; 1 << HOT_BITS].into_boxed_slice(),
                    ids: vec![0; 1 << HOT_BITS].into_boxed_slice(),
                    fps: vec![0; 1 << HOT_BITS].into_boxed_slice(),
                };
                for (id, token) in self.vocab_r.iter().enumerate() {
                    let Some(token) = token.as_deref().filter(|t| !t.is_empty() && t.len() <= SHORT_MAX) else {
                        continue;
                    };
                    if twins && self.vocab.get(token) != Some(&(id as u32)) {
                        continue;
                    }
                    let key = short_key(token);
                    let h = PieceTable::hash(&key);
                    let x = hot_index(h);
                    if seed.keys[x] == [0, 0] {
                        (seed.keys[x], seed.ids[x], seed.fps[x]) = (key, id as u32, hot_fp(h));
                    }
                }
                Some(seed)
            })
            .as_ref()
    }
}
