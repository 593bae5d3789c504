//! Continued BPE training: new merges learned on new text on top of an
//! existing model, every old id and merge kept.
//!
//! Each counted word is first cut by the existing model (its own
//! `encode_piece`), so pairs are counted on the segmentation the model
//! already gives; the merge loop then appends tokens after the last id.
//! Pieces the model only covers with "foreign" ids (its unknown token,
//! SentencePiece byte-fallback pieces) are characters it lacks: the most
//! frequent of them (up to the character coverage) become new symbols,
//! written like the model's own (continuing-subword prefix inside a word,
//! end-of-word suffix at its end); the rest cut the word, so no merge can
//! cross them.

use super::bpe::{in_ranges, joined, merge_loop, Forbidden, Limits, Symbols};
use super::sp_common::PieceRules;
use super::word_index::Words;
use super::TrainEvent;
use crate::error::{Error, Result};
use crate::models::{Model, ModelKind};
use rustc_hash::{FxHashMap, FxHashSet};

pub struct ContinueConfig {
    /// New tokens to learn, new characters included.
    pub new_tokens: usize,
    pub min_frequency: u64,
    /// In bytes (byte-level) or characters.
    pub max_token_length: Option<usize>,
    pub byte_level: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    /// Ids that mean "the model has no token for this text".
    pub foreign: FxHashSet<u32>,
    /// Share of the text's characters that must have a symbol; the rarest
    /// missing characters beyond it stay foreign.
    pub character_coverage: f64,
    /// SentencePiece's rules for what may be a piece.
    pub sp_rules: Option<PieceRules>,
    pub trace: usize,
    /// Pieces (as counted) whose ids must not change: no new token may be
    /// made of adjacent tokens of their old segmentation, and no missing
    /// character of theirs becomes a symbol.
    pub protected: Vec<Vec<u8>>,
    /// When not empty: every new token has a character in these code point
    /// ranges (new Chinese tokens only, say).
    pub scripts: Vec<(u32, u32)>,
}

pub struct Continued {
    /// New characters: (id, token bytes), ids from the old vocabulary's end.
    pub new_symbols: Vec<(u32, Vec<u8>)>,
    /// (left, right, new id, count) per merge, after the new characters.
    pub merges: Vec<(u32, u32, u32, u64)>,
    /// Every id's token bytes, old and new.
    pub tokens: Vec<Vec<u8>>,
}

/// One run of a word: ids the model gave, or characters it has no token for.
enum Run {
    /// An id and the characters it covers.
    Known(u32, usize),
    Missing(String),
}

pub fn continue_training(
    model: &ModelKind,
    vocab_len: usize,
    counts: &FxHashMap<Vec<u8>, u64>,
    cfg: &ContinueConfig,
    on_event: &mut dyn FnMut(TrainEvent) -> Result<()>,
) -> Result<Continued> {
    if counts.is_empty() {
        return Err(Error::Corpus("the new text is empty: nothing to learn from".into()));
    }
    let mut entries: Vec<(&Vec<u8>, u64)> = counts.iter().map(|(k, v)| (k, *v)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));

    let mut tokens: Vec<Vec<u8>> = (0..vocab_len as u32)
        .map(|id| model.id_to_bytes(id).map(<[u8]>::to_vec).unwrap_or_default())
        .collect();
    let prefix = cfg.continuing_subword_prefix.clone().unwrap_or_default();
    let suffix = cfg.end_of_word_suffix.clone().unwrap_or_default();
    let units = |t: &[u8]| unit_len(t, cfg.byte_level, &prefix, &suffix);
    let mut unit_lens: Vec<usize> = tokens.iter().map(|t| units(t)).collect();

    // 1. each word as the model cuts it
    let cut: Vec<Vec<Run>> = entries.iter().map(|(w, _)| runs(model, w, &cfg.foreign)).collect();

    // 2. the missing characters that get a symbol
    let budget = cfg.new_tokens;
    let (forbidden, foreign_protected) = protected_runs(model, &tokens, &prefix, cfg);
    let mut kept = kept_characters(&entries, &cut, cfg.character_coverage, budget);
    kept.retain(|c| !foreign_protected.contains(c) && (cfg.scripts.is_empty() || in_ranges(*c, &cfg.scripts)));
    let mut sym_ids: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
    let mut new_symbols: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut words = Words::with_capacity(cut.len(), 0);
    for (runs, (_, count)) in cut.iter().zip(&entries) {
        let pieces = symbolize(runs, &kept, &prefix, &suffix);
        for piece in pieces {
            let mut ids = Vec::with_capacity(piece.len());
            for sym in piece {
                match sym {
                    Sym::Id(id) => ids.push(id),
                    Sym::New(bytes) => {
                        let id = match sym_ids.get(&bytes) {
                            Some(&id) => id,
                            None => {
                                let id = tokens.len() as u32;
                                unit_lens.push(units(&bytes));
                                tokens.push(bytes.clone());
                                new_symbols.push((id, bytes.clone()));
                                sym_ids.insert(bytes, id);
                                id
                            }
                        };
                        ids.push(id);
                    }
                }
            }
            if ids.len() > 1 || ids.first().is_some_and(|&i| i as usize >= vocab_len) {
                words.push(ids, *count);
            }
        }
    }
    // 3. merges on top
    let limits = Limits {
        target: budget - new_symbols.len(),
        min_frequency: cfg.min_frequency,
        max_token_length: cfg.max_token_length,
        sp_rules: cfg.sp_rules.as_ref(),
        prefix_len: prefix.len(),
        trace: cfg.trace,
        forbidden: if cfg.protected.is_empty() && cfg.scripts.is_empty() {
            None
        } else {
            Some(&forbidden)
        },
    };
    let mut state = Symbols {
        words,
        tokens,
        unit_len: unit_lens,
    };
    let merges = merge_loop(&mut state, &limits, on_event)?;
    Ok(Continued {
        new_symbols,
        merges,
        tokens: state.tokens,
    })
}

