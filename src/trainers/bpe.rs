//! The BPE merge loop.
//!
//! Words (distinct pre-tokenized pieces) are sequences of symbol ids with a
//! count (`word_index::Words`); the pairs, their counts and the words that
//! hold them are `pair_queue::PairQueue`'s.
//!
//! Tie-break (documented, and followed by the Python reference): the pair
//! with the highest count merges first; among equal counts, the pair with the
//! smallest (left id, right id). Results do not depend on the thread count.

use super::pair_queue::PairQueue;
use super::word_index::Words;
use super::TrainEvent;
use crate::error::{Error, Result};
use crate::models::bpe::{Bpe, BpeOptions};
use rustc_hash::FxHashMap;

#[derive(Clone, Debug)]
pub struct BpeTrainerConfig {
    /// Size of the vocabulary without the special tokens.
    pub vocab_size: usize,
    pub min_frequency: u64,
    /// In bytes (byte-level) or characters (character-level).
    pub max_token_length: Option<usize>,
    pub byte_level: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub limit_alphabet: Option<usize>,
    /// Report the first `trace` merges one by one.
    pub trace: usize,
    /// Character-level only: keep the most frequent characters that cover
    /// this share of the text (instead of `limit_alphabet`).
    pub character_coverage: Option<f64>,
    /// Character-level only, SentencePiece style: a merge happens only when
    /// the merged string may be a piece, and words are cut at characters
    /// outside the alphabet instead of closing up around them.
    pub sp_rules: Option<super::sp_common::PieceRules>,
}

pub struct TrainedBpe {
    pub model: Bpe,
    /// (left, right, new id, count) in merge order.
    pub merges: Vec<(u32, u32, u32, u64)>,
    pub alphabet_size: usize,
    /// id -> token bytes, the alphabet then one per merge.
    pub tokens: Vec<Vec<u8>>,
}

pub fn train(
    counts: &FxHashMap<Vec<u8>, u64>,
    cfg: &BpeTrainerConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<TrainedBpe> {
    if counts.is_empty() {
        return Err(Error::Corpus("the corpus is empty: no text to learn from".into()));
    }
    let (words, tokens, unit_len) = if cfg.byte_level {
        byte_words(counts)
    } else {
        char_words(counts, cfg)?
    };
    let alphabet_size = tokens.len();
    if cfg.vocab_size < alphabet_size {
        if let Some(cov) = cfg.character_coverage {
            return Err(Error::VocabSize(format!(
                "the {alphabet_size} characters that cover {:.2}% of the text need a piece each, more \
                 than vocab_size leaves room for; raise vocab_size or lower character_coverage",
                cov * 100.0
            )));
        }
        return Err(Error::VocabSize(format!(
            "vocab_size {} is smaller than the base alphabet ({} symbols) plus the special tokens; \
             raise vocab_size or set limit_alphabet",
            cfg.vocab_size, alphabet_size
        )));
    }
    let target = cfg.vocab_size - alphabet_size;
    let limits = Limits {
        target,
        min_frequency: cfg.min_frequency,
        max_token_length: cfg.max_token_length,
        sp_rules: cfg.sp_rules.as_ref(),
        prefix_len: if cfg.byte_level {
            0
        } else {
            cfg.continuing_subword_prefix.as_ref().map_or(0, |p| p.len())
        },
        trace: cfg.trace,
        forbidden: None,
    };
    let mut state = Symbols {
        words,
        tokens,
        unit_len,
    };
    let merges = merge_loop(&mut state, &limits, on_event)?;
    let opts = BpeOptions {
        byte_level: cfg.byte_level,
        continuing_subword_prefix: if cfg.byte_level {
            None
        } else {
            cfg.continuing_subword_prefix.clone()
        },
        end_of_word_suffix: if cfg.byte_level {
            None
        } else {
            cfg.end_of_word_suffix.clone()
        },
        ..BpeOptions::default()
    };
    Ok(trained(state.tokens, merges, alphabet_size, opts))
}

/// The model of a finished merge loop: every token by id, and the merges
/// ranked in the order they were learned.
pub(crate) fn trained(
    tokens: Vec<Vec<u8>>,
    merges: Vec<(u32, u32, u32, u64)>,
    alphabet_size: usize,
    opts: BpeOptions,
) -> TrainedBpe {
    let mut vocab = FxHashMap::default();
    let mut vocab_r = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        vocab.insert(t.clone(), i as u32);
        vocab_r.push(Some(t.clone().into_boxed_slice()));
    }
    let merge_map = merges
        .iter()
        .enumerate()
        .map(|(rank, &(a, b, n, _))| ((a, b), (rank as u32, n)))
        .collect();
    TrainedBpe {
        model: Bpe::from_parts(vocab, vocab_r, merge_map, opts),
        merges,
        alphabet_size,
        tokens,
    }
}

