use super::*;

/// `across::ACROSS`: pieces `merge_bytes_across` merges at once.
const ACROSS: usize = 16;

#[test]
fn scan_and_heap_agree() {
    // a tiny alphabet with merges chosen to create overlaps
    let mut merges = Merges::default();
    merges.insert((0, 0), (0, 2));
    merges.insert((2, 1), (1, 3));
    merges.insert((1, 1), (2, 4));
    merges.insert((2, 2), (3, 5));
    merges.insert((5, 3), (4, 6));
    let mut x = 12345u64;
    for len in 2..200 {
        let seq: Vec<(u32, u32)> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (((x >> 33) % 2) as u32, 1)
            })
            .collect();
        let mut a = seq.clone();
        merge_scan(&mut a, &merges);
        let mut b = seq.clone();
        merge_heap(&mut b, &merges, 0.0);
        assert_eq!(a, b, "len {len}");
        assert_eq!(a.iter().map(|s| s.1).sum::<u32>(), len);
    }
}

#[test]
fn byte_table_merge_agrees_with_scan() {
    // bytes 0..4 are tokens 10..14; a few merges between them and their results
    let mut byte_ids = [u32::MAX; 256];
    for b in 0..4u32 {
        byte_ids[b as usize] = 10 + b;
    }
    let mut merges = Merges::default();
    merges.insert((10, 11), (3, 20));
    merges.insert((11, 12), (1, 21));
    merges.insert((20, 12), (2, 22));
    merges.insert((21, 21), (0, 23));
    merges.insert((13, 13), (5, 24));
    let pairs = byte_pair_table(&merges, &byte_ids);
    let mut x = 99u64;
    for len in 0..=SHORT + 1 {
        let piece: Vec<u8> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((x >> 33) % 4) as u8
            })
            .collect();
        let mut a = Vec::new();
        if !merge_bytes(&piece, &byte_ids, &pairs, &merges, &mut a) {
            assert!(len > SHORT);
            continue;
        }
        let mut b: Vec<(u32, u32)> = piece.iter().map(|&c| (byte_ids[c as usize], 1)).collect();
        merge_symbols(&mut b, &merges, None);
        assert_eq!(a, b, "{piece:?}");
    }
}

#[test]
fn rank_at_finds_pairs_near_and_far_from_home() {
    // enough pairs that linear probing puts some two or more slots past
    // their home; merged ids in rank order (the table ranks by id) and
    // not (it keeps the ranks)
    for by_id in [true, false] {
        let mut merges = Merges::default();
        let mut x = 7u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 40) as u32 % 5000
        };
        for r in 0..20_000u32 {
            let id = if by_id {
                100_000 + r
            } else {
                100_000 + (r * 7919) % 20_000
            };
            let (a, b) = (next(), next());
            merges.entry((a, b)).or_insert((r, id));
        }
        let table = PairTable::new(&merges);
        assert_eq!(table.by_id, by_id);
        let far = table.slots.iter().filter(|&&s| s != EMPTY && s & FAR != 0).count();
        assert!(far > 100, "{far} far homes");
        for (&(a, b), &(rank, id)) in &merges {
            let rank = if by_id { id } else { rank };
            assert_eq!(table.rank_at(a, b, table.locate(a, b)), (rank as i32, id), "{a} {b}");
            assert_eq!(table.pair(a, b), Some((rank, id)));
        }
        let mut absent = 0;
        for _ in 0..50_000 {
            let (a, b) = (next(), next() + 3000);
            if !merges.contains_key(&(a, b)) {
                absent += 1;
                assert_eq!(table.rank_at(a, b, table.locate(a, b)), (NO_MERGE, 0));
                assert_eq!(table.pair(a, b), None);
            }
        }
        assert!(absent > 40_000);
        // the padding symbol merges with nothing
        assert_eq!(table.rank_at(PAD, PAD, table.locate(PAD, PAD)), (NO_MERGE, 0));
    }
}

