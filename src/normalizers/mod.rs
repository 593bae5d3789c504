//! Normalizers, and the string type that remembers where every byte came from.

pub mod bert;
mod bert_tables;
pub mod precompiled;
pub mod sentencepiece;
mod string;
mod unicode;
pub use string::NormalizedString;

use crate::error::Result;
use crate::pattern::Pattern;
use serde::{Deserialize, Serialize};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized};

/// One pipeline stage: rewrite the string in place, keeping alignments.
pub trait Normalize {
    fn normalize(&self, s: &mut NormalizedString) -> Result<()>;
}

/// The registry of normalizer components, named as in `tokenizer.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Normalizer {
    NFC,
    NFD,
    NFKC,
    NFKD,
    Lowercase,
    StripAccents,
    Sequence {
        normalizers: Vec<Normalizer>,
    },
    Replace {
        pattern: Pattern,
        content: String,
    },
    Prepend {
        prepend: String,
    },
    Strip {
        #[serde(default = "yes")]
        strip_left: bool,
        #[serde(default = "yes")]
        strip_right: bool,
    },
    BertNormalizer(bert::BertNormalizer),
    Precompiled {
        precompiled_charsmap: precompiled::Charsmap,
    },
    /// tokensmith's: a SentencePiece `.model`'s normalizer, exactly
    SentencePiece(sentencepiece::SentencePieceNormalizer),
}

fn yes() -> bool {
    true
}

#[derive(Clone, Copy)]
enum Form {
    C,
    D,
    KC,
    KD,
}

fn unicode_normalize(s: &mut NormalizedString, form: Form) {
    let quick = match form {
        Form::C => is_nfc_quick(s.text.chars()),
        Form::D => is_nfd_quick(s.text.chars()),
        Form::KC => is_nfkc_quick(s.text.chars()),
        Form::KD => is_nfkd_quick(s.text.chars()),
    };
    if quick == IsNormalized::Yes {
        return;
    }
    let compat = matches!(form, Form::KC | Form::KD);
    let mut out = unicode::decompose(&s.text, compat);
    if matches!(form, Form::C | Form::KC) {
        out = unicode::recompose(out);
    }
    s.transform_changes(&out, 0);
}

