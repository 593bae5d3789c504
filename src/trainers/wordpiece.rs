//! The WordPiece trainer: merges chosen by likelihood, as the literature
//! defines WordPiece (Schuster & Nakajima 2012; Wu et al. 2016).
//!
//! Words (distinct pre-tokenized pieces) start as characters: the first as
//! itself, the others with the continuation prefix (`h ##u ##g`). Each step
//! merges the adjacent pair `(a, b)` with the highest score, computed from
//! the counts of the current segmentation of the corpus: `k` the pair's
//! count, `c_a`, `c_b` its symbols' counts and `N` the number of symbols.
//!
//! [`Score::Likelihood`] (the default) is the gain in the log-likelihood of
//! the corpus under a unigram model of its symbols when every `a b` becomes
//! one symbol, `f(x) = x ln x`:
//!
//! ```text
//! gain(a, b) = f(k) + f(c_a - k) - f(c_a) + f(c_b - k) - f(c_b) + f(N) - f(N - k)
//! ```
//!
//! (`f(c_a - 2k) - f(c_a)` once for a pair of one symbol twice). It grows
//! with `k` as well as with how much more often `a` and `b` meet than by
//! chance, so frequent words become tokens. [`Score::Ratio`] is the
//! textbook shorthand `k / (c_a * c_b)`, which ignores how often the pair
//! occurs: every pair of two symbols seen once scores 1, and rare strings are
//! merged first (kept for teaching). [`Score::Frequency`] is the pair count
//! alone, as BPE merges (and `tokenizers`' `WordPieceTrainer`, which trains
//! BPE).
//!
//! The tokenizer does not replay merges: it takes the longest token that
//! starts the rest of a word (MaxMatch). Under the likelihood score the
//! trainer therefore checks its vocabulary with MaxMatch whenever merging
//! stops: the corpus is re-segmented as the tokenizer would segment it, the
//! counts follow, and in a full vocabulary the tokens MaxMatch never emits
//! on the training words give their slots to more merges (see `learn` and
//! [`super::wordpiece_live`]). Merging by the gain alone left 5,274 of
//! 32,000 tokens dead on English and 1.1% more tokens than merging by count;
//! with the checks it takes 0.2% fewer (`docs/wordpiece_training.md`).
//!
//! The new token is `a` followed by `b` without its prefix; when two
//! different pairs spell the same token, they share its id.
//!
//! Tie-break (documented): the score is computed in `f64`; among equal
//! scores the pair with the higher count wins, then the pair with the
//! smaller (left id, right id). Results do not depend on the thread count.
//!
//! Scores change as merges change the counts. Each heap entry holds a score
//! that is at least the pair's current one, so the top entry, recomputed
//! and unchanged, is the best pair; a lower recomputed score goes back on the
//! heap. A score can only rise when the pair's count changes or a count of
//! one of its symbols falls: those pairs are pushed again (an index from
//! each token to its neighbours finds them). `N` only falls, which lowers
//! every likelihood gain.

use super::word_index::{PairIndex, Words};
use super::wordpiece_live::maxmatch_words;
use super::wordpiece_prune::prune;
use super::TrainEvent;
use crate::error::{Error, Result};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

#[derive(Clone, Debug)]
pub struct WordPieceTrainerConfig {
    /// Size of the vocabulary without the special tokens.
    pub vocab_size: usize,
    /// A pair merges only if it occurs at least this often.
    pub min_frequency: u64,
    /// Keep the most frequent characters only; words with any other character
    /// are left out (WordPiece could only encode them as the unknown token).
    pub limit_alphabet: Option<usize>,
    pub continuing_subword_prefix: String,
    /// Words longer than this (in characters) are left out: WordPiece encodes
    /// them as the unknown token.
    pub max_input_chars_per_word: usize,
    /// Report the first `trace` merges one by one.
    pub trace: usize,
    pub score: Score,
    /// Learn up to this many tokens (alphabet included, as `vocab_size`),
    /// then prune to `vocab_size` by what MaxMatch needs
    /// ([`super::wordpiece_prune`]); at most `vocab_size`: no pruning.
    /// `None`: [`auto_candidates`] under the likelihood score, else none.
    pub candidates: Option<usize>,
}

/// What a merge is chosen by (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    Likelihood,
    Ratio,
    /// The pair count alone, as BPE and `tokenizers`' `WordPieceTrainer` merge.
    Frequency,
}

/// `f(c - k) - f(c)` for `f(x) = x ln x`, written so that it keeps its
/// precision when `k` is small beside `c` (`ln_1p`).
fn drop_term(c: f64, k: f64) -> f64 {
    if k >= c {
        return -(c * c.ln());
    }
    -k * c.ln() + (c - k) * (-k / c).ln_1p()
}

