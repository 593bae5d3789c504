//! Safe cut points: where a text may be cut so that every pre-tokenizer
//! piece stays whole on one side (used to count a corpus in parts and to
//! encode a long document on several threads). A leaf module: the
//! tokenizer and the trainers both use it.

use crate::pre_tokenizers::PreTokenizer;

/// A cut at a lone U+0020 (no space on either side, no line break after
/// it), before it when `before`, else after it: the last at or before
/// `limit`, else the first after it.
pub fn space_cut_point(buf: &[u8], limit: usize, before: bool) -> Option<usize> {
    let limit = limit.min(buf.len());
    let plain = |b: u8| !matches!(b, b' ' | b'\n' | b'\r');
    let lone = |i: usize| i > 0 && i + 1 < buf.len() && buf[i] == b' ' && plain(buf[i - 1]) && plain(buf[i + 1]);
    let at = |i: usize| if before { i } else { i + 1 };
    (1..limit)
        .rev()
        .find(|&i| lone(i))
        .or_else(|| (limit..buf.len()).find(|&i| lone(i)))
        .map(at)
}

/// Where a text may be cut without changing any pre-tokenizer piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutRule {
    /// After a newline with a non-space character on each side (`x\nY`):
    /// the GPT-2 pattern, and the conservative choice for other patterns.
    Strict,
    /// After a newline whose following whitespace run has no line break (GPT-4,
    /// GPT-4o, Qwen: `\s*[\r\n]+` ends every run at its last line break).
    Newline,
    /// After any newline: each line is normalized and split on its own.
    Line,
}

/// The cut rule for a pre-tokenizer (by its split regex).
pub fn cut_rule(pre: Option<&PreTokenizer>) -> CutRule {
    match pre.and_then(|p| p.split_regex()) {
        Some(r) if crate::pattern::newline_ends_pieces(&r) => CutRule::Newline,
        _ => CutRule::Strict,
    }
}

/// A safe cut point near `limit`: the last one at or before it, else the first
/// one after it; `None` when the text has none.
pub fn cut_point(buf: &[u8], limit: usize, rule: CutRule) -> Option<usize> {
    let limit = limit.min(buf.len());
    let safe = |i: usize| buf[i - 1] == b'\n' && is_safe_cut(buf, i, rule);
    (2..=limit)
        .rev()
        .find(|&i| safe(i))
        .or_else(|| (limit + 1..buf.len()).find(|&i| safe(i)))
}

/// A cut on a character boundary at or before `limit` (for lines too long to keep whole).
pub fn char_boundary(buf: &[u8], limit: usize) -> usize {
    let mut i = limit.min(buf.len());
    while i > 0 && i < buf.len() && (buf[i] & 0xC0) == 0x80 {
        i -= 1;
    }
    if i == 0 {
        limit.min(buf.len())
    } else {
        i
    }
}

pub fn char_at(buf: &[u8], i: usize) -> Option<char> {
    let w = &buf[i..(i + 4).min(buf.len())];
    let valid = match std::str::from_utf8(w) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&w[..e.valid_up_to()]).unwrap_or_default(),
    };
    valid.chars().next()
}

/// A cut before a space between two letters (`x| y`), at or before `limit`,
/// else the first one after it. For the GPT-2, GPT-4 and GPT-4o patterns no
/// piece crosses it: a letter run ends at the space, a piece that starts with
/// the space (` y…`, `[^\r\n\p{L}\p{N}]?\p{L}+`) starts there, and no
/// whitespace or contraction alternative reaches across two letters.
pub fn word_cut_point(buf: &[u8], limit: usize) -> Option<usize> {
    let limit = limit.min(buf.len());
    let safe = |i: usize| {
        buf[i] == b' '
            && i > 0
            && char_before(buf, i).is_some_and(char::is_alphabetic)
            && char_at(buf, i + 1).is_some_and(char::is_alphabetic)
    };
    (1..limit)
        .rev()
        .find(|&i| safe(i))
        .or_else(|| (limit..buf.len()).find(|&i| safe(i)))
}

/// The character that ends at byte `i`.
pub fn char_before(buf: &[u8], i: usize) -> Option<char> {
    let mut s = i.checked_sub(1)?;
    while s > 0 && (buf[s] & 0xC0) == 0x80 && i - s < 4 {
        s -= 1;
    }
    std::str::from_utf8(&buf[s..i]).ok().and_then(|t| t.chars().next_back())
}

/// `buf[i - 1]` is a newline: may the text be cut at `i`?
pub fn is_safe_cut(buf: &[u8], i: usize, rule: CutRule) -> bool {
    if i < 2 || i >= buf.len() {
        return false;
    }
    match rule {
        CutRule::Strict => {
            let before = {
                let mut s = i - 2;
                while s > 0 && (buf[s] & 0xC0) == 0x80 && i - 2 - s < 4 {
                    s -= 1;
                }
                std::str::from_utf8(&buf[s..i - 1])
                    .ok()
                    .and_then(|t| t.chars().next_back())
            };
            // `/` may extend a punctuation piece across newlines (GPT-4o: `[\r\n/]*`)
            matches!((before, char_at(buf, i)), (Some(b), Some(a)) if !b.is_whitespace() && !a.is_whitespace() && a != '/')
        }
        CutRule::Line => true,
        CutRule::Newline => {
            // the whitespace run that follows must hold no line break, and `/`
            // may not follow directly
            let mut j = i;
            while let Some(c) = char_at(buf, j) {
                if c == '\r' || c == '\n' {
                    return false;
                }
                if j == i && c == '/' {
                    return false;
                }
                if !c.is_whitespace() {
                    return true;
                }
                j += c.len_utf8();
            }
            false
        }
    }
}
