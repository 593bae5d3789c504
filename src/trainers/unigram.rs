//! The Unigram trainer (Kudo 2018), SentencePiece-style.
//!
//! 1. **Seed.** The distinct words are written one after another into an
//!    array of characters; a suffix array sorted to `max_piece_length`
//!    characters and its LCP values give, interval by interval, every
//!    substring that starts two or more suffixes (a node of the suffix tree),
//!    with the summed count of the words it occurs in. Valid substrings
//!    (see [`PieceRules`]) are ranked by count × length; the best
//!    `seed_size` join the kept characters. Scores start as log frequencies.
//! 2. **EM.** The E-step runs forward–backward over each word's lattice (all
//!    pieces found at each position by a trie) and collects the expected
//!    count of every piece; the M-step sets each score to
//!    ψ(count) − ψ(total) (the Bayesian variant SentencePiece uses) and drops
//!    pieces expected less than half a time. Characters are never dropped.
//! 3. **Pruning.** After `num_sub_iterations` EM steps, each piece's loss is
//!    the drop in corpus likelihood if it were removed and its occurrences
//!    re-segmented by the best split without it; the pieces with the smallest
//!    loss go, leaving `shrinking_factor` of them, until the vocabulary is
//!    within 10% of the target; the best-scoring pieces then make the final
//!    vocabulary, every kept character included.
//!
//! Words are processed in parallel in every step, in a fixed number of groups
//! whose sums are added in group order: the result does not depend on the
//! thread count.

use super::sp_common::{digamma, CharClass, PieceRules, Words};
use super::TrainEvent;
use crate::error::{Error, Result};
use crate::trie::Trie;
use rayon::prelude::*;

#[derive(Clone, Debug)]
pub struct UnigramTrainerConfig {
    /// Pieces to learn, kept characters included (meta pieces, bytes and
    /// special tokens are added by the caller).
    pub vocab_size: usize,
    pub character_coverage: f64,
    pub seed_size: usize,
    pub shrinking_factor: f64,
    pub num_sub_iterations: usize,
    /// Fail when the corpus cannot give `vocab_size` pieces (else return fewer).
    pub hard_vocab_limit: bool,
    pub rules: PieceRules,
}

impl Default for UnigramTrainerConfig {
    fn default() -> Self {
        UnigramTrainerConfig {
            vocab_size: 8000,
            character_coverage: 0.9995,
            seed_size: 1_000_000,
            shrinking_factor: 0.75,
            num_sub_iterations: 2,
            hard_vocab_limit: true,
            rules: PieceRules::default(),
        }
    }
}

pub struct TrainedUnigram {
    /// Pieces with their log-probability scores, best first.
    pub pieces: Vec<(String, f64)>,
    /// How many distinct characters the coverage rule dropped.
    pub dropped_chars: usize,
}

const UNK_PENALTY: f64 = 10.0;
const MIN_EXPECTED: f64 = 0.5;
const SEP: u32 = 0;
const OUT: u32 = 0x11_0000; // a character outside the kept set

/// The current model: pieces, scores and a trie to find them.
struct Model {
    pieces: Vec<String>,
    scores: Vec<f64>,
    is_char: Vec<bool>,
    trie: Trie,
    unk_score: f64,
}