impl Score {
    /// The score of a pair seen `k` times whose symbols are seen `ca` and `cb`
    /// times (`same`: the pair is one symbol twice), among `n` symbols.
    fn of(self, k: u64, ca: u64, cb: u64, same: bool, n: u64) -> f64 {
        let (k, ca, cb, n) = (k as f64, ca as f64, cb as f64, n as f64);
        match self {
            Score::Ratio => k / (ca * cb),
            Score::Frequency => k,
            Score::Likelihood => {
                let symbols = if same {
                    drop_term(ca, 2.0 * k)
                } else {
                    drop_term(ca, k) + drop_term(cb, k)
                };
                k * k.ln() + symbols - drop_term(n, k)
            }
        }
    }
}

/// A merge: (left id, right id, token id, pair count).
pub type Merge = (u32, u32, u32, u64);

pub struct TrainedWordPiece {
    /// Every token made, in id order: the alphabet, then the learned tokens,
    /// dead ones included (see `live`).
    pub tokens: Vec<String>,
    /// Whether each token is in the vocabulary (false: taken out as dead).
    pub live: Vec<bool>,
    pub alphabet_size: usize,
    /// (left id, right id, token id, pair count) per merge, in order.
    pub merges: Vec<(u32, u32, u32, u64)>,
}

impl TrainedWordPiece {
    /// The vocabulary: the live tokens, in id order.
    pub fn vocabulary(&self) -> Vec<String> {
        self.tokens
            .iter()
            .zip(&self.live)
            .filter(|&(_, &l)| l)
            .map(|(t, _)| t.clone())
            .collect()
    }
}

type Pair = (u32, u32);

/// A heap entry: higher score first, then higher count, then smaller pair.
#[derive(Clone, Copy, PartialEq)]
struct Entry {
    score: f64,
    count: u64,
    pair: Pair,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.score
            .total_cmp(&o.score)
            .then(self.count.cmp(&o.count))
            .then(Reverse(self.pair).cmp(&Reverse(o.pair)))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

struct State {
    score: Score,
    /// pairs seen fewer times never merge (`min_frequency`, at least 1)
    min_count: u64,
    /// symbols in the current segmentation of the corpus
    total: u64,
    sym_count: Vec<u64>,
    pair_counts: FxHashMap<Pair, u64>,
    /// for each token, the tokens that follow it in a pair seen at least
    /// `min_count` times, and those that precede it
    right_of: Vec<FxHashSet<u32>>,
    left_of: Vec<FxHashSet<u32>>,
    heap: BinaryHeap<Entry>,
}

impl State {
    /// The counts of the symbols and pairs of `words` (symbols below
    /// `n_tokens`), with every pair on the heap.
    fn new(cfg: &WordPieceTrainerConfig, words: &Words, n_tokens: usize) -> Self {
        let mut st = State {
            score: cfg.score,
            min_count: cfg.min_frequency.max(1),
            total: 0,
            sym_count: Vec::new(),
            pair_counts: FxHashMap::default(),
            right_of: Vec::new(),
            left_of: Vec::new(),
            heap: BinaryHeap::new(),
        };
        st.grow(n_tokens);
        for (_, w, c) in words.iter() {
            for &s in w {
                st.sym_count[s as usize] += c;
            }
            st.total += c * w.len() as u64;
            for p in w.windows(2) {
                st.add_pair((p[0], p[1]), c as i64);
            }
        }
        let all: Vec<Pair> = st.pair_counts.keys().copied().collect();
        for p in all {
            st.push(p);
        }
        st
    }

    fn entry(&self, pair: Pair) -> Option<Entry> {
        self.entry_of(pair, *self.pair_counts.get(&pair)?)
    }

    /// The entry of `pair` seen `count` times.
    fn entry_of(&self, pair: Pair, count: u64) -> Option<Entry> {
        let (ca, cb) = (self.sym_count[pair.0 as usize], self.sym_count[pair.1 as usize]);
        if count == 0 || ca == 0 || cb == 0 {
            return None;
        }
        Some(Entry {
            score: self.score.of(count, ca, cb, pair.0 == pair.1, self.total),
            count,
            pair,
        })
    }

    /// Put the pair's current entry on the heap, unless it is seen fewer
    /// than `min_count` times: it cannot merge, and it is pushed again when
    /// its count rises (every rise is). Most neighbours pushed after a
    /// merge are such pairs.
    fn push(&mut self, pair: Pair) {
        let Some(&count) = self.pair_counts.get(&pair) else {
            return;
        };
        if count < self.min_count {
            return;
        }
        if let Some(e) = self.entry_of(pair, count) {
            self.heap.push(e);
        }
    }

    /// The best pair seen at least `min_count` times, off the heap; None
    /// when no pair is left.
    ///
    /// A popped entry whose score is no longer current goes back with the
    /// current one when that is lower (it may still be the best later), and
    /// is dropped when the pair is gone; a pair seen too rarely is dropped
    /// too (pushed again if its count ever grows).
    fn pop_best(&mut self) -> Option<Entry> {
        while let Some(top) = self.heap.pop() {
            match self.entry(top.pair) {
                None => continue,
                Some(now) if now != top => {
                    if now < top {
                        self.heap.push(now);
                    }
                    continue;
                }
                Some(_) => {}
            }
            if top.count >= self.min_count {
                return Some(top);
            }
        }
        None
    }

