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
    /// An allocation that failed: what it was for and how big (raised as
    /// Python's `MemoryError` instead of aborting the process).
    Memory(String),
    /// A file that could not be read or written (raised as `OSError`).
    Io(String),
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
            Error::Memory(m) => write!(f, "out of memory: {m}"),
            Error::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The error for `n` items of `T` that could not be allocated for `what`.
fn no_room<T>(n: usize, what: &str) -> Error {
    let bytes = (n as u128) * (std::mem::size_of::<T>() as u128);
    Error::Memory(format!("{what} needs {bytes} bytes ({n} items)"))
}

/// An empty vector with room for `n` items, or `Error::Memory` naming
/// `what`: for the allocations whose size comes from an input (a file's
/// largest id, a text's length), which must fail as an error and not abort.
pub fn with_room<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| no_room::<T>(n, what))?;
    Ok(v)
}

/// `vec![value; n]`, or `Error::Memory` (see [`with_room`]).
pub fn filled<T: Clone>(value: T, n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = with_room(n, what)?;
    v.resize(n, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_allocations_are_errors() {
        let e = with_room::<u64>(usize::MAX / 16, "the id table").unwrap_err();
        assert!(matches!(&e, Error::Memory(m) if m.contains("the id table")), "{e}");
        assert!(filled(0u32, isize::MAX as usize / 2, "ids").is_err());
        assert_eq!(filled(7u8, 3, "ids").unwrap(), vec![7, 7, 7]);
    }
}