/// Longest run of protected tokens (in bytes) listed: a merge making a longer
/// token is refused outright when text is protected.
const PROTECTED_RUN_BYTES: usize = 256;

/// What protected text forbids: every concatenation of two or more adjacent
/// tokens of a protected piece's old segmentation, and the characters it has
/// no token for. New tokens rank after every old one (merge list, rank or
/// score), so on any text the old merges run to the old segmentation first
/// and a new token can only join adjacent tokens of it: none of these can
/// form, and protected text keeps its ids.
fn protected_runs(
    model: &ModelKind,
    tokens: &[Vec<u8>],
    prefix: &str,
    cfg: &ContinueConfig,
) -> (Forbidden, FxHashSet<char>) {
    let mut forbidden = FxHashSet::default();
    let mut foreign_chars = FxHashSet::default();
    for piece in &cfg.protected {
        let mut out: Vec<(u32, u32)> = Vec::new();
        model.encode_piece(piece, &mut out);
        let mut pos = 0usize;
        for &(id, len) in &out {
            let end = (pos + len as usize).min(piece.len());
            if cfg.foreign.contains(&id) {
                foreign_chars.extend(String::from_utf8_lossy(&piece[pos..end]).chars());
            }
            pos = end;
        }
        for i in 0..out.len() {
            let mut run = tokens.get(out[i].0 as usize).cloned().unwrap_or_default();
            for &(id, _) in &out[i + 1..] {
                let next = tokens.get(id as usize).map_or(&[][..], |t| t.as_slice());
                run = joined(&run, next, prefix.len());
                if run.len() > PROTECTED_RUN_BYTES {
                    break;
                }
                forbidden.insert(run.clone());
            }
        }
    }
    let forbidden = Forbidden {
        tokens: forbidden,
        longest: if cfg.protected.is_empty() {
            usize::MAX
        } else {
            PROTECTED_RUN_BYTES
        },
        scripts: cfg.scripts.clone(),
    };
    (forbidden, foreign_chars)
}

/// A token's length in the units `max_token_length` counts.
fn unit_len(token: &[u8], byte_level: bool, prefix: &str, suffix: &str) -> usize {
    if byte_level {
        return token.len();
    }
    let text = String::from_utf8_lossy(token);
    let core = text.strip_prefix(prefix).unwrap_or(&text);
    let core = if suffix.is_empty() {
        core
    } else {
        core.strip_suffix(suffix).unwrap_or(core)
    };
    core.chars().count().max(1)
}