    fn add_pair(&mut self, pair: Pair, delta: i64) {
        let c = self.pair_counts.entry(pair).or_insert(0);
        let was = *c;
        let now = (was as i64 + delta).max(0) as u64;
        *c = now;
        if now == 0 {
            self.pair_counts.remove(&pair);
        }
        // (the neighbour index holds the pairs that can merge: see `push`)
        let (could, can) = (was >= self.min_count, now >= self.min_count);
        if could && !can {
            self.right_of[pair.0 as usize].remove(&pair.1);
            self.left_of[pair.1 as usize].remove(&pair.0);
        } else if can && !could {
            self.right_of[pair.0 as usize].insert(pair.1);
            self.left_of[pair.1 as usize].insert(pair.0);
        }
    }

    /// Push again the pairs whose score may have risen after a merge that
    /// changed the pair counts by `touched` and the symbol counts by
    /// `changed_syms`: pairs whose count rose, every pair whose count
    /// changed under the likelihood gain (it can rise as a count falls),
    /// and every pair holding a symbol whose count fell.
    fn push_risen(&mut self, touched: &[(Pair, i64)], changed_syms: &[(u32, i64)]) {
        for &(p, d) in touched {
            if d > 0 || self.score == Score::Likelihood {
                self.push(p);
            }
        }
        let mut rising: Vec<Pair> = Vec::new();
        for &(s, d) in changed_syms {
            if d < 0 {
                rising.extend(self.right_of[s as usize].iter().map(|&r| (s, r)));
                rising.extend(self.left_of[s as usize].iter().map(|&l| (l, s)));
            }
        }
        rising.sort_unstable();
        rising.dedup();
        for p in rising {
            self.push(p);
        }
    }

    fn grow(&mut self, n: usize) {
        while self.sym_count.len() < n {
            self.sym_count.push(0);
            self.right_of.push(FxHashSet::default());
            self.left_of.push(FxHashSet::default());
        }
    }

    /// Drop stale entries when the heap grows far beyond the live pairs
    /// (the slack grows with them: a fixed large one is most of the memory
    /// of a small corpus, a small one rebuilds a large heap too often).
    fn compact(&mut self) {
        let live = self.pair_counts.len();
        if self.heap.len() > 2 * live + (live / 2).clamp(1 << 12, 1 << 16) {
            let pairs: Vec<Pair> = self.pair_counts.keys().copied().collect();
            self.heap.clear();
            for p in pairs {
                self.push(p);
            }
        }
    }
}

/// The tokens learned so far, in id order, and the id of each.
struct Vocab {
    tokens: Vec<String>,
    ids: FxHashMap<String, u32>,
    /// false for a token taken out as dead (see `learn`): it keeps its id
    /// (words still hold it as a symbol) but is not in the vocabulary
    live: Vec<bool>,
}

impl Vocab {
    fn new(tokens: Vec<String>) -> Self {
        let ids = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let live = vec![true; tokens.len()];
        Vocab { tokens, ids, live }
    }

