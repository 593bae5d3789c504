//! `Metaspace`: spaces become `▁` (U+2581), a `▁` is put before the text,
//! and the text is cut before every `▁` — as `tokenizers` does it. The same
//! component is the decoder that turns `▁` back into spaces.

use super::{apply_behavior, PreTokenizedString, SplitBehavior};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PrependScheme {
    /// before every piece that does not start with the replacement
    Always,
    /// only before the piece that starts the original text
    First,
    Never,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "MetaspaceDef", into = "MetaspaceOut")]
pub struct Metaspace {
    pub replacement: char,
    pub prepend_scheme: PrependScheme,
    pub split: bool,
}

impl Default for Metaspace {
    fn default() -> Self {
        Metaspace {
            replacement: '\u{2581}',
            prepend_scheme: PrependScheme::Always,
            split: true,
        }
    }
}

/// What files contain: the current form, or the legacy `add_prefix_space`
/// (and `str_rep`) of older `tokenizers`.
#[derive(Deserialize)]
struct MetaspaceDef {
    replacement: char,
    #[serde(default)]
    add_prefix_space: Option<bool>,
    #[serde(default)]
    prepend_scheme: Option<PrependScheme>,
    #[serde(default)]
    split: Option<bool>,
    #[serde(default, rename = "str_rep")]
    _str_rep: Option<String>,
}

#[derive(Serialize)]
struct MetaspaceOut {
    replacement: char,
    prepend_scheme: PrependScheme,
    split: bool,
}

impl TryFrom<MetaspaceDef> for Metaspace {
    type Error = String;

    fn try_from(d: MetaspaceDef) -> std::result::Result<Self, String> {
        let prepend_scheme = match (d.add_prefix_space, d.prepend_scheme) {
            (Some(false), Some(s)) if s != PrependScheme::Never => {
                return Err("Metaspace: add_prefix_space is false but prepend_scheme is not \"never\"".into())
            }
            // legacy files say add_prefix_space: false alone (`tokenizers` now refuses them)
            (Some(false), _) => PrependScheme::Never,
            (_, Some(s)) => s,
            (_, None) => PrependScheme::Always,
        };
        Ok(Metaspace {
            replacement: d.replacement,
            prepend_scheme,
            split: d.split.unwrap_or(true),
        })
    }
}

impl From<Metaspace> for MetaspaceOut {
    fn from(m: Metaspace) -> Self {
        MetaspaceOut {
            replacement: m.replacement,
            prepend_scheme: m.prepend_scheme,
            split: m.split,
        }
    }
}

impl Metaspace {
    pub fn pre_tokenize(&self, p: &mut PreTokenizedString) {
        let mut rep_buf = [0u8; 4];
        let rep: &str = self.replacement.encode_utf8(&mut rep_buf);
        // rewrites over the whole string: spaces, and prefixes where they go
        let mut chunks: Vec<(usize, usize, String)> = Vec::new();
        // per piece: the index of its first rewrite
        let mut firsts = Vec::with_capacity(p.pieces.len());
        for &(s, e) in &p.pieces {
            firsts.push(chunks.len());
            let text = &p.ns.text[s..e];
            if text.is_empty() {
                continue;
            }
            // the space-replaced piece starts with the replacement if it starts
            // with a space or already with the replacement
            let starts = text.starts_with(' ') || text.starts_with(self.replacement);
            let prepend = !starts
                && match self.prepend_scheme {
                    PrependScheme::Always => true,
                    PrependScheme::First => p.ns.original_range(s, s).0 == 0,
                    PrependScheme::Never => false,
                };
            if prepend {
                chunks.push((s, s, rep.to_string()));
            }
            for (i, _) in text.match_indices(' ') {
                chunks.push((s + i, s + i + 1, rep.to_string()));
            }
        }
        if !chunks.is_empty() {
            // new piece boundaries: shifted by the growth of the rewrites before
            // them, and their ends by their own rewrites too
            firsts.push(chunks.len());
            let growth = |c: &(usize, usize, String)| c.2.len() as isize - (c.1 - c.0) as isize;
            let mut delta: isize = 0;
            let mut new_pieces = Vec::with_capacity(p.pieces.len());
            for (pi, &(s, e)) in p.pieces.iter().enumerate() {
                let start = (s as isize + delta) as usize;
                delta += chunks[firsts[pi]..firsts[pi + 1]].iter().map(growth).sum::<isize>();
                new_pieces.push((start, (e as isize + delta) as usize));
            }
            p.ns.transform(chunks);
            p.pieces = new_pieces;
        }
        if self.split {
            let mut out = Vec::with_capacity(p.pieces.len() * 2);
            let mut marks = Vec::new();
            for &(s, e) in &p.pieces {
                marks.clear();
                let text = &p.ns.text[s..e];
                let mut prev = 0;
                for (i, m) in text.match_indices(self.replacement) {
                    if i > prev {
                        marks.push((s + prev, s + i, false));
                    }
                    marks.push((s + i, s + i + m.len(), true));
                    prev = i + m.len();
                }
                if prev < text.len() {
                    marks.push((s + prev, e, false));
                }
                apply_behavior(&marks, SplitBehavior::MergedWithNext, &mut out);
            }
            p.pieces = out;
        }
    }