/// (&word, count) of every counted word, in byte order (the order the
/// words take in the arena, so that training is deterministic).
pub(crate) fn sorted_entries(counts: &FxHashMap<Vec<u8>, u64>) -> Vec<(&[u8], u64)> {
    let mut entries: Vec<(&[u8], u64)> = counts.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Byte-level symbols: the 256 bytes are the alphabet, ids 0-255.
fn byte_words(counts: &FxHashMap<Vec<u8>, u64>) -> (Words, Vec<Vec<u8>>, Vec<usize>) {
    let entries = sorted_entries(counts);
    let total = entries.iter().map(|e| e.0.len()).sum();
    let mut words = Words::with_capacity(entries.len(), total);
    for (w, c) in entries {
        words.push(w.iter().map(|&b| b as u32), c);
    }
    (words, (0..=255u8).map(|b| vec![b]).collect(), vec![1; 256])
}

/// The characters that make the alphabet: those that cover
/// `character_coverage` of the text, or the `limit_alphabet` most frequent
/// (all of them without a limit).
fn kept_chars(counts: &FxHashMap<Vec<u8>, u64>, cfg: &BpeTrainerConfig) -> Result<rustc_hash::FxHashSet<char>> {
    if let Some(cov) = cfg.character_coverage {
        return Ok(super::sp_common::Words::new(counts, cov)?.kept);
    }
    let mut freq: FxHashMap<char, u64> = FxHashMap::default();
    for (w, c) in counts {
        for ch in String::from_utf8_lossy(w).chars() {
            *freq.entry(ch).or_insert(0) += c;
        }
    }
    let mut chars: Vec<(char, u64)> = freq.into_iter().collect();
    chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if let Some(limit) = cfg.limit_alphabet {
        chars.truncate(limit);
    }
    Ok(chars.iter().map(|c| c.0).collect())
}

/// Character-level symbols: each kept character, with the continuing-subword
/// prefix after the first and the end-of-word suffix on the last; the
/// alphabet is every symbol made, in byte order. Under SentencePiece rules a
/// character left out of the alphabet cuts the word instead of vanishing.
fn char_words(counts: &FxHashMap<Vec<u8>, u64>, cfg: &BpeTrainerConfig) -> Result<(Words, Vec<Vec<u8>>, Vec<usize>)> {
    let prefix = cfg.continuing_subword_prefix.clone().unwrap_or_default();
    let suffix = cfg.end_of_word_suffix.clone().unwrap_or_default();
    let keep = kept_chars(counts, cfg)?;
    // symbols get ids in the order they are met, renumbered at the end
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut names: Vec<String> = Vec::new();
    let mut intern = |sym: String| -> u32 {
        if let Some(&id) = ids.get(&sym) {
            return id;
        }
        let id = names.len() as u32;
        names.push(sym.clone());
        ids.insert(sym, id);
        id
    };
    let entries = sorted_entries(counts);
    let mut words = Words::with_capacity(entries.len(), entries.iter().map(|e| e.0.len()).sum());
    let mut syms: Vec<u32> = Vec::new();
    for (w, wc) in entries {
        let text = String::from_utf8_lossy(w);
        if cfg.sp_rules.is_some() {
            for run in text.split(|c: char| !keep.contains(&c)).filter(|r| !r.is_empty()) {
                words.push(run.chars().map(|c| intern(c.to_string())), wc);
            }
            continue;
        }
        let kept: Vec<char> = text.chars().filter(|c| keep.contains(c)).collect();
        syms.clear();
        for (i, ch) in kept.iter().enumerate() {
            let mut s = String::new();
            if i > 0 {
                s.push_str(&prefix);
            }
            s.push(*ch);
            if i + 1 == kept.len() {
                s.push_str(&suffix);
            }
            syms.push(intern(s));
        }
        words.push(syms.iter().copied(), wc);
    }
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
    let mut rank = vec![0u32; names.len()];
    for (r, &old) in order.iter().enumerate() {
        rank[old as usize] = r as u32;
    }
    words.remap(&rank);
    let tokens: Vec<Vec<u8>> = order
        .iter()
        .map(|&old| names[old as usize].as_bytes().to_vec())
        .collect();
    let unit_len = vec![1; tokens.len()];
    Ok((words, tokens, unit_len))
}

/// What the merge loop works on: words as symbol ids with their counts, and
/// every id's bytes (model space; empty for ids with no token) and length in
/// units (bytes for byte-level models, characters otherwise).
pub(crate) struct Symbols {
    pub words: Words,
    pub tokens: Vec<Vec<u8>>,
    pub unit_len: Vec<usize>,
}

/// When the merge loop stops, and which merges it may not make.
pub(crate) struct Limits<'a> {
    /// How many merges to learn at most.
    pub target: usize,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    pub sp_rules: Option<&'a super::sp_common::PieceRules>,
    /// Bytes of the continuing-subword prefix, dropped from a merge's right side.
    pub prefix_len: usize,
    pub trace: usize,
    /// Tokens that may not be made (they would change protected text).
    pub forbidden: Option<&'a Forbidden>,
}

