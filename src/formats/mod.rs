//! Tokenizer files: each module reads a format into a `Tokenizer` (or its
//! parts) and writes one back, from outside `models/`, so that the models
//! know nothing of files and the pipeline nothing of formats.
//!
//! - `tokenizer_json`: `tokenizer.json` (the `tokenizers` library's);
//!   `sentencepiece_json`: how SentencePiece pipelines are spelled there;
//! - `tiktoken`: tiktoken's rank files (`base64(token) rank` lines);
//! - `sp_model`: SentencePiece's `.model` protobuf.
//!
//! BERT's `vocab.txt` and GPT-2's `vocab.json` + `merges.txt` are read in
//! Python (`tokensmith.formats`), which builds their `tokenizer.json`.

pub mod sentencepiece_json;
pub mod sp_model;
pub mod tiktoken;
pub mod tokenizer_json;