/// Bytes 0..4 as tokens 10..14, merges that overlap and chain, and
/// 400 pieces of 1 to `max` of those bytes.
fn toy_pieces(max: usize) -> ([u32; 256], Merges, Vec<Vec<u8>>) {
    let mut byte_ids = [u32::MAX; 256];
    for b in 0..4u32 {
        byte_ids[b as usize] = 10 + b;
    }
    let mut merges = Merges::default();
    for (k, &(a, b)) in [
        (10, 11),
        (11, 12),
        (20, 12),
        (21, 21),
        (13, 13),
        (22, 10),
        (24, 24),
        (12, 10),
        (25, 23),
    ]
    .iter()
    .enumerate()
    {
        merges.insert((a, b), (20 + k as u32, 20 + k as u32));
    }
    let mut x = 5u64;
    let pieces: Vec<Vec<u8>> = (0..400)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 1 + (x >> 33) as usize % max;
            (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((x >> 33) % 4) as u8
                })
                .collect()
        })
        .collect();
    (byte_ids, merges, pieces)
}

#[test]
fn many_at_once_merge_like_one_at_a_time() {
    let (byte_ids, merges, pieces) = toy_pieces(MANY_MAX);
    let table = PairTable::new(&merges);
    let bytes = byte_pair_table(&table, &byte_ids);
    let want: Vec<Vec<u32>> = pieces
        .iter()
        .map(|p| {
            let mut syms = Vec::new();
            assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
            syms.iter().map(|s| s.0).collect()
        })
        .collect();
    assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 3));
    // batches of every size around the lane count, through both lookups
    let mut start = 0;
    for size in [1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 3, 40, 300]
        .into_iter()
        .cycle()
    {
        if start >= pieces.len() {
            break;
        }
        let end = (start + size).min(pieces.len());
        let batch: Vec<&[u8]> = pieces[start..end].iter().map(Vec::as_slice).collect();
        let mut ids = vec![[0u32; MANY_MAX + 1]; batch.len()];
        let mut counts = vec![0u8; batch.len()];
        merge_bytes_many(
            batch.len(),
            |i| batch[i],
            &byte_ids,
            &bytes,
            &table,
            &mut ids,
            &mut counts,
            false,
        );
        for (k, w) in want[start..end].iter().enumerate() {
            assert_eq!(&ids[k][..counts[k] as usize], &w[..], "{:?}", batch[k]);
        }
        let mut counts2 = vec![0u8; batch.len()];
        merge_bytes_many(
            batch.len(),
            |i| batch[i],
            &byte_ids,
            &bytes,
            &merges,
            &mut ids,
            &mut counts2,
            false,
        );
        assert_eq!(counts, counts2);
        // the portable (SSE2) lanes too, whatever this machine has
        let mut ids3 = vec![[0u32; MANY_MAX + 1]; batch.len()];
        let mut counts3 = vec![0u8; batch.len()];
        merge_bytes_many_with::<16, Ranks>(
            batch.len(),
            |i| batch[i],
            &byte_ids,
            &bytes,
            &table,
            &mut ids3,
            &mut counts3,
            false,
        );
        assert_eq!(counts, counts3);
        for k in 0..batch.len() {
            assert_eq!(ids[k][..counts[k] as usize], ids3[k][..counts[k] as usize]);
        }
        start = end;
    }
}

#[test]
fn wide_lanes_merge_like_one_at_a_time() {
    let (byte_ids, merges, pieces) = toy_pieces(WIDE_MAX);
    let table = PairTable::new(&merges);
    let bytes = byte_pair_table(&table, &byte_ids);
    let want: Vec<Vec<u32>> = pieces
        .iter()
        .map(|p| {
            let mut syms = Vec::new();
            assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
            syms.iter().map(|s| s.0).collect()
        })
        .collect();
    // pieces that use the lanes' second half, and merge a lot
    assert!(pieces.iter().filter(|p| p.len() > MANY_MAX).count() > 150);
    assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 8));
    let mut wide = wide_lanes();
    if !wide {
        eprintln!("no wide lanes on this machine: only the portable ones tested");
    }
    for size in [1, LANES, LANES + 1, 37, 400] {
        for (c, batch) in pieces.chunks(size).enumerate() {
            let k = batch.len();
            let (mut ids, mut counts) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
            // the portable lanes, on any machine
            merge_bytes_many_with::<32, RankArray<32>>(
                k,
                |i| &batch[i],
                &byte_ids,
                &bytes,
                &table,
                &mut ids,
                &mut counts,
                false,
            );
            for (i, w) in want[c * size..][..k].iter().enumerate() {
                assert_eq!(&ids[i][..counts[i] as usize], &w[..], "{:?}", batch[i]);
            }
            let (mut ids2, mut counts2) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
            wide = merge_bytes_many_wide(
                k,
                |i| &batch[i],
                &byte_ids,
                &bytes,
                &table,
                &mut ids2,
                &mut counts2,
                false,
            );
            assert_eq!(wide, wide_lanes());
            if wide {
                assert_eq!(counts, counts2);
                for i in 0..k {
                    assert_eq!(ids[i][..counts[i] as usize], ids2[i][..counts[i] as usize]);
                }
            }
        }
    }
}

