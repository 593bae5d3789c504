//! How one piece is encoded: whole-token and space-run look-ups, runs of
//! one character, the backtracking encoder, and merging (the pair table,
//! the byte-pair table); the strategy a model takes is set by its
//! vocabulary and built on first use.

use super::*;

/// Pieces this long that repeat one character take `encode_run`.
pub(super) const RUN_MIN: usize = 8192;

/// Bytes of long multi-byte pieces after which the backtracking encoder
/// is built (see `Bpe::backtracks`).
pub(super) const BACKTRACK_AFTER: usize = 64 << 10;

/// How a model merges its pieces, chosen once from its options and
/// vocabulary (`Strategy::of`), so that the encoder's paths ask one value
/// rather than re-deriving it from flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Strategy {
    /// BPE-dropout (`dropout > 0`): the reference merge on the merge map,
    /// merges skipped at random; nothing cached.
    Dropout,
    /// Byte-level, every byte a token, no prefix or suffix: merges start
    /// from the byte-pair table, new short pieces are merged many at a time
    /// (`flush`), long runs of one character are extrapolated, and
    /// multi-byte pieces take the backtracking encoder where merges are
    /// ranked by the ids they make (`backtrack`).
    Bytes,
    /// Anything else (character-level models, a prefix or suffix, bytes
    /// missing from the vocabulary): symbols from the vocabulary, the
    /// reference merge on the pair table.
    Symbols,
}

impl Strategy {
    pub(super) fn of(m: &Bpe) -> Strategy {
        if m.dropout.is_some_and(|d| d > 0.0) {
            Strategy::Dropout
        } else if m.byte_level && m.plain() && m.all_bytes {
            Strategy::Bytes
        } else {
            Strategy::Symbols
        }
    }
}

/// The byte length of the character `piece` repeats, if it is one repeated.
pub(super) fn run_unit(piece: &[u8]) -> Option<usize> {
    let unit = match piece.first()? {
        b if b & 0x80 == 0 => 1,
        b if b & 0xE0 == 0xC0 => 2,
        b if b & 0xF0 == 0xE0 => 3,
        _ => 4,
    };
    (piece.len().is_multiple_of(unit) && piece[unit..] == piece[..piece.len() - unit]).then_some(unit)
}

/// Longest run of spaces `Bpe::space_run` finds.
pub(super) const SPACE_RUNS: usize = 128;

/// A run's tokens (`Bpe::encode_run`): `a[..i]`, then `count` times `t`,
/// then `a[i..]`.
pub(super) struct Run {
    pub(super) a: Vec<(u32, u32)>,
    pub(super) i: usize,
    pub(super) t: (u32, u32),
    pub(super) count: usize,
}

impl Run {
    pub(super) fn tokens(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (head, tail) = self.a.split_at(self.i);
        head.iter()
            .copied()
            .chain(std::iter::repeat_n(self.t, self.count))
            .chain(tail.iter().copied())
    }

    pub(super) fn len(&self) -> usize {
        self.a.len() + self.count
    }
}

impl Bpe {
    pub(super) fn plain(&self) -> bool {
        self.continuing_subword_prefix.is_none() && self.end_of_word_suffix.is_none()
    }

    /// The initial symbols of a piece: bytes (byte-level) or characters.
    pub(super) fn initial_symbols(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>) {
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

    /// The id of a whole piece, if it is a token.
    #[inline]
    pub(super) fn whole(&self, piece: &[u8]) -> Option<u32> {
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
    pub(super) fn maybe_long_token(&self, piece: &[u8]) -> bool {
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
    pub(super) fn space_run(&self, piece: &[u8]) -> Option<u32> {
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

    /// Whether pieces can start from `byte_pairs` (see `encode_merging`).
    pub(super) fn merges_from_bytes(&self) -> bool {
        self.strategy == Strategy::Bytes
    }

    /// Whether merges are skipped at random (BPE-dropout).
    pub(super) fn dropping(&self) -> bool {
        self.strategy == Strategy::Dropout
    }

    /// The merges as the encoder looks them up.
    #[inline]
    pub(super) fn pair_table(&self) -> &merge::PairTable {
        self.pair_table.get_or_init(|| merge::PairTable::new(&self.merges))
    }

    /// `byte_pairs`, made on first use.
    #[inline]
    pub(super) fn byte_pair_table(&self) -> &[(i32, u32)] {
        self.byte_pairs
            .get_or_init(|| merge::byte_pair_table(self.pair_table(), &self.byte_ids))
    }

    /// Make `byte_pairs` (and the pair table) now rather than in the first encode.
    pub(super) fn prepare_byte_pairs(&self) {
        self.pair_table();
        if self.merges_from_bytes() {
            self.byte_pair_table();
        }
    }

    /// The byte length of the character `piece` repeats, where it is long
    /// enough for `encode_run` and the model merges from bytes without
    /// dropout.
    pub(super) fn run_unit(&self, piece: &[u8]) -> Option<usize> {
        let applies = piece.len() >= RUN_MIN && self.merges_from_bytes();
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
    pub(super) fn encode_run(&self, piece: &[u8], unit: usize, syms: &mut Vec<(u32, u32)>) -> Option<Run> {
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
    pub(super) fn encode_merging(&self, piece: &[u8], out: &mut Vec<(u32, u32)>, syms: &mut Vec<(u32, u32)>) {
        let no_dropout = !self.dropping();
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

    /// The backtracking encoder, when it applies: a byte-level model whose
    /// every merge makes the token of its rank (tiktoken rank files).
    pub(super) fn backtrack(&self) -> Option<&backtrack::Backtrack> {
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
    pub(super) fn backtrack_built(&self) -> bool {
        self.backtrack.get().is_some_and(Option::is_some) && !self.dropping()
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
    pub(super) fn backtracks(&self, piece: &[u8]) -> bool {
        if piece.len() <= 6 || self.dropping() || piece.is_ascii() {
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
    pub(super) fn merge_piece(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>) {
        if self.dropping() {
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