/// Tokens a merge may not make: these, any longer than `longest` bytes, and,
/// when `scripts` is not empty, whole characters none of which is in its
/// ranges (a token that ends inside a character is a step towards one, and
/// allowed).
pub(crate) struct Forbidden {
    pub tokens: rustc_hash::FxHashSet<Vec<u8>>,
    pub longest: usize,
    pub scripts: Vec<(u32, u32)>,
}

impl Forbidden {
    fn refuses(&self, token: &[u8]) -> bool {
        if token.len() > self.longest || self.tokens.contains(token) {
            return true;
        }
        !self.scripts.is_empty()
            && std::str::from_utf8(token).is_ok_and(|s| !s.chars().any(|c| in_ranges(c, &self.scripts)))
    }
}

/// Whether `c` lies in one of the (first, last) code point ranges.
pub(crate) fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32)))
}

/// Learn up to `limits.target` merges over `state`; each new token takes the
/// next id (`state.tokens.len()`), so a model continued from an existing
/// vocabulary keeps every old id. Returns (left, right, new id, count) per
/// merge, in order.
pub(crate) fn merge_loop(
    state: &mut Symbols,
    limits: &Limits,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<Vec<(u32, u32, u32, u64)>> {
    if limits.sp_rules.is_some() {
        merge_loop_with(state, limits, on_event, sp_tie, Some(sp_tie_exact))
    } else {
        merge_loop_with(state, limits, on_event, |_, _| (), None)
    }
}

/// Orders two pairs alike in their tie key (given the tokens' bytes).
type ExactTie = fn(&[Vec<u8>], (u32, u32), (u32, u32)) -> std::cmp::Ordering;

/// The exact form of `sp_tie`, for pairs alike in it: the smaller string.
fn sp_tie_exact(tokens: &[Vec<u8>], x: (u32, u32), y: (u32, u32)) -> std::cmp::Ordering {
    let piece = |(a, b): (u32, u32)| tokens[a as usize].iter().chain(&tokens[b as usize]);
    piece(x).cmp(piece(y))
}

/// The best pair of the queue, its count and tie key; among pairs whose
/// keys are equal, the least by `exact` (then the smallest ids).
fn pop_best<K: Ord + Copy>(
    queue: &mut PairQueue<K>,
    words: &Words,
    tokens: &[Vec<u8>],
    tie: &impl Fn(&[Vec<u8>], (u32, u32)) -> K,
    exact: Option<ExactTie>,
) -> Option<((u32, u32), i64)> {
    let key = |p| tie(tokens, p);
    let (mut best, count, k) = queue.pop_keyed(words, &key)?;
    let Some(exact) = exact else {
        return Some((best, count));
    };
    let mut back = Vec::new();
    while queue.peek() == Some((count, k)) {
        let Some((p, c, pk)) = queue.pop_keyed(words, &key) else {
            break;
        };
        if (c, pk) != (count, k) {
            back.push((p, c, pk));
            break;
        }
        if exact(tokens, p, best).then(p.cmp(&best)).is_lt() {
            back.push((best, c, pk));
            best = p;
        } else {
            back.push((p, c, pk));
        }
    }
    for (p, c, pk) in back {
        queue.push_back(p, c, pk);
    }
    Some((best, count))
}

/// `spm_train`'s order among pairs of equal count: the shorter piece (in
/// characters), then the smaller string (its first 16 bytes here; pairs
/// alike in those fall back to the smaller ids).
fn sp_tie(tokens: &[Vec<u8>], (a, b): (u32, u32)) -> (u32, u128) {
    let piece = || tokens[a as usize].iter().chain(&tokens[b as usize]);
    let chars = piece().filter(|&&x| x & 0xC0 != 0x80).count() as u32;
    let mut head = [0u8; 16];
    for (h, &x) in head.iter_mut().zip(piece()) {
        *h = x;
    }
    (chars, u128::from_be_bytes(head))
}

fn merge_loop_with<K: Ord + Copy>(
    state: &mut Symbols,
    limits: &Limits,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
    tie: impl Fn(&[Vec<u8>], (u32, u32)) -> K,
    exact: Option<ExactTie>,
) -> Result<Vec<(u32, u32, u32, u64)>> {
    let Symbols {
        words,
        tokens,
        unit_len,
    } = state;
    let target = limits.target;
    let mut queue = PairQueue::new(words, target, &|p| tie(tokens, p));
    // (at most one merge per distinct pair: the target may be far larger)
    let mut merges: Vec<(u32, u32, u32, u64)> = Vec::with_capacity(target.min(1 << 20));
    let report_every = (target / 200).max(1);
    let prefix_len = limits.prefix_len;
    while merges.len() < target {
        let Some((pair, count)) = pop_best(&mut queue, words, tokens, &tie, exact) else {
            break;
        };
        if (count as u64) < limits.min_frequency.max(1) {
            break;
        }
        let (a, b) = pair;
        let new_len = unit_len[a as usize] + unit_len[b as usize];
        if limits.max_token_length.is_some_and(|m| new_len > m) {
            queue.refuse(pair);
            continue;
        }
        if let Some(forbidden) = limits.forbidden {
            let merged = joined(&tokens[a as usize], &tokens[b as usize], prefix_len);
            if forbidden.refuses(&merged) {
                queue.refuse(pair);
                continue;
            }
        }
        if let Some(rules) = limits.sp_rules {
            let merged = [tokens[a as usize].as_slice(), tokens[b as usize].as_slice()].concat();
            let chars: Vec<char> = String::from_utf8_lossy(&merged).chars().collect();
            let classes: Vec<_> = chars.iter().map(|&c| rules.class(c)).collect();
            if !rules.is_valid(&chars, &classes) {
                queue.refuse(pair);
                continue;
            }
        }
        let new_id = tokens.len() as u32;
        let bytes = joined(&tokens[a as usize], &tokens[b as usize], prefix_len);
        tokens.push(bytes);
        unit_len.push(new_len);
        merges.push((a, b, new_id, count as u64));
        let idx = merges.len() - 1;
        if idx < limits.trace {
            on_event(TrainEvent::Merge {
                index: idx,
                left: &tokens[a as usize],
                right: &tokens[b as usize],
                new_id,
                count: count as u64,
            })?;
        }
        if merges.len().is_multiple_of(report_every) {
            on_event(TrainEvent::Progress {
                done: merges.len(),
                total: target,
            })?;
        }

        queue.merge(words, pair, new_id, &|p| tie(tokens, p));
    }
    on_event(TrainEvent::Progress {
        done: merges.len(),
        total: target,
    })?;
    Ok(merges)
}

/// The token a merge makes: the left side, then the right side without its
/// continuing-subword prefix.
pub(crate) fn joined(left: &[u8], right: &[u8], prefix_len: usize) -> Vec<u8> {
    let right = if right.len() >= prefix_len {
        &right[prefix_len..]
    } else {
        right
    };
    [left, right].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(words: &[(&str, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    fn cfg(vocab_size: usize) -> BpeTrainerConfig {
        BpeTrainerConfig {
            vocab_size,
            min_frequency: 0,
            max_token_length: None,
            byte_level: true,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
            limit_alphabet: None,
            trace: 0,
            character_coverage: None,
            sp_rules: None,
        }
    }

    #[test]
    fn learns_the_obvious_merges() {
        let c = counts(&[("low", 5), ("lower", 2), ("newest", 6), ("widest", 3)]);
        let t = train(&c, &cfg(260), &mut |_| Ok(())).unwrap();
        let m: Vec<(Vec<u8>, u32)> = t
            .merges
            .iter()
            .map(|&(_, _, n, c)| (t.model.vocab_r[n as usize].clone().unwrap().to_vec(), c as u32))
            .collect();
        // "es" (9) and "st" (9) tie; (e,s) has the smaller ids
        assert_eq!(m[0], (b"es".to_vec(), 9));
        assert_eq!(m[1], (b"est".to_vec(), 9));
        assert_eq!(t.merges.len(), 4);
    }

    #[test]
    fn overlapping_pairs_are_counted_once_per_merge() {
        let c = counts(&[("aaaa", 1)]);
        let t = train(&c, &cfg(258), &mut |_| Ok(())).unwrap();
        assert_eq!(t.merges[0].3, 3);
        // after (a,a): [aa, aa] -> (aa,aa) count 1
        assert_eq!(t.merges[1].3, 1);
    }

    #[test]
    fn char_level_with_suffix() {
        let c = counts(&[("low", 5), ("lowest", 2)]);
        let mut k = cfg(100);
        k.byte_level = false;
        k.end_of_word_suffix = Some("</w>".into());
        let t = train(&c, &k, &mut |_| Ok(())).unwrap();
        let first = &t.model.vocab_r[t.merges[0].2 as usize];
        assert_eq!(first.as_deref(), Some(&b"lo"[..]));
        assert!(t.model.vocab.contains_key(&b"low</w>"[..]));
    }

    #[test]
    fn too_small_and_empty() {
        let c = counts(&[("ab", 1)]);
        assert!(matches!(train(&c, &cfg(10), &mut |_| Ok(())), Err(Error::VocabSize(_))));
        assert!(matches!(
            train(&FxHashMap::default(), &cfg(300), &mut |_| Ok(())),
            Err(Error::Corpus(_))
        ));
    }
}