/// The model's cut of one word, foreign ids turned back into their text.
fn runs(model: &ModelKind, word: &[u8], foreign: &FxHashSet<u32>) -> Vec<Run> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    model.encode_piece(word, &mut out);
    let mut runs = Vec::with_capacity(out.len());
    let mut pos = 0usize;
    let mut missing: Vec<u8> = Vec::new();
    for &(id, len) in &out {
        let end = (pos + len as usize).min(word.len());
        if foreign.contains(&id) {
            missing.extend_from_slice(&word[pos..end]);
        } else {
            if !missing.is_empty() {
                runs.push(Run::Missing(String::from_utf8_lossy(&missing).into_owned()));
                missing.clear();
            }
            runs.push(Run::Known(id, String::from_utf8_lossy(&word[pos..end]).chars().count()));
        }
        pos = end;
    }
    if !missing.is_empty() {
        runs.push(Run::Missing(String::from_utf8_lossy(&missing).into_owned()));
    }
    runs
}

/// The missing characters kept as new symbols: all characters of the text
/// ranked by frequency, and the missing ones among the most frequent that
/// together cover `coverage` of it, at most `limit` of them (the most
/// frequent first).
fn kept_characters(entries: &[(&Vec<u8>, u64)], cut: &[Vec<Run>], coverage: f64, limit: usize) -> FxHashSet<char> {
    let mut freq: FxHashMap<char, u64> = FxHashMap::default();
    let mut missing: FxHashSet<char> = FxHashSet::default();
    for ((word, count), runs) in entries.iter().zip(cut) {
        for ch in String::from_utf8_lossy(word).chars() {
            *freq.entry(ch).or_insert(0) += count;
        }
        for run in runs {
            if let Run::Missing(text) = run {
                missing.extend(text.chars());
            }
        }
    }
    let total: u64 = freq.values().sum();
    let mut chars: Vec<(char, u64)> = freq.into_iter().collect();
    chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut covered = 0u64;
    let mut kept = FxHashSet::default();
    for (ch, n) in chars {
        if kept.len() >= limit || (total > 0 && covered as f64 / total as f64 >= coverage) {
            break;
        }
        covered += n;
        if missing.contains(&ch) && ch != char::REPLACEMENT_CHARACTER {
            kept.insert(ch);
        }
    }
    kept
}

enum Sym {
    Id(u32),
    New(Vec<u8>),
}

