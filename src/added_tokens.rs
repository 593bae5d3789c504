//! Added and special tokens, found in the text before anything else runs,
//! with one Aho-Corasick automaton (linear in the text, whatever the number
//! of tokens).

use crate::error::{Error, Result};
use crate::normalizers::{Normalize, NormalizedString, Normalizer};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    #[serde(default)]
    pub single_word: bool,
    #[serde(default)]
    pub lstrip: bool,
    #[serde(default)]
    pub rstrip: bool,
    #[serde(default = "yes")]
    pub normalized: bool,
    #[serde(default)]
    pub special: bool,
}

fn yes() -> bool {
    true
}

/// Which special tokens are recognised in the text.
#[derive(Clone, Debug)]
pub enum Allowed {
    All,
    None,
    Only(Vec<u32>),
}

struct Matcher {
    ac: AhoCorasick,
    ids: Vec<u32>,
}

/// Total pattern bytes above which an automaton is built as an NFA.
const LONG_PATTERNS: usize = 4096;

/// An Aho-Corasick automaton of `pats`. Long tokens get a contiguous NFA,
/// whose construction is linear in their length; the library's own choice
/// (a DFA for few short patterns, the fastest to scan) grew with the square
/// of a long token (10,000 CJK characters: seconds to load).
fn automaton<'a>(
    pats: impl Iterator<Item = &'a str> + Clone,
    kind: MatchKind,
) -> std::result::Result<AhoCorasick, aho_corasick::BuildError> {
    let total: usize = pats.clone().map(str::len).sum();
    let nfa = (total > LONG_PATTERNS).then_some(aho_corasick::AhoCorasickKind::ContiguousNFA);
    AhoCorasickBuilder::new().match_kind(kind).kind(nfa).build(pats)
}

impl Matcher {
    fn build(pats: Vec<(String, u32)>) -> Result<Option<Matcher>> {
        if pats.is_empty() {
            return Ok(None);
        }
        let ac = automaton(pats.iter().map(|(p, _)| p.as_str()), MatchKind::LeftmostLongest)
            .map_err(|e| Error::Config(format!("cannot index the added tokens: {e}")))?;
        Ok(Some(Matcher {
            ac,
            ids: pats.into_iter().map(|(_, i)| i).collect(),
        }))
    }
}

/// Raw-text and normalized-text matchers.
type MatcherPair = (Option<Matcher>, Option<Matcher>);

pub struct AddedVocabulary {
    pub tokens: Vec<AddedToken>,
    by_id: FxHashMap<u32, usize>,
    by_content: FxHashMap<String, u32>,
    /// raw-text matchers: all tokens, and the non-special ones only
    raw_all: Option<Matcher>,
    raw_plain: Option<Matcher>,
    /// normalized-text matchers
    norm_all: Option<Matcher>,
    norm_plain: Option<Matcher>,
    /// every special token, for the disallowed-text check
    specials: Option<AhoCorasick>,
    special_ids: Vec<u32>,
    normalized_contents: FxHashMap<u32, String>,
    subset_cache: Mutex<Option<(Vec<u32>, Arc<MatcherPair>)>>,
}

