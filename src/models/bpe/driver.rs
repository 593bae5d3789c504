//! The encode driver: scan a text into pieces, answer each from the hot
//! cache or queue it, and flush the queue (merging new pieces many at a
//! time) into the output in order.

use super::*;

/// Append `ids[..n]` to `out` (`n <= N`): all `N` written past the end,
/// the length moved by `n`. A copy of a slice of unknown length is a call
/// to `memcpy`, which costs more than the few ids a piece has.
#[inline(always)]
pub(super) fn push_ids<const N: usize>(out: &mut Vec<u32>, ids: &[u32; N], n: usize) {
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
pub(super) const MARK: u32 = u32::MAX;

/// Pieces merged together (at least) in a `flush`: enough for the wide
/// lanes to get several long pieces too (in random text, one piece in
/// twenty); the instances of a piece within that span share one merge
/// (`PENDING`). (Fewer leave random text's lanes half empty: see
/// `docs/encoder.md`, constants.)
pub(super) const DEFER: usize = 64;

/// Marks that make `look_up` flush (a bound on `flush`'s pass over `out`).
pub(super) const MARKS_MAX: usize = 256;

/// `Mark::len` of a piece to merge.
pub(super) const MERGE: u32 = u32::MAX;

/// `Mark::len` of a long piece to merge (in the wide lanes).
pub(super) const MERGE_WIDE: u32 = u32::MAX - 1;

/// `Mark::len` of a piece of over `merge::WIDE_MAX` bytes to merge (in the
/// wider lanes).
pub(super) const MERGE_WIDER: u32 = u32::MAX - 2;

/// A mark in `out` that more than one token will replace: `extra[start..][..len]`,
/// or the tokens of `merging[start]` when `len` is `MERGE`, of `wide[start]`
/// when `MERGE_WIDE`, of `wider[start]` when `MERGE_WIDER`.
pub(super) struct Mark {
    pub(super) at: usize,
    pub(super) start: u32,
    pub(super) len: u32,
}

/// What `encode_scanned_with` lends `look_up` and `flush` (empty between
/// calls; each thread keeps its own in its `LocalCache`).
#[derive(Default)]
pub(super) struct Work {
    pub(super) syms: Vec<(u32, u32)>,
    /// New pieces wait to be merged together (byte-level models
    /// whose every byte is a token, no dropout).
    pub(super) defer: bool,
    /// marks still in `out`, in order
    pub(super) marks: Vec<Mark>,
    pub(super) extra: Vec<u32>,
    /// pieces to merge, and their tokens once merged
    pub(super) merging: Vec<Pending>,
    pub(super) merged: Vec<[u32; merge::MANY_MAX + 1]>,
    pub(super) counts: Vec<u8>,
    /// pieces longer than `SHORT_MAX` to merge, and their tokens once merged
    pub(super) wide: Vec<Pending>,
    pub(super) merged_wide: Vec<[u32; merge::WIDE_MAX + 1]>,
    pub(super) counts_wide: Vec<u8>,
    /// those longer than `merge::WIDE_MAX`, and their tokens
    pub(super) wider: Vec<Pending>,
    pub(super) merged_wider: Vec<[u32; merge::WIDER_MAX + 1]>,
    pub(super) counts_wider: Vec<u8>,
    /// `out` after the first mark while `flush` rewrites it
    pub(super) tail: Vec<u32>,
}

impl Work {
    /// Put `tokens` in place of the mark at `at`.
    #[inline(always)]
    pub(super) fn place(&mut self, out: &mut [u32], at: usize, tokens: &[u32]) {
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
    pub(super) fn placed(&mut self, out: &mut [u32], at: usize, start: usize) {
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
pub(super) const CHUNK: usize = 32;

/// A short piece waiting for its lookup: where it is, its key and hash,
/// and where its mark is in `out`.
#[derive(Clone, Copy, Default)]
pub(super) struct Pending {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) key: [u64; 2],
    pub(super) h: u64,
    pub(super) at: usize,
}

impl Bpe {
    /// Encode every piece a scanner cuts from `text`, appending ids only.
    /// The same ids as `encode_piece` on each piece.
    pub fn encode_scanned_text(&self, scanner: &crate::scanner::Scanner, text: &str, out: &mut Vec<u32>) {
        if self.dropping() {
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

    /// One long function on purpose: the scanner inlines both closures into
    /// its loop, where the hot cache's arrays and the output's length stay
    /// in registers; each piece handed to a function of its own paid a call
    /// that costs more than most pieces' look-up (`docs/encoder.md`).
    pub(super) fn encode_scanned_with(
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
        let mut work = local.begin();
        work.defer = self.merges_from_bytes();
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
                let (hot, fps) = local.hot_arrays();
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
                    // instead of a mark that `look_up` and `flush` replace,
                    // and without a wait for its hot slot, which cannot
                    // hold it (both measured in `docs/encoder.md`). (What
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
                    let (slot, held) = local.hot_probe(x, h);
                    if !held {
                        crate::prefetch::prefetch(slot);
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
                        local.prefetch(h);
                    }
                    (key, h)
                } else if let Some(id) = self.space_run(piece) {
                    out.push(id);
                    return;
                } else if defer_long && piece.len() <= merge::WIDER_MAX && !self.backtracks(piece) {
                    if piece.len() <= merge::WIDE_MAX {
                        let key = long_key_at(bytes, s, piece.len());
                        let slot = local.long_slot(&key);
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
        local.end(work);
    }

    /// The ids of a piece longer than `SHORT_MAX` bytes, not cached. (Not
    /// inlined: it would crowd the short pieces' loop.)
    #[inline(never)]
    pub(super) fn long_piece(
        &self,
        piece: &[u8],
        buf: &mut Vec<(u32, u32)>,
        syms: &mut Vec<(u32, u32)>,
        out: &mut Vec<u32>,
    ) {
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
    /// path.)
    #[inline(never)]
    pub(super) fn backtracked_now(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>, out: &mut Vec<u32>) -> bool {
        if !self.backtracks(piece) {
            return false;
        }
        self.backtracked_piece(piece, syms, out);
        true
    }

    /// The ids of a piece `backtracks` takes, not cached.
    #[inline(never)]
    pub(super) fn backtracked_piece(&self, piece: &[u8], syms: &mut Vec<(u32, u32)>, out: &mut Vec<u32>) {
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
    pub(super) fn look_up(
        &self,
        bytes: &[u8],
        chunk: &[Pending],
        local: &mut LocalCache,
        work: &mut Work,
        out: &mut Vec<u32>,
    ) {
        for p in chunk {
            if p.len > SHORT_MAX {
                self.look_up_long(bytes, p, local, work, out);
                continue;
            }
            let (key, h) = (p.key, p.h);
            let hot = hot_index(h);
            // (the same piece earlier in the chunk may have filled it)
            let slot = *local.hot_probe(hot, h).0;
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
                // thread's table too, few of them were ever found there
                // again, for a prefetch on every hot miss and a lookup and
                // an insert for every piece merged (`docs/encoder.md`).
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
            if let Some(slot) = local.table_get(&key, h) {
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
    pub(super) fn three_bytes(&self, b: &[u8]) -> ([u32; 3], usize) {
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
    pub(super) fn look_up_long(
        &self,
        bytes: &[u8],
        p: &Pending,
        local: &mut LocalCache,
        work: &mut Work,
        out: &mut [u32],
    ) {
        let piece = &bytes[p.start..p.start + p.len];
        // A copy waiting to be merged already (its long hot slot, just read
        // by the scanner's callback, says so): merged once for both, and
        // neither looked up in the vocabulary nor in the thread's cache
        // (the first copy was; each is a wait for memory). A megabyte of
        // code: 181 of the 435 long pieces that got here.
        let key = (p.len <= merge::WIDE_MAX).then(|| long_key_at(bytes, p.start, p.len));
        if let Some(key) = key {
            let slot = local.long_slot(&key);
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
                local.keep_long(piece, &[id]);
                return;
            }
        }
        if let Some(ids) = local.long_get(piece) {
            work.place(out, p.at, ids);
            return;
        }
        let waiting = Pending {
            h: local.long_seen_before(piece) as u64,
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
        local.long_pending(key, start);
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
    ///
    /// Long on purpose: one pass over `out` that moves every id once, with
    /// the merges' results, the caches' updates and the marks' replacements
    /// in the same loop (a pass per concern read `out` again each time).
    #[inline(never)]
    pub(super) fn flush(&self, bytes: &[u8], local: &mut LocalCache, work: &mut Work, out: &mut Vec<u32>) {
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
                if tokens.len() <= SLOT_IDS {
                    local.set_hot(x, p.h, Slot::new(p.key, tokens));
                } else {
                    // (more tokens than a slot holds: merged again where
                    // it comes back)
                    local.drop_pending(x, p.key);
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
                local.keep_long(piece, tokens);
                if p.h != 0 {
                    local.long_insert(piece, tokens);
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
                    local.long_insert(&bytes[p.start..p.start + p.len], tokens);
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