/// Merges that chain (each from two tokens made before it, ranked by
/// the id they make), over eight byte tokens, enough of them that the
/// pair table has pairs two or more slots from home; and `count` pieces
/// of 1 to `max` of those bytes.
fn chained_pieces(max: usize, count: usize) -> ([u32; 256], Merges, Vec<Vec<u8>>) {
    let mut byte_ids = [u32::MAX; 256];
    for b in 0..8u32 {
        byte_ids[b as usize] = b;
    }
    let mut x = 11u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut merges = Merges::default();
    let mut id = 8u32;
    while id < 6000 {
        // (mostly recent tokens, so that merges build on merges)
        let pick = |r: u64| {
            if r.is_multiple_of(3) {
                r % id as u64
            } else {
                id as u64 - 1 - r % (id as u64).min(64)
            }
        };
        let (a, b) = (pick(next(1 << 20)) as u32, pick(next(1 << 20)) as u32);
        if let std::collections::hash_map::Entry::Vacant(e) = merges.entry((a, b)) {
            e.insert((id, id));
            id += 1;
        }
    }
    let pieces = (0..count)
        .map(|_| {
            let len = 1 + next(max as u64) as usize;
            (0..len).map(|_| next(8) as u8).collect()
        })
        .collect();
    (byte_ids, merges, pieces)
}

/// Sixteen pieces a vector (`merge_bytes_across`) merge like one piece
/// at a time, with and without `whole_absent`, in batches of every size
/// around a group and past the stack's room for the pieces' order
/// (256); pairs far from their home in the pair table are found.
#[test]
fn pieces_merged_across_vector_lanes_merge_like_one_at_a_time() {
    let (byte_ids, merges, pieces) = chained_pieces(MANY_MAX, 3000);
    let table = PairTable::new(&merges);
    assert!(table.by_id);
    let far = table.slots.iter().filter(|&&s| s != EMPTY && s & FAR != 0).count();
    assert!(far > 20, "{far} far homes");
    let bytes = byte_pair_table(&table, &byte_ids);
    let want: Vec<Vec<u32>> = pieces
        .iter()
        .map(|p| {
            let mut syms = Vec::new();
            assert!(merge_bytes(p, &byte_ids, &bytes, &merges, &mut syms));
            syms.iter().map(|s| s.0).collect()
        })
        .collect();
    // pieces that merge into one, into many, and not at all
    assert!(want.iter().filter(|w| w.len() == 1).count() > 50);
    assert!(want.iter().any(|w| w.len() > 6));
    assert!(want.iter().zip(&pieces).any(|(w, p)| p.len() > 3 && w.len() == p.len()));
    assert_eq!(across_applies(&table), across_lanes());
    if !across_lanes() {
        eprintln!("this CPU lacks AVX-512 F/DQ: only merge_bytes_across's fallback to the scalar lanes is tested");
    }
    for whole_absent in [false, true] {
        // (with `whole_absent`: only pieces whose whole is no token)
        let chosen: Vec<usize> = (0..pieces.len())
            .filter(|&i| !whole_absent || want[i].len() != 1)
            .collect();
        let mut start = 0;
        for size in [1, 2, ACROSS - 1, ACROSS, ACROSS + 1, 40, 64, 65, 300]
            .into_iter()
            .cycle()
        {
            if start >= chosen.len() {
                break;
            }
            let batch = &chosen[start..(start + size).min(chosen.len())];
            let (mut ids, mut counts) = (vec![[0u32; MANY_MAX + 1]; batch.len()], vec![0u8; batch.len()]);
            let piece = |i: usize| pieces[batch[i]].as_slice();
            merge_bytes_across(
                batch.len(),
                piece,
                &byte_ids,
                &bytes,
                &table,
                &mut ids,
                &mut counts,
                whole_absent,
            );
            for (k, &i) in batch.iter().enumerate() {
                assert_eq!(
                    &ids[k][..counts[k] as usize],
                    &want[i][..],
                    "{:?} {whole_absent}",
                    pieces[i]
                );
            }
            start += batch.len();
        }
    }
    // merges not ranked by the ids they make: the scalar lanes' work
    let mut other = merges.clone();
    for (k, (_, v)) in other.iter_mut().enumerate() {
        v.1 = 100_000 + (k as u32 * 7919) % 10_000;
    }
    let other = PairTable::new(&other);
    assert!(!other.by_id && !across_applies(&other));
}