/// A segment of the input: ordinary text, or an added token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Text(usize, usize),
    Token(u32, usize, usize),
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl AddedVocabulary {
    pub fn new(tokens: Vec<AddedToken>, normalizer: Option<&Normalizer>) -> Result<Self> {
        let mut by_id = FxHashMap::default();
        let mut by_content = FxHashMap::default();
        for (i, t) in tokens.iter().enumerate() {
            if t.content.is_empty() {
                return Err(Error::Format(format!("added_tokens[{i}]: the content is empty")));
            }
            if let Some(&first) = by_id.get(&t.id) {
                // A second name for a special token (tiktoken's o200k_harmony spells id
                // 200018 both `<|endofprompt|>` and `<|reserved_200018|>`): both names
                // encode to the id, the first one is what the id decodes to.
                let alias = |t: &AddedToken| t.special && !t.normalized;
                if !(alias(t) && alias(&tokens[first])) {
                    return Err(Error::Format(format!(
                        "added_tokens[{i}]: id {} is used twice (only special, non-normalized \
                         tokens may share an id)",
                        t.id
                    )));
                }
            } else {
                by_id.insert(t.id, i);
            }
            by_content.insert(t.content.clone(), t.id);
        }
        let mut normalized_contents = FxHashMap::default();
        for t in tokens.iter().filter(|t| t.normalized) {
            let mut ns = NormalizedString::new(&t.content, 0);
            if let Some(n) = normalizer {
                n.normalize(&mut ns)?;
            }
            normalized_contents.insert(t.id, ns.text);
        }
        let mut v = AddedVocabulary {
            tokens,
            by_id,
            by_content,
            raw_all: None,
            raw_plain: None,
            norm_all: None,
            norm_plain: None,
            specials: None,
            special_ids: vec![],
            normalized_contents,
            subset_cache: Mutex::new(None),
        };
        (v.raw_all, v.norm_all) = v.matchers(|_| true)?;
        (v.raw_plain, v.norm_plain) = v.matchers(|t| !t.special)?;
        let specials: Vec<&AddedToken> = v.tokens.iter().filter(|t| t.special).collect();
        v.special_ids = specials.iter().map(|t| t.id).collect();
        if !specials.is_empty() {
            v.specials = Some(
                automaton(specials.iter().map(|t| t.content.as_str()), MatchKind::Standard)
                    .map_err(|e| Error::Config(format!("cannot index the special tokens: {e}")))?,
            );
        }
        Ok(v)
    }

    fn matchers(&self, keep: impl Fn(&AddedToken) -> bool) -> Result<(Option<Matcher>, Option<Matcher>)> {
        let raw = self
            .tokens
            .iter()
            .filter(|t| !t.normalized && keep(t))
            .map(|t| (t.content.clone(), t.id))
            .collect();
        let norm = self
            .tokens
            .iter()
            .filter(|t| t.normalized && keep(t))
            .filter_map(|t| {
                self.normalized_contents
                    .get(&t.id)
                    .filter(|c| !c.is_empty())
                    .map(|c| (c.clone(), t.id))
            })
            .collect();
        Ok((Matcher::build(raw)?, Matcher::build(norm)?))
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn get(&self, id: u32) -> Option<&AddedToken> {
        self.by_id.get(&id).map(|&i| &self.tokens[i])
    }

    pub fn id_of(&self, content: &str) -> Option<u32> {
        self.by_content.get(content).copied().or_else(|| {
            self.normalized_contents
                .iter()
                .find(|(_, c)| c.as_str() == content)
                .map(|(id, _)| *id)
        })
    }

    /// The string a token decodes to: its content, normalized when the token
    /// is matched on normalized text (as `tokenizers` does).
    pub fn token_str(&self, id: u32) -> Option<&str> {
        let t = self.get(id)?;
        Some(
            self.normalized_contents
                .get(&id)
                .map_or(t.content.as_str(), |c| c.as_str()),
        )
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.get(id).is_some_and(|t| t.special)
    }

    /// The first special token in `text` that `allowed` does not admit.
    pub fn find_disallowed<'t>(&self, text: &'t str, allowed: &Allowed) -> Option<&'t str> {
        let ac = self.specials.as_ref()?;
        match allowed {
            Allowed::All => None,
            Allowed::None => ac.find(text).map(|m| &text[m.start()..m.end()]),
            Allowed::Only(ok) => ac
                .find_overlapping_iter(text)
                .find(|m| !ok.contains(&self.special_ids[m.pattern().as_usize()]))
                .map(|m| &text[m.start()..m.end()]),
        }
    }

    fn with_matchers<R>(
        &self,
        allowed: &Allowed,
        f: impl FnOnce(Option<&Matcher>, Option<&Matcher>) -> R,
    ) -> Result<R> {
        match allowed {
            Allowed::All => Ok(f(self.raw_all.as_ref(), self.norm_all.as_ref())),
            Allowed::None => Ok(f(self.raw_plain.as_ref(), self.norm_plain.as_ref())),
            Allowed::Only(ids) => {
                let mut key = ids.clone();
                key.sort_unstable();
                key.dedup();
                let cached = {
                    let guard = self
                        .subset_cache
                        .lock()
                        .map_err(|_| Error::Config("added-token cache poisoned".into()))?;
                    guard.as_ref().filter(|(k, _)| *k == key).map(|(_, m)| m.clone())
                };
                let m = match cached {
                    Some(m) => m,
                    None => {
                        let set: FxHashSet<u32> = key.iter().copied().collect();
                        let m = Arc::new(self.matchers(|t| !t.special || set.contains(&t.id))?);
                        if let Ok(mut guard) = self.subset_cache.lock() {
                            *guard = Some((key, m.clone()));
                        }
                        m
                    }
                };
                Ok(f(m.0.as_ref(), m.1.as_ref()))
            }
        }
    }

    /// Split raw text (phase 1, `normalized == false` tokens).
    pub fn split_raw(&self, text: &str, allowed: &Allowed, out: &mut Vec<Segment>) -> Result<()> {
        self.with_matchers(allowed, |raw, _| self.split_with(raw, text, out))
    }

    /// Split normalized text (phase 2, `normalized == true` tokens).
    pub fn split_normalized(&self, text: &str, allowed: &Allowed, out: &mut Vec<Segment>) -> Result<bool> {
        self.with_matchers(allowed, |_, norm| {
            if norm.is_none() {
                return false;
            }
            self.split_with(norm, text, out);
            true
        })
    }

    pub fn has_normalized(&self) -> bool {
        self.norm_all.is_some()
    }

    fn split_with(&self, m: Option<&Matcher>, text: &str, out: &mut Vec<Segment>) {
        let Some(m) = m else {
            if !text.is_empty() {
                out.push(Segment::Text(0, text.len()));
            }
            return;
        };
        let mut last = 0;
        for mat in m.ac.find_iter(text) {
            let id = m.ids[mat.pattern().as_usize()];
            let Some(tok) = self.get(id) else { continue };
            let (mut start, mut stop) = (mat.start(), mat.end());
            if start < last {
                continue;
            }
            if tok.single_word {
                let left_ok = !text[..start].chars().next_back().is_some_and(is_word_char);
                let right_ok = !text[stop..].chars().next().is_some_and(is_word_char);
                if !(left_ok && right_ok) {
                    continue;
                }
            }
            if tok.lstrip {
                let trimmed = text[..start].trim_end_matches(char::is_whitespace).len();
                start = trimmed.max(last);
            }
            if tok.rstrip {
                stop += text[stop..].len() - text[stop..].trim_start_matches(char::is_whitespace).len();
            }
            if last < start {
                out.push(Segment::Text(last, start));
            }
            out.push(Segment::Token(id, start, stop));
            last = stop;
        }
        if last < text.len() {
            out.push(Segment::Text(last, text.len()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(id: u32, content: &str, special: bool) -> AddedToken {
        AddedToken {
            id,
            content: content.into(),
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special,
        }
    }

    #[test]
    fn longest_match_and_policies() {
        let v = AddedVocabulary::new(
            vec![tok(10, "<s>", true), tok(11, "<s>x", true), tok(12, "hey", false)],
            None,
        )
        .unwrap();
        let mut out = vec![];
        v.split_raw("a<s>xb hey", &Allowed::All, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                Segment::Text(0, 1),
                Segment::Token(11, 1, 5),
                Segment::Text(5, 7),
                Segment::Token(12, 7, 10)
            ]
        );
        out.clear();
        v.split_raw("a<s>xb hey", &Allowed::None, &mut out).unwrap();
        assert_eq!(out, vec![Segment::Text(0, 7), Segment::Token(12, 7, 10)]);
        out.clear();
        v.split_raw("<s>x<s>", &Allowed::Only(vec![10]), &mut out).unwrap();
        assert_eq!(
            out,
            vec![Segment::Token(10, 0, 3), Segment::Text(3, 4), Segment::Token(10, 4, 7)]
        );
        assert_eq!(v.find_disallowed("a<s>x", &Allowed::None), Some("<s>"));
        assert_eq!(v.find_disallowed("a<s>x", &Allowed::Only(vec![10])), Some("<s>x"));
        assert_eq!(v.find_disallowed("a<s>x", &Allowed::All), None);
    }

    #[test]
    fn strip_and_single_word() {
        let mut t = tok(5, "<mask>", true);
        t.lstrip = true;
        t.rstrip = true;
        let mut w = tok(6, "ab", false);
        w.single_word = true;
        let v = AddedVocabulary::new(vec![t, w], None).unwrap();
        let mut out = vec![];
        v.split_raw("x  <mask>  y ab cab", &Allowed::All, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                Segment::Text(0, 1),
                Segment::Token(5, 1, 11),
                Segment::Text(11, 13),
                Segment::Token(6, 13, 15),
                Segment::Text(15, 19)
            ]
        );
    }
}
