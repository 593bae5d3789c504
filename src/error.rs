//! Errors of the core. Every variant maps to one typed Python exception.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A configuration value that cannot be used (bad regex, vocab too small, ...).
    Config(String),
    /// A tokenizer file or component description that is malformed.
    Format(String),
    /// A component type tokensmith does not implement.
    Unsupported(String),
    /// An id that is not in the vocabulary.
    UnknownId(u32),
    /// Text containing a special token that the caller did not allow.
    DisallowedSpecial(String),
    /// Corpus problems: unreadable file, invalid UTF-8, empty corpus.
    Corpus(String),
    /// A corpus file that is not valid UTF-8.
    CorpusEncoding {
        path: String,
        offset: u64,
    },
    /// A vocabulary size that cannot be reached.
    VocabSize(String),
    Interrupted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) | Error::VocabSize(m) | Error::Format(m) | Error::Unsupported(m) | Error::Corpus(m) => {
                f.write_str(m)
            }
            Error::UnknownId(id) => write!(f, "token id {id} is not in the vocabulary"),
            Error::DisallowedSpecial(t) => write!(f, "special token {t:?} found in text"),
            Error::CorpusEncoding { path, offset } => {
                write!(f, "{path}: invalid UTF-8 at byte offset {offset}")
            }
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