impl Model {
    fn new(pieces: Vec<(String, f64)>, n_chars_hint: &rustc_hash::FxHashSet<char>) -> Model {
        let trie = Trie::build(
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| (p.0.as_bytes(), i as u32))
                .collect(),
        );
        let min = pieces.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let is_char = pieces
            .iter()
            .map(|p| {
                let mut it = p.0.chars();
                matches!((it.next(), it.next()), (Some(c), None) if n_chars_hint.contains(&c))
            })
            .collect();
        Model {
            scores: pieces.iter().map(|p| p.1).collect(),
            pieces: pieces.into_iter().map(|p| p.0).collect(),
            is_char,
            trie,
            unk_score: min - UNK_PENALTY,
        }
    }

    fn len(&self) -> usize {
        self.pieces.len()
    }

    /// The lattice of `word`: nodes `(start, end, id)` in start order, bytes;
    /// `u32::MAX` is the unknown node of a character no piece covers.
    fn lattice(&self, word: &str, skip: u32, nodes: &mut Vec<(u32, u32, u32)>) {
        nodes.clear();
        let bytes = word.as_bytes();
        for (s, ch) in word.char_indices() {
            let clen = ch.len_utf8();
            let mut single = false;
            self.trie.prefixes(&bytes[s..], |len, id| {
                if id != skip {
                    single |= len == clen;
                    nodes.push((s as u32, (s + len) as u32, id));
                }
            });
            if !single {
                nodes.push((s as u32, (s + clen) as u32, u32::MAX));
            }
        }
    }

    #[inline]
    fn score(&self, id: u32) -> f64 {
        if id == u32::MAX {
            self.unk_score
        } else {
            self.scores[id as usize]
        }
    }

    /// Best segmentation of `word` (ids, `u32::MAX` for unknown) and its score.
    fn viterbi(
        &self,
        word: &str,
        skip: u32,
        nodes: &mut Vec<(u32, u32, u32)>,
        best: &mut Vec<(f64, u32)>,
    ) -> (Vec<u32>, f64) {
        self.lattice(word, skip, nodes);
        self.best_path(word.len(), nodes, best)
    }

    /// Viterbi over a lattice already built for a word of `n` bytes.
    fn best_path(&self, n: usize, nodes: &[(u32, u32, u32)], best: &mut Vec<(f64, u32)>) -> (Vec<u32>, f64) {
        best.clear();
        best.resize(n + 1, (f64::NEG_INFINITY, u32::MAX));
        best[0].0 = 0.0;
        for (k, &(s, e, id)) in nodes.iter().enumerate() {
            let base = best[s as usize].0;
            if base == f64::NEG_INFINITY {
                continue;
            }
            let v = base + self.score(id);
            if v > best[e as usize].0 {
                best[e as usize] = (v, k as u32);
            }
        }
        let total = best[n].0;
        let mut path = Vec::new();
        let mut at = n;
        while at > 0 {
            let (s, _, id) = nodes[best[at].1 as usize];
            path.push(id);
            at = s as usize;
        }
        path.reverse();
        (path, total)
    }
}

#[inline]
fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// Sort the suffixes of `text` by their first `depth` symbols (prefix
/// doubling with radix-sorted rank pairs): positions in order.
fn suffix_array(text: &[u32], depth: usize) -> Vec<u32> {
    let n = text.len();
    let mut sa: Vec<u32> = vec![0; n];
    let mut rank: Vec<u32> = vec![0; n];
    let mut keys: Vec<(u64, u32)> = (0..n).map(|i| (text[i] as u64, i as u32)).collect();
    let mut sorted_to = 1usize; // the order is right for this many leading symbols
    loop {
        radix_sort(&mut keys);
        let mut r = 0u32;
        for (j, &(key, i)) in keys.iter().enumerate() {
            if j > 0 && key != keys[j - 1].0 {
                r += 1;
            }
            sa[j] = i;
            rank[i as usize] = r;
        }
        if sorted_to >= depth || r as usize + 1 == n {
            return sa;
        }
        let h = sorted_to;
        keys.clear();
        keys.extend((0..n).map(|i| {
            let second = if i + h >= n { 0 } else { rank[i + h] as u64 + 1 };
            (((rank[i] as u64) << 32) | second, i as u32)
        }));
        sorted_to *= 2;
    }
}