    /// The decoder: the replacement becomes a space, except in the first
    /// token (where `tokenizers` drops it, unless the scheme is `never`).
    pub fn decode_chain(&self, tokens: Vec<String>) -> Vec<String> {
        tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let drop_first = i == 0 && self.prepend_scheme != PrependScheme::Never;
                t.chars()
                    .filter_map(|c| {
                        if c == self.replacement {
                            if drop_first {
                                None
                            } else {
                                Some(' ')
                            }
                        } else {
                            Some(c)
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalizers::NormalizedString;

    fn run(m: &Metaspace, text: &str, base: usize) -> (Vec<String>, Vec<(usize, usize)>) {
        let mut p = PreTokenizedString::new(NormalizedString::new(text, base));
        m.pre_tokenize(&mut p);
        let pieces = p.pieces.iter().map(|&(s, e)| p.ns.text[s..e].to_string()).collect();
        let offs = p.pieces.iter().map(|&(s, e)| p.ns.original_range(s, e)).collect();
        (pieces, offs)
    }

    #[test]
    fn splits_before_every_replacement() {
        let m = Metaspace::default();
        let (pieces, offs) = run(&m, "Hey  you", 0);
        assert_eq!(pieces, ["\u{2581}Hey", "\u{2581}", "\u{2581}you"]);
        assert_eq!(offs, [(0, 3), (3, 4), (4, 8)]);
        let (pieces, _) = run(&m, " x", 0);
        assert_eq!(pieces, ["\u{2581}x"]);
        let first = Metaspace {
            prepend_scheme: PrependScheme::First,
            ..Metaspace::default()
        };
        assert_eq!(run(&first, "ab", 0).0, ["\u{2581}ab"]);
        assert_eq!(run(&first, "ab", 3).0, ["ab"]);
        let nosplit = Metaspace {
            split: false,
            prepend_scheme: PrependScheme::Never,
            ..Metaspace::default()
        };
        assert_eq!(run(&nosplit, "a b", 0).0, ["a\u{2581}b"]);
    }

    #[test]
    fn legacy_and_current_json() {
        let m: Metaspace = serde_json::from_str(r#"{"replacement":"_","add_prefix_space":false}"#).unwrap();
        assert_eq!(m.prepend_scheme, PrependScheme::Never);
        assert!(m.split);
        let m: Metaspace =
            serde_json::from_str(r#"{"replacement":"_","add_prefix_space":true,"str_rep":"_"}"#).unwrap();
        assert_eq!(m.prepend_scheme, PrependScheme::Always);
        let bad: std::result::Result<Metaspace, _> =
            serde_json::from_str(r#"{"replacement":"_","add_prefix_space":false,"prepend_scheme":"first"}"#);
        assert!(bad.is_err());
        let out = serde_json::to_string(&Metaspace::default()).unwrap();
        assert_eq!(out, r#"{"replacement":"▁","prepend_scheme":"always","split":true}"#);
    }

    #[test]
    fn decoder_drops_the_first_replacements() {
        let m = Metaspace::default();
        let toks = vec![
            "\u{2581}\u{2581}a".to_string(),
            "\u{2581}b".into(),
            "\u{2581}\u{2581}".into(),
        ];
        assert_eq!(m.decode_chain(toks).concat(), "a b  ");
    }
}