    /// The id of the token that merging `a` and `b` makes (`a` followed by
    /// `b` without its continuation `prefix`), and whether it is new: then
    /// it takes the next id. Two pairs that spell the same token share it.
    fn join(&mut self, (a, b): Pair, prefix: &str) -> (u32, bool) {
        let right = &self.tokens[b as usize];
        let merged = format!(
            "{}{}",
            self.tokens[a as usize],
            right.strip_prefix(prefix).unwrap_or(right)
        );
        if let Some(&t) = self.ids.get(&merged) {
            return (t, false);
        }
        let t = self.tokens.len() as u32;
        self.ids.insert(merged.clone(), t);
        self.tokens.push(merged);
        self.live.push(true);
        (t, true)
    }
}

/// Maps of the merge loop, cleared at each merge (kept for their memory).
#[derive(Default)]
struct Scratch {
    /// change of each pair's count
    deltas: FxHashMap<Pair, i64>,
    /// change of each symbol's count
    sym_deltas: FxHashMap<u32, i64>,
    /// the words in which each pair appeared
    new_pairs: FxHashMap<Pair, Vec<u32>>,
}

/// Learn a WordPiece vocabulary from word counts (see the module
/// documentation): the alphabet, then the tokens that merges make, until
/// there are `cfg.vocab_size` tokens or no pair is left to merge.
pub fn train(
    counts: &FxHashMap<Vec<u8>, u64>,
    cfg: &WordPieceTrainerConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<TrainedWordPiece> {
    if counts.is_empty() {
        return Err(Error::Corpus("the corpus is empty: no text to learn from".into()));
    }
    let prefix = cfg.continuing_subword_prefix.as_str();
    let mut entries = corpus_words(counts, cfg.max_input_chars_per_word);
    limit_alphabet(&mut entries, cfg.limit_alphabet);
    let mut vocab = Vocab::new(alphabet(&entries, prefix));
    let alphabet_size = vocab.tokens.len();
    if cfg.vocab_size < alphabet_size {
        return Err(Error::VocabSize(format!(
            "vocab_size {} is smaller than the alphabet ({} symbols: characters that start a word, and \
             characters that continue one) plus the special tokens; raise vocab_size or set limit_alphabet",
            cfg.vocab_size, alphabet_size
        )));
    }
    let words = segment(&entries, prefix, &vocab.ids)?;
    let n_words = entries.len();
    drop(entries);
    let candidates = match (cfg.candidates, cfg.score) {
        (Some(c), _) => c,
        (None, Score::Likelihood) => auto_candidates(cfg.vocab_size, n_words),
        (None, _) => cfg.vocab_size,
    };
    let grow_to = candidates.max(cfg.vocab_size) - alphabet_size;
    let (merges, words) = learn(words, &mut vocab, cfg, grow_to, on_event)?;
    if grow_to > cfg.vocab_size - alphabet_size {
        let prefix = cfg.continuing_subword_prefix.as_str();
        let target = cfg.vocab_size - alphabet_size;
        prune(&words, &vocab.tokens, &mut vocab.live, prefix, alphabet_size, target);
    }
    Ok(TrainedWordPiece {
        tokens: vocab.tokens,
        live: vocab.live,
        alphabet_size,
        merges,
    })
}

/// Vocabularies at most this fraction of the distinct words are learned
/// twice as large and pruned (see [`auto_candidates`]).
const PRUNE_BELOW: f64 = 0.15;

/// The candidates the likelihood score learns by default: twice
/// `vocab_size` when the vocabulary is small beside the `words` it must
/// cover, where the gain's chains of rare strings take slots that frequent
/// pieces need (pruning them lifted held-out compression 2% on English at
/// 8,000 tokens); else `vocab_size`, since pruning a large vocabulary keeps
/// whole training words over the pieces that generalise (held-out
/// compression fell 0.3% on English and code at 32,000).
pub fn auto_candidates(vocab_size: usize, words: usize) -> usize {
    if (vocab_size as f64) <= PRUNE_BELOW * words as f64 {
        2 * vocab_size
    } else {
        vocab_size
    }
}

/// The words of the corpus as strings with their counts, those longer than
/// `max_chars` characters left out, sorted (so that ids and ties do not
/// depend on the hash map's order).
fn corpus_words(counts: &FxHashMap<Vec<u8>, u64>, max_chars: usize) -> Vec<(String, u64)> {
    let mut entries: Vec<(String, u64)> = counts
        .iter()
        .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), *v))
        .filter(|(w, _)| w.chars().count() <= max_chars)
        .collect();
    entries.sort_unstable();
    entries
}

/// With a `limit`, keep the words made only of the `limit` most frequent
/// characters (ties: the smaller character); the order is kept.
fn limit_alphabet(entries: &mut Vec<(String, u64)>, limit: Option<usize>) {
    let Some(limit) = limit else { return };
    let mut freq: FxHashMap<char, u64> = FxHashMap::default();
    for (w, c) in entries.iter() {
        for ch in w.chars() {
            *freq.entry(ch).or_insert(0) += c;
        }
    }
    let mut chars: Vec<(char, u64)> = freq.into_iter().collect();
    chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    chars.truncate(limit);
    let keep: FxHashSet<char> = chars.iter().map(|c| c.0).collect();
    entries.retain(|(w, _)| w.chars().all(|c| keep.contains(&c)));
}

/// The alphabet of `entries` in id order: the characters that start a word,
/// then those that continue one with the continuation `prefix`, each sorted
/// by character.
fn alphabet(entries: &[(String, u64)], prefix: &str) -> Vec<String> {
    let (mut ini, mut cont) = (FxHashSet::default(), FxHashSet::default());
    for (w, _) in entries {
        for (i, ch) in w.chars().enumerate() {
            if i == 0 {
                ini.insert(ch);
            } else {
                cont.insert(ch);
            }
        }
    }
    let mut initial: Vec<char> = ini.into_iter().collect();
    let mut continuation: Vec<char> = cont.into_iter().collect();
    initial.sort_unstable();
    continuation.sort_unstable();
    let mut tokens: Vec<String> = initial.iter().map(|c| c.to_string()).collect();
    tokens.extend(continuation.iter().map(|c| format!("{prefix}{c}")));
    tokens
}

/// Every word as alphabet symbols (`ids`): its first character as itself,
/// the others with the continuation `prefix`.
fn segment(entries: &[(String, u64)], prefix: &str, ids: &FxHashMap<String, u32>) -> Result<Words> {
    let mut words = Words::with_capacity(entries.len(), entries.iter().map(|e| e.0.chars().count()).sum());
    let mut key = String::new();
    let mut syms = Vec::new();
    for (w, count) in entries {
        syms.clear();
        for (i, ch) in w.chars().enumerate() {
            key.clear();
            if i > 0 {
                key.push_str(prefix);
            }
            key.push(ch);
            syms.push(
                ids.get(key.as_str())
                    .copied()
                    .ok_or_else(|| Error::Config(format!("internal: symbol {key:?} missing from the alphabet")))?,
            );
        }
        words.push(syms.iter().copied(), *count);
    }
    Ok(words)
}

