//! Byte-pair encoding, byte-level (GPT-2 and later) and character-level
//! (with a continuing-subword prefix and/or end-of-word suffix).
//!
//! Tokens are stored as the bytes they stand for: for byte-level models the
//! raw bytes, for character-level models the UTF-8 of the token string.

mod backtrack;
mod merge;
mod serde_impl;
mod table;
#[cfg(feature = "python")]
pub(crate) use table::prefetch;
pub mod tiktoken;

use crate::models::Model;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::RwLock;
use table::{PieceTable, Slot, SLOT_IDS};

const NONE: u32 = u32::MAX;

/// piece -> (id, byte length) of its tokens
type PieceCache = FxHashMap<Box<[u8]>, Box<[(u32, u32)]>>;
const CACHE_CAPACITY: usize = 200_000;
const CACHE_MAX_PIECE: usize = 128;
/// Pieces this long that repeat one character take `encode_run`.
const RUN_MIN: usize = 8192;
/// Bytes of long multi-byte pieces after which the backtracking encoder
/// is built (see `Bpe::backtracks`).
const BACKTRACK_AFTER: usize = 64 << 10;

/// The byte length of the character `piece` repeats, if it is one repeated.
fn run_unit(piece: &[u8]) -> Option<usize> {
    let unit = match piece.first()? {
        b if b & 0x80 == 0 => 1,
        b if b & 0xE0 == 0xC0 => 2,
        b if b & 0xF0 == 0xE0 => 3,
        _ => 4,
    };
    (piece.len().is_multiple_of(unit) && piece[unit..] == piece[..piece.len() - unit]).then_some(unit)
}

/// What a `tokenizer.json` may spell in more than one way, as the file
/// that was read spelled it, so that saving an unchanged model writes the
/// same bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct JsonForm {
    /// merges as `["a", "b"]` (the current format), not `"a b"`
    pub merges_as_pairs: bool,
    /// `""` rather than `null` for no prefix / no suffix
    pub empty_prefix: bool,
    pub empty_suffix: bool,
    /// Tokens of a byte-level vocabulary written as plain text (not in the
    /// byte-level alphabet, such as DeepSeek's `<｜begin▁of▁sentence｜>`):
    /// their string is their text, as in `tokenizers`.
    pub raw_tokens: FxHashSet<Box<[u8]>>,
}

pub struct Bpe {
    pub(crate) vocab: FxHashMap<Vec<u8>, u32>,
    pub(crate) vocab_r: Vec<Option<Box<[u8]>>>,
    /// pair -> (rank, merged id); a lower rank merges first.
    pub(crate) merges: FxHashMap<(u32, u32), (u32, u32)>,
    pub byte_level: bool,
    pub unk_token: Option<String>,
    unk_id: Option<u32>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    /// Look the whole piece up before merging (tiktoken and Llama-3 behaviour).
    pub ignore_merges: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub dropout: Option<f32>,
    /// How the `tokenizer.json` this model was read from spelled it (see
    /// `JsonForm`); the default for a model made here.
    pub(crate) json_form: JsonForm,
    byte_ids: [u32; 256],
    /// Every byte is a token (`byte_ids` has no `NONE`).
    all_bytes: bool,
    fallback_ids: [u32; 256],
    /// The tokens of at most `SHORT_MAX` bytes by packed key (see `short_key`):
    /// a whole-piece lookup without hashing a slice or comparing bytes.
    short: PieceTable,
    /// `merge::byte_pair_table`, made on first use (byte-level models).
    byte_pairs: std::sync::OnceLock<Box<[(i32, u32)]>>,
    /// `merges` laid out for encoding (see `merge::PairTable`), made on first use.
    pair_table: std::sync::OnceLock<merge::PairTable>,
    /// The token of `n` spaces at `n` (up to `SPACE_RUNS`; `u32::MAX` for
    /// none), made on first use (see `space_run`).
    space_runs: std::sync::OnceLock<Box<[u32]>>,
    /// The backtracking encoder, made on first use, for the models it
    /// applies to (see `backtrack`).
    backtrack: std::sync::OnceLock<Option<backtrack::Backtrack>>,
    /// What a thread's hot cache starts with (see `hot_seed`): made with
    /// the model where it looks whole pieces up, else on first use.
    hot_seed: std::sync::OnceLock<Option<HotSeed>>,
    /// A filter of the tokens longer than `SHORT_MAX` bytes, made on first
    /// use (see `maybe_long_token`).
    long_tokens: std::sync::OnceLock<Box<[u64]>>,
    /// Bytes of long multi-byte pieces met before the backtracking encoder
    /// was built (see `backtracks`).
    multibyte_seen: std::sync::atomic::AtomicUsize,
    cache: RwLock<PieceCache>,
    /// Tells this model's entries in the per-thread hot caches from others';
    /// a new one whenever the vocabulary changes.
    generation: u64,
}

/// A fresh model generation (see `Bpe::generation`).
fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The short pieces a thread has merged, for one model: piece -> tokens,
/// up to `SLOT_IDS` in the slot, more in `spill` (the slot then holds the
/// offset there). Thread-local, so encoding threads never wait for each other.
/// (Pieces merged together in `flush`, those of byte-level models, are kept
/// in `hot` only: `table` then stays empty. See `look_up`.)
struct LocalCache {
    generation: u64,
    /// Direct-mapped, the pieces seen last (any of the tables' entries with
    /// at most `SLOT_IDS` tokens): small enough to stay in the core's cache.
    /// (Its size in its type: an index made of the hash's top `HOT_BITS`
    /// bits needs no bounds check, nor the length read from memory, on
    /// the path every piece takes.)
    hot: Box<[Slot; 1 << HOT_BITS]>,
    /// A byte of each hot slot's hash (`hot_fp`), 64 KB: the window loop
    /// reads it before the slot, and a piece whose byte differs is a miss
    /// at once, instead of after its slot's line came from memory (a
    /// mispredicted branch that waits for a cold line). Only a hint: the
    /// slot's key decides.
    fp: Box<[u8; 1 << HOT_BITS]>,
    /// Direct-mapped too, the pieces of `SHORT_MAX + 1` to `WIDE_MAX`
    /// bytes seen last with at most `LONG_SLOT_IDS` tokens (a long name
    /// that comes back: looked up by the scanner's loop, not hashed as a
    /// slice into `vocab` and `long`).
    long_hot: Box<[LongSlot; 1 << LONG_HOT_BITS]>,
    table: PieceTable,
    spill: Vec<u32>,
    /// Pieces longer than `SHORT_MAX` (up to `merge::WIDER_MAX` bytes) met
    /// at least twice.
    long: LongCache,
    work: Work,
    /// An encode is under way: `hot` may hold `PENDING` slots (left there
    /// only if that encode never finished).
    busy: bool,
}

/// Set in the key of a hot slot whose piece waits in `Work::merging` (at
/// index `ids[0]`) to be merged in the next `flush`: a later instance of
/// the piece shares that merge. No piece's key has it (its top byte is the
/// length, at most `SHORT_MAX`), so the scanner's loop, which compares
/// keys only, never takes such a slot for the piece's tokens.
const PENDING: u64 = 1 << 63;

/// The key a hot slot has while its piece waits to be merged (`PENDING`).
#[inline(always)]
fn pending_key([lo, hi]: [u64; 2]) -> [u64; 2] {
    [lo, hi | PENDING]
}

/// A thread's tokens of long pieces (`look_up_long`): piece ->
/// `ids[start..][..len]`. A piece is kept the second time it is merged
/// (`seen`): long pieces of random text (base64, hex) never come back, and
/// keeping each would cost more than merging it.
#[derive(Default)]
struct LongCache {
    map: FxHashMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<u32>,
    /// a bit per hash of the pieces merged (made on first use)
    seen: Vec<u64>,
    /// bits set in `seen` since it was last cleared
    marked: usize,
}

/// Bits of `LongCache::seen` (8 KB).
const SEEN_BITS: u32 = 16;

/// Pieces a `LongCache` holds before it starts over (and bits it sets in
/// `seen`: a quarter of them, so that few pieces pass for seen by chance).
const LONG_ENTRIES: usize = 1 << 14;

impl LongCache {
    #[inline]
    fn get(&self, piece: &[u8]) -> Option<&[u32]> {
        if self.map.is_empty() {
            return None;
        }
        let &(start, len) = self.map.get(piece)?;
        Some(&self.ids[start as usize..(start + len) as usize])
    }

    /// Whether `piece`, about to be merged, was merged before (as far as a
    /// bit per hash can tell): then it is worth keeping.
    fn seen_before(&mut self, piece: &[u8]) -> bool {
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

    fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if self.map.len() >= LONG_ENTRIES {
            self.map.clear();
            self.ids.clear();
        }
        let start = self.ids.len() as u32;
        self.ids.extend_from_slice(ids);
        self.map.insert(piece.into(), (start, ids.len() as u32));
    }
}

/// Bits of the hot cache index: 64K slots of 32 bytes (2 MB). 8K held 1-2%
/// fewer of a document's pieces than 16K and encoded 2-4% slower; 32K,
/// twice a Zen 3 core's second-level cache, measured no faster than 16K
/// until the window loop took the cached pieces (`encode_scanned_with`),
/// then English 3-4% faster (cl100k and o200k; code and Chinese the same).
/// 64K, with the seed (twice the tokens) and the one-multiply hash (an
/// Intel core with 2 MB of second-level cache): cl100k English +3.6%, code
/// +1%, o200k +1.6% / +1.4% (simulated on the code megabyte after its
/// warm-up: whole tokens missed 4,695 -> 2,783). A new thread's first
/// encode (its hot cache zeroed and seeded) takes 0.2-0.3 ms instead of
/// 0.1.
const HOT_BITS: u32 = 16;

/// A piece's slot in the hot cache, from its hash's top bits.
#[inline(always)]
fn hot_index(h: u64) -> usize {
    (h >> (64 - HOT_BITS)) as usize
}

/// The byte of a hash a hot slot's `LocalCache::fp` keeps (the eight bits
/// below the index).
#[inline(always)]
fn hot_fp(h: u64) -> u8 {
    (h >> (56 - HOT_BITS)) as u8
}

/// Bits of the long hot cache index: 4K slots of 64 bytes (256 KB).
const LONG_HOT_BITS: u32 = 12;

/// Most tokens a `LongSlot` holds.
const LONG_SLOT_IDS: usize = 7;

/// A slot of `LocalCache::long_hot`: a piece of `SHORT_MAX + 1` to
/// `WIDE_MAX` bytes as four words (`long_key_at`), its tokens, how many.
/// An all-zero key is an empty slot (a real key holds the length).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct LongSlot {
    key: [u64; 4],
    ids: [u32; LONG_SLOT_IDS],
    n: u32,
}