/// LSD radix sort of `(key, value)` pairs by key, 16 bits at a time,
/// skipping digits where every key agrees.
fn radix_sort(v: &mut Vec<(u64, u32)>) {
    let max = v.iter().map(|p| p.0).max().unwrap_or(0);
    let mut tmp = vec![(0u64, 0u32); v.len()];
    let mut shift = 0u32;
    while shift < 64 && (max >> shift) != 0 {
        let mut counts = vec![0usize; 1 << 16];
        for p in v.iter() {
            counts[((p.0 >> shift) & 0xFFFF) as usize] += 1;
        }
        if counts.contains(&v.len()) {
            shift += 16;
            continue;
        }
        let mut sum = 0;
        for c in counts.iter_mut() {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for p in v.iter() {
            let d = ((p.0 >> shift) & 0xFFFF) as usize;
            tmp[counts[d]] = *p;
            counts[d] += 1;
        }
        std::mem::swap(v, &mut tmp);
        shift += 16;
    }
}

/// Seed pieces: frequent substrings of the words, by count × length.
fn seed(words: &Words, cfg: &UnigramTrainerConfig) -> Vec<(String, f64)> {
    let rules = &cfg.rules;
    let depth = rules.max_piece_length.max(1);
    // the words, one after another, each followed by a separator
    let mut text: Vec<u32> = Vec::new();
    let mut weight_of: Vec<u32> = Vec::new(); // position -> word index
    for (wi, (w, _)) in words.words.iter().enumerate() {
        for ch in w.chars() {
            text.push(if ch == '\0' || !words.kept.contains(&ch) {
                OUT
            } else {
                ch as u32
            });
            weight_of.push(wi as u32);
        }
        text.push(SEP);
        weight_of.push(wi as u32);
    }
    let n = text.len();
    let sa = suffix_array(&text, depth);
    // lcp[i]: common prefix of suffixes sa[i-1] and sa[i], capped, never across a separator
    let lcp: Vec<u32> = crate::parallel::install(None, || {
        (0..n)
            .into_par_iter()
            .map(|i| {
                if i == 0 {
                    return 0;
                }
                let (a, b) = (sa[i - 1] as usize, sa[i] as usize);
                let mut l = 0;
                while l < depth && a + l < n && b + l < n && text[a + l] == text[b + l] && text[a + l] != SEP {
                    l += 1;
                }
                l as u32
            })
            .collect()
    });
    // prefix sums of word counts in suffix order
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    for &p in &sa {
        let c = words.words[weight_of[p as usize] as usize].1;
        prefix.push(prefix.last().unwrap() + c);
    }
    // every LCP interval (lcp value, left bound, right bound exclusive)
    let mut candidates: Vec<(f64, u32, u32)> = Vec::new(); // (score, start, length)
    let mut chars: Vec<char> = Vec::with_capacity(depth);
    let mut classes: Vec<CharClass> = Vec::with_capacity(depth);
    let mut consider = |start: usize, len: usize, count: u64, candidates: &mut Vec<(f64, u32, u32)>| {
        if len < 2 {
            return;
        }
        chars.clear();
        classes.clear();
        for &c in &text[start..start + len] {
            if c == OUT || c == SEP {
                return;
            }
            let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
            chars.push(ch);
            classes.push(rules.class(ch));
        }
        if rules.is_valid(&chars, &classes) {
            candidates.push(((count as f64) * len as f64, start as u32, len as u32));
        }
    };
    let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
    for i in 1..=n {
        let h = if i < n { lcp[i] } else { 0 };
        let mut lb = i - 1;
        while h < stack.last().unwrap().0 {
            let (l, b) = stack.pop().unwrap();
            consider(sa[b] as usize, l as usize, prefix[i] - prefix[b], &mut candidates);
            lb = b;
        }
        if h > stack.last().unwrap().0 {
            stack.push((h, lb));
        }
    }
    // whole words that no other word starts with are leaves, not nodes: add them
    let mut start = 0usize;
    for (w, c) in &words.words {
        let len = w.chars().count();
        if *c >= 2 && len <= depth {
            consider(start, len, *c, &mut candidates);
        }
        start += len + 1;
    }
    candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut seen = rustc_hash::FxHashSet::default();
    let mut out: Vec<(String, f64)> = words.chars.iter().map(|&(c, n)| (c.to_string(), n as f64)).collect();
    for (c, _) in &words.chars {
        seen.insert(c.to_string());
    }
    let want = cfg.seed_size.max(words.chars.len());
    for (score, s, l) in candidates {
        if out.len() >= want {
            break;
        }
        let piece: String = text[s as usize..(s + l) as usize]
            .iter()
            .map(|&c| char::from_u32(c).unwrap_or('\u{FFFD}'))
            .collect();
        if seen.insert(piece.clone()) {
            out.push((piece, score));
        }
    }
    let total: f64 = out.iter().map(|p| p.1).sum();
    let log_total = total.ln();
    for p in out.iter_mut() {
        p.1 = p.1.ln() - log_total;
    }
    out
}

/// Run `f` over the words in parallel: a fixed number of groups (whatever
/// the thread count), each with its own accumulator, returned in group
/// order so that sums over them are always added the same way.
fn over_words<A: Send>(
    words: &[(String, u64)],
    init: impl Fn() -> A + Sync + Send,
    f: impl Fn(&mut A, &str, u64) + Sync + Send,
) -> Vec<A> {
    const GROUPS: usize = 16;
    let chunk = words.len().div_ceil(GROUPS).max(1);
    crate::parallel::install(None, || {
        words
            .par_chunks(chunk)
            .map(|ws| {
                let mut acc = init();
                for (w, c) in ws {
                    f(&mut acc, w, *c);
                }
                acc
            })
            .collect()
    })
}

/// E-step: expected piece counts, the log-likelihood and the token count.
fn e_step(model: &Model, words: &[(String, u64)]) -> (Vec<f64>, f64, u64) {
    struct Acc {
        expected: Vec<f64>,
        objective: f64,
        tokens: u64,
        nodes: Vec<(u32, u32, u32)>,
        alpha: Vec<f64>,
        beta: Vec<f64>,
        best: Vec<(f64, u32)>,
    }
    let accs = over_words(
        words,
        || Acc {
            expected: vec![0.0; model.len()],
            objective: 0.0,
            tokens: 0,
            nodes: Vec::new(),
            alpha: Vec::new(),
            beta: Vec::new(),
            best: Vec::new(),
        },
        |a, w, c| {
            model.lattice(w, u32::MAX, &mut a.nodes);
            let n = w.len();
            a.alpha.clear();
            a.alpha.resize(n + 1, f64::NEG_INFINITY);
            a.beta.clear();
            a.beta.resize(n + 1, f64::NEG_INFINITY);
            a.alpha[0] = 0.0;
            a.beta[n] = 0.0;
            for &(s, e, id) in &a.nodes {
                let v = a.alpha[s as usize] + model.score(id);
                a.alpha[e as usize] = log_add(a.alpha[e as usize], v);
            }
            for &(s, e, id) in a.nodes.iter().rev() {
                let v = a.beta[e as usize] + model.score(id);
                a.beta[s as usize] = log_add(a.beta[s as usize], v);
            }
            let z = a.alpha[n];
            let cf = c as f64;
            for &(s, e, id) in &a.nodes {
                if id == u32::MAX {
                    continue;
                }
                let p = (a.alpha[s as usize] + model.score(id) + a.beta[e as usize] - z).exp();
                a.expected[id as usize] += cf * p;
            }
            a.objective += cf * z;
            let (path, _) = model.best_path(n, &a.nodes, &mut a.best);
            a.tokens += c * path.len() as u64;
        },
    );
    let mut expected = vec![0.0; model.len()];
    let mut objective = 0.0;
    let mut tokens = 0;
    for a in accs {
        for (x, y) in expected.iter_mut().zip(&a.expected) {
            *x += y;
        }
        objective += a.objective;
        tokens += a.tokens;
    }
    (expected, objective, tokens)
}

/// M-step: new scores from expected counts; rare pieces go (characters stay).
fn m_step(model: &Model, expected: &[f64]) -> Vec<(String, f64)> {
    let mut kept: Vec<(String, f64)> = Vec::with_capacity(model.len());
    for (i, p) in model.pieces.iter().enumerate() {
        let f = expected[i];
        if model.is_char[i] {
            kept.push((p.clone(), f.max(MIN_EXPECTED)));
        } else if f >= MIN_EXPECTED {
            kept.push((p.clone(), f));
        }
    }
    let total: f64 = kept.iter().map(|p| p.1).sum();
    let log_total = digamma(total);
    for p in kept.iter_mut() {
        p.1 = digamma(p.1) - log_total;
    }
    kept
}

/// Prune to `max(target, shrinking_factor × size)` pieces by likelihood loss.
fn prune(model: &Model, words: &[(String, u64)], target: usize, shrinking: f64) -> Vec<(String, f64)> {
    let n = model.len();
    // for each piece: may it go at all, and what replaces it
    let alts: Vec<(bool, Vec<u32>)> = crate::parallel::install(None, || {
        (0..n)
            .into_par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(nodes, best), i| {
                    if model.is_char[i] {
                        return (true, Vec::new());
                    }
                    let piece = &model.pieces[i];
                    let (with, _) = model.viterbi(piece, u32::MAX, nodes, best);
                    if with.len() >= 2 {
                        return (false, Vec::new()); // never chosen as a whole: removable
                    }
                    let (without, score) = model.viterbi(piece, i as u32, nodes, best);
                    if score == f64::NEG_INFINITY || without.contains(&u32::MAX) {
                        return (true, Vec::new());
                    }
                    (true, without)
                },
            )
            .collect()
    });
    // Viterbi counts over the corpus
    struct Acc {
        freq: Vec<f64>,
        nodes: Vec<(u32, u32, u32)>,
        best: Vec<(f64, u32)>,
    }
    let accs = over_words(
        words,
        || Acc {
            freq: vec![0.0; n],
            nodes: Vec::new(),
            best: Vec::new(),
        },
        |a, w, c| {
            let (path, _) = model.viterbi(w, u32::MAX, &mut a.nodes, &mut a.best);
            for id in path {
                if id != u32::MAX {
                    a.freq[id as usize] += c as f64;
                }
            }
        },
    );
    let mut freq = vec![0.0; n];
    for a in accs {
        for (x, y) in freq.iter_mut().zip(&a.freq) {
            *x += y;
        }
    }
    let sum: f64 = freq.iter().sum();
    let log_sum = sum.ln();
    let mut keep: Vec<usize> = Vec::new();
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    for i in 0..n {
        let (keepable, alt) = &alts[i];
        if model.is_char[i] {
            keep.push(i);
        } else if freq[i] == 0.0 || !keepable {
            continue;
        } else if alt.is_empty() {
            keep.push(i);
        } else {
            let f = freq[i] / sum;
            let logprob = freq[i].ln() - log_sum;
            let log_alt_sum = (sum + freq[i] * (alt.len() as f64 - 1.0)).ln();
            let logprob_alt: f64 = alt
                .iter()
                .map(|&a| (freq[a as usize] + freq[i]).ln() - log_alt_sum)
                .sum();
            candidates.push((f * (logprob - logprob_alt), i));
        }
    }
    let size = ((shrinking * n as f64) as usize).max(target);
    candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in candidates {
        if keep.len() >= size {
            break;
        }
        keep.push(i);
    }
    keep.sort_unstable();
    keep.into_iter()
        .map(|i| (model.pieces[i].clone(), model.scores[i]))
        .collect()
}