/// The merge loop: merge the best pair of `words` until `target` new tokens
/// are in `vocab` or no pair is left. Returns (left id, right id, token id,
/// pair count) per merge, in order. Reports the first `cfg.trace` merges,
/// progress whenever the new tokens reach a new multiple of `target / 200`,
/// and progress at the end.
///
/// Under the likelihood score, whenever merging stops (`target` reached or
/// no pair left) comes a check with MaxMatch (see
/// [`super::wordpiece_live`]): the words become their segmentation by the
/// tokenizer's greedy longest match with the vocabulary so far, and the
/// counts theirs; with `target` tokens learned, the dead tokens (emitted on
/// no training word) leave the vocabulary for good (a pair that would make
/// one again is not merged). Merging then goes on from that segmentation.
/// Training ends when a check takes nothing out and no merge follows it;
/// if no pair was left to fill the vocabulary then, dead tokens come back,
/// the earliest made first, to fill it up to `target` (see `Run::restore`).
///
/// The checks end: right after a check, no adjacent pair `(x, y)` spells a
/// live token (MaxMatch would have taken it over `x`), so every merge that
/// follows makes a new token; a check either takes a token out for good,
/// or is followed by a new token below `target`, or is the last.
fn learn(
    words: Words,
    vocab: &mut Vocab,
    cfg: &WordPieceTrainerConfig,
    target: usize,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<(Vec<Merge>, Words)> {
    let first_learned = vocab.tokens.len();
    let mut run = Run::new(words, cfg, vocab.tokens.len());
    run.merge_to(vocab, cfg, target, on_event)?;
    if cfg.score == Score::Likelihood {
        loop {
            let dropped = run.check(vocab, cfg, first_learned, target);
            let before = run.merges.len();
            run.merge_to(vocab, cfg, target, on_event)?;
            if dropped == 0 && run.merges.len() == before {
                break;
            }
        }
        run.restore(vocab, first_learned, target);
    }
    on_event(TrainEvent::Progress {
        done: run.learned,
        total: target,
    })?;
    Ok((run.merges, run.words))
}

/// The merge loop's state: the corpus as symbols, its counts and indexes,
/// and what was learned so far.
struct Run {
    words: Words,
    st: State,
    where_: PairIndex,
    scratch: Scratch,
    /// per merge, in order
    merges: Vec<Merge>,
    /// live learned tokens
    learned: usize,
    /// the largest `learned` reported as progress
    reported: usize,
}

impl Run {
    fn new(words: Words, cfg: &WordPieceTrainerConfig, n_tokens: usize) -> Self {
        Run {
            st: State::new(cfg, &words, n_tokens),
            where_: PairIndex::build(&words, |_| true),
            words,
            scratch: Scratch::default(),
            merges: Vec::new(),
            learned: 0,
            reported: 0,
        }
    }

    /// Merge the best pair until `target` tokens are learned or no pair is
    /// left; a pair whose token was taken out as dead is dropped unmerged.
    fn merge_to(
        &mut self,
        vocab: &mut Vocab,
        cfg: &WordPieceTrainerConfig,
        target: usize,
        on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
    ) -> Result<()> {
        let prefix = cfg.continuing_subword_prefix.as_str();
        let report_every = (target / 200).max(1);
        while self.learned < target {
            let Some(top) = self.st.pop_best() else {
                break;
            };
            let (a, b) = top.pair;
            let (t, new) = vocab.join(top.pair, prefix);
            if !vocab.live[t as usize] {
                continue;
            }
            if new {
                self.st.grow(vocab.tokens.len());
                self.learned += 1;
            }
            self.merges.push((a, b, t, top.count));
            let index = self.merges.len() - 1;
            if index < cfg.trace {
                on_event(TrainEvent::Merge {
                    index,
                    left: vocab.tokens[a as usize].as_bytes(),
                    right: vocab.tokens[b as usize].as_bytes(),
                    new_id: t,
                    count: top.count,
                })?;
            }
            if self.learned > self.reported && self.learned.is_multiple_of(report_every) {
                self.reported = self.learned;
                on_event(TrainEvent::Progress {
                    done: self.learned,
                    total: target,
                })?;
            }
            let w = &mut self.words;
            apply_merge(&mut self.st, w, &mut self.where_, &mut self.scratch, top.pair, t);
        }
        Ok(())
    }

    /// Give slots that no merge could fill back to dead tokens, the
    /// earliest made first: they were taken out only to make room, and a
    /// slot left empty encodes nothing at all.
    fn restore(&mut self, vocab: &mut Vocab, first_learned: usize, target: usize) {
        for i in first_learned..vocab.tokens.len() {
            if self.learned >= target {
                break;
            }
            if !vocab.live[i] {
                vocab.live[i] = true;
                self.learned += 1;
            }
        }
    }

    /// The check with MaxMatch (see `learn`): the words become their
    /// MaxMatch segmentation with the live tokens, the counts theirs; with
    /// `target` tokens learned, the dead ones are taken out. Returns how many.
    fn check(&mut self, vocab: &mut Vocab, cfg: &WordPieceTrainerConfig, first_learned: usize, target: usize) -> usize {
        let prefix = cfg.continuing_subword_prefix.as_str();
        let (words, emitted) = maxmatch_words(&self.words, &vocab.tokens, prefix, |i| vocab.live[i as usize]);
        let mut dropped = 0;
        if self.learned >= target {
            // (a dead token was never the match: the segmentation is the
            // same without it)
            for (live, &used) in vocab.live.iter_mut().zip(&emitted).skip(first_learned) {
                if *live && !used {
                    *live = false;
                    dropped += 1;
                }
            }
            self.learned -= dropped;
        }
        // (the old counts and index go before the new ones are built: the
        // peak holds one set)
        self.words = words;
        self.where_ = PairIndex::default();
        self.st = State::new(cfg, &Words::default(), 0);
        self.st = State::new(cfg, &self.words, vocab.tokens.len());
        self.where_ = PairIndex::build(&self.words, |_| true);
        dropped
    }
}

/// Merge `pair` into `t` in every word that holds it, and bring the counts,
/// the pair index and the heap up to date. Every occurrence is merged, so
/// the pair leaves the counts and the index.
fn apply_merge(st: &mut State, words: &mut Words, where_: &mut PairIndex, scratch: &mut Scratch, pair: Pair, t: u32) {
    let (a, b) = pair;
    let list = where_.take(pair);
    scratch.deltas.clear();
    scratch.sym_deltas.clear();
    scratch.new_pairs.clear();
    let mut merged_count = 0i64;
    let sym_deltas = &mut scratch.sym_deltas;
    words.apply_merge(&list, pair, t, &mut scratch.deltas, &mut scratch.new_pairs, |c| {
        merged_count += c;
        *sym_deltas.entry(a).or_insert(0) -= c;
        *sym_deltas.entry(b).or_insert(0) -= c;
        *sym_deltas.entry(t).or_insert(0) += c;
    });
    *scratch.deltas.entry(pair).or_insert(0) -= merged_count;
    st.total = st.total.saturating_sub(merged_count as u64);
    let mut changed_syms: Vec<(u32, i64)> = scratch.sym_deltas.drain().filter(|(_, d)| *d != 0).collect();
    changed_syms.sort_unstable();
    for &(s, d) in &changed_syms {
        let c = &mut st.sym_count[s as usize];
        *c = (*c as i64 + d).max(0) as u64;
    }
    let mut touched: Vec<(Pair, i64)> = scratch.deltas.drain().filter(|(_, d)| *d != 0).collect();
    touched.sort_unstable();
    for &(p, d) in &touched {
        st.add_pair(p, d);
    }
    if let Some(&left) = st.pair_counts.get(&pair) {
        st.add_pair(pair, -(left as i64)); // every occurrence was merged
    }
    for (p, ws) in scratch.new_pairs.drain() {
        if st.pair_counts.contains_key(&p) {
            where_.add(p, ws);
        }
    }
    if where_.stale() {
        where_.rebuild(words, |p| st.pair_counts.contains_key(&p));
    }
    st.push_risen(&touched, &changed_syms);
    st.compact();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(words: &[(&str, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    fn cfg(vocab_size: usize) -> WordPieceTrainerConfig {
        WordPieceTrainerConfig {
            vocab_size,
            min_frequency: 0,
            limit_alphabet: None,
            continuing_subword_prefix: "##".into(),
            max_input_chars_per_word: 100,
            trace: 0,
            score: Score::Ratio,
            candidates: None,
        }
    }

    /// Greedy longest-match-first over `live` tokens (the whole word as
    /// one symbol when some position has none).
    fn naive_maxmatch(word: &str, live: &FxHashSet<String>) -> Vec<String> {
        let chars: Vec<char> = word.chars().collect();
        let (mut out, mut i) = (Vec::new(), 0);
        while i < chars.len() {
            let lead = if i == 0 { "" } else { "##" };
            let Some(j) = (i + 1..=chars.len())
                .rev()
                .find(|&j| live.contains(&format!("{lead}{}", chars[i..j].iter().collect::<String>())))
            else {
                return vec![word.to_string()];
            };
            out.push(format!("{lead}{}", chars[i..j].iter().collect::<String>()));
            i = j;
        }
        out
    }

    /// Recompute every score from scratch: the slow oracle (same ids, same
    /// ties, the same checks with MaxMatch under the likelihood score). The
    /// token of each merge, until `target` tokens are learned.
    fn naive(words: &[(&str, u64)], target: usize, score: Score) -> Vec<String> {
        let mut segs: Vec<(Vec<String>, u64)> = words
            .iter()
            .map(|(w, c)| {
                let syms = w
                    .chars()
                    .enumerate()
                    .map(|(i, ch)| if i == 0 { ch.to_string() } else { format!("##{ch}") })
                    .collect();
                (syms, *c)
            })
            .collect();
        let mut alphabet: Vec<String> = segs.iter().flat_map(|s| s.0.clone()).collect();
        alphabet.sort_by_key(|t| (t.starts_with("##"), t.clone()));
        alphabet.dedup();
        let mut ids: FxHashMap<String, usize> = alphabet.iter().enumerate().map(|(i, t)| (t.clone(), i)).collect();
        let mut live: FxHashSet<String> = alphabet.iter().cloned().collect();
        let mut dead: FxHashSet<String> = FxHashSet::default();
        let mut learned = 0;
        let mut out = Vec::new();
        // (a check done; the merges before it; whether it took tokens out)
        let (mut checked, mut merged, mut dropped) = (false, 0, false);
        loop {
            while learned < target {
                let mut sym: FxHashMap<String, u64> = FxHashMap::default();
                let mut pair: FxHashMap<(String, String), u64> = FxHashMap::default();
                for (s, c) in &segs {
                    for x in s {
                        *sym.entry(x.clone()).or_insert(0) += c;
                    }
                    for p in s.windows(2) {
                        *pair.entry((p[0].clone(), p[1].clone())).or_insert(0) += c;
                    }
                }
                let n: u64 = sym.values().sum();
                let best = pair
                    .iter()
                    .filter(|(p, _)| !dead.contains(&format!("{}{}", p.0, p.1.strip_prefix("##").unwrap_or(&p.1))))
                    .map(|(p, &c)| {
                        let score = score.of(c, sym[&p.0], sym[&p.1], p.0 == p.1, n);
                        (score, c, Reverse((ids[&p.0], ids[&p.1])), p.clone())
                    })
                    .max_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
                let Some((_, _, _, (a, b))) = best else { break };
                let m = format!("{a}{}", b.strip_prefix("##").unwrap_or(&b));
                let n = ids.len();
                if !ids.contains_key(&m) {
                    ids.insert(m.clone(), n);
                    live.insert(m.clone());
                    learned += 1;
                }
                for (s, _) in segs.iter_mut() {
                    let mut i = 0;
                    while i + 1 < s.len() {
                        if s[i] == a && s[i + 1] == b {
                            s[i] = m.clone();
                            s.remove(i + 1);
                        }
                        i += 1;
                    }
                }
                out.push(m);
            }
            if score != Score::Likelihood || (checked && merged == out.len() && !dropped) {
                return out;
            }
            checked = true;
            merged = out.len();
            let spelled: Vec<String> = segs
                .iter()
                .map(|(s, _)| {
                    s.iter()
                        .enumerate()
                        .map(|(i, t)| if i == 0 { t.as_str() } else { &t[2..] })
                        .collect()
                })
                .collect();
            let again: Vec<Vec<String>> = spelled.iter().map(|w| naive_maxmatch(w, &live)).collect();
            let emitted: FxHashSet<&String> = again.iter().flatten().collect();
            let gone: Vec<String> = live
                .iter()
                .filter(|t| learned >= target && ids[*t] >= alphabet.len() && !emitted.contains(t))
                .cloned()
                .collect();
            dropped = !gone.is_empty();
            for t in gone {
                live.remove(&t);
                dead.insert(t);
                learned -= 1;
            }
            for ((s, _), a) in segs.iter_mut().zip(again) {
                *s = a;
            }
        }
    }

    #[test]
    fn ratio_merges_rare_pairs_first() {
        // "##u ##g" is frequent, but "##g" and "##u" are everywhere; the rare
        // pair of rare symbols wins
        let words = [("hug", 10), ("pug", 5), ("pun", 12), ("bun", 4), ("hugs", 5)];
        let t = train(&counts(&words), &cfg(100), &mut |_| Ok(())).unwrap();
        let learned: Vec<&str> = t.tokens[t.alphabet_size..].iter().map(|s| s.as_str()).collect();
        assert_eq!(learned[0], "##gs");
        // the same merges as recomputing every score from scratch
        let ours: Vec<String> = t.merges.iter().map(|m| t.tokens[m.2 as usize].clone()).collect();
        assert_eq!(ours, naive(&words, 100 - t.alphabet_size, Score::Ratio));
    }

    #[test]
    fn limits_and_errors() {
        let words = counts(&[("ab", 3), ("ac", 1), ("xyz", 1)]);
        let mut c = cfg(100);
        c.limit_alphabet = Some(3);
        let t = train(&words, &c, &mut |_| Ok(())).unwrap();
        // "xyz" holds characters outside the alphabet: left out
        assert!(!t.tokens.iter().any(|s| s.contains('x')));
        assert_eq!(t.tokens[..3], ["a", "##b", "##c"]);
        c.min_frequency = 2;
        let t = train(&words, &c, &mut |_| Ok(())).unwrap();
        assert_eq!(t.tokens[3..], ["ab"]);
        assert!(matches!(
            train(&words, &cfg(2), &mut |_| Ok(())),
            Err(Error::VocabSize(_))
        ));
        assert!(matches!(
            train(&FxHashMap::default(), &cfg(10), &mut |_| Ok(())),
            Err(Error::Corpus(_))
        ));
    }

    #[test]
    fn shared_spellings_share_an_id() {
        // "a ##b ##c": (a, ##b) -> "ab" and later (ab, ##c) or (a, ##bc) -> "abc" once
        let words = [("abc", 4), ("bc", 1), ("ab", 1)];
        let t = train(&counts(&words), &cfg(100), &mut |_| Ok(())).unwrap();
        let mut seen = FxHashSet::default();
        assert!(t.tokens.iter().all(|s| seen.insert(s.clone())));
        assert!(t.tokens.contains(&"abc".to_string()));
    }

    #[test]
    fn matches_the_oracle_on_random_words() {
        let mut seed = 7u64;
        let mut rand = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let letters = ['a', 'b', 'c', 'd', 'e'];
        let owned: Vec<(String, u64)> = (0..40)
            .map(|_| {
                let n = 1 + rand() % 6;
                let w: String = (0..n).map(|_| letters[rand() % letters.len()]).collect();
                (w, 1 + (rand() % 50) as u64)
            })
            .collect();
        let mut merged: FxHashMap<String, u64> = FxHashMap::default();
        for (w, c) in owned {
            *merged.entry(w).or_insert(0) += c;
        }
        let words: Vec<(&str, u64)> = merged.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        // 40: the vocabulary fills (then dead tokens go); 200: pairs run out first
        for (size, score) in [40, 200]
            .into_iter()
            .flat_map(|n| [Score::Ratio, Score::Likelihood, Score::Frequency].map(|s| (n, s)))
        {
            let mut c = cfg(size);
            c.score = score;
            // (the oracle replays merges: no pruning)
            c.candidates = Some(size);
            let t = train(&counts(&words), &c, &mut |_| Ok(())).unwrap();
            let ours: Vec<String> = t.merges.iter().map(|m| t.tokens[m.2 as usize].clone()).collect();
            assert!(ours.len() > 20);
            assert_eq!(ours, naive(&words, size - t.alphabet_size, score), "{score:?} {size}");
            let full = t.vocabulary().len() == size;
            assert_eq!(full, size == 40, "{score:?} {size}");
            // (the likelihood score takes dead tokens out of a full vocabulary
            // only; the others keep all)
            assert_eq!(
                t.live.iter().any(|l| !l),
                full && score == Score::Likelihood,
                "{score:?} {size}"
            );
        }
    }

    #[test]
    fn likelihood_prefers_frequent_pairs() {
        // the ratio takes the pair of rare symbols first; the likelihood gain
        // takes the pair that makes the frequent word
        let words = [("the", 1000), ("thy", 20), ("xq", 1)];
        let mut c = cfg(100);
        let first = |c: &WordPieceTrainerConfig| {
            let t = train(&counts(&words), c, &mut |_| Ok(())).unwrap();
            t.tokens[t.merges[0].2 as usize].clone()
        };
        assert_eq!(first(&c), "xq");
        c.score = Score::Likelihood;
        assert_eq!(first(&c), "th");
        // the gain is the log-likelihood difference, computed the long way
        let f = |x: f64| if x > 0.0 { x * x.ln() } else { 0.0 };
        let (k, ca, cb, n) = (1000.0, 1020.0, 1000.0, 3062.0);
        let long = f(k) + f(ca - k) - f(ca) + f(cb - k) - f(cb) + f(n) - f(n - k);
        let ours = Score::Likelihood.of(1000, 1020, 1000, false, 3062);
        assert!((ours - long).abs() < 1e-6 * long.abs(), "{ours} vs {long}");
    }

    #[test]
    fn candidates_are_learned_then_pruned_to_the_vocabulary() {
        let mut seed = 7u64;
        let mut rand = move |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let words: Vec<(String, u64)> = (0..400)
            .map(|_| {
                let w: String = (0..3 + rand(6)).map(|_| (b'a' + rand(8) as u8) as char).collect();
                (w, 1 + rand(20))
            })
            .collect();
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let mut c = cfg(60);
        c.score = Score::Likelihood;
        c.candidates = Some(60);
        let plain = train(&counts(&words), &c, &mut |_| Ok(())).unwrap();
        c.candidates = Some(120);
        let pruned = train(&counts(&words), &c, &mut |_| Ok(())).unwrap();
        let vocab = pruned.vocabulary();
        assert_eq!(vocab.len(), 60);
        assert_eq!(plain.vocabulary().len(), 60);
        assert!(pruned.tokens.len() > 100, "learned the candidates first");
        assert_eq!(vocab[..pruned.alphabet_size], pruned.tokens[..pruned.alphabet_size]);
        // on its own training words the pruned vocabulary takes no more tokens
        let tokens_on = |v: &[String]| -> u64 {
            let live: FxHashSet<String> = v.iter().cloned().collect();
            words
                .iter()
                .map(|&(w, n)| n * naive_maxmatch(w, &live).len() as u64)
                .sum()
        };
        assert!(tokens_on(&vocab) <= tokens_on(&plain.vocabulary()));
        // the default prunes only a vocabulary small beside the words
        assert_eq!(auto_candidates(100, 1000), 200);
        assert_eq!(auto_candidates(200, 1000), 200);
    }
}
