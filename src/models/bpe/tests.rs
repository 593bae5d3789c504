use super::piece::*;
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::GPT2_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    for pattern in [crate::patterns::CL100K_PATTERN, crate::patterns::O200K_PATTERN] {
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::GPT2_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::GPT2_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
    let scanner = crate::scanner::Scanner::for_pattern(crate::patterns::CL100K_PATTERN).unwrap();
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
        let bpe = crate::formats::tiktoken::parse(&data)
            .and_then(Bpe::from_ranks)
            .unwrap();
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