impl Normalize for Normalizer {
    fn normalize(&self, s: &mut NormalizedString) -> Result<()> {
        match self {
            Normalizer::NFC => unicode_normalize(s, Form::C),
            Normalizer::NFD => unicode_normalize(s, Form::D),
            Normalizer::NFKC => unicode_normalize(s, Form::KC),
            Normalizer::NFKD => unicode_normalize(s, Form::KD),
            Normalizer::Lowercase => {
                if s.text.chars().all(|c| c.to_lowercase().eq(std::iter::once(c))) {
                    return Ok(());
                }
                let chunks = s
                    .text
                    .char_indices()
                    .map(|(i, c)| (i, i + c.len_utf8(), c.to_lowercase().collect::<String>()))
                    .collect();
                s.transform(chunks);
            }
            Normalizer::StripAccents => {
                if !s.text.chars().any(is_combining_mark) {
                    return Ok(());
                }
                let chunks = s
                    .text
                    .char_indices()
                    .filter(|(_, c)| is_combining_mark(*c))
                    .map(|(i, c)| (i, i + c.len_utf8(), String::new()))
                    .collect();
                s.transform(chunks);
            }
            Normalizer::BertNormalizer(n) => n.normalize(s),
            Normalizer::Precompiled { precompiled_charsmap } => {
                precompiled::normalize_precompiled(&precompiled_charsmap.0, s)
            }
            Normalizer::SentencePiece(n) => n.normalize(s),
            Normalizer::Sequence { normalizers } => {
                for n in normalizers {
                    n.normalize(s)?;
                }
            }
            Normalizer::Replace { pattern, content } => {
                let mut found = Vec::new();
                pattern.find_iter(&s.text, &mut found)?;
                let chunks = found
                    .into_iter()
                    .filter(|(a, b)| a < b)
                    .map(|(a, b)| (a, b, content.clone()))
                    .collect();
                s.transform(chunks);
            }
            Normalizer::Prepend { prepend } => {
                if !s.text.is_empty() {
                    s.transform(vec![(0, 0, prepend.clone())]);
                }
            }
            Normalizer::Strip {
                strip_left,
                strip_right,
            } => {
                let text = &s.text;
                let mut chunks = Vec::new();
                if *strip_left {
                    let kept = text.trim_start();
                    let cut = text.len() - kept.len();
                    if cut > 0 {
                        chunks.push((0, cut, String::new()));
                    }
                }
                if *strip_right {
                    let kept = text.trim_end().len();
                    let from = chunks.first().map_or(kept, |c: &(usize, usize, String)| kept.max(c.1));
                    if from < text.len() {
                        chunks.push((from, text.len(), String::new()));
                    }
                }
                s.transform(chunks);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfc_composes_and_aligns() {
        let mut s = NormalizedString::new("Ae\u{301}b", 0);
        Normalizer::NFC.normalize(&mut s).unwrap();
        assert_eq!(s.text, "A\u{e9}b");
        // é (2 bytes) takes the span of the "e" it was composed from, as in `tokenizers`
        assert_eq!(s.original_range(1, 3), (1, 2));
        assert_eq!(s.original_range(3, 4), (4, 5));
    }

    #[test]
    fn nfkc_and_lowercase_sequence() {
        let n: Normalizer =
            serde_json::from_str(r#"{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}"#)
                .unwrap();
        let mut s = NormalizedString::new("\u{FB01}X", 0);
        n.normalize(&mut s).unwrap();
        assert_eq!(s.text, "fix");
        assert_eq!(s.original_range(0, 1), (0, 3));
        assert_eq!(s.original_range(2, 3), (3, 4));
    }

    #[test]
    fn replace_prepend_strip() {
        let n: Normalizer = serde_json::from_str(
            r#"{"type":"Sequence","normalizers":[{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"String":" "},"content":"_"},{"type":"Prepend","prepend":"_"}]}"#,
        )
        .unwrap();
        let mut s = NormalizedString::new("  a b ", 0);
        n.normalize(&mut s).unwrap();
        assert_eq!(s.text, "_a_b");
        assert_eq!(s.original_range(1, 2), (2, 3));
        assert_eq!(s.original_range(2, 3), (3, 4));
    }

    #[test]
    fn untracked_text_equals_tracked_text() {
        let specs = [
            r#"{"type":"BertNormalizer"}"#,
            r#"{"type":"BertNormalizer","strip_accents":false}"#,
            r#"{"type":"BertNormalizer","lowercase":false,"handle_chinese_chars":false}"#,
            r#"{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}"#,
            r#"{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]}"#,
            r#"{"type":"Sequence","normalizers":[{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"String":" "},"content":"\u2581"},{"type":"Prepend","prepend":"\u2581"}]}"#,
        ];
        let texts = [
            "  Ae\u{301}b \u{FB01}X \u{5206}\u{8BCD}\tc\u{0}d  ",
            "",
            " ",
            "\u{301}\u{5206}",
            // a wide space, a control, a multi-character lowercase (İ), an
            // accent to strip, all beside ideographs
            "\u{130}stanbul\u{3000}\u{7f}\u{4e2d}\u{6587}Caf\u{e9}\u{fffd}\u{1F600}",
            // decompositions and runs of non-starters to reorder (NFD)
            "x\u{1E69}\u{301}\u{323}q\u{F73}\u{F71}\u{9CB}\u{AC00}\u{F900}e\u{301}\u{301}",
        ];
        for spec in specs {
            let n: Normalizer = serde_json::from_str(spec).unwrap();
            for t in texts {
                let (mut a, mut b) = (NormalizedString::new(t, 0), NormalizedString::untracked(t));
                n.normalize(&mut a).unwrap();
                n.normalize(&mut b).unwrap();
                assert_eq!(a.text, b.text, "{spec} on {t:?}");
            }
        }
    }

    #[test]
    fn unknown_normalizer_is_an_error() {
        let r: std::result::Result<Normalizer, _> = serde_json::from_str(r#"{"type":"Frobnicate"}"#);
        assert!(r.unwrap_err().to_string().contains("unknown variant"));
    }
}
