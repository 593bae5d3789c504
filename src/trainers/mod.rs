//! Trainers: count pre-tokenized words over a corpus, then learn a vocabulary.

pub mod bpe;
pub mod continued;
mod counter;
pub mod counts_file;
pub mod sp_common;
pub mod unigram;
pub mod wordpiece;

pub(crate) use counter::cut_point;
pub use counter::{cut_rule, CutRule};
pub use counter::{ErrorPolicy, WordCounter};

/// What a trainer reports while it runs.
pub enum TrainEvent<'a> {
    /// One merge: its index, the two tokens, the new id, the pair count.
    Merge {
        index: usize,
        left: &'a [u8],
        right: &'a [u8],
        new_id: u32,
        count: u64,
    },
    Progress {
        done: usize,
        total: usize,
    },
    /// One EM step of the Unigram trainer: the pieces left after it, the
    /// negative log-likelihood per word and the corpus length in tokens.
    Em {
        round: usize,
        sub: usize,
        pieces: usize,
        objective: f64,
        tokens: u64,
    },
}

type Pair = (u32, u32);

/// Replace every adjacent `(a, b)` in the listed words by `t`, left to
/// right, as both merge loops (BPE, WordPiece) do: the pair-count changes
/// around each occurrence go to `deltas` (the merged pair's own count is
/// the caller's), and each new neighbouring pair gets the word in
/// `new_pairs`. `on_merge(count)` runs once per occurrence with the word's
/// count.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_merge(
    words: &mut [Vec<u32>],
    wcounts: &[u64],
    list: &[u32],
    (a, b): Pair,
    t: u32,
    deltas: &mut rustc_hash::FxHashMap<Pair, i64>,
    new_pairs: &mut rustc_hash::FxHashMap<Pair, Vec<u32>>,
    mut on_merge: impl FnMut(i64),
) {
    for &wi in list {
        let w = &mut words[wi as usize];
        let c = wcounts[wi as usize] as i64;
        let mut i = 0;
        while i + 1 < w.len() {
            if w[i] == a && w[i + 1] == b {
                if i > 0 {
                    let left = w[i - 1];
                    *deltas.entry((left, a)).or_insert(0) -= c;
                    *deltas.entry((left, t)).or_insert(0) += c;
                    new_pairs.entry((left, t)).or_default().push(wi);
                }
                if i + 2 < w.len() {
                    let right = w[i + 2];
                    *deltas.entry((b, right)).or_insert(0) -= c;
                    *deltas.entry((t, right)).or_insert(0) += c;
                    new_pairs.entry((t, right)).or_default().push(wi);
                }
                on_merge(c);
                w[i] = t;
                w.remove(i + 1);
            }
            i += 1;
        }
    }
}
