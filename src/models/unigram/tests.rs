use super::*;

fn toy() -> Unigram {
    let vocab = [
        ("<unk>", 0.0),
        ("a", -1.0),
        ("b", -2.0),
        ("ab", -1.5),
        ("abc", -4.0),
        ("c", -3.0),
        ("\u{2581}", -2.5),
        ("<0xE2>", 0.0),
        ("<0x82>", 0.0),
        ("<0xAC>", 0.0),
    ];
    Unigram::new(vocab.iter().map(|(p, s)| (p.to_string(), *s)).collect(), Some(0), false).unwrap()
}

fn ids(m: &Unigram, s: &str) -> Vec<u32> {
    m.encode_str(s).into_iter().map(|(i, _)| i).collect()
}

#[test]
fn viterbi_picks_the_best_sum() {
    let m = toy();
    // "ab" (-1.5) beats "a" + "b" (-3); "abc" (-4) beats "ab" + "c" (-4.5)
    assert_eq!(ids(&m, "ab"), [3]);
    assert_eq!(ids(&m, "abc"), [4]);
    assert_eq!(ids(&m, "aab"), [1, 3]);
    let lens: Vec<u32> = m.encode_str("aab").into_iter().map(|(_, l)| l).collect();
    assert_eq!(lens, [1, 2]);
}

#[test]
fn unknown_characters_fuse_into_one_unk() {
    let m = toy();
    assert_eq!(ids(&m, "a\u{20AC}\u{20AC}b"), [1, 0, 2]);
    let toks = m.encode_str("\u{20AC}\u{20AC}a");
    assert_eq!(toks, [(0, 6), (1, 1)]);
}

#[test]
fn byte_fallback_spells_unknown_bytes() {
    let mut m = toy();
    m.byte_fallback = true;
    // U+20AC is E2 82 AC: all three byte pieces exist
    assert_eq!(ids(&m, "\u{20AC}a"), [7, 8, 9, 1]);
    // U+00E9 is C3 A9: no byte pieces, so <unk>
    assert_eq!(ids(&m, "\u{e9}"), [0]);
}