/// With `whole_absent`, a piece stops merging when two symbols are left
/// (or is two bytes): the same tokens as merging to the end, for every
/// piece whose whole is no token (in these toy merges: those that do
/// not merge into one), narrow and wide lanes alike.
#[test]
fn lanes_stop_at_two_symbols_when_the_whole_piece_is_no_token() {
    for max in [MANY_MAX, WIDE_MAX] {
        let (byte_ids, merges, pieces) = toy_pieces(max);
        let table = PairTable::new(&merges);
        let bytes = byte_pair_table(&table, &byte_ids);
        let (pieces, want): (Vec<Vec<u8>>, Vec<Vec<u32>>) = pieces
            .into_iter()
            .map(|p| {
                let mut syms = Vec::new();
                assert!(merge_bytes(&p, &byte_ids, &bytes, &merges, &mut syms));
                (p, syms.iter().map(|s| s.0).collect::<Vec<u32>>())
            })
            .filter(|(_, w)| w.len() != 1)
            .unzip();
        // pieces that reach two symbols after merging, and two-byte ones
        assert!(want.iter().filter(|w| w.len() == 2).count() > 10);
        assert!(pieces.iter().any(|p| p.len() == 2) && pieces.iter().any(|p| p.len() > 8));
        for batch in (0..pieces.len()).collect::<Vec<_>>().chunks(LANES + 3) {
            let k = batch.len();
            let piece = |i: usize| pieces[batch[i]].as_slice();
            let got: Vec<Vec<u32>> = if max == MANY_MAX {
                let (mut ids, mut counts) = (vec![[0u32; MANY_MAX + 1]; k], vec![0u8; k]);
                merge_bytes_many(k, piece, &byte_ids, &bytes, &table, &mut ids, &mut counts, true);
                (0..k).map(|i| ids[i][..counts[i] as usize].to_vec()).collect()
            } else {
                let (mut ids, mut counts) = (vec![[0u32; WIDE_MAX + 1]; k], vec![0u8; k]);
                merge_bytes_many_with::<32, RankArray<32>>(
                    k,
                    piece,
                    &byte_ids,
                    &bytes,
                    &table,
                    &mut ids,
                    &mut counts,
                    true,
                );
                (0..k).map(|i| ids[i][..counts[i] as usize].to_vec()).collect()
            };
            for (i, &j) in batch.iter().enumerate() {
                assert_eq!(got[i], want[j], "{:?}", pieces[j]);
            }
        }
    }
}

