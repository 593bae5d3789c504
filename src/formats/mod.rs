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
//!   from);
//! - `vocab_txt`: BERT's `vocab.txt` (one WordPiece token per line) and the
//!   BERT pipeline around it;
//! - `vocab_merges`: GPT-2's `vocab.json` + `merges.txt` and the byte-level
//!   pipeline around them.
//!
//! Python (`tokensmith.formats`) reads the files, passes their bytes here
//! and names the file in an error; writing `vocab.txt` and `vocab.json` +
//! `merges.txt` is left to it.

pub mod protobuf;
pub mod sentencepiece_json;
pub mod sp_model;
pub mod sp_schema;
pub mod tiktoken;
pub mod tokenizer_json;
pub mod vocab_merges;
pub mod vocab_txt;

/// `s` as Python's `repr` spells a string, for error messages that name a
/// token as the Python loaders always have (`'a'`). Which characters are
/// escaped is close to Python's `str.isprintable`: control characters,
/// whitespace other than the space, the common format characters and
/// private-use characters (unassigned code points are printed as they are).
pub(crate) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn printable(c: char) -> bool {
    let n = c as u32;
    let format = matches!(n, 0xAD | 0x600..=0x605 | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0xFEFF)
        || matches!(n, 0xFFF9..=0xFFFB);
    let private = matches!(n, 0xE000..=0xF8FF | 0xF0000..);
    c == ' ' || !(c.is_control() || c.is_whitespace() || format || private)
}

#[cfg(test)]
mod tests {
    #[test]
    fn py_repr() {
        assert_eq!(super::py_repr("a"), "'a'");
        assert_eq!(super::py_repr("it's"), "\"it's\"");
        assert_eq!(super::py_repr("'\""), "'\\'\"'");
        assert_eq!(
            super::py_repr("a\\b\n\u{0}\u{a0}\u{2028}é\u{10FFFF} "),
            "'a\\\\b\\n\\x00\\xa0\\u2028é\\U0010ffff '"
        );
    }
}