/// The key of `text[s..s + len]` (`SHORT_MAX < len <= WIDE_MAX`): its bytes
/// zero-padded to 32, the length in the last (past any piece's end).
#[inline(always)]
fn long_key_at(text: &[u8], s: usize, len: usize) -> [u64; 4] {
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
static LONG_KEY_MASKS: [[u64; 2]; merge::WIDE_MAX - SHORT_MAX] = {
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
fn long_index(key: &[u64; 4]) -> usize {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xD6E8_FEB8_6659_FD93;
    let h = (key[0].wrapping_mul(K1) ^ key[1]).wrapping_mul(K2) ^ key[2].wrapping_mul(K1) ^ key[3];
    (h.wrapping_mul(K2) >> (64 - LONG_HOT_BITS)) as usize
}

/// Keep a long piece's tokens in a `LocalCache::long_hot` (when they and
/// the piece fit; where the tokens do not, a slot that says the piece
/// waits to be merged is cleared).
#[inline]
fn keep_long(long_hot: &mut [LongSlot; 1 << LONG_HOT_BITS], piece: &[u8], ids: &[u32]) {
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
fn long_pending_key([a, b, c, d]: [u64; 4]) -> [u64; 4] {
    [a, b, c, d | PENDING]
}

/// What a thread's hot cache starts with (`Bpe::hot_seed`): per slot, a
/// token's key (all zero: none) and id. (Apart, and not as slots: two
/// blocks, 1 MB of keys and 256 KB of ids, copied into each new thread's
/// hot cache.)
struct HotSeed {
    keys: Box<[[u64; 2]]>,
    ids: Box<[u32]>,
    /// the keys' `hot_fp`
    fps: Box<[u8]>,
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
const LOCAL_MAX: usize = LOCAL_WORKING;

/// Entries a `LocalCache` table has room for when it is made (64 KB of
/// slots: a thread that encodes a few short texts needs no more).
const LOCAL_START: usize = 1 << 10;

/// Entries it has room for once it first fills up: 2 MB of slots, one huge
/// page, zeroed by the kernel as it is first touched. A megabyte of English
/// or code leaves 8-16 thousand merged pieces here; doubling from the start
/// size, the table grew again (a new block, every entry moved) in the middle
/// of the second megabyte a thread encoded, and in a virtual machine a block
/// of never-used memory costs far more than its zeroing (a 1 MB document
/// took 35% longer). So its first growth goes straight to this size, within
/// the first few tens of kilobytes of a thread's text (at 4K entries, the
/// 1 MB of code that warmed o200k up had not filled it yet).
const LOCAL_WORKING: usize = 1 << 15;

impl LocalCache {
    fn new(generation: u64, seed: Option<&HotSeed>) -> Self {
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

    /// Put `slot` in the hot cache at `x`, the slot of hash `h`.
    #[inline(always)]
    fn set_hot(&mut self, x: usize, h: u64, slot: Slot) {
        self.hot[x] = slot;
        self.fp[x] = hot_fp(h);
    }

    #[inline]
    fn insert(&mut self, key: [u64; 2], h: u64, ids: &[u32]) {
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
    fn tokens<'a>(&'a self, slot: &'a Slot) -> &'a [u32] {
        if slot.n == SLOT_IDS as u32 && slot.ids[2] == SPILLED {
            &self.spill[slot.ids[0] as usize..(slot.ids[0] + slot.ids[1]) as usize]
        } else {
            &slot.ids[..slot.n as usize]
        }
    }
}

/// Marks a `LocalCache` slot whose tokens are in `spill` (no token id is this).
const SPILLED: u32 = u32::MAX;

thread_local! {
    /// The caches of the models this thread used last (a few, so that
    /// alternating between models does not wipe them).
    static LOCAL: std::cell::RefCell<Vec<LocalCache>> = const { std::cell::RefCell::new(Vec::new()) };
}
const LOCAL_MODELS: usize = 4;

/// Longest run of spaces `Bpe::space_run` finds.
const SPACE_RUNS: usize = 128;

/// Longest token kept in `Bpe::short`.
const SHORT_MAX: usize = 15;

/// A token of at most `SHORT_MAX` bytes as two words: the bytes, zero-padded,
/// with the length in the top byte (so that trailing zero bytes count).
#[inline(always)]
fn short_key(t: &[u8]) -> [u64; 2] {
    debug_assert!(t.len() <= SHORT_MAX);
    let mut buf = [0u8; 16];
    buf[..t.len()].copy_from_slice(t);
    buf[15] = t.len() as u8;
    [
        u64::from_le_bytes(buf[..8].try_into().unwrap()),
        u64::from_le_bytes(buf[8..].try_into().unwrap()),
    ]
}

pub struct BpeOptions {
    pub byte_level: bool,
    pub unk_token: Option<String>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    pub ignore_merges: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub dropout: Option<f32>,
}

impl Default for BpeOptions {
    fn default() -> Self {
        BpeOptions {
            byte_level: true,
            unk_token: None,
            fuse_unk: false,
            byte_fallback: false,
            ignore_merges: false,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
            dropout: None,
        }
    }
}

impl Bpe {
    /// `vocab`: (token bytes, id); `merges`: pairs in rank order.
    pub fn new(
        vocab: Vec<(Vec<u8>, u32)>,
        merges: &[(Vec<u8>, Vec<u8>)],
        opts: BpeOptions,
    ) -> crate::error::Result<Self> {
        use crate::error::Error;
        let mut map: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
        map.reserve(vocab.len());
        let max_id = vocab.iter().map(|(_, id)| *id).max().map_or(0, |m| m as usize + 1);
        let mut vocab_r: Vec<Option<Box<[u8]>>> = crate::error::filled(None, max_id, "the id table")?;
        for (tok, id) in vocab {
            if let Some(prev) = &vocab_r[id as usize] {
                return Err(Error::Format(format!(
                    "vocab: id {id} is used twice ({:?} and {:?})",
                    String::from_utf8_lossy(prev),
                    String::from_utf8_lossy(&tok)
                )));
            }
            if map.insert(tok.clone(), id).is_some() {
                return Err(Error::Format(format!(
                    "vocab: token {:?} appears twice",
                    String::from_utf8_lossy(&tok)
                )));
            }
            vocab_r[id as usize] = Some(tok.into_boxed_slice());
        }
        let mut m = FxHashMap::default();
        m.reserve(merges.len());
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (rank, (a, b)) in merges.iter().enumerate() {
            let ia = map
                .get(a)
                .ok_or_else(|| Error::Format(format!("merges[{rank}]: token {:?} is not in the vocab", lossy(a))))?;
            let ib = map
                .get(b)
                .ok_or_else(|| Error::Format(format!("merges[{rank}]: token {:?} is not in the vocab", lossy(b))))?;
            let mut ab = a.clone();
            ab.extend_from_slice(b);
            let (pa, pb) = (*ia, *ib);
            let suffix_free = match &opts.continuing_subword_prefix {
                // with a prefix, "a" + "##b" merges into "ab"
                Some(p) if b.starts_with(p.as_bytes()) => {
                    let mut v = a.clone();
                    v.extend_from_slice(&b[p.len()..]);
                    v
                }
                _ => ab,
            };
            let new_id = map.get(&suffix_free).ok_or_else(|| {
                Error::Format(format!(
                    "merges[{rank}]: the merged token {:?} is not in the vocab",
                    lossy(&suffix_free)
                ))
            })?;
            // a repeated pair keeps its last rank, as in `tokenizers`
            m.insert((pa, pb), (rank as u32, *new_id));
        }
        let bpe = Self::from_parts(map, vocab_r, m, opts);
        bpe.prepare_byte_pairs();
        Ok(bpe)
    }

    /// A model whose merges follow from the vocabulary alone: any two adjacent
    /// tokens whose concatenation is a token merge, lowest id first (tiktoken).
    pub fn from_ranks(vocab: Vec<(Vec<u8>, u32)>) -> crate::error::Result<Self> {
        let opts = BpeOptions {
            ignore_merges: true,
            ..BpeOptions::default()
        };
        let mut bpe = Bpe::new(vocab, &[], opts)?;
        bpe.merges = bpe
            .implied_merges(&|_| false)
            .into_iter()
            .map(|(pair, id)| (pair, (id, id)))
            .collect();
        bpe.byte_pairs = std::sync::OnceLock::new();
        bpe.pair_table = std::sync::OnceLock::new();
        bpe.backtrack = std::sync::OnceLock::new();
        bpe.prepare_byte_pairs();
        Ok(bpe)
    }

    pub(crate) fn from_parts(
        vocab: FxHashMap<Vec<u8>, u32>,
        vocab_r: Vec<Option<Box<[u8]>>>,
        merges: FxHashMap<(u32, u32), (u32, u32)>,
        opts: BpeOptions,
    ) -> Self {
        let mut byte_ids = [NONE; 256];
        let mut fallback_ids = [NONE; 256];
        for b in 0..=255u8 {
            if let Some(&id) = vocab.get(&[b][..]) {
                byte_ids[b as usize] = id;
            }
            if let Some(&id) = vocab.get(format!("<0x{b:02X}>").as_bytes()) {
                fallback_ids[b as usize] = id;
            }
        }
        let opts = BpeOptions {
            continuing_subword_prefix: opts.continuing_subword_prefix.filter(|p| !p.is_empty()),
            end_of_word_suffix: opts.end_of_word_suffix.filter(|p| !p.is_empty()),
            ..opts
        };
        let unk_id = opts.unk_token.as_ref().and_then(|u| vocab.get(u.as_bytes()).copied());
        let mut short = PieceTable::with_capacity(vocab.len());
        for (t, &id) in vocab.iter().filter(|(t, _)| t.len() <= SHORT_MAX) {
            let key = short_key(t);
            short.insert(key, PieceTable::hash(&key), &[id]);
        }
        let bpe = Bpe {
            vocab,
            vocab_r,
            merges,
            byte_level: opts.byte_level,
            unk_token: opts.unk_token,
            unk_id,
            fuse_unk: opts.fuse_unk,
            byte_fallback: opts.byte_fallback,
            ignore_merges: opts.ignore_merges,
            continuing_subword_prefix: opts.continuing_subword_prefix,
            end_of_word_suffix: opts.end_of_word_suffix,
            dropout: opts.dropout,
            json_form: JsonForm::default(),
            all_bytes: !byte_ids.contains(&NONE),
            byte_ids,
            fallback_ids,
            short,
            byte_pairs: std::sync::OnceLock::new(),
            pair_table: std::sync::OnceLock::new(),
            space_runs: std::sync::OnceLock::new(),
            backtrack: std::sync::OnceLock::new(),
            hot_seed: std::sync::OnceLock::new(),
            long_tokens: std::sync::OnceLock::new(),
            multibyte_seen: std::sync::atomic::AtomicUsize::new(0),
            cache: RwLock::new(FxHashMap::default()),
            generation: next_generation(),
        };
        // (made with the model, not at its first encode: 2.5 ms for
        // cl100k's 100K tokens, 4.5 ms for o200k's 200K)
        if bpe.ignore_merges {
            bpe.hot_seed();
        }
        bpe
    }

    /// Every `(a, b)` whose concatenation is a token, mapped to that token:
    /// the merges that a rank file (tiktoken) implies.
    fn implied_merges(&self, exclude: &dyn Fn(u32) -> bool) -> FxHashMap<(u32, u32), u32> {
        let mut merges = FxHashMap::default();
        for (tok, &id) in &self.vocab {
            if exclude(id) {
                continue;
            }
            for cut in 1..tok.len() {
                if let (Some(&a), Some(&b)) = (self.vocab.get(&tok[..cut]), self.vocab.get(&tok[cut..])) {
                    if !exclude(a) && !exclude(b) {
                        merges.insert((a, b), id);
                    }
                }
            }
        }
        merges
    }

    /// Whether this model encodes exactly as tiktoken would with ids as ranks:
    /// whole-piece lookup first, every implied pair a merge, merge order = id order.
    pub fn is_rank_equivalent(&self, exclude: &dyn Fn(u32) -> bool) -> bool {
        if !self.ignore_merges || !self.byte_level || self.dropout.is_some_and(|d| d > 0.0) {
            return false;
        }
        if self.continuing_subword_prefix.is_some()
            || self.end_of_word_suffix.is_some()
            || self.byte_ids.contains(&NONE)
        {
            return false;
        }
        let implied = self.implied_merges(exclude);
        if implied.len() != self.merges.len() {
            return false;
        }
        let mut by_rank: Vec<(u32, u32)> = Vec::with_capacity(self.merges.len());
        for (pair, &(rank, new_id)) in &self.merges {
            if implied.get(pair) != Some(&new_id) {
                return false;
            }
            by_rank.push((rank, new_id));
        }
        by_rank.sort_unstable();
        by_rank.windows(2).all(|w| w[0].1 <= w[1].1)
    }

    /// Merges as `(left, right)` ids in rank order.
    pub fn merges_in_order(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<((u32, u32), (u32, u32))> = self.merges.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_by_key(|(pair, (rank, _))| (*rank, *pair));
        v.into_iter().map(|(p, _)| p).collect()
    }

    pub fn vocab_iter(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.vocab_r
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_deref().map(|t| (i as u32, t)))
    }

    fn plain(&self) -> bool {
        self.continuing_subword_prefix.is_none() && self.end_of_word_suffix.is_none()
    }

    /// The initial symbols of a piece: bytes (byte-level) or characters.
    fn initial_symbols(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>) {
        if self.byte_level && self.plain() && piece.iter().all(|&b| self.byte_ids[b as usize] != NONE) {
            syms.extend(piece.iter().map(|&b| (self.byte_ids[b as usize], 1)));
            return;
        }
        // Unit boundaries: every byte, or every UTF-8 character.
        let mut bounds: Vec<usize> = Vec::with_capacity(piece.len() + 1);
        if self.byte_level {
            bounds.extend(0..=piece.len());
        } else {
            bounds.extend((0..piece.len()).filter(|&i| (piece[i] & 0xC0) != 0x80));
            bounds.push(piece.len());
        }
        let mut key: Vec<u8> = Vec::with_capacity(16);
        let mut unk: Option<(u32, u32)> = None;
        let units = bounds.len() - 1;
        for u in 0..units {
            let (s, e) = (bounds[u], bounds[u + 1]);
            key.clear();
            if u > 0 {
                if let Some(p) = &self.continuing_subword_prefix {
                    key.extend_from_slice(p.as_bytes());
                }
            }
            key.extend_from_slice(&piece[s..e]);
            if u + 1 == units {
                if let Some(sfx) = &self.end_of_word_suffix {
                    key.extend_from_slice(sfx.as_bytes());
                }
            }
            let len = (e - s) as u32;
            if let Some(&id) = self.vocab.get(&key) {
                if let Some(pending) = unk.take() {
                    syms.push(pending);
                }
                syms.push((id, len));
                continue;
            }
            if self.byte_fallback && key.iter().all(|&b| self.fallback_ids[b as usize] != NONE) {
                // as in `tokenizers`, byte-fallback pieces cover the unit's bytes one by one
                for (k, &b) in key.iter().enumerate() {
                    let l = if k < len as usize { 1 } else { 0 };
                    syms.push((self.fallback_ids[b as usize], l));
                }
                continue;
            }
            if let Some(unk_id) = self.unk_id {
                unk = match unk {
                    Some((id, l)) if self.fuse_unk => Some((id, l + len)),
                    Some(pending) => {
                        syms.push(pending);
                        Some((unk_id, len))
                    }
                    None => Some((unk_id, len)),
                };
            }
        }
        if let Some(pending) = unk {
            syms.push(pending);
        }
    }
}

/// Whether a short key's piece has a byte outside ASCII.
#[inline(always)]
fn not_ascii([lo, hi]: [u64; 2]) -> bool {
    // (the length in the top byte left out)
    (lo | (hi & !(0xFF << 56))) & 0x8080_8080_8080_8080 != 0
}

/// `short_key(&text[s..s + len])`, read straight from the text when 16 bytes
/// are there to read (a copy through a buffer stalls the loads after it).
#[inline(always)]
fn short_key_at(text: &[u8], s: usize, len: usize) -> [u64; 2] {
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
fn masked_key([lo, hi]: [u64; 2], len: usize) -> [u64; 2] {
    let [mlo, mhi] = KEY_MASKS[len];
    [lo & mlo, (hi & mhi) | ((len as u64) << 56)]
}

/// For each length up to `SHORT_MAX`, the masks of that many bytes in
/// the two words of a key.
static KEY_MASKS: [[u64; 2]; SHORT_MAX + 1] = {
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
    /// The id of a whole piece, if it is a token.
    #[inline]
    fn whole(&self, piece: &[u8]) -> Option<u32> {
        if piece.len() <= SHORT_MAX {
            let key = short_key(piece);
            self.short.get(&key, PieceTable::hash(&key)).map(|s| s.ids[0])
        } else {
            self.vocab.get(piece).copied()
        }
    }

    /// Whether a piece longer than `SHORT_MAX` bytes may be a token: false
    /// for nearly every piece that is none (two bits of its hash in 64K,
    /// set for each such token: cl100k has 1,030, o200k 5,492). A long
    /// piece that is no token (most: new names, separator lines) then
    /// skips the vocabulary's lookup, a wait for memory.
    #[inline]
    fn maybe_long_token(&self, piece: &[u8]) -> bool {
        use std::hash::BuildHasher;
        let bits = |t: &[u8]| {
            let h = rustc_hash::FxBuildHasher.hash_one(t);
            let (a, b) = ((h >> 48) as usize, ((h >> 32) & 0xFFFF) as usize);
            [a, b]
        };
        let filter = self.long_tokens.get_or_init(|| {
            let mut f = vec![0u64; (1 << 16) / 64].into_boxed_slice();
            for t in self.vocab.keys().filter(|t| t.len() > SHORT_MAX) {
                for b in bits(t) {
                    f[b >> 6] |= 1 << (b & 63);
                }
            }
            f
        });
        bits(piece).iter().all(|&b| filter[b >> 6] & (1 << (b & 63)) != 0)
    }

    /// The token of a piece longer than `SHORT_MAX` bytes that is a run of
    /// spaces the vocabulary has whole, for a model that looks whole pieces
    /// up (`ignore_merges`): the indentation of code, looked up by its
    /// length instead of in `vocab` (a hash of the bytes, then a wait for
    /// the entry, then for its bytes).
    #[inline(always)]
    fn space_run(&self, piece: &[u8]) -> Option<u32> {
        let n = piece.len();
        if !self.ignore_merges || n > SPACE_RUNS || piece[0] != b' ' || piece[n - 1] != b' ' {
            return None;
        }
        // (no early exit: the compiler compares many bytes at a time)
        if piece.iter().fold(0, |other, &b| other | (b ^ b' ')) != 0 {
            return None;
        }
        let ids = self.space_runs.get_or_init(|| {
            (0..=SPACE_RUNS)
                .map(|n| self.vocab.get(&vec![b' '; n]).copied().unwrap_or(u32::MAX))
                .collect()
        });
        Some(ids[n]).filter(|&id| id != u32::MAX)
    }

    /// For a model that looks whole pieces up (`ignore_merges`), the
    /// tokens of at most `SHORT_MAX` bytes in a hot cache's slots, the
    /// lowest id where two share a slot (in rank files and most trained
    /// vocabularies, the more frequent token): a thread's hot cache starts
    /// with them, so that a common token met for the first time is found
    /// there instead of waiting in `look_up` (a third of the pieces that
    /// miss the hot cache after a warm-up on other text are such tokens).
    fn hot_seed(&self) -> Option<&HotSeed> {
        self.hot_seed
            .get_or_init(|| {
                if !self.ignore_merges || self.dropout.is_some_and(|d| d > 0.0) {
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

    /// Encode every piece a scanner cuts from `text`, appending ids only.
    /// The same ids as `encode_piece` on each piece.
    pub fn encode_scanned(&self, scanner: &crate::scanner::Scanner, text: &str, out: &mut Vec<u32>) {
        if self.dropout.is_some_and(|d| d > 0.0) {
            // random merges: nothing can be cached
            let mut buf = Vec::with_capacity(64);
            scanner.for_each(text, |s, e| {
                buf.clear();
                self.encode_piece(&text.as_bytes()[s..e], &mut buf);
                out.extend(buf.iter().map(|&(id, _)| id));
            });
            return;
        }
        LOCAL.with(|local| match local.try_borrow_mut() {
            Ok(mut caches) => {
                let k = match caches.iter().position(|c| c.generation == self.generation) {
                    Some(k) => k,
                    None => {
                        if caches.len() == LOCAL_MODELS {
                            caches.remove(0);
                        }
                        // (`ignore_merges` read again: the seed's tokens are
                        // right only while whole pieces are looked up)
                        let seed = self.hot_seed().filter(|_| self.ignore_merges);
                        caches.push(LocalCache::new(self.generation, seed));
                        caches.len() - 1
                    }
                };
                self.encode_scanned_with(scanner, text, &mut caches[k], out);
            }
            // (only reentrant use could get here) a throw-away cache
            Err(_) => self.encode_scanned_with(scanner, text, &mut LocalCache::new(self.generation, None), out),
        });
    }

    fn encode_scanned_with(
        &self,
        scanner: &crate::scanner::Scanner,
        text: &str,
        local: &mut LocalCache,
        out: &mut Vec<u32>,
    ) {
        let bytes = text.as_bytes();
        // (allocated on first use: a short text of known pieces needs neither)
        let mut buf: Vec<(u32, u32)> = Vec::new();
        // (the thread's buffers, kept from call to call: a batch of small
        // documents would otherwise allocate them for each)
        let mut work = std::mem::take(&mut local.work);
        if local.busy {
            // (an encode that stopped half-way left pending slots)
            local.hot.fill(Slot::default());
            local.fp.fill(0);
            local.long_hot.fill(LongSlot::default());
        }
        local.busy = true;
        work.defer = self.merges_from_bytes() && self.dropout.is_none_or(|d| d <= 0.0);
        // Pieces of `SHORT_MAX` to `WIDER_MAX` bytes the vocabulary and the
        // thread's cache lack (random text, new long names, separator lines)
        // wait too, for the wide lanes where the CPU has them: merged one by
        // one, a piece waits for memory at every merge.
        let defer_long = work.defer && merge::wide_lanes();
        // (pieces merged together in `flush` are never kept in the thread's
        // table: see `look_up`)
        let keep = !work.defer;
        // A short piece the hot cache holds goes out at once. Any other
        // leaves a mark in `out` and waits for `CHUNK` of them: meanwhile
        // the table slots it needs are loading (a cold piece is otherwise a
        // wait for memory); then they are looked up in order (`look_up`),
        // and a mark is overwritten by a single token, or replaced by more
        // (or by the tokens of a merge) in one pass over `out` (`flush`).
        let mut chunk = [Pending::default(); CHUNK];
        let mut n = 0;
        let mut ctx = (&mut *out, &mut *local);
        // (both inlined into the scanner's loop: a call per piece costs
        // more than most pieces' lookup)
        scanner.for_each_in(
            text,
            &mut ctx,
            // The pieces of a window of ASCII text, in a loop of their own
            // while the hot cache has them (most pieces): no more than a
            // piece needs (bounds checked once a window, the output's room
            // reserved once, its length kept in a register).
            #[inline(always)]
            |(out, local), mut i, base, mut bits| {
                if base + crate::scanner::WINDOW_BYTES + 16 > bytes.len() {
                    return (i, bits);
                }
                out.reserve((SLOT_IDS + 1) * crate::scanner::WINDOW_BYTES);
                let (dst, mut k) = (out.as_mut_ptr(), out.len());
                // (the array, not its box: its address stays in a register)
                let hot: &[Slot; 1 << HOT_BITS] = &local.hot;
                let fps: &[u8; 1 << HOT_BITS] = &local.fp;
                while bits != 0 {
                    let e = base + bits.trailing_zeros() as usize;
                    let len = e - i;
                    if len > SHORT_MAX {
                        break;
                    }
                    // SAFETY: `i < base + WINDOW_BYTES`, and the text has
                    // 16 bytes past that (checked above)
                    let w = unsafe { bytes.as_ptr().add(i).cast::<[u64; 2]>().read_unaligned() };
                    let key = masked_key(w.map(u64::from_le), len);
                    let h = PieceTable::hash(&key);
                    let x = hot_index(h);
                    if fps[x] != hot_fp(h) {
                        break;
                    }
                    let slot = &hot[x];
                    if slot.key != key {
                        break;
                    }
                    // SAFETY: room for `SLOT_IDS + 1` ids a piece of the
                    // window was reserved; the three ids and `n` are written
                    // in one piece, `n` of them kept
                    unsafe { dst.add(k).cast::<[u32; 4]>().write_unaligned(slot.ids_and_count()) };
                    k += slot.n as usize;
                    bits &= bits - 1;
                    i = e;
                }
                // SAFETY: the ids up to `k` were written just above
                unsafe { out.set_len(k) };
                (i, bits)
            },
            #[inline(always)]
            |(out, local), s, e| {
                let piece = &bytes[s..e];
                let (key, h) = if piece.len() <= SHORT_MAX {
                    let key = short_key_at(bytes, s, piece.len());
                    // A piece for the backtracking encoder (Chinese,
                    // Japanese, Korean …; never cached, see `look_up`),
                    // once it is built: encoded now, its tokens appended,
                    // instead of a mark that `look_up` and `flush` replace
                    // (o200k Chinese +4%, Korean +10%, Hindi +3%, Russian
                    // +4%), and without a wait for its hot slot, which
                    // cannot hold it (o200k Chinese +3%). (What
                    // `backtracks` would check, already known: no second
                    // pass over the bytes.)
                    if piece.len() > 6 && not_ascii(key) && self.backtrack_built() {
                        self.backtracked_piece(piece, &mut work.syms, out);
                        return;
                    }
                    let h = PieceTable::hash(&key);
                    let x = hot_index(h);
                    // (a byte that differs: not held, nor waiting; the
                    // slot is read in `look_up`, its line asked for now)
                    let slot = &local.hot[x];
                    let held = local.fp[x] == hot_fp(h);
                    if !held {
                        table::prefetch(slot);
                    }
                    if held && slot.key == key {
                        // (one id mostly: no call to copy a slice)
                        if slot.n == 1 {
                            out.push(slot.ids[0]);
                            return;
                        }
                        push_ids(out, &slot.ids, slot.n as usize);
                        return;
                    }
                    // (before the encoder is built: such pieces are counted
                    // here, on a hot miss, towards its build, and merged
                    // and cached until then)
                    if piece.len() > 6
                        && not_ascii(key)
                        && !(held && slot.key == pending_key(key))
                        && self.backtracked_now(piece, &mut work.syms, out)
                    {
                        return;
                    }
                    // (a piece waiting to be merged, `PENDING`: `look_up`
                    // sees to it)
                    if self.ignore_merges {
                        self.short.prefetch(h);
                    }
                    if keep {
                        local.table.prefetch(h);
                    }
                    (key, h)
                } else if let Some(id) = self.space_run(piece) {
                    out.push(id);
                    return;
                } else if defer_long && piece.len() <= merge::WIDER_MAX && !self.backtracks(piece) {
                    if piece.len() <= merge::WIDE_MAX {
                        let key = long_key_at(bytes, s, piece.len());
                        let slot = &local.long_hot[long_index(&key)];
                        if slot.key == key {
                            push_ids(out, &slot.ids, slot.n as usize);
                            return;
                        }
                    }
                    // (looked up in `look_up`, merged in `flush` if need be)
                    ([0; 2], 0)
                } else {
                    // (only appends to `out`: the marks stay where they are)
                    self.long_piece(piece, &mut buf, &mut work.syms, out);
                    return;
                };
                chunk[n] = Pending {
                    start: s,
                    len: piece.len(),
                    key,
                    h,
                    at: out.len(),
                };
                out.push(MARK);
                n += 1;
                if n == CHUNK {
                    self.look_up(bytes, &chunk, local, &mut work, out);
                    n = 0;
                }
            },
        );
        let (out, local) = ctx;
        self.look_up(bytes, &chunk[..n], local, &mut work, out);
        self.flush(bytes, local, &mut work, out);
        local.work = work;
        local.busy = false;
    }

    /// The ids of a piece longer than `SHORT_MAX` bytes, not cached. (Not
    /// inlined: it would crowd the short pieces' loop.)
    #[inline(never)]
    fn long_piece(&self, piece: &[u8], buf: &mut Vec<(u32, u32)>, syms: &mut Vec<(u32, u32)>, out: &mut Vec<u32>) {
        // A long run of one character is encoded as a run, before the
        // backtracking encoder could take it (a million `中`): the whole
        // piece looked up first, as for any piece.
        if let Some(unit) = self.run_unit(piece) {
            if let Some(&id) = self.ignore_merges.then(|| self.vocab.get(piece)).flatten() {
                out.push(id);
                return;
            }
            if let Some(run) = self.encode_run(piece, unit, syms) {
                out.reserve(run.len());
                out.extend(run.tokens().map(|(id, _)| id));
                return;
            }
        }
        if self.backtracks(piece) {
            self.backtracked_piece(piece, syms, out);
            return;
        }
        if self.ignore_merges {
            if let Some(&id) = self.vocab.get(piece) {
                out.push(id);
                return;
            }
        }
        buf.clear();
        self.encode_merging(piece, buf, syms);
        out.extend(buf.iter().map(|&(id, _)| id));
    }

    /// `backtracked_piece` if `piece` goes to the backtracking encoder.
    /// (Not inlined: in the scanner's loop it crowded the ASCII pieces'
    /// path, code -3%.)
    #[inline(never)]
    fn backtracked_now(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>, out: &mut Vec<u32>) -> bool {
        if !self.backtracks(piece) {
            return false;
        }
        self.backtracked_piece(piece, syms, out);
        true
    }

    /// The ids of a piece `backtracks` takes, not cached.
    #[inline(never)]
    fn backtracked_piece(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>, out: &mut Vec<u32>) {
        // (a whole-token piece is found by the backtracking encoder too,
        // the longest token it starts with, where BPE makes that token:
        // only the few it does not make are looked up first)
        if self.ignore_merges {
            let whole = match self.backtrack() {
                Some(bt) => bt.unmade(piece),
                None => self.vocab.get(piece).copied(),
            };
            if let Some(id) = whole {
                out.push(id);
                return;
            }
        }
        syms.clear();
        self.merge_piece(piece, syms);
        out.extend(syms.iter().map(|&(id, _)| id));
    }

    /// The tokens of the pieces of a chunk, each in place of its mark in
    /// `out`: from the caches, or merged (and then cached). A single token
    /// overwrites its mark; more tokens, and the pieces to merge, wait for
    /// `flush`.
    #[inline(never)]
    fn look_up(&self, bytes: &[u8], chunk: &[Pending], local: &mut LocalCache, work: &mut Work, out: &mut Vec<u32>) {
        for p in chunk {
            if p.len > SHORT_MAX {
                self.look_up_long(bytes, p, local, work, out);
                continue;
            }
            let (key, h) = (p.key, p.h);
            let hot = hot_index(h);
            // (the same piece earlier in the chunk may have filled it)
            let slot = local.hot[hot];
            if slot.key == key {
                work.place(out, p.at, &slot.ids[..slot.n as usize]);
                continue;
            }
            if slot.key == pending_key(key) {
                // merged once for both
                work.marks.push(Mark {
                    at: p.at,
                    start: slot.ids[0],
                    len: MERGE,
                });
                continue;
            }
            // Short pieces for the backtracking encoder are not cached: in
            // Chinese or Japanese most are phrases that do not come back, and
            // caching them costs more than it saves. (Most never get here:
            // see `encode_scanned_with`.)
            if p.len > 6 && not_ascii(key) {
                let piece = &bytes[p.start..p.start + p.len];
                if self.backtracks(piece) {
                    let start = work.extra.len();
                    self.backtracked_piece(piece, &mut work.syms, &mut work.extra);
                    work.placed(out, p.at, start);
                    continue;
                }
            }
            if self.ignore_merges {
                if let Some(whole) = self.short.get(&key, h) {
                    let id = whole.ids[0];
                    local.set_hot(hot, h, Slot::new(key, &[id]));
                    out[p.at] = id;
                    continue;
                }
            }
            if p.len == 3 && work.defer && self.ignore_merges {
                // Not a token (just looked up): its two pairs are in the
                // byte-pair table, the lower (leftmost of equals) merges,
                // and the two symbols left cannot (that would make the
                // whole piece). Cheaper than a lookup in the thread's
                // table, so such pieces are never kept there. (Random text
                // such as base64 is full of them.)
                let tokens = self.three_bytes(&bytes[p.start..p.start + 3]);
                let tokens = &tokens.0[..tokens.1];
                local.set_hot(hot, h, Slot::new(key, tokens));
                work.place(out, p.at, tokens);
                continue;
            }
            if work.defer {
                // Merged in `flush`, with the others, and kept in the hot
                // cache only (if it has at most `SLOT_IDS` tokens): a piece
                // the hot cache lost to another is merged again. Kept in the
                // thread's table too, the pieces of a megabyte of English or
                // code found there again were 170-190 (warmed up on other
                // text), for a prefetch on every hot miss and a lookup and
                // an insert for every piece merged: without it, cl100k and
                // o200k English +1%, code +2.2-2.4%; batches and 31 MB on one
                // thread level.
                let at = work.merging.len() as u32;
                work.marks.push(Mark {
                    at: p.at,
                    start: at,
                    len: MERGE,
                });
                work.merging.push(*p);
                local.set_hot(
                    hot,
                    h,
                    Slot {
                        key: pending_key(key),
                        ids: [at, 0, 0],
                        n: 0,
                    },
                );
                continue;
            }
            if let Some(slot) = local.table.get(&key, h) {
                let slot = *slot;
                work.place(out, p.at, local.tokens(&slot));
                if slot.ids[2] != SPILLED {
                    local.set_hot(hot, h, slot);
                }
                continue;
            }
            work.syms.clear();
            self.merge_piece(&bytes[p.start..p.start + p.len], &mut work.syms);
            let start = work.extra.len();
            work.extra.extend(work.syms.iter().map(|&(id, _)| id));
            let tokens = &work.extra[start..];
            local.insert(key, h, tokens);
            if tokens.len() <= SLOT_IDS {
                local.set_hot(hot, h, Slot::new(key, tokens));
            }
            work.placed(out, p.at, start);
        }
        if work.merging.len() >= DEFER
            || work.wide.len() >= DEFER
            || work.wider.len() >= DEFER
            || work.marks.len() >= MARKS_MAX
        {
            self.flush(bytes, local, work, out);
        }
    }

    /// The tokens of a piece of three bytes that is no token, for a model
    /// whose pieces merge from their bytes (`merges_from_bytes`): at most
    /// one merge, read from the byte-pair table.
    #[inline(always)]
    fn three_bytes(&self, b: &[u8]) -> ([u32; 3], usize) {
        let table = self.byte_pair_table();
        let (r01, id01) = table[((b[0] as usize) << 8) | b[1] as usize];
        let (r12, id12) = table[((b[1] as usize) << 8) | b[2] as usize];
        let ids = [
            self.byte_ids[b[0] as usize],
            self.byte_ids[b[1] as usize],
            self.byte_ids[b[2] as usize],
        ];
        if r01.min(r12) == merge::NO_MERGE {
            (ids, 3)
        } else if r01 <= r12 {
            ([id01, ids[2], 0], 2)
        } else {
            ([ids[0], id12, 0], 2)
        }
    }

    /// `look_up` of a piece longer than `SHORT_MAX` bytes (at most
    /// `merge::WIDER_MAX`): a whole token, or kept in the thread's `long`
    /// cache, or left to `flush` to merge (and to keep if it was merged
    /// before: `Pending::h` says so), in the wide lanes or (over
    /// `merge::WIDE_MAX` bytes) the wider ones.
    #[inline(never)]
    fn look_up_long(&self, bytes: &[u8], p: &Pending, local: &mut LocalCache, work: &mut Work, out: &mut [u32]) {
        let piece = &bytes[p.start..p.start + p.len];
        // A copy waiting to be merged already (its long hot slot, just read
        // by the scanner's callback, says so): merged once for both, and
        // neither looked up in the vocabulary nor in the thread's cache
        // (the first copy was; each is a wait for memory). A megabyte of
        // code: 181 of the 435 long pieces that got here.
        let key = (p.len <= merge::WIDE_MAX).then(|| long_key_at(bytes, p.start, p.len));
        if let Some(key) = key {
            let slot = &local.long_hot[long_index(&key)];
            if slot.key == long_pending_key(key) {
                work.marks.push(Mark {
                    at: p.at,
                    start: slot.ids[0],
                    len: MERGE_WIDE,
                });
                return;
            }
        }
        if self.ignore_merges && self.maybe_long_token(piece) {
            if let Some(&id) = self.vocab.get(piece) {
                out[p.at] = id;
                keep_long(&mut local.long_hot, piece, &[id]);
                return;
            }
        }
        let long = &mut local.long;
        if let Some(ids) = long.get(piece) {
            work.place(out, p.at, ids);
            keep_long(&mut local.long_hot, piece, ids);
            return;
        }
        let waiting = Pending {
            h: long.seen_before(piece) as u64,
            ..*p
        };
        let Some(key) = key else {
            work.marks.push(Mark {
                at: p.at,
                start: work.wider.len() as u32,
                len: MERGE_WIDER,
            });
            work.wider.push(waiting);
            return;
        };
        // (marked as waiting: a later copy shares the merge)
        let start = work.wide.len() as u32;
        local.long_hot[long_index(&key)] = LongSlot {
            key: long_pending_key(key),
            ids: [start, 0, 0, 0, 0, 0, 0],
            n: 0,
        };
        work.wide.push(waiting);
        work.marks.push(Mark {
            at: p.at,
            start,
            len: MERGE_WIDE,
        });
    }

    /// Merge the pieces `look_up` left waiting, all together (see
    /// `merge::merge_bytes_across` and `merge::merge_bytes_many`: their
    /// waits for the pair table overlap; those longer than `SHORT_MAX` in
    /// `merge_bytes_many_wide`), cache them, and replace every mark left in
    /// `out` by its tokens.
    #[inline(never)]
    fn flush(&self, bytes: &[u8], local: &mut LocalCache, work: &mut Work, out: &mut Vec<u32>) {
        if work.marks.is_empty() {
            return;
        }
        let (pairs, table) = (self.pair_table(), self.byte_pair_table());
        let k = work.merging.len();
        if k > 0 {
            work.merged.resize(k, [0; merge::MANY_MAX + 1]);
            work.counts.resize(k, 0);
            let merging = &work.merging;
            merge::merge_bytes_across(
                k,
                |i| &bytes[merging[i].start..merging[i].start + merging[i].len],
                &self.byte_ids,
                table,
                pairs,
                &mut work.merged,
                &mut work.counts,
                // (`look_up` found no token for the whole piece)
                self.ignore_merges,
            );
            for (i, p) in work.merging.iter().enumerate() {
                let tokens = &work.merged[i][..work.counts[i] as usize];
                let x = hot_index(p.h);
                let hot = &mut local.hot[x];
                if tokens.len() <= SLOT_IDS {
                    *hot = Slot::new(p.key, tokens);
                    local.fp[x] = hot_fp(p.h);
                } else if hot.key == pending_key(p.key) {
                    // (its `PENDING` slot: more tokens than a slot holds,
                    // merged again where it comes back)
                    *hot = Slot::default();
                }
            }
        }
        let k = work.wide.len();
        if k > 0 {
            work.merged_wide.resize(k, [0; merge::WIDE_MAX + 1]);
            work.counts_wide.resize(k, 0);
            let wide = &work.wide;
            let done = merge::merge_bytes_many_wide(
                k,
                |i| &bytes[wide[i].start..wide[i].start + wide[i].len],
                &self.byte_ids,
                table,
                pairs,
                &mut work.merged_wide,
                &mut work.counts_wide,
                // (`look_up_long` found no token for the whole piece)
                self.ignore_merges,
            );
            debug_assert!(done, "long pieces wait only where the wide lanes work");
            for (i, p) in wide.iter().enumerate() {
                let tokens = &work.merged_wide[i][..work.counts_wide[i] as usize];
                let piece = &bytes[p.start..p.start + p.len];
                keep_long(&mut local.long_hot, piece, tokens);
                if p.h != 0 {
                    local.long.insert(piece, tokens);
                }
            }
        }
        let k = work.wider.len();
        if k > 0 {
            work.merged_wider.resize(k, [0; merge::WIDER_MAX + 1]);
            work.counts_wider.resize(k, 0);
            let wider = &work.wider;
            let done = merge::merge_bytes_many_wider(
                k,
                |i| &bytes[wider[i].start..wider[i].start + wider[i].len],
                &self.byte_ids,
                table,
                pairs,
                &mut work.merged_wider,
                &mut work.counts_wider,
                // (`look_up_long` found no token for the whole piece)
                self.ignore_merges,
            );
            debug_assert!(done, "long pieces wait only where the wide lanes work");
            for (i, p) in wider.iter().enumerate() {
                if p.h != 0 {
                    let tokens = &work.merged_wider[i][..work.counts_wider[i] as usize];
                    local.long.insert(&bytes[p.start..p.start + p.len], tokens);
                }
            }
        }
        // `out` from the first mark on, each mark replaced. Copied eight ids
        // at a time, each copy free to write up to 7 ids past its end (the
        // next copy writes over them): a `memcpy` call for each of hundreds
        // of short stretches cost more than the copying. The tail and
        // `extra` get eight ids of padding, so that a copy's last eight
        // ids are read from the vector.
        let first = work.marks[0].at;
        work.tail.clear();
        work.tail.extend_from_slice(&out[first..]);
        let kept = work.tail.len();
        work.tail.extend_from_slice(&[0; 8]);
        work.extra.extend_from_slice(&[0; 8]);
        let most = kept + work.extra.len() + work.marks.len() * (merge::WIDER_MAX + 1) + 32;
        out.truncate(first);
        out.reserve(most);
        let dst = out.as_mut_ptr();
        let mut k = first;
        // `src` has 8 ids readable past `len` (the padding, or the rest of
        // its array); `dst` has room for `most` ids past `first`, more than
        // all ids written plus 32.
        // SAFETY: as just said, for every call below
        let copy = |k: &mut usize, src: *const u32, len: usize| unsafe {
            let mut j = 0;
            while j < len {
                dst.add(*k + j)
                    .cast::<[u32; 8]>()
                    .write_unaligned(src.add(j).cast::<[u32; 8]>().read_unaligned());
                j += 8;
            }
            *k += len;
        };
        let mut from = 0;
        for m in &work.marks {
            copy(&mut k, work.tail[from..].as_ptr(), m.at - first - from);
            let (start, len) = (m.start as usize, m.len as usize);
            if m.len == MERGE {
                copy(&mut k, work.merged[start].as_ptr(), work.counts[start] as usize);
            } else if m.len == MERGE_WIDE {
                copy(
                    &mut k,
                    work.merged_wide[start].as_ptr(),
                    work.counts_wide[start] as usize,
                );
            } else if m.len == MERGE_WIDER {
                copy(
                    &mut k,
                    work.merged_wider[start].as_ptr(),
                    work.counts_wider[start] as usize,
                );
            } else {
                copy(&mut k, work.extra[start..].as_ptr(), len);
            }
            from = m.at - first + 1;
        }
        copy(&mut k, work.tail[from..].as_ptr(), kept - from);
        // SAFETY: every id up to `k` was written just above
        unsafe { out.set_len(k) };
        work.marks.clear();
        work.extra.clear();
        work.merging.clear();
        work.wide.clear();
        work.wider.clear();
    }
}

/// Append `ids[..n]` to `out` (`n <= N`): all `N` written past the end,
/// the length moved by `n`. A copy of a slice of unknown length is a call
/// to `memcpy`, which costs more than the few ids a piece has.
#[inline(always)]
fn push_ids<const N: usize>(out: &mut Vec<u32>, ids: &[u32; N], n: usize) {
    debug_assert!(n <= N);
    out.reserve(N);
    let len = out.len();
    // SAFETY: `reserve` made room for `N` ids past `len`; the first `n`
    // of them are written, and `n <= N`
    unsafe {
        out.as_mut_ptr().add(len).cast::<[u32; N]>().write_unaligned(*ids);
        out.set_len(len + n.min(N));
    }
}

/// What `look_up` puts in `out` until its piece's tokens are known (any
/// value: marks are found by position, never by value).
const MARK: u32 = u32::MAX;

/// Pieces merged together (at least) in a `flush`: enough for the wide
/// lanes to get several long pieces too (in random text, one piece in
/// twenty); the instances of a piece within that span share one merge
/// (`PENDING`). (16 made base64 about 20% slower.)
const DEFER: usize = 64;

/// Marks that make `look_up` flush (a bound on `flush`'s pass over `out`).
const MARKS_MAX: usize = 256;

/// `Mark::len` of a piece to merge.
const MERGE: u32 = u32::MAX;

/// `Mark::len` of a long piece to merge (in the wide lanes).
const MERGE_WIDE: u32 = u32::MAX - 1;

/// `Mark::len` of a piece of over `merge::WIDE_MAX` bytes to merge (in the
/// wider lanes).
const MERGE_WIDER: u32 = u32::MAX - 2;

/// A mark in `out` that more than one token will replace: `extra[start..][..len]`,
/// or the tokens of `merging[start]` when `len` is `MERGE`, of `wide[start]`
/// when `MERGE_WIDE`, of `wider[start]` when `MERGE_WIDER`.
struct Mark {
    at: usize,
    start: u32,
    len: u32,
}

/// What `encode_scanned_with` lends `look_up` and `flush` (empty between
/// calls; each thread keeps its own in its `LocalCache`).
#[derive(Default)]
struct Work {
    syms: Vec<(u32, u32)>,
    /// New pieces wait to be merged together (byte-level models
    /// whose every byte is a token, no dropout).
    defer: bool,
    /// marks still in `out`, in order
    marks: Vec<Mark>,
    extra: Vec<u32>,
    /// pieces to merge, and their tokens once merged
    merging: Vec<Pending>,
    merged: Vec<[u32; merge::MANY_MAX + 1]>,
    counts: Vec<u8>,
    /// pieces longer than `SHORT_MAX` to merge, and their tokens once merged
    wide: Vec<Pending>,
    merged_wide: Vec<[u32; merge::WIDE_MAX + 1]>,
    counts_wide: Vec<u8>,
    /// those longer than `merge::WIDE_MAX`, and their tokens
    wider: Vec<Pending>,
    merged_wider: Vec<[u32; merge::WIDER_MAX + 1]>,
    counts_wider: Vec<u8>,
    /// `out` after the first mark while `flush` rewrites it
    tail: Vec<u32>,
}

impl Work {
    /// Put `tokens` in place of the mark at `at`.
    #[inline(always)]
    fn place(&mut self, out: &mut [u32], at: usize, tokens: &[u32]) {
        if let [id] = tokens {
            out[at] = *id;
        } else {
            self.marks.push(Mark {
                at,
                start: self.extra.len() as u32,
                len: tokens.len() as u32,
            });
            self.extra.extend_from_slice(tokens);
        }
    }

    /// Put the tokens just appended to `extra` (from `start` on) in place
    /// of the mark at `at`.
    #[inline(always)]
    fn placed(&mut self, out: &mut [u32], at: usize, start: usize) {
        if self.extra.len() == start + 1 {
            out[at] = self.extra[start];
            self.extra.truncate(start);
        } else {
            self.marks.push(Mark {
                at,
                start: start as u32,
                len: (self.extra.len() - start) as u32,
            });
        }
    }
}

/// Short pieces looked up together (see `encode_scanned_with`).
const CHUNK: usize = 32;

/// A run's tokens (`Bpe::encode_run`): `a[..i]`, then `count` times `t`,
/// then `a[i..]`.
struct Run {
    a: Vec<(u32, u32)>,
    i: usize,
    t: (u32, u32),
    count: usize,
}

impl Run {
    fn tokens(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (head, tail) = self.a.split_at(self.i);
        head.iter()
            .copied()
            .chain(std::iter::repeat_n(self.t, self.count))
            .chain(tail.iter().copied())
    }

    fn len(&self) -> usize {
        self.a.len() + self.count
    }
}

/// A short piece waiting for its lookup: where it is, its key and hash,
/// and where its mark is in `out`.
#[derive(Clone, Copy, Default)]
struct Pending {
    start: usize,
    len: usize,
    key: [u64; 2],
    h: u64,
    at: usize,
}

impl Bpe {
    /// Whether pieces can start from `byte_pairs` (see `encode_merging`).
    fn merges_from_bytes(&self) -> bool {
        self.byte_level && self.plain() && self.all_bytes
    }

    /// The merges as the encoder looks them up.
    #[inline]
    fn pair_table(&self) -> &merge::PairTable {
        self.pair_table.get_or_init(|| merge::PairTable::new(&self.merges))
    }

    /// `byte_pairs`, made on first use.
    #[inline]
    fn byte_pair_table(&self) -> &[(i32, u32)] {
        self.byte_pairs
            .get_or_init(|| merge::byte_pair_table(self.pair_table(), &self.byte_ids))
    }

    /// Make `byte_pairs` (and the pair table) now rather than in the first encode.
    fn prepare_byte_pairs(&self) {
        self.pair_table();
        if self.merges_from_bytes() {
            self.byte_pair_table();
        }
    }

    /// The byte length of the character `piece` repeats, where it is long
    /// enough for `encode_run` and the model merges from bytes without
    /// dropout.
    fn run_unit(&self, piece: &[u8]) -> Option<usize> {
        let applies = piece.len() >= RUN_MIN && self.dropout.is_none_or(|d| d <= 0.0) && self.merges_from_bytes();
        applies.then(|| run_unit(piece)).flatten()
    }

    /// A long run of one character (`"a" × 10⁶`, spaces, `"中" × 10⁶`):
    /// encoded from three short runs of the same length modulo the period.
    ///
    /// Merging is leftmost-first, so the middle of a run is cut into one
    /// repeated token `T` aligned from the left, and the ends are settled
    /// within a few tokens of them; a run `p` characters longer (`p` = the
    /// characters of `T`) encodes as the same tokens with one more `T` in the
    /// middle. That step is checked on the short runs `n`, `n + p`,
    /// `n + 2p` and `n + 3p` (each encoded by the ordinary merge) before it is
    /// extrapolated to the run's length; when any check fails, `None` is
    /// returned and the caller merges the whole run.
    fn encode_run(&self, piece: &[u8], unit: usize, syms: &mut Vec<(u32, u32)>) -> Option<Run> {
        const BASE: usize = 1024; // characters in the shortest probe
        const MAX_PERIOD: usize = 256;
        let m = piece.len() / unit;
        let mut probe = |n: usize| {
            let mut v = Vec::new();
            self.encode_merging(&piece[..n * unit], &mut v, syms);
            v
        };
        let first = probe(BASE);
        let (t_id, t_len) = first[first.len() / 2];
        let t_len = t_len as usize;
        if t_len == 0 || !t_len.is_multiple_of(unit) || t_len / unit > MAX_PERIOD {
            return None;
        }
        let p = t_len / unit;
        let n = BASE + (m - BASE) % p;
        let a = probe(n);
        let b = probe(n + p);
        // where the longer run has its extra T: the first token that differs
        let i = (0..a.len()).find(|&k| a[k] != b[k]).unwrap_or(a.len());
        let with = |k: usize| -> Vec<(u32, u32)> {
            let mut v = Vec::with_capacity(a.len() + k);
            v.extend_from_slice(&a[..i]);
            v.extend(std::iter::repeat_n((t_id, t_len as u32), k));
            v.extend_from_slice(&a[i..]);
            v
        };
        if i < 4 || b != with(1) || (2..=3).any(|k| probe(n + k * p) != with(k)) {
            return None;
        }
        // (the tokens are not made here: a million of them, copied once
        // more, were most of the time of a million `中`, in new pages)
        Some(Run {
            a,
            i,
            t: (t_id, t_len as u32),
            count: (m - n) / p,
        })
    }

    /// `encode_piece` after the whole-piece lookup: the piece cache, else
    /// the merges (`syms`: a scratch buffer).
    fn encode_merging(&self, piece: &[u8], out: &mut Vec<(u32, u32)>, syms: &mut Vec<(u32, u32)>) {
        let no_dropout = self.dropout.is_none_or(|d| d <= 0.0);
        if let Some(run) = self.run_unit(piece).and_then(|unit| self.encode_run(piece, unit, syms)) {
            out.reserve(run.len());
            out.extend(run.tokens());
            return;
        }
        // long multi-byte pieces rarely repeat, and the backtracking
        // encoder is quicker than a cache's hashing and copying
        let use_cache = no_dropout && piece.len() <= CACHE_MAX_PIECE && !self.backtracks(piece);
        if use_cache {
            if let Ok(cache) = self.cache.try_read() {
                if let Some(hit) = cache.get(piece) {
                    out.extend_from_slice(hit);
                    return;
                }
            }
        }
        syms.clear();
        self.merge_piece(piece, syms);
        out.extend_from_slice(syms);
        if use_cache {
            if let Ok(mut cache) = self.cache.try_write() {
                if cache.len() >= CACHE_CAPACITY {
                    cache.clear();
                }
                cache.insert(piece.into(), syms.as_slice().into());
            }
        }
    }
}

impl Bpe {
    /// The backtracking encoder, when it applies: a byte-level model whose
    /// every merge makes the token of its rank (tiktoken rank files).
    fn backtrack(&self) -> Option<&backtrack::Backtrack> {
        self.backtrack
            .get_or_init(|| {
                if !self.merges_from_bytes() || !self.pair_table().by_id {
                    return None;
                }
                backtrack::Backtrack::new(&self.vocab_r, &self.byte_ids, self.pair_table())
            })
            .as_ref()
    }

    /// Whether the backtracking encoder is built and used (no dropout):
    /// then `backtracks` is true of every piece of over 6 bytes that is
    /// not ASCII (no build, no count here).
    #[inline(always)]
    fn backtrack_built(&self) -> bool {
        self.backtrack.get().is_some_and(Option::is_some) && self.dropout.is_none_or(|d| d <= 0.0)
    }

    /// Whether long multi-byte pieces take the backtracking encoder (built now if not yet).
    pub fn backtracking(&self) -> bool {
        self.backtrack().is_some()
    }

    /// Whether `piece` goes to the backtracking encoder: it pays off on long
    /// multi-byte pieces (Chinese, Japanese …), where merging takes many
    /// rounds; short and ASCII pieces merge fast.
    ///
    /// The encoder is built once `BACKTRACK_AFTER` bytes of such pieces
    /// have come (one piece that long builds it at once); until then they
    /// are merged. Its build takes 0.1 s and tens of megabytes of memory
    /// traffic, which a text with a few such pieces (English with a
    /// box-drawing line, code with an accented name) never earns back, and
    /// which left the caches cold for the text after it (cl100k code, 1 MB
    /// after a warm-up whose one such piece came near its end: 212 MB/s
    /// against 235 with the encoder built earlier).
    #[inline]
    fn backtracks(&self, piece: &[u8]) -> bool {
        if piece.len() <= 6 || self.dropout.is_some_and(|d| d > 0.0) || piece.is_ascii() {
            return false;
        }
        if let Some(built) = self.backtrack.get() {
            return built.is_some();
        }
        use std::sync::atomic::Ordering::Relaxed;
        // (a piece may be asked about more than once on its way: the count
        // only decides when the build comes, never an encoding)
        let seen = self.multibyte_seen.fetch_add(piece.len(), Relaxed) + piece.len();
        seen >= BACKTRACK_AFTER && self.backtrack().is_some()
    }

    /// Merge `piece` into `syms` (empty on entry): no cache, no whole-piece lookup.
    fn merge_piece(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>) {
        if self.dropout.is_some_and(|d| d > 0.0) {
            self.initial_symbols(piece, syms);
            merge::merge_symbols(syms, &self.merges, self.dropout);
            return;
        }
        let pairs = self.pair_table();
        if self.backtracks(piece) {
            if let Some(bt) = self.backtrack() {
                if bt.encode(pairs, piece, syms) {
                    return;
                }
            }
        }
        // byte-level, every byte a token: the first ranks come from a table
        let by_bytes =
            self.merges_from_bytes() && merge::merge_bytes(piece, &self.byte_ids, self.byte_pair_table(), pairs, syms);
        if !by_bytes {
            self.initial_symbols(piece, syms);
            merge::merge_symbols(syms, pairs, None);
        }
    }
}

impl Model for Bpe {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        if self.ignore_merges {
            if let Some(id) = self.whole(piece) {
                out.push((id, piece.len() as u32));
                return;
            }
        }
        self.encode_merging(piece, out, &mut Vec::new());
    }

    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.vocab_r.get(id as usize).and_then(|t| t.as_deref())
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    fn vocab_len(&self) -> usize {
        self.vocab_r.len()
    }

    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        self.vocab_iter().collect()
    }

    fn token_string(&self, bytes: &[u8]) -> String {
        if self.byte_level && !self.json_form.raw_tokens.contains(bytes) {
            crate::bytelevel::bytes_to_string(bytes)
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        }
    }

    fn byte_level(&self) -> bool {
        self.byte_level
    }

    fn to_json(&self) -> serde_json::Value {
        Bpe::to_json(self)
    }

    fn push_token(&mut self, token: &[u8], id: u32) {
        Bpe::push_token(self, token, id)
    }

    fn set_unk(&mut self, unk: &str) {
        Bpe::set_unk(self, unk)
    }
}

impl Bpe {
    /// Set the unknown token (it must be in the vocabulary to take effect).
    pub fn set_unk(&mut self, unk: &str) {
        self.unk_id = self.vocab.get(unk.as_bytes()).copied();
        self.unk_token = Some(unk.to_string());
    }

    /// Add a token at a given id (used for special tokens kept in the model vocab).
    pub fn push_token(&mut self, token: &[u8], id: u32) {
        if self.vocab_r.len() <= id as usize {
            self.vocab_r.resize(id as usize + 1, None);
        }
        self.vocab_r[id as usize] = Some(token.into());
        self.vocab.insert(token.to_vec(), id);
        if token.len() <= SHORT_MAX {
            let key = short_key(token);
            self.short.insert(key, PieceTable::hash(&key), &[id]);
        }
        // earlier results may no longer hold
        self.generation = next_generation();
        self.byte_pairs = std::sync::OnceLock::new();
        self.pair_table = std::sync::OnceLock::new();
        self.space_runs = std::sync::OnceLock::new();
        self.backtrack = std::sync::OnceLock::new();
        self.hot_seed = std::sync::OnceLock::new();
        self.long_tokens = std::sync::OnceLock::new();
        if let Ok(cache) = self.cache.get_mut() {
            cache.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Bpe {
        let vocab: Vec<(Vec<u8>, u32)> = ["a", "b", "c", "ab", "bc", "abc"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_bytes().to_vec(), i as u32))
            .collect();
        let merges = vec![
            (b"a".to_vec(), b"b".to_vec()),
            (b"ab".to_vec(), b"c".to_vec()),
            (b"b".to_vec(), b"c".to_vec()),
        ];
        Bpe::new(vocab, &merges, BpeOptions::default()).unwrap()
    }

    fn ids(m: &Bpe, s: &str) -> Vec<u32> {
        let mut out = vec![];
        m.encode_piece(s.as_bytes(), &mut out);
        out.into_iter().map(|(i, _)| i).collect()
    }

    /// A rank model (like a tiktoken file): every byte, then `tokens`.
    fn every_byte_and(tokens: &[&str]) -> Bpe {
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for t in tokens {
            let id = ranks.len() as u32;
            ranks.push((t.as_bytes().to_vec(), id));
        }
        Bpe::from_ranks(ranks).unwrap()
    }

    /// `encode_scanned` gives the ids of `text`'s pieces encoded one by one,
    /// and again from the thread's caches.
    fn assert_scans_like_pieces(m: &Bpe, scanner: &crate::scanner::Scanner, text: &str) {
        let mut want = vec![];
        scanner.for_each(text, |s, e| want.extend(ids(m, &text[s..e])));
        let mut got = vec![];
        m.encode_scanned(scanner, text, &mut got);
        assert_eq!(got, want);
        got.clear();
        m.encode_scanned(scanner, text, &mut got);
        assert_eq!(got, want);
    }

    #[test]
    fn scanned_text_encodes_like_its_pieces_one_by_one() {
        // a byte-level model without a token for every byte: new pieces are
        // merged where they are looked up, not deferred; and one with every
        // byte (from ranks): deferred and merged together
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::GPT2_PATTERN).unwrap();
        let full = every_byte_and(&["ab", "bc", "abc", " a", " ab", " abc", "ca", "cab", "bcab"]);
        let mut x = 17u64;
        let mut text = String::new();
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push(['a', 'b', 'c', ' ', 'a', 'b'][(x >> 33) as usize % 6]);
        }
        for m in [toy(), full] {
            assert_scans_like_pieces(&m, &scanner, &text);
        }
    }

    #[test]
    fn pieces_of_more_tokens_than_a_slot_are_merged_again_where_they_come_back() {
        // Merged pieces are kept in the hot cache only, and only with at
        // most `SLOT_IDS` tokens: a piece of more (none of its bytes merge)
        // is merged at each flush it comes back in, between new pieces that
        // fill the merge queue, and one whose hot slot another piece took
        // is merged again too.
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        let m = every_byte_and(&["ab", " ab", "cd", " cd"]);
        let mut x = 5u64;
        let mut text = String::new();
        for k in 0..4000 {
            text.push_str([" qzxvw", " ab", " qzxvwqzxvw", "cd"][k % 4]);
            // a new word of five to twelve letters (mostly unmerged)
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push(' ');
            for j in 0..5 + (x >> 60) as usize % 8 {
                text.push((b'a' + ((x >> (4 * j)) & 15) as u8) as char);
            }
        }
        assert!(ids(&m, " qzxvwqzxvw").len() > SLOT_IDS);
        assert_scans_like_pieces(&m, &scanner, &text);
    }

    #[test]
    fn windows_of_cached_pieces_encode_like_their_pieces() {
        // The window loop (`Scanner::for_each_in`'s `run`) takes the pieces
        // the hot cache holds with one to three tokens and leaves the rest
        // (new, longer than `SHORT_MAX`, more tokens, pending a merge, near
        // the text's end, after a non-ASCII character): random ASCII words
        // and punctuation with a few of each, encoded cold and then again
        // from the caches, at lengths around the window's reach.
        let (sixteen, twenty) = (" ".repeat(16), " ".repeat(20));
        let tokens = [
            "ab", "abc", " ab", " abc", "ca", "cab", "bcab", "ll", "'ll", "12", "123", "  ", "\n\n", ");", " abcab",
            &sixteen, &twenty,
        ];
        // (runs of spaces, two of them whole tokens: `space_run`)
        let runs: Vec<String> = [15, 16, 17, 19, 20, 21, 40, 128, 129, 200]
            .iter()
            .map(|&n| format!("\n{}x", " ".repeat(n + 1)))
            .collect();
        let words = [
            "ab",
            " ab",
            " abc",
            "cab",
            " bcab",
            "'ll",
            "'s",
            ");",
            "\n",
            "\n\n",
            "  ",
            "123",
            "4567",
            " x",
            "Ab",
            " abcabcabcabcabcab",
            " qwertyuiopasdfghjklzx",
            ".",
            " é",
            "中",
            " abcbca",
            "cabcabcabc",
            &runs[0],
            &runs[1],
            &runs[2],
            &runs[3],
            &runs[4],
            &runs[5],
            &runs[6],
            &runs[7],
            &runs[8],
            &runs[9],
        ];
        let mut x = 5u64;
        let mut text = String::new();
        for _ in 0..4000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push_str(words[(x >> 33) as usize % words.len()]);
        }
        for pattern in [
            crate::pre_tokenizers::CL100K_PATTERN,
            crate::pre_tokenizers::O200K_PATTERN,
        ] {
            let scanner = crate::scanner::Scanner::for_pattern(pattern).unwrap();
            for m in [every_byte_and(&tokens), every_byte_and(&[" ab", "cab"])] {
                assert_scans_like_pieces(&m, &scanner, &text);
                for cut in [60, 64, 79, 80, 81, 97, 150] {
                    let end = (0..=cut).rev().find(|&k| text.is_char_boundary(k)).unwrap();
                    assert_scans_like_pieces(&m, &scanner, &text[..end]);
                }
            }
        }
    }

    #[test]
    fn long_pieces_from_the_long_hot_cache_encode_like_their_pieces() {
        // Pieces of 16 to 31 bytes (`long_hot`): each length, some whole
        // tokens, some of more tokens than a slot holds (never kept there),
        // pieces equal but for their last byte or their length (the key's
        // masks), and the text's last piece with fewer than 32 bytes after
        // its start (the key copied). Then the same past 31 bytes (the
        // wider lanes, never in `long_hot`) and past 63 (merged one by
        // one), and separator lines of those lengths.
        let letters =
            |n: usize, salt: usize| -> String { (0..n).map(|k| (b'a' + ((k * 7 + salt) % 5) as u8) as char).collect() };
        let mut words: Vec<String> = Vec::new();
        for n in 15..=70 {
            words.push(format!(" {}", letters(n, 0)));
            words.push(format!(" {}", letters(n, 1)));
            words.push(format!(" {}x", letters(n - 1, 0)));
        }
        for n in [28, 31, 32, 40, 61, 62, 63, 64, 70] {
            words.push(format!(" {}\n", "=".repeat(n)));
            words.push(format!(" {}\n\n", "#".repeat(n)));
        }
        // a piece of many tokens: every other letter unmergeable
        words.push(" qzqzqzqzqzqzqzqzqzqzqzqzqz".into());
        let whole = [words[10].clone(), words[30].clone(), " qzqzqzqzqzqzqz".into()];
        let mut tokens: Vec<&str> = vec![
            "ab", "abc", "bc", "cd", "de", "ea", " a", " ab", "abcde", "cdea", "==", "====", " =", "##", "#\n", "\n\n",
        ];
        tokens.extend(whole.iter().map(String::as_str));
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        let mut x = 11u64;
        let mut text = String::new();
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push_str(&words[(x >> 33) as usize % words.len()]);
        }
        let m = every_byte_and(&tokens);
        assert_scans_like_pieces(&m, &scanner, &text);
        for w in &words {
            let tail = format!("{text}{w}");
            assert_scans_like_pieces(&m, &scanner, &tail);
        }
    }

    #[test]
    fn a_threads_hot_cache_starts_with_the_vocabulary_and_follows_its_changes() {
        // Words that are tokens, some sharing a slot of the seed with
        // another (the lower id holds it, the other is found by `look_up`),
        // encoded on fresh threads (hot caches copied from the seed) like
        // their pieces one by one.
        let words: Vec<String> = (0..26 * 26 * 26u32)
            .map(|k| {
                let l = |d: u32| (b'a' + (k / d % 26) as u8) as char;
                format!(" {}{}{}", l(676), l(26), l(1))
            })
            .collect();
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut m = every_byte_and(&refs);
        let slot_of = |w: &[u8]| hot_index(PieceTable::hash(&short_key(w)));
        let seed = m.hot_seed().expect("a rank file's model looks whole pieces up");
        let (seed_keys, seed_fps) = (seed.keys.clone(), seed.fps.clone());
        let seed: Vec<Slot> = (0..1 << HOT_BITS)
            .map(|x| {
                if seed.keys[x] == [0, 0] {
                    Slot::default()
                } else {
                    Slot::new(seed.keys[x], &[seed.ids[x]])
                }
            })
            .collect();
        let mut lowest: FxHashMap<usize, u32> = FxHashMap::default();
        let bytes = (0..=255u8).map(|b| vec![b]);
        for (id, w) in bytes.chain(words.iter().map(|w| w.as_bytes().to_vec())).enumerate() {
            let id = id as u32;
            lowest
                .entry(slot_of(&w))
                .and_modify(|l| *l = (*l).min(id))
                .or_insert(id);
        }
        assert!(
            lowest.len() < 256 + words.len(),
            "no two tokens share a slot: the test needs more"
        );
        // each seeded slot's hash byte is its key's
        for x in 0..1 << HOT_BITS {
            if seed_keys[x] != [0, 0] {
                assert_eq!(seed_fps[x], hot_fp(PieceTable::hash(&seed_keys[x])), "{x}");
            }
        }
        for (k, w) in words.iter().enumerate() {
            let slot = &seed[slot_of(w.as_bytes())];
            assert_eq!(slot.n, 1);
            let held = lowest[&slot_of(w.as_bytes())];
            assert_eq!(slot.ids[0], held, "{w}");
            if held == 256 + k as u32 {
                assert_eq!(slot.key, short_key(w.as_bytes()));
            }
        }
        let text: String = words
            .iter()
            .rev()
            .chain(&words)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(".");
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| assert_scans_like_pieces(&m, &scanner, &text))
                .join()
                .unwrap()
        });
        // a new token: the seed is made again, with it
        m.push_token(b" zzzz", 20_000);
        let seed = m.hot_seed().unwrap();
        let x = slot_of(b" zzzz");
        assert!(seed.keys[x] == short_key(b" zzzz") && seed.ids[x] == 20_000 || seed.ids[x] < 20_000);
        let mut got = vec![];
        std::thread::scope(|s| {
            s.spawn(|| m.encode_scanned(&scanner, " zzzz zzzz aaa", &mut got))
                .join()
                .unwrap()
        });
        assert_eq!(got, [20_000, 20_000, 256]);
        // a model that merges pieces as they come has no seed
        let merging = Bpe::new(
            vec![(b"a".to_vec(), 0), (b"b".to_vec(), 1), (b"ab".to_vec(), 2)],
            &[(b"a".to_vec(), b"b".to_vec())],
            BpeOptions::default(),
        )
        .unwrap();
        assert!(merging.hot_seed().is_none());
    }

    #[test]
    fn three_byte_pieces_from_the_byte_pairs_merge_like_any_other() {
        // every piece of three letters (and of a space and two) over a small
        // alphabet: no merge, one merge either side, ties ("aaa"), and a
        // three-byte token found whole
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::GPT2_PATTERN).unwrap();
        let m = every_byte_and(&["aa", "ab", "ba", "bc", " a", " b", "xa", "abc", " aa"]);
        let letters = ['a', 'b', 'c', 'x'];
        let mut text = String::new();
        for &p in &letters {
            for &q in &letters {
                for &r in &letters {
                    text.extend([p, q, r, ',', ' ', q, r, ',']);
                }
            }
        }
        let mut threes = 0;
        scanner.for_each(&text, |s, e| threes += (e - s == 3) as usize);
        assert_eq!(threes, 2 * 64);
        assert_scans_like_pieces(&m, &scanner, &text);
    }

    #[test]
    fn pieces_waiting_to_be_merged_are_shared_and_never_left_behind() {
        // every byte a token and a few merges, so that new pieces wait to
        // be merged; words repeat within a flush (one merge serves all of
        // their instances), some of more than `SLOT_IDS` tokens (not in the
        // hot cache), some of 16 to 31 bytes (the wide lanes: runs of
        // `abc` of up to `LONG_SLOT_IDS` tokens, kept in the long hot
        // cache, and more)
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::GPT2_PATTERN).unwrap();
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for t in [" a", "ab", " ab", "ca", " ca", "abc"] {
            let id = ranks.len() as u32;
            ranks.push((t.as_bytes().to_vec(), id));
        }
        let m = Bpe::from_ranks(ranks).unwrap();
        let mut x = 23u64;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut words: Vec<String> = (0..60)
            .map(|_| {
                let len = [2, 5, 9, 14, 20, 30][next(6) as usize];
                (0..len).map(|_| ['a', 'b', 'c', 'd'][next(4) as usize]).collect()
            })
            .collect();
        words.extend((5..=10).map(|k| "abc".repeat(k)));
        let mut text = String::new();
        for _ in 0..4000 {
            text.push(' ');
            text.push_str(&words[next(words.len() as u64) as usize]);
        }
        let mut want = vec![];
        scanner.for_each(&text, |s, e| want.extend(ids(&m, &text[s..e])));
        assert!(want.len() > 3 * 4000);
        let encode = || {
            let mut got = vec![];
            m.encode_scanned(&scanner, &text, &mut got);
            got
        };
        assert_eq!(encode(), want);
        assert_eq!(encode(), want);
        // an encode that stopped half-way leaves its pending slots behind:
        // the next one must not trust them
        LOCAL.with(|local| {
            let mut caches = local.borrow_mut();
            let cache = caches.iter_mut().find(|c| c.generation == m.generation).unwrap();
            for w in &words {
                let piece = format!(" {w}");
                if piece.len() <= SHORT_MAX {
                    let key = short_key(piece.as_bytes());
                    let h = PieceTable::hash(&key);
                    cache.set_hot(
                        hot_index(h),
                        h,
                        Slot {
                            key: pending_key(key),
                            ids: [7, 0, 0],
                            n: 0,
                        },
                    );
                } else if piece.len() <= merge::WIDE_MAX {
                    let key = long_key_at(piece.as_bytes(), 0, piece.len());
                    cache.long_hot[long_index(&key)] = LongSlot {
                        key: long_pending_key(key),
                        ids: [3, 0, 0, 0, 0, 0, 0],
                        n: 0,
                    };
                }
            }
            cache.busy = true;
        });
        assert_eq!(encode(), want);
        // the slots' hash bytes are hints only: every one wrong (each slot
        // taken for a miss), or one that matches in a slot holding another
        // piece (the key decides); with cl100k's pattern, whose ASCII
        // windows take the window loop
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        let mut want = vec![];
        scanner.for_each(&text, |s, e| want.extend(ids(&m, &text[s..e])));
        let encode = || {
            let mut got = vec![];
            m.encode_scanned(&scanner, &text, &mut got);
            got
        };
        assert_eq!(encode(), want);
        LOCAL.with(|local| {
            let mut caches = local.borrow_mut();
            let cache = caches.iter_mut().find(|c| c.generation == m.generation).unwrap();
            cache.fp.iter_mut().for_each(|b| *b ^= 0x5A);
        });
        assert_eq!(encode(), want);
        LOCAL.with(|local| {
            let mut caches = local.borrow_mut();
            let cache = caches.iter_mut().find(|c| c.generation == m.generation).unwrap();
            let other = short_key(b" zz");
            for w in &words {
                let piece = format!(" {w}");
                if piece.len() <= SHORT_MAX {
                    let h = PieceTable::hash(&short_key(piece.as_bytes()));
                    cache.set_hot(hot_index(h), h, Slot::new(other, &[1]));
                }
            }
        });
        assert_eq!(encode(), want);
    }

    #[test]
    fn merges_follow_rank_order() {
        let m = toy();
        assert_eq!(ids(&m, "abc"), vec![5]);
        assert_eq!(ids(&m, "bcab"), vec![4, 3]);
        assert_eq!(ids(&m, "cab"), vec![2, 3]);
        // long input takes the heap path and agrees with the short path
        let long = "abc".repeat(500);
        assert_eq!(ids(&m, &long), vec![5; 500]);
    }

    #[test]
    fn a_threads_piece_table_grows_once_to_its_working_size_and_no_further() {
        let mut local = LocalCache::new(0, None);
        let slot_bytes = std::mem::size_of::<Slot>();
        assert_eq!(local.table.bytes(), 2 * LOCAL_START * slot_bytes);
        let key = |i: u64| short_key(format!("p{i}").as_bytes());
        for i in 0..=LOCAL_START as u64 {
            local.insert(key(i), PieceTable::hash(&key(i)), &[i as u32]);
        }
        // past the start size: straight to the working size, nothing lost
        assert_eq!(local.table.bytes(), 2 * LOCAL_WORKING * slot_bytes);
        for i in LOCAL_START as u64 + 1..LOCAL_WORKING as u64 {
            local.insert(key(i), PieceTable::hash(&key(i)), &[i as u32, 1, 2, 3]);
        }
        assert_eq!(
            local.table.bytes(),
            2 * LOCAL_WORKING * slot_bytes,
            "no growth up to it"
        );
        for i in 0..LOCAL_WORKING as u64 {
            let slot = *local.table.get(&key(i), PieceTable::hash(&key(i))).expect("kept");
            let want: &[u32] = if i <= LOCAL_START as u64 {
                &[i as u32]
            } else {
                &[i as u32, 1, 2, 3]
            };
            assert_eq!(local.tokens(&slot), want);
        }
        // full: the next piece starts it over, at the same size (never grown)
        local.insert(key(1 << 40), PieceTable::hash(&key(1 << 40)), &[7]);
        assert_eq!(local.table.bytes(), 2 * LOCAL_WORKING * slot_bytes);
        assert_eq!(local.table.len(), 1);
        assert!(local.table.get(&key(1), PieceTable::hash(&key(1))).is_none());
        assert!(local.spill.is_empty());
    }

    #[test]
    fn the_backtracking_encoder_waits_for_enough_multibyte_text() {
        // every byte; 中 and 文 each in two merges; 中文 and 文中
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for t in [
            &[0xE4, 0xB8][..],
            "中".as_bytes(),
            &[0xE6, 0x96],
            "文".as_bytes(),
            "中文".as_bytes(),
            "文中".as_bytes(),
        ] {
            let id = ranks.len() as u32;
            ranks.push((t.to_vec(), id));
        }
        let m = Bpe::from_ranks(ranks).unwrap();
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        // each piece whole if it is a token, else merged from its bytes
        // with the plain merge loop
        let reference = |text: &str| {
            let mut want = vec![];
            scanner.for_each(text, |s, e| {
                let piece = &text.as_bytes()[s..e];
                if let Some(id) = m.whole(piece) {
                    want.push(id);
                    return;
                }
                let mut syms: Vec<(u32, u32)> = piece.iter().map(|&b| (b as u32, 1)).collect();
                merge::merge_symbols(&mut syms, &m.merges, None);
                want.extend(syms.iter().map(|&(id, _)| id));
            });
            want
        };
        let encode = |text: &str| {
            let mut got = vec![];
            m.encode_scanned(&scanner, text, &mut got);
            got
        };
        let short = "中文中中文 文中文文 x中文中 中中中中中中";
        assert_eq!(encode(short), reference(short));
        assert!(m.backtrack.get().is_none(), "a few long pieces are merged");
        let long = "中文中中文文 中中文中文文中 ".repeat(BACKTRACK_AFTER / 30 + 1);
        assert_eq!(encode(&long), reference(&long));
        assert!(m.backtrack.get().is_some_and(|b| b.is_some()), "built once enough came");
        assert_eq!(encode(short), reference(short));
        // pieces waiting to be merged (marks in the output until `flush`)
        // among pieces the backtracking encoder takes at once: in order
        let mixed: String = (0..400)
            .map(|k| format!(" quick{k} 中文中中文 brown 文中文文 fox{k} "))
            .collect();
        assert_eq!(encode(&mixed), reference(&mixed));
        // a single piece that long builds it at once; a run of one
        // character that long does not (it is encoded as a run)
        let fresh = || Bpe::from_ranks(m.vocab_entries().iter().map(|&(id, t)| (t.to_vec(), id)).collect()).unwrap();
        let m2 = fresh();
        let run = "中".repeat(BACKTRACK_AFTER / 3 + 1);
        let mut got = vec![];
        m2.encode_scanned(&scanner, &run, &mut got);
        assert!(m2.backtrack.get().is_none());
        assert_eq!(got, reference(&run));
        let piece = "中文".repeat(BACKTRACK_AFTER / 6 + 1);
        got.clear();
        m2.encode_scanned(&scanner, &piece, &mut got);
        assert!(m2.backtrack.get().is_some());
        assert_eq!(got, reference(&piece));
    }

    #[test]
    fn tokens_bpe_does_not_make_are_found_whole_before_backtracking() {
        // every byte, 中 in two merges, and 中中中, which BPE never makes
        // (there is no 中中): tiktoken finds a piece that is a token whole
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for t in [&[0xE4, 0xB8][..], "中".as_bytes(), "中中中".as_bytes()] {
            let id = ranks.len() as u32;
            ranks.push((t.to_vec(), id));
        }
        let m = Bpe::from_ranks(ranks).unwrap();
        let bt = m.backtrack().expect("the merges follow the ranks");
        assert!(!bt.complete());
        assert_eq!(bt.unmade("中中中".as_bytes()), Some(258));
        assert_eq!(bt.unmade("中".as_bytes()), None, "BPE makes 中");
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        for (text, want) in [
            ("中中中", vec![258]),
            ("中中中中", vec![257; 4]),
            ("中中中\n中中中中\n中中中", vec![258, 10, 257, 257, 257, 257, 10, 258]),
            // (the piece is " 中中中": no token)
            ("x 中中中", vec![b'x' as u32, 32, 257, 257, 257]),
        ] {
            let mut got = vec![];
            m.encode_scanned(&scanner, text, &mut got);
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn long_pieces_that_are_tokens_are_found_whole_and_the_filter_follows_new_ones() {
        // every byte and long words (16-31 bytes: the wide lanes; 32-63:
        // the wider ones) that no merge makes: found whole, as tiktoken
        // does, past the long-token filter; a token added later too
        let (wide, wider) = (" abcdefghijklmnopq", " abcdefghijklmnopqrstuvwxyzabcdefghijk");
        assert!(wide.len() > SHORT_MAX && wide.len() <= merge::WIDE_MAX);
        assert!(wider.len() > merge::WIDE_MAX && wider.len() <= merge::WIDER_MAX);
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        ranks.push((wide.as_bytes().to_vec(), 256));
        ranks.push((wider.as_bytes().to_vec(), 257));
        let mut m = Bpe::from_ranks(ranks).unwrap();
        let scanner = crate::scanner::Scanner::for_pattern(crate::pre_tokenizers::CL100K_PATTERN).unwrap();
        let encode = |m: &Bpe, text: &str| {
            let mut got = vec![];
            m.encode_scanned(&scanner, text, &mut got);
            got
        };
        let text = format!("x{wide}{wider}{wide}.");
        assert_eq!(encode(&m, &text), [b'x' as u32, 256, 257, 256, b'.' as u32]);
        // not a token: its bytes (no merges)
        let other = " abcdefghijklmnopr";
        let bytes: Vec<u32> = other.bytes().map(u32::from).collect();
        assert_eq!(encode(&m, other), bytes);
        m.push_token(other.as_bytes(), 300);
        // on a new thread (its caches start empty), and on this one
        let got = std::thread::scope(|s| s.spawn(|| encode(&m, other)).join().unwrap());
        assert_eq!(got, [300]);
        assert_eq!(encode(&m, other), [300]);
    }

    #[test]
    fn from_ranks_merges_like_tiktoken() {
        let vocab: Vec<(Vec<u8>, u32)> = ["a", "b", "c", "bc", "ab", "abc"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_bytes().to_vec(), i as u32))
            .collect();
        let m = Bpe::from_ranks(vocab).unwrap();
        assert_eq!(ids(&m, "abc"), vec![5]);
        assert_eq!(ids(&m, "abcb"), vec![5, 1]);
        assert_eq!(ids(&m, "ab"), vec![4]);
    }

    #[test]
    fn unknown_characters_become_unk_or_bytes() {
        let vocab: Vec<(Vec<u8>, u32)> = ["<unk>", "a", "<0xC3>", "<0xA9>"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_bytes().to_vec(), i as u32))
            .collect();
        let opts = BpeOptions {
            byte_level: false,
            unk_token: Some("<unk>".into()),
            fuse_unk: true,
            ..Default::default()
        };
        let m = Bpe::new(vocab.clone(), &[], opts).unwrap();
        assert_eq!(ids(&m, "a\u{e8}\u{e8}a"), vec![1, 0, 1]);
        let opts = BpeOptions {
            byte_level: false,
            byte_fallback: true,
            ..Default::default()
        };
        let m = Bpe::new(vocab, &[], opts).unwrap();
        assert_eq!(ids(&m, "\u{e9}a"), vec![2, 3, 1]);
    }

    #[test]
    fn end_of_word_suffix() {
        let vocab: Vec<(Vec<u8>, u32)> = ["l", "o", "w</w>", "lo", "low</w>"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_bytes().to_vec(), i as u32))
            .collect();
        let merges = vec![(b"l".to_vec(), b"o".to_vec()), (b"lo".to_vec(), b"w</w>".to_vec())];
        let opts = BpeOptions {
            byte_level: false,
            end_of_word_suffix: Some("</w>".into()),
            ..Default::default()
        };
        let m = Bpe::new(vocab, &merges, opts).unwrap();
        assert_eq!(ids(&m, "low"), vec![4]);
        assert_eq!(ids(&m, "lol"), vec![3]);
    }

    #[test]
    fn short_keys_read_in_place_equal_copied_keys() {
        let text: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37)).collect();
        for s in 0..text.len() {
            for len in 0..=SHORT_MAX.min(text.len() - s) {
                assert_eq!(short_key_at(&text, s, len), short_key(&text[s..s + len]), "{s} {len}");
            }
        }
        // trailing zero bytes are part of the key
        assert_ne!(short_key(b"a"), short_key(b"a\0"));
    }

    /// tiktoken's rank files: BPE makes every token, so a long multi-byte
    /// piece needs no whole-piece lookup before the backtracking encoder.
    #[test]
    fn tiktoken_rank_files_are_complete() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/assets");
        for file in ["cl100k_base/cl100k_base.tiktoken", "o200k_base/o200k_base.tiktoken"] {
            let Ok(data) = std::fs::read(dir.join(file)) else {
                eprintln!("skipped: {file} not found");
                continue;
            };
            let bpe = tiktoken::parse(&data).and_then(Bpe::from_ranks).unwrap();
            assert!(bpe.backtrack().is_some_and(|bt| bt.complete()), "{file}");
        }
    }

    #[test]
    fn bad_merges_are_reported() {
        let vocab = vec![(b"a".to_vec(), 0)];
        let e = Bpe::new(vocab, &[(b"a".to_vec(), b"z".to_vec())], BpeOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("merges[0]"));
    }
}
