//! BERT normalization, BERT pre-tokenization and WordPiece in one pass.
//!
//! The text is read once, left to right. ASCII bytes go through a class
//! table (word byte, space, punctuation, control) and are lowercased in
//! place; other characters through the per-character flags of
//! `normalizers::bert` (one table lookup in the BMP), applying the stages in
//! their order: `clean_text`, `handle_chinese_chars`, `strip_accents` (NFD,
//! then non-spacing marks deleted), `lowercase`, then the split. The
//! normalized bytes of the current word go straight into the LinMaxMatch
//! automaton, which writes each token as soon as it is certain; a word that
//! turns out too long or unsplittable is cut back to the unknown token.
//!
//! Why it equals the staged pipeline: every stage works character by
//! character except NFD's canonical reordering, which only moves
//! non-starters within a run of them; the marks among them are deleted
//! anyway, so the order matters only when a non-starter survives. Then (and
//! for nothing else) the pass redoes the stretch of text between two ASCII
//! spaces through the staged normalizer and pre-tokenizer. An ASCII space,
//! tab, CR or LF is a split point in every configuration and a starter, so
//! no stage carries anything across it.

use super::linmax::{Automaton, Cursor};
use super::words::{self, WordTable};
use super::WordPiece;
use crate::normalizers::bert::{char_flags, flags, BertNormalizer};
use crate::normalizers::{NormalizedString, Normalizer};
use crate::pre_tokenizers::bert::bert_pre_tokenize;
use crate::pre_tokenizers::{PreTokenizedString, PreTokenizer};

/// Which BERT normalizer steps run (all off: no normalizer).
#[derive(Clone, Copy, Default)]
struct Steps {
    clean: bool,
    chinese: bool,
    strip: bool,
    lower: bool,
}

impl Steps {
    fn of(n: &BertNormalizer) -> Self {
        Steps {
            clean: n.clean_text,
            chinese: n.handle_chinese_chars,
            strip: n.strip_accents.unwrap_or(n.lowercase),
            lower: n.lowercase,
        }
    }
}

/// Class of an ASCII byte before any step.
const WORD: u8 = 0;
/// ' ', '\t', '\n', '\r': a split point in every configuration
const SPACE: u8 = 1;
const PUNCT: u8 = 2;
/// a control character: deleted by `clean_text`, else part of a word
const CONTROL: u8 = 3;
/// '\x0b', '\x0c': deleted by `clean_text`, else whitespace
const CONTROL_SPACE: u8 = 4;
const NON_ASCII: u8 = 5;

static CLASS: [u8; 256] = {
    let mut t = [NON_ASCII; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b' ' | b'\t' | b'\n' | b'\r' => SPACE,
            0x0b | 0x0c => CONTROL_SPACE,
            0..=0x1f | 0x7f => CONTROL,
            c if c.is_ascii_punctuation() => PUNCT,
            _ => WORD,
        };
        b += 1;
    }
    t
};

/// Encode `text` in one pass if the stages are a BERT normalizer (or none)
/// and the BERT pre-tokenizer; false, nothing written, otherwise.
pub(super) fn encode(
    wp: &WordPiece,
    normalizer: Option<&Normalizer>,
    pre_tokenizer: Option<&PreTokenizer>,
    text: &str,
    out: &mut Vec<u32>,
) -> bool {
    if !matches!(pre_tokenizer, Some(PreTokenizer::BertPreTokenizer)) {
        return false;
    }
    // words are matched as they stream in, from the word-start root: no
    // word may begin with the prefix, as none can when the prefix starts
    // with a character the pre-tokenizer splits off
    let splits = |c: char| char_flags(c) & (flags::SPACE | flags::PUNCT) != 0;
    if !wp.continuing_subword_prefix.chars().next().is_some_and(splits) {
        return false;
    }
    let (bert, steps) = match normalizer {
        None => (None, Steps::default()),
        Some(Normalizer::BertNormalizer(n)) => (Some(n), Steps::of(n)),
        Some(_) => return false,
    };
    let tables = wp.tables();
    let automaton = &tables.automaton;
    let mut pass = Pass {
        wp,
        automaton,
        words: &tables.words,
        bert,
        steps,
        cursor: automaton.start(out.len()),
        chars: 0,
        out,
    };
    pass.run(text);
    true
}

struct Pass<'a> {
    wp: &'a WordPiece,
    automaton: &'a Automaton,
    words: &'a WordTable,
    bert: Option<&'a BertNormalizer>,
    steps: Steps,
    /// the current word, matched as its normalized bytes arrive
    cursor: Cursor,
    /// characters in the current word (0: between words)
    chars: usize,
    out: &'a mut Vec<u32>,
}

