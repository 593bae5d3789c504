//! Many short pieces merged at once, one lane each, so that their waits
//! for the pair table overlap (`merge_bytes_many` and its wide versions):
//! the portable lane logic, its ranks in SSE2 registers (or an array off
//! x86-64), and the dispatchers that choose the AVX2 or AVX-512 build.

use super::*;

/// Pieces `merge_bytes_many` works on at once.
pub(super) const LANES: usize = 16;

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
pub(super) struct Lane<const W: usize> {
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
pub(super) const PAD: u32 = u32::MAX - 1;

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
pub(super) trait RankVec<const W: usize>: Copy {
    /// The ranks of `rank`.
    fn load(rank: &[i32; W]) -> Self;
    /// The ranks with `rank` at position `i` (below `W`).
    fn with(self, i: usize, rank: i32) -> Self;
    /// The lowest rank, and a bit for each position that holds it.
    fn lowest(self) -> (i32, u64);
}

/// `RankVec` in four SSE2 registers (any x86-64), or an array elsewhere.
#[derive(Clone, Copy)]
pub(super) struct Ranks {
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

/// `RankVec` as a plain array, for any width (the reference the vector
/// versions are tested against).
#[cfg(test)]
#[derive(Clone, Copy)]
pub(super) struct RankArray<const W: usize>([i32; W]);

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

/// Whether `merge_bytes_many_wide` (and `_wider`) works on this CPU.
pub fn wide_lanes() -> bool {
    crate::has_avx2()
}

/// The tokens of the pieces (of 1 to `W - 1` bytes) that need no merging,
/// each byte its token: a single byte, and with `whole_absent` (the whole
/// piece is no token) two bytes, whose only merge would make the whole.
/// Returns the longest such length; the lanes merge the longer pieces.
#[inline(always)]
pub(super) fn bytes_as_tokens<'a, const W: usize>(
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
pub(super) fn merge_bytes_many_with<'a, const W: usize, R: RankVec<W>>(
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
