//! `{"String": ...}` / `{"Regex": ...}` patterns of `tokenizer.json`.

use crate::error::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Pattern {
    Literal(String),
    Regex {
        source: String,
        re: Arc<fancy_regex::Regex>,
    },
}

#[derive(Serialize, Deserialize)]
enum PatternDef {
    String(String),
    Regex(String),
}

/// Compile a user regex with the semantics tokenizer users expect.
///
/// Oniguruma, which Hugging Face `tokenizers` uses, reads `X{n,m}+` as
/// `(?:X{n,m})+` rather than as a possessive quantifier; we rewrite that
/// form so both engines agree.
pub fn compile_regex(source: &str) -> Result<fancy_regex::Regex> {
    let translated = translate_onig(source);
    fancy_regex::RegexBuilder::new(&translated)
        .backtrack_limit(10_000_000)
        .build()
        .map_err(|e| Error::Config(format!("invalid regex {source:?}: {e}")))
}

/// Rewrite `{n,m}+` (Oniguruma: a repeated group) into `(?:...)` form is not
/// possible without a parser, so we do the equivalent: `A{n,m}+` ≡ `(?:A{n,m})+`
/// only differs from possessive `A{n,m}` in how far it runs; we parse the atom
/// before the quantifier for the common cases (escapes, classes, groups).
fn translate_onig(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<String> = Vec::new(); // one entry per atom
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // quantifier `{n,m}` followed by `+`
        if c == '{' && !out.is_empty() {
            if let Some(close) = chars[i..].iter().position(|&x| x == '}') {
                let body: String = chars[i + 1..i + close].iter().collect();
                let is_quant =
                    !body.is_empty() && body.chars().all(|x| x.is_ascii_digit() || x == ',');
                if is_quant {
                    let quant: String = chars[i..=i + close].iter().collect();
                    let after = i + close + 1;
                    if after < chars.len() && chars[after] == '+' {
                        let atom = out.pop().unwrap_or_default();
                        out.push(format!("(?:{atom}{quant})+"));
                        i = after + 1;
                        continue;
                    }
                    if let Some(last) = out.last_mut() {
                        last.push_str(&quant);
                    }
                    i = after;
                    continue;
                }
            }
        }
        let start = i;
        match c {
            '\\' => {
                i += 2;
                // \p{..} / \P{..} / \x{..}
                if i <= chars.len()
                    && matches!(chars[i - 1], 'p' | 'P' | 'x')
                    && i < chars.len()
                    && chars[i] == '{'
                {
                    while i < chars.len() && chars[i] != '}' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '[' => {
                i += 1;
                if i < chars.len() && chars[i] == '^' {
                    i += 1;
                }
                if i < chars.len() && chars[i] == ']' {
                    i += 1;
                }
                let mut depth = 1;
                while i < chars.len() && depth > 0 {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => depth += 1,
                        ']' => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
            }
            '(' => {
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '\\' => i += 1,
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        '[' => {
                            // skip class
                            i += 1;
                            while i < chars.len() && chars[i] != ']' {
                                if chars[i] == '\\' {
                                    i += 1;
                                }
                                i += 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
        let end = i.min(chars.len());
        let atom: String = chars[start..end].iter().collect();
        // quantifiers attach to the previous atom
        if matches!(c, '*' | '+' | '?') && !out.is_empty() {
            if let Some(last) = out.last_mut() {
                last.push_str(&atom);
            }
        } else {
            out.push(atom);
        }
    }
    out.concat()
}

impl Pattern {
    pub fn regex(source: &str) -> Result<Self> {
        Ok(Pattern::Regex {
            source: source.to_string(),
            re: Arc::new(compile_regex(source)?),
        })
    }

    /// All non-overlapping matches, as byte ranges.
    pub fn find_iter(&self, text: &str, out: &mut Vec<(usize, usize)>) -> Result<()> {
        match self {
            Pattern::Literal(lit) => {
                if lit.is_empty() {
                    return Ok(());
                }
                for (s, m) in text.match_indices(lit.as_str()) {
                    out.push((s, s + m.len()));
                }
            }
            Pattern::Regex { re, source } => {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| {
                        Error::Config(format!("regex {source:?} failed on input: {e}"))
                    })?;
                    out.push((m.start(), m.end()));
                }
            }
        }
        Ok(())
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Pattern::Literal(l) => PatternDef::String(l.clone()).serialize(s),
            Pattern::Regex { source, .. } => PatternDef::Regex(source.clone()).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match PatternDef::deserialize(d)? {
            PatternDef::String(s) => Ok(Pattern::Literal(s)),
            PatternDef::Regex(r) => Pattern::regex(&r).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onig_repeat_plus_is_rewritten() {
        assert_eq!(translate_onig(r"\p{N}{1,3}+"), r"(?:\p{N}{1,3})+");
        assert_eq!(
            translate_onig(r"a|\p{N}{1,3}| ?[^\s]+"),
            r"a|\p{N}{1,3}| ?[^\s]+"
        );
        assert_eq!(translate_onig(r"(ab){2}+c"), r"(?:(ab){2})+c");
    }

    #[test]
    fn literal_and_regex_find() {
        let mut v = vec![];
        Pattern::Literal("ab".into())
            .find_iter("xabab", &mut v)
            .unwrap();
        assert_eq!(v, vec![(1, 3), (3, 5)]);
        v.clear();
        Pattern::regex(r"\d+")
            .unwrap()
            .find_iter("a12b3", &mut v)
            .unwrap();
        assert_eq!(v, vec![(1, 3), (4, 5)]);
        assert!(Pattern::regex("(").is_err());
    }
}