impl Pass<'_> {
    fn run(&mut self, text: &str) {
        let bytes = text.as_bytes();
        // where the current stretch between ASCII spaces starts, in the
        // text and in `out`
        let mut stretch = (0, self.out.len());
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match CLASS[b as usize] {
                WORD => i = self.ascii_word(bytes, i),
                SPACE => {
                    self.flush();
                    i += 1;
                    stretch = (i, self.out.len());
                }
                PUNCT => {
                    self.flush();
                    self.punct(b);
                    i += 1;
                }
                CONTROL => {
                    if !self.steps.clean {
                        self.push_bytes(&[b]);
                    }
                    i += 1;
                }
                CONTROL_SPACE => {
                    if !self.steps.clean {
                        self.flush();
                    }
                    i += 1;
                }
                _ => {
                    let Some(c) = text[i..].chars().next() else { break };
                    if self.char(c) {
                        i += c.len_utf8();
                    } else {
                        i = self.staged(text, stretch);
                    }
                }
            }
        }
        self.flush();
    }

    /// The run of ASCII word bytes at `bytes[i..]`: one table probe when it
    /// is a whole word, else into the automaton. The position after it.
    #[inline(always)]
    fn ascii_word(&mut self, bytes: &[u8], i: usize) -> usize {
        let run = bytes[i..].iter().take_while(|&&b| CLASS[b as usize] == WORD).count();
        let ends = bytes
            .get(i + run)
            .is_none_or(|&b| matches!(CLASS[b as usize], SPACE | PUNCT));
        if !(self.chars == 0 && ends && self.whole_ascii(bytes, i, run)) {
            self.begin();
            let lower = self.steps.lower;
            for &b in &bytes[i..i + run] {
                let b = if lower { b.to_ascii_lowercase() } else { b };
                self.automaton.step(&mut self.cursor, b, self.out);
            }
            self.chars += run;
        }
        i + run
    }

    /// A whole ASCII word at `bytes[at..at + len]` that is one token: its id
    /// written, true.
    #[inline(always)]
    fn whole_ascii(&mut self, bytes: &[u8], at: usize, len: usize) -> bool {
        if len > words::MAX_KEY || len > self.wp.max_input_chars_per_word {
            return false;
        }
        let key = words::ascii_key(bytes, at, len, self.steps.lower);
        match self.words.get(&key, len) {
            Some(id) => {
                self.out.push(id);
                true
            }
            None => false,
        }
    }

    /// Start a word unless one is under way.
    #[inline(always)]
    fn begin(&mut self) {
        if self.chars == 0 {
            self.cursor = self.automaton.start(self.out.len());
        }
    }

    /// One character's bytes into the current word.
    #[inline]
    fn push_bytes(&mut self, bytes: &[u8]) {
        self.begin();
        for &b in bytes {
            self.automaton.step(&mut self.cursor, b, self.out);
        }
        self.chars += 1;
    }

    /// End the current word: its tokens stay, or all of it becomes the
    /// unknown token (too long, or some position without a match).
    #[inline]
    fn flush(&mut self) {
        if self.chars == 0 {
            return;
        }
        if self.chars > self.wp.max_input_chars_per_word || !self.automaton.finish(&mut self.cursor, self.out) {
            self.out.truncate(self.cursor.start);
            self.out.push(self.wp.unk_id);
        }
        self.chars = 0;
    }

    /// An ASCII punctuation character: a word of its own.
    #[inline]
    fn punct(&mut self, b: u8) {
        let tok = match self.wp.max_input_chars_per_word {
            0 => None,
            _ => self.automaton.byte_token(b),
        };
        self.out.push(tok.unwrap_or(self.wp.unk_id));
    }

    /// One non-ASCII character through every step; false when NFD would
    /// reorder a character that stays (the stretch goes the staged way).
    fn char(&mut self, c: char) -> bool {
        let f = char_flags(c);
        if self.steps.clean && f & flags::CONTROL != 0 {
            return true;
        }
        if f & flags::SPACE != 0 {
            self.flush();
            return true;
        }
        if self.steps.chinese && f & flags::CHINESE != 0 {
            self.flush();
            let unchanged = f & (flags::DECOMPOSES | flags::MARK | flags::NONSTARTER | flags::LOWER) == 0;
            if unchanged && self.wp.max_input_chars_per_word > 0 {
                // a word of one character: a token or unknown
                let id = self.words.get(&words::char_key(c), c.len_utf8());
                self.out.push(id.unwrap_or(self.wp.unk_id));
                return true;
            }
            let ok = self.decompose(c, f);
            self.flush();
            return ok;
        }
        self.decompose(c, f)
    }

    /// `strip_accents`' NFD, then the rest.
    fn decompose(&mut self, c: char, f: u8) -> bool {
        if !self.steps.strip || f & flags::DECOMPOSES == 0 {
            return self.strip_and_lower(c, f);
        }
        let mut ok = true;
        unicode_normalization::char::decompose_canonical(c, |d| ok &= self.strip_and_lower(d, char_flags(d)));
        ok
    }

    /// One character of the NFD text: deleted if a mark, lowercased, split.
    fn strip_and_lower(&mut self, c: char, f: u8) -> bool {
        if self.steps.strip {
            if f & flags::MARK != 0 {
                return true;
            }
            if f & flags::NONSTARTER != 0 {
                return false;
            }
        }
        if self.steps.lower && f & flags::LOWER != 0 {
            for l in c.to_lowercase() {
                self.split(l, char_flags(l));
            }
        } else {
            self.split(c, f);
        }
        true
    }

    /// The pre-tokenizer on one normalized character.
    #[inline]
    fn split(&mut self, c: char, f: u8) {
        if f & flags::SPACE != 0 {
            self.flush();
        } else if f & flags::PUNCT != 0 {
            self.flush();
            self.push_char(c);
            self.flush();
        } else {
            self.push_char(c);
        }
    }

    #[inline]
    fn push_char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.push_bytes(c.encode_utf8(&mut buf).as_bytes());
    }

    /// Redo the stretch from `stretch.0` to the next ASCII space with the
    /// staged normalizer and pre-tokenizer, dropping what the pass wrote for
    /// it; the position after it.
    #[cold]
    fn staged(&mut self, text: &str, stretch: (usize, usize)) -> usize {
        let (from, written) = stretch;
        self.out.truncate(written);
        self.chars = 0;
        let end = text.as_bytes()[from..]
            .iter()
            .position(|&b| CLASS[b as usize] == SPACE)
            .map_or(text.len(), |p| from + p);
        let mut ns = NormalizedString::new(&text[from..end], 0);
        if let Some(n) = self.bert {
            n.normalize(&mut ns);
        }
        let mut p = PreTokenizedString::new(ns);
        bert_pre_tokenize(&mut p);
        for &(a, b) in &p.pieces {
            self.wp.encode_word_ids(&p.ns.text.as_bytes()[a..b], self.out);
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Model;

    fn model() -> WordPiece {
        let tokens = [
            "[UNK]", "hello", "world", "un", "##aff", "##able", "e", "##e", "a", "##a", "!", ",", "\u{4e2d}", "x",
            "##x", "cafe", "\u{e9}", "##\u{e9}", "caf", "#", "\u{302e}",
        ];
        let v = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordPiece::new(v, "[UNK]".into(), "##".into(), 8).unwrap()
    }

    /// The pipeline one stage at a time, as the tokenizer runs it.
    fn staged(wp: &WordPiece, n: Option<&BertNormalizer>, text: &str) -> Vec<u32> {
        let mut ns = NormalizedString::new(text, 0);
        if let Some(n) = n {
            n.normalize(&mut ns);
        }
        let mut p = PreTokenizedString::new(ns);
        bert_pre_tokenize(&mut p);
        let mut pieces = vec![];
        for &(a, b) in &p.pieces {
            wp.encode_piece(&p.ns.text.as_bytes()[a..b], &mut pieces);
        }
        pieces.into_iter().map(|p| p.0).collect()
    }

    #[test]
    fn fused_equals_staged() {
        let wp = model();
        let texts = [
            "Hello, World!",
            "unaffable unaffablex aaaaaaaa aaaaaaaaa",
            "CAF\u{c9} cafe\u{301} caf\u{e9}\u{e9}",
            "a\u{4e2d}b \u{4e2d}\u{4e2d}x",
            "e\u{301}\u{302e}\u{316}x hello e\u{302e}",
            "\u{0}he\u{7f}llo\u{b}world\u{85}x\u{a0}y #a ##a",
            "",
        ];
        for strip in [None, Some(true), Some(false)] {
            for (clean, chinese, lowercase) in [(true, true, true), (false, false, false), (true, false, true)] {
                let n = BertNormalizer {
                    clean_text: clean,
                    handle_chinese_chars: chinese,
                    strip_accents: strip,
                    lowercase,
                };
                let norm = Normalizer::BertNormalizer(n.clone());
                for text in texts {
                    let mut out = vec![];
                    assert!(wp.encode_fused(Some(&norm), Some(&PreTokenizer::BertPreTokenizer), text, &mut out));
                    assert_eq!(out, staged(&wp, Some(&n), text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn declines_other_stages() {
        let wp = model();
        let mut out = vec![];
        assert!(!wp.encode_fused(None, None, "hello", &mut out));
        assert!(!wp.encode_fused(
            Some(&Normalizer::NFC),
            Some(&PreTokenizer::BertPreTokenizer),
            "hello",
            &mut out
        ));
        assert!(out.is_empty());
    }
}
