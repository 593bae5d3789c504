//! Tokenizer files: each module reads a format into a `Tokenizer` (or its
//! parts) and writes one back, from outside `models/`, so that the models
//! know nothing of files and the pipeline nothing of formats.
//!
//! - `tokenizer_json`: `tokenizer.json` (the `tokenizers` library's);
//!   `sentencepiece_json`: how SentencePiece pipelines are spelled there;
//! - `tiktoken`: tiktoken's rank files (`base64(token) rank` lines);
//! - `sp_model`: SentencePiece's `.model` protobuf, read with `protobuf`
//!   (the wire format; Python's `.model` reader uses it too) by the fields
//!   `sp_schema` declares (the schema Python's message classes are built
//!   from).
//!
//! BERT's `vocab.txt` and GPT-2's `vocab.json` + `merges.txt` are read in
//! Python (`tokensmith.formats`), which builds their `tokenizer.json`.

pub mod protobuf;
pub mod sentencepiece_json;
pub mod sp_model;
pub mod sp_schema;
pub mod tiktoken;
pub mod tokenizer_json;
