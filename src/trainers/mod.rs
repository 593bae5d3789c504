//! Trainers: count pre-tokenized words over a corpus, then learn a vocabulary.

pub mod bpe;
pub mod continued;
mod counter;
pub mod counts_file;
mod pair_queue;
pub mod parity;
pub mod picky;
pub mod sp_common;
pub mod unigram;
mod word_index;
pub mod wordpiece;
mod wordpiece_live;
mod wordpiece_prune;

pub use crate::cut::{cut_rule, CutRule};
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
    /// One merge of parity-aware training, with the language it was
    /// chosen for (`None`: chosen over all languages together).
    LanguageMerge {
        index: usize,
        left: &'a [u8],
        right: &'a [u8],
        new_id: u32,
        count: u64,
        language: Option<usize>,
    },
    /// A PickyBPE removal: the event's index, the token removed, its IoS,
    /// and the merge that consumed it (its number among the merges, and its
    /// two tokens).
    Removal {
        index: usize,
        token: &'a [u8],
        ios: f64,
        left: &'a [u8],
        right: &'a [u8],
        merge: usize,
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