/// Lanes of 64 (pieces of up to `WIDER_MAX` bytes, past what
/// `merge_bytes` takes) merge like the general merge of the same bytes,
/// the portable lanes on any machine and the vector ones where the CPU
/// has them; with `whole_absent`, pieces that do not merge into one
/// stop at two symbols with the same tokens.
#[test]
fn wider_lanes_merge_like_the_general_merge() {
    let (byte_ids, merges, pieces) = toy_pieces(WIDER_MAX);
    let table = PairTable::new(&merges);
    let bytes = byte_pair_table(&table, &byte_ids);
    let want: Vec<Vec<u32>> = pieces
        .iter()
        .map(|p| {
            let mut syms: Vec<(u32, u32)> = p.iter().map(|&b| (byte_ids[b as usize], 1)).collect();
            merge_symbols(&mut syms, &merges, None);
            syms.iter().map(|s| s.0).collect()
        })
        .collect();
    // pieces past the wide lanes and past `merge_bytes`, merging a lot
    assert!(pieces.iter().filter(|p| p.len() > SHORT).count() > 50);
    assert!(pieces.iter().filter(|p| p.len() > WIDE_MAX).count() > 150);
    assert!(want.iter().any(|w| w.len() == 1) && want.iter().any(|w| w.len() > 16));
    if !wide_lanes() {
        eprintln!("no wide lanes on this machine: only the portable wider ones tested");
    }
    for whole_absent in [false, true] {
        // (`whole_absent` is only ever set for pieces that are no token)
        let chosen: Vec<usize> = (0..pieces.len())
            .filter(|&j| !whole_absent || want[j].len() != 1)
            .collect();
        for batch in chosen.chunks(LANES + 5) {
            let k = batch.len();
            let piece = |i: usize| pieces[batch[i]].as_slice();
            let (mut ids, mut counts) = (vec![[0u32; WIDER_MAX + 1]; k], vec![0u8; k]);
            merge_bytes_many_with::<64, RankArray<64>>(
                k,
                piece,
                &byte_ids,
                &bytes,
                &table,
                &mut ids,
                &mut counts,
                whole_absent,
            );
            let (mut ids2, mut counts2) = (vec![[0u32; WIDER_MAX + 1]; k], vec![0u8; k]);
            let vector = merge_bytes_many_wider(
                k,
                piece,
                &byte_ids,
                &bytes,
                &table,
                &mut ids2,
                &mut counts2,
                whole_absent,
            );
            assert_eq!(vector, wide_lanes());
            for (i, &j) in batch.iter().enumerate() {
                assert_eq!(&ids[i][..counts[i] as usize], &want[j][..], "{:?}", pieces[j]);
                if vector {
                    assert_eq!(&ids2[i][..counts2[i] as usize], &want[j][..], "{:?}", pieces[j]);
                }
            }
        }
    }
}

/// `RankVec::with` and `lowest` against a plain array.
fn rank_vec_like_an_array<const W: usize, R: RankVec<W>>() {
    let mut x = 11u64;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for _ in 0..2000 {
        // few distinct ranks, so that the lowest is often repeated
        let mut rank = [NO_MERGE; W];
        for r in rank.iter_mut() {
            if next(3) > 0 {
                *r = next(6) as i32;
            }
        }
        let (i, j) = (next(W as u64) as usize, next(W as u64) as usize);
        let (ri, rj) = (next(6) as i32, if next(4) == 0 { NO_MERGE } else { next(6) as i32 });
        let got = R::load(&rank).with(i, ri).with(j, rj).lowest();
        rank[i] = ri;
        rank[j] = rj;
        let best = *rank.iter().min().unwrap();
        let hits = (0..W).filter(|&k| rank[k] == best).fold(0u64, |m, k| m | (1 << k));
        assert_eq!(got, (best, hits), "{rank:?}");
    }
}