#[test]
fn json_round_trip_and_errors() {
    let m = toy();
    let j = m.to_json();
    let back = Unigram::from_json(&j).unwrap();
    assert_eq!(back.pieces(), m.pieces());
    assert_eq!(back.unk_id(), Some(0));
    let bad = serde_json::json!({"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]});
    assert!(matches!(Unigram::from_json(&bad), Err(Error::Format(_))));
    let bad = serde_json::json!({"type": "Unigram", "vocab": [["a"]]});
    assert!(Unigram::from_json(&bad)
        .err()
        .is_some_and(|e| e.to_string().contains("vocab[0]")));
}

fn sp_toy() -> Unigram {
    use PieceType::*;
    let vocab = [
        ("<unk>", 0.0, Unknown),
        ("<s>", 0.0, Control),
        ("a", -1.0, Normal),
        ("b", -2.0, Normal),
        ("ab", -1.5, Normal),
        ("xy", -9.0, UserDefined),
        ("bc", -0.1, Unused),
        ("c", -3.0, Normal),
    ];
    Unigram::with_piece_types(
        vocab.iter().map(|(p, s, _)| (p.to_string(), *s)).collect(),
        vocab.iter().map(|(_, _, t)| *t).collect(),
        false,
    )
    .unwrap()
}

#[test]
fn sentencepiece_semantics() {
    let m = sp_toy();
    // control pieces never match text; unused ones are skipped
    assert_eq!(ids(&m, "<s>"), [0]);
    assert_eq!(ids(&m, "bc"), [3, 7]);
    // user-defined pieces win whatever their score
    assert_eq!(ids(&m, "axy"), [2, 5]);
    // unknown pieces next to each other are one <unk>
    assert_eq!(m.encode_str("\u{e9}\u{e9}a"), [(0, 4), (2, 1)]);
    let dup = Unigram::with_piece_types(
        vec![("<unk>".into(), 0.0), ("a".into(), -1.0), ("a".into(), -2.0)],
        vec![PieceType::Unknown, PieceType::Normal, PieceType::Normal],
        false,
    );
    assert!(dup.is_err());
}

#[test]
fn nbest_lists_segmentations_best_first() {
    let m = toy();
    let nb = m.nbest("abc", 10);
    let segs: Vec<Vec<u32>> = nb.iter().map(|(t, _)| t.iter().map(|(i, _)| *i).collect()).collect();
    assert_eq!(segs, vec![vec![4], vec![3, 5], vec![1, 2, 5]]);
    let scores: Vec<f64> = nb.iter().map(|(_, s)| *s).collect();
    assert_eq!(scores, [-4.0, -4.5, -6.0]);
    assert_eq!(m.nbest("abc", 1)[0].0, m.encode_str("abc"));
}

#[test]
fn sampling_covers_the_lattice() {
    let m = toy();
    let mut rng = Rng::new(1);
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..2000 {
        let t: Vec<u32> = m.sample("abc", -1, 1.0, &mut rng).into_iter().map(|(i, _)| i).collect();
        *seen.entry(t).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    // exp(-4) : exp(-4.5) : exp(-6) is about 0.56 : 0.34 : 0.08
    let best = seen[&vec![4]] as f64 / 2000.0;
    assert!((0.49..0.63).contains(&best), "{seen:?}");
    // from the 2-best list only
    for _ in 0..200 {
        let t: Vec<u32> = m.sample("abc", 2, 1.0, &mut rng).into_iter().map(|(i, _)| i).collect();
        assert!(t == [4] || t == [3, 5]);
    }
    assert_eq!(m.sample("abc", 1, 1.0, &mut rng), m.encode_str("abc"));
}

/// A small vocabulary with `▁` pieces, in both flavours.
fn marked_vocab() -> Vec<(String, f64)> {
    [
        ("<unk>", 0.0),
        ("\u{2581}", -2.0),
        ("\u{2581}a", -1.5),
        ("\u{2581}ab", -2.5),
        ("a", -1.0),
        ("b", -2.0),
        ("ab", -2.9),
        ("c", -3.0),
    ]
    .iter()
    .map(|(p, s)| (p.to_string(), *s))
    .collect()
}

#[test]
fn chunks_at_the_mark_only_when_no_piece_crosses_it() {
    let m = Unigram::new(marked_vocab(), Some(0), false).unwrap();
    assert!(m.chunk_safe);
    let mut crossing = marked_vocab();
    crossing.push(("b\u{2581}a".into(), -0.5));
    let c = Unigram::new(crossing, Some(0), false).unwrap();
    assert!(!c.chunk_safe);
    // the piece across the mark wins where it can
    assert_eq!(ids(&c, "\u{2581}ab\u{2581}a"), [2, 8]);
    assert_eq!(ids(&c, "\u{2581}ab\u{2581}"), [3, 1]);
}

#[test]
fn chunked_and_whole_text_viterbi_agree() {
    // a text of many marked words, segmented with and without chunking,
    // in f64 (tokenizers) and f32 with re-basing (sentencepiece)
    let words = [
        "\u{2581}ab",
        "\u{2581}a",
        "\u{2581}",
        "\u{2581}cab",
        "\u{2581}\u{e9}b",
        "\u{2581}bbc",
    ];
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(words[(i * 7 + i / 3) % words.len()]);
    }
    let hf = Unigram::new(marked_vocab(), Some(0), false).unwrap();
    let types = [PieceType::Unknown]
        .into_iter()
        .chain(std::iter::repeat_n(PieceType::Normal, 7))
        .collect();
    let sp = Unigram::with_piece_types(marked_vocab(), types, false).unwrap();
    for m in [&hf, &sp] {
        let run = |chunked: bool| {
            let mut out: Vec<u32> = Vec::new();
            viterbi::with_scratch(|s| m.segment(text.as_bytes(), chunked, s, |segs| m.emit(&text, segs, &mut out)));
            out
        };
        assert_eq!(run(true), run(false));
    }
}

#[test]
fn pushed_tokens_renew_the_caches() {
    let mut m = Unigram::new(marked_vocab(), Some(0), false).unwrap();
    let before = m.generation;
    assert_eq!(ids(&m, "abc"), [6, 7]);
    m.push_token(b"abc", 8);
    assert_ne!(m.generation, before);
    assert_eq!(ids(&m, "abc"), [8]);
}
