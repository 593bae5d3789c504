//! Sixteen short pieces in the lanes of AVX-512 registers, one piece a
//! 32-bit lane (`merge_bytes_across`, for pair tables ranked by id).

use super::*;

/// Pieces `merge_bytes_across` merges at once: one in each 32-bit lane of
/// an AVX-512 register.
pub(super) const ACROSS: usize = 16;

/// Rows of `Across`: a symbol position each, `MANY_MAX` of them and one
/// past every piece (padding: when the rows after a merge move down, the
/// last one takes the row after it).
pub(super) const ACROSS_ROWS: usize = MANY_MAX + 1;

/// The state of sixteen pieces merged side by side, transposed: row `p`
/// holds position `p` of every piece (lane `l`: piece `l`). A merge at
/// position `i` puts the merged token at `i` and moves the positions after
/// `i + 1` down by one, in every lane at once (a masked move a row).
#[repr(C, align(64))]
pub(super) struct Across {
    /// the symbols; `PAD` past a piece's end
    syms: [[u32; ACROSS]; ACROSS_ROWS],
    /// the rank of each symbol's pair with the next; `NO_MERGE` when none
    rank: [[i32; ACROSS]; ACROSS_ROWS],
}

/// Groups of `ACROSS` pieces `merge_bytes_across` keeps going at once: a
/// group's lookups, prefetched at the end of its step, are read in its
/// next step, after a step of each of the others.
pub(super) const GROUPS: usize = 8;

/// A group of `merge_bytes_across`: its rows, and the pairs its last merge
/// made, whose ranks are still to be read.
#[repr(C, align(64))]
pub(super) struct Group {
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
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load16<T: Lane32>(row: &[T; ACROSS]) -> std::arch::x86_64::__m512i {
    // SAFETY: 64 bytes readable at `row` (`Lane32` types are four bytes)
    unsafe { std::arch::x86_64::_mm512_loadu_si512(row.as_ptr().cast()) }
}

/// Sixteen 32-bit lanes into a row.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn store16<T: Lane32>(row: &mut [T; ACROSS], v: std::arch::x86_64::__m512i) {
    // SAFETY: 64 bytes writable at `row`; any bits are a valid `Lane32`
    unsafe { std::arch::x86_64::_mm512_storeu_si512(row.as_mut_ptr().cast(), v) }
}

/// Four-byte plain integers: any 32 bits are one.
pub(super) trait Lane32: Copy {}
impl Lane32 for u32 {}
impl Lane32 for i32 {}

/// The AVX-512 body of `merge_bytes_across`.
///
/// Long on purpose: each group's step (read the ranks its last merge made,
/// find each lane's lowest pair, merge, look up the new pairs and prefetch
/// them) keeps its vectors in registers from one part to the next; the
/// steps are marked by comments rather than split into calls.
///
/// # Safety
/// The CPU has AVX2, AVX-512F and DQ; `merges` is a pair table by id.
#[target_feature(enable = "avx2,avx512f,avx512dq")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn merge_bytes_across_avx512<'a>(
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
#[target_feature(enable = "avx2,avx512f,avx512dq")]
#[inline]
pub(super) unsafe fn ranks_at(
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
