//! tokensmith core: the tokenizer pipeline and trainers. Python bindings live
//! in `python.rs`, behind the `python` feature.

// Every unsafe operation sits in its own block with a SAFETY comment, also
// inside unsafe functions (whose callers promise only what `# Safety` says).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod added_tokens;
pub mod bytelevel;
pub mod cut;
pub mod decode_table;
pub mod decoders;
pub mod error;
pub mod formats;
pub mod huge_pages;
pub mod models;
pub mod normalizers;
pub mod parallel;
pub mod pattern;
pub mod patterns;
pub mod pre_tokenizers;
pub mod prefetch;
pub mod processors;
pub mod sampling;
pub mod scanner;
pub mod simd;
pub mod tokenizer;
pub mod trainers;
pub mod trie;
pub mod utf8;

#[cfg(feature = "python")]
mod py_ids;
#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};

/// Whether AVX2 kernels may run: the CPU has AVX2 and the level in force
/// (`simd`) allows it (the scanner's windows and the merge lanes have AVX2
/// versions, chosen at run time).
pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        simd::allows(simd::Level::Avx2) && std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
pub use tokenizer::Tokenizer;

/// Large blocks on transparent huge pages (see `huge_pages`): in the Python
/// extension only, which is a program of its own; a Rust crate using this
/// library keeps its own allocator.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: huge_pages::HugePages = huge_pages::HugePages;