#[test]
fn rank_vectors_find_the_lowest_and_where() {
    rank_vec_like_an_array::<16, Ranks>();
    rank_vec_like_an_array::<32, RankArray<32>>();
    rank_vec_like_an_array::<64, RankArray<64>>();
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is there.
        unsafe { avx2_rank_vec() };
    } else {
        eprintln!("no AVX2 on this machine: its rank vectors not tested");
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is there.
        unsafe { avx512_rank_vec() };
    } else {
        eprintln!("no AVX-512F on this machine: its rank vector not tested");
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_rank_vec() {
    rank_vec_like_an_array::<16, Ranks8>();
    rank_vec_like_an_array::<32, Ranks32>();
    rank_vec_like_an_array::<64, Ranks64>();
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512_rank_vec() {
    rank_vec_like_an_array::<32, Ranks32x2>();
    rank_vec_like_an_array::<64, Ranks64x4>();
}

/// Pseudo-random 31-bit numbers from `seed` (a linear congruential
/// generator: the tests' pairs, the same every run).
fn lcg(mut x: u64) -> impl FnMut() -> u32 {
    move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32
    }
}

#[test]
fn the_pair_filter_turns_most_pairs_that_do_not_merge_away() {
    // 50K merges of ids below 100K, as in a rank file; then pairs of
    // such ids that do not merge: about one in thirty gets past the
    // filter (two bits a pair, ten bits a merge), every merge does
    let mut merges = Merges::default();
    let mut ids = lcg(11);
    let mut next = || ids() % 100_000;
    for rank in 0..50_000u32 {
        merges.insert((next(), next()), (rank, 100_000 + rank));
    }
    let t = PairTable::new(&merges);
    let passes = |a: u32, b: u32| {
        let (w, bits) = t.filter_bits(PairTable::key(a, b));
        t.filter[w] & bits == bits
    };
    assert!(merges.keys().all(|&(a, b)| passes(a, b)));
    let (mut tried, mut passed) = (0, 0);
    while tried < 200_000 {
        let (a, b) = (next(), next());
        if !merges.contains_key(&(a, b)) {
            tried += 1;
            passed += passes(a, b) as usize;
        }
    }
    assert!(passed * 20 < tried, "{passed} of {tried} pairs passed");
}

#[test]
fn pair_table_answers_like_the_map() {
    let mut merges = Merges::default();
    let mut next = lcg(7);
    for rank in 0..5000u32 {
        merges.insert((next() % 300, next() % 300), (rank, 1000 + rank * 2));
    }
    // ranks in id order: ranked by id; once two merges make one token, by rank
    let by_id = PairTable::new(&merges);
    assert!(by_id.by_id);
    let mut twice = merges.clone();
    twice.insert((7000, 7001), (9000, 1000));
    let by_rank = PairTable::new(&twice);
    assert!(!by_rank.by_id);
    for a in 0..300 {
        for b in 0..300 {
            let want = merges.get(&(a, b)).copied();
            assert_eq!(by_id.pair(a, b), want.map(|(_, id)| (id, id)), "({a}, {b})");
            assert_eq!(by_rank.pair(a, b), want, "({a}, {b})");
        }
    }
    assert_eq!(by_rank.pair(7000, 7001), Some((9000, 1000)));
    let t = by_id;
    // ids far apart, and an empty table
    assert_eq!(t.pair(u32::MAX - 1, 0), None);
    assert_eq!(PairTable::new(&Merges::default()).pair(1, 2), None);
}

#[test]
fn pair_tables_too_large_for_a_slot_answer_like_the_map() {
    // ids past a slot's field (more than two million tokens), and ranks
    // that each make two ids: the map answers, the same as it would
    let mut x = 3u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32 % 400
    };
    let mut big_ids = Merges::default();
    let mut shared_rank = Merges::default();
    for r in 0..3000u32 {
        let (a, b) = (next(), next());
        big_ids.entry((a, b)).or_insert((r, 3_000_000 + r));
        shared_rank.entry((a, b)).or_insert((r / 2, 1000 + (r * 7919) % 3000));
    }
    big_ids.insert((5_000_000, 7), (4000, 5_000_001));
    for merges in [big_ids, shared_rank] {
        let table = PairTable::new(&merges);
        assert!(table.big.is_some());
        for a in (0..400).chain([5_000_000, PAD]) {
            for b in (0..400).chain([7, PAD]) {
                let want = merges.get(&(a, b)).copied();
                let want = want.map(|(rank, id)| if table.by_id { (id, id) } else { (rank, id) });
                assert_eq!(table.pair(a, b), want, "({a}, {b})");
                let ranked = want.map_or((NO_MERGE, 0), |(rank, id)| (rank as i32, id));
                assert_eq!(table.rank_at(a, b, table.locate(a, b)), ranked, "({a}, {b})");
            }
        }
    }
}

#[test]
fn dropout_one_merges_nothing() {
    let mut merges = Merges::default();
    merges.insert((0, 0), (0, 1));
    let mut s = vec![(0, 1); 10];
    merge_heap(&mut s, &merges, 1.0);
    assert_eq!(s.len(), 10);
}