/// A word's runs as symbol sequences: kept missing characters become new
/// symbols (prefix inside the word, suffix at its end), the others cut it.
fn symbolize(runs: &[Run], kept: &FxHashSet<char>, prefix: &str, suffix: &str) -> Vec<Vec<Sym>> {
    let n_chars: usize = runs
        .iter()
        .map(|r| match r {
            Run::Known(_, n) => *n,
            Run::Missing(t) => t.chars().count(),
        })
        .sum();
    let mut pieces: Vec<Vec<Sym>> = vec![Vec::new()];
    let mut at = 0usize;
    for run in runs {
        match run {
            Run::Known(id, n) => {
                if let Some(p) = pieces.last_mut() {
                    p.push(Sym::Id(*id));
                }
                at += n;
            }
            Run::Missing(text) => {
                for ch in text.chars() {
                    if kept.contains(&ch) {
                        let mut s = String::new();
                        if at > 0 {
                            s.push_str(prefix);
                        }
                        s.push(ch);
                        if at + 1 == n_chars {
                            s.push_str(suffix);
                        }
                        if let Some(p) = pieces.last_mut() {
                            p.push(Sym::New(s.into_bytes()));
                        }
                    } else if pieces.last().is_some_and(|p| !p.is_empty()) {
                        pieces.push(Vec::new());
                    }
                    at += 1;
                }
            }
        }
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trainers::bpe::{train, BpeTrainerConfig};

    fn counts(words: &[(&str, u64)]) -> FxHashMap<Vec<u8>, u64> {
        words.iter().map(|(w, c)| (w.as_bytes().to_vec(), *c)).collect()
    }

    fn base() -> crate::trainers::bpe::TrainedBpe {
        let cfg = BpeTrainerConfig {
            vocab_size: 260,
            min_frequency: 0,
            max_token_length: None,
            byte_level: true,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
            limit_alphabet: None,
            trace: 0,
            character_coverage: None,
            sp_rules: None,
        };
        train(&counts(&[("low", 5), ("lower", 2), ("newest", 6)]), &cfg, &mut |_| {
            Ok(())
        })
        .unwrap()
    }

    fn cfg(n: usize) -> ContinueConfig {
        ContinueConfig {
            new_tokens: n,
            min_frequency: 0,
            max_token_length: None,
            byte_level: true,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
            foreign: FxHashSet::default(),
            character_coverage: 1.0,
            sp_rules: None,
            trace: 0,
            protected: Vec::new(),
            scripts: Vec::new(),
        }
    }

    #[test]
    fn scripts_keep_new_tokens_to_their_characters() {
        let trained = base();
        let model = ModelKind::Bpe(trained.model);
        let mut k = cfg(10);
        k.scripts = vec![(0x4E00, 0x9FFF)];
        let words = counts(&[("newer", 9), ("\u{5206}\u{8BCD}", 5)]); // 分词
        let c = continue_training(&model, 260, &words, &k, &mut |_| Ok(())).unwrap();
        let learned: Vec<&[u8]> = c.merges.iter().map(|m| c.tokens[m.2 as usize].as_slice()).collect();
        assert!(learned.contains(&"\u{5206}\u{8BCD}".as_bytes()), "{learned:?}");
        assert!(learned
            .iter()
            .all(|t| std::str::from_utf8(t).map_or(true, |s| !s.is_ascii())));
    }

    #[test]
    fn protected_pieces_keep_their_segmentation() {
        let trained = base();
        let model = ModelKind::Bpe(trained.model);
        let mut k = cfg(10);
        k.protected = vec![b"lowest".to_vec()];
        let words = counts(&[("lowest", 9), ("newer", 5)]);
        let c = continue_training(&model, 260, &words, &k, &mut |_| Ok(())).unwrap();
        let mut old_cut = Vec::new();
        model.encode_piece(b"lowest", &mut old_cut);
        // no new token joins tokens of "lowest"; "newer" still gets its merges
        let learned: Vec<&[u8]> = c.merges.iter().map(|m| c.tokens[m.2 as usize].as_slice()).collect();
        assert!(
            learned.iter().all(|t| !b"lowest".windows(t.len()).any(|w| w == *t)),
            "{learned:?}"
        );
        assert!(learned.contains(&&b"newer"[..]));
    }

    #[test]
    fn new_merges_start_from_the_old_segmentation() {
        let trained = base();
        let model = ModelKind::Bpe(trained.model);
        let old_len = 260;
        let mut old_cut = Vec::new();
        model.encode_piece(b"lowest", &mut old_cut);
        assert!(old_cut.len() < 6, "the old model merges inside 'lowest'");
        let c = continue_training(&model, old_len, &counts(&[("lowest", 9)]), &cfg(10), &mut |_| Ok(())).unwrap();
        assert!(c.new_symbols.is_empty());
        // one merge per old symbol boundary, ids after the old vocabulary
        assert_eq!(c.merges.len(), old_cut.len() - 1);
        assert_eq!(c.merges[0].2, old_len as u32);
        let last = c.merges.last().unwrap().2 as usize;
        assert_eq!(c.tokens[last], b"lowest".to_vec());
        // old ids keep their bytes
        for (id, t) in trained.tokens.iter().enumerate() {
            assert_eq!(&c.tokens[id], t);
        }
    }

    #[test]
    fn missing_characters_become_symbols_or_cut_words() {
        let trained = base();
        let model = ModelKind::Bpe(trained.model);
        let mut k = cfg(10);
        k.byte_level = false;
        // a model that reports every byte of 'z' as foreign
        k.foreign = [b'z' as u32].into_iter().collect();
        let c = continue_training(&model, 260, &counts(&[("lozo", 4)]), &k, &mut |_| Ok(())).unwrap();
        assert_eq!(c.new_symbols, vec![(260, b"z".to_vec())]);
        k.character_coverage = 0.5; // 'o' and 'l' cover half: 'z' stays out and cuts the word
        let c = continue_training(&model, 260, &counts(&[("lozo", 4)]), &k, &mut |_| Ok(())).unwrap();
        assert!(c.new_symbols.is_empty());
        assert!(c.merges.iter().all(|m| !c.tokens[m.2 as usize].contains(&b'z')));
    }

    #[test]
    fn missing_characters_take_at_most_the_budget() {
        let trained = base();
        let model = ModelKind::Bpe(trained.model);
        let mut k = cfg(1);
        k.foreign = [b'x' as u32, b'y' as u32].into_iter().collect();
        let c = continue_training(&model, 260, &counts(&[("xyy", 4)]), &k, &mut |_| Ok(())).unwrap();
        // the more frequent one only, and no room for merges
        assert_eq!(c.new_symbols, vec![(260, b"y".to_vec())]);
        assert!(c.merges.is_empty());
    }
}