pub fn train(
    counts: &rustc_hash::FxHashMap<Vec<u8>, u64>,
    cfg: &UnigramTrainerConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<TrainedUnigram> {
    if !(cfg.shrinking_factor > 0.0 && cfg.shrinking_factor < 1.0) {
        return Err(Error::Config(format!(
            "shrinking_factor must be between 0 and 1 (exclusive), got {}",
            cfg.shrinking_factor
        )));
    }
    if cfg.rules.max_piece_length == 0 {
        return Err(Error::Config("max_piece_length must be at least 1".into()));
    }
    let words = Words::new(counts, cfg.character_coverage)?;
    if words.chars.len() > cfg.vocab_size {
        return Err(Error::VocabSize(format!(
            "vocab_size leaves room for {} pieces, but the {} characters that cover {}% of the text \
             need one each; raise vocab_size to at least {} more, or lower character_coverage",
            cfg.vocab_size,
            words.chars.len(),
            cfg.character_coverage * 100.0,
            words.chars.len() - cfg.vocab_size
        )));
    }
    let seeded = seed(&words, cfg);
    let desired = (cfg.vocab_size as f64 * 1.1) as usize;
    let mut model = Model::new(seeded, &words.kept);
    let initial = model.len();
    let total = words.total_count() as f64;
    let mut round = 0usize;
    loop {
        for sub in 0..cfg.num_sub_iterations.max(1) {
            let (expected, objective, tokens) = e_step(&model, &words.words);
            let pieces = m_step(&model, &expected);
            on_event(TrainEvent::Em {
                round,
                sub,
                pieces: pieces.len(),
                objective: -objective / total,
                tokens,
            })?;
            model = Model::new(pieces, &words.kept);
        }
        if model.len() <= desired {
            break;
        }
        let before = model.len();
        let pruned = prune(&model, &words.words, desired, cfg.shrinking_factor);
        let after = pruned.len();
        model = Model::new(pruned, &words.kept);
        // pruning shrinks the vocabulary geometrically: progress on a log scale
        let span = (initial as f64 / desired.max(1) as f64).ln().max(f64::MIN_POSITIVE);
        let done = ((initial as f64 / after.max(1) as f64).ln() / span * 1000.0) as usize;
        on_event(TrainEvent::Progress {
            done: done.min(1000),
            total: 1000,
        })?;
        if after >= before {
            break; // nothing left to prune
        }
        round += 1;
    }
    // final vocabulary: every kept character, then the best-scoring pieces
    let mut order: Vec<usize> = (0..model.len()).collect();
    order.sort_by(|&a, &b| {
        model.is_char[b]
            .cmp(&model.is_char[a])
            .then(model.scores[b].total_cmp(&model.scores[a]))
            .then(a.cmp(&b))
    });
    order.truncate(cfg.vocab_size);
    if order.len() < cfg.vocab_size && cfg.hard_vocab_limit {
        return Err(Error::VocabSize(format!(
            "the corpus gives only {} pieces, fewer than vocab_size asks for ({}); lower vocab_size, \
             train on more text, or pass hard_vocab_limit=False to accept a smaller vocabulary",
            order.len(),
            cfg.vocab_size
        )));
    }
    let mut pieces: Vec<(String, f64)> = order
        .into_iter()
        .map(|i| (model.pieces[i].clone(), model.scores[i]))
        .collect();
    pieces.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    on_event(TrainEvent::Progress {
        done: 1000,
        total: 1000,
    })?;
    Ok(TrainedUnigram {
        pieces,
        dropped_chars: words.dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    fn counts(words: &[(&str, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    #[test]
    fn suffix_array_sorts_to_depth() {
        let text: Vec<u32> = "banana".chars().map(|c| c as u32).collect();
        let sa = suffix_array(&text, 16);
        // a, ana, anana, banana, na, nana
        assert_eq!(sa, vec![5, 3, 1, 0, 4, 2]);
    }

    #[test]
    fn learns_frequent_words() {
        let c = counts(&[
            ("▁the", 500),
            ("▁then", 100),
            ("▁there", 120),
            ("▁cat", 300),
            ("▁cats", 50),
            ("▁hat", 200),
            ("▁that", 250),
        ]);
        let cfg = UnigramTrainerConfig {
            vocab_size: 20,
            ..Default::default()
        };
        let t = train(&c, &cfg, &mut |_| Ok(())).unwrap();
        assert_eq!(t.pieces.len(), 20);
        let names: Vec<&str> = t.pieces.iter().map(|p| p.0.as_str()).collect();
        assert!(names.contains(&"▁the"), "{names:?}");
        for ch in "▁thecarns".chars() {
            assert!(names.contains(&ch.to_string().as_str()), "{ch} missing");
        }
        // best first, log probabilities
        assert!(t.pieces.windows(2).all(|w| w[0].1 >= w[1].1));
        assert!(t.pieces.iter().all(|p| p.1 < 0.0));
    }

    #[test]
    fn errors() {
        let c = counts(&[("▁abc", 5)]);
        let small = UnigramTrainerConfig {
            vocab_size: 2,
            ..Default::default()
        };
        assert!(matches!(train(&c, &small, &mut |_| Ok(())), Err(Error::VocabSize(_))));
        let big = UnigramTrainerConfig {
            vocab_size: 1000,
            ..Default::default()
        };
        assert!(matches!(train(&c, &big, &mut |_| Ok(())), Err(Error::VocabSize(_))));
        let soft = UnigramTrainerConfig {
            vocab_size: 1000,
            hard_vocab_limit: false,
            ..Default::default()
        };
        assert!(train(&c, &soft, &mut |_| Ok(())).unwrap().pieces.len() < 1000);
    }
}

/// The steps one at a time, for the tests that hold them against the
/// pure-Python reference (`tokensmith.reference.unigram`).
pub mod steps {
    use super::*;
    use rustc_hash::{FxHashMap, FxHashSet};

    fn counts(words: &[(String, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    /// The seed pieces with their log-probability scores.
    pub fn seed_pieces(
        words: &[(String, u64)],
        coverage: f64,
        max_len: usize,
        seed_size: usize,
    ) -> Result<Vec<(String, f64)>> {
        let w = Words::new(&counts(words), coverage)?;
        let cfg = UnigramTrainerConfig {
            seed_size,
            rules: PieceRules {
                max_piece_length: max_len,
                ..PieceRules::default()
            },
            ..UnigramTrainerConfig::default()
        };
        Ok(seed(&w, &cfg))
    }

    fn model(pieces: &[(String, f64)], chars: &str) -> Model {
        let kept: FxHashSet<char> = chars.chars().collect();
        Model::new(pieces.to_vec(), &kept)
    }

    fn sorted(words: &[(String, u64)]) -> Vec<(String, u64)> {
        let mut w = words.to_vec();
        w.sort_unstable();
        w
    }

    /// Expected counts (in piece order), -log-likelihood per word, tokens.
    pub fn e_step_of(pieces: &[(String, f64)], words: &[(String, u64)], chars: &str) -> (Vec<f64>, f64, u64) {
        let m = model(pieces, chars);
        let (expected, objective, tokens) = e_step(&m, &sorted(words));
        let total: u64 = words.iter().map(|w| w.1).sum();
        (expected, -objective / total as f64, tokens)
    }

    /// One M-step over expected counts.
    pub fn m_step_of(pieces: &[(String, f64)], expected: &[f64], chars: &str) -> Vec<(String, f64)> {
        m_step(&model(pieces, chars), expected)
    }

    /// One pruning round.
    pub fn prune_of(
        pieces: &[(String, f64)],
        words: &[(String, u64)],
        chars: &str,
        target: usize,
        shrinking: f64,
    ) -> Vec<(String, f64)> {
        prune(&model(pieces, chars), &sorted(words), target, shrinking)
    }
}
