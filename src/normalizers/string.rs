//! A string with, for every byte, the range of the original text it came from.

pub struct NormalizedString {
    pub text: String,
    /// Original byte range of each byte of `text`; `None` while the text is
    /// an unchanged slice of the original starting at `base`.
    align: Option<Vec<(u32, u32)>>,
    base: usize,
    /// Whether alignments are kept (a counter needs only the text).
    track: bool,
}

impl NormalizedString {
    /// `text` is the slice of the original that starts at byte `base`.
    pub fn new(text: &str, base: usize) -> Self {
        NormalizedString {
            text: text.to_string(),
            align: None,
            base,
            track: true,
        }
    }

    /// `text` to normalize without alignments: its original ranges are not
    /// asked for (word counting), and keeping them would cost 8 bytes a byte.
    pub fn untracked(text: &str) -> Self {
        NormalizedString {
            track: false,
            ..NormalizedString::new(text, 0)
        }
    }

    /// Whether alignments are kept.
    pub fn tracks(&self) -> bool {
        self.track
    }

    /// Untracked only (see [`Self::tracks`]): the text rewritten character
    /// by character, `f` writing what each character becomes into the new
    /// text; returns false (and changes nothing) when alignments are kept.
    /// A counter's normalizer goes this way: a `(char, change)` list for
    /// [`Self::transform_changes`] costs 16 bytes a character, 4 MB for a
    /// 256 KB part of a corpus, where this builds the text alone.
    pub fn rewrite_untracked(&mut self, extra: usize, mut f: impl FnMut(char, &mut String)) -> bool {
        if self.track {
            return false;
        }
        let mut text = String::with_capacity(self.text.len() + extra);
        for c in self.text.chars() {
            f(c, &mut text);
        }
        self.text = text;
        true
    }

    /// Original byte range of byte `i`: the whole character it belongs to, as
    /// `tokenizers` aligns them.
    fn align_of(&self, i: usize) -> (usize, usize) {
        match &self.align {
            None => {
                let (s, e) = char_span(&self.text, i);
                (self.base + s, self.base + e)
            }
            Some(a) => {
                let (s, e) = a[i];
                (s as usize, e as usize)
            }
        }
    }

    /// Original byte range covered by `text[start..end]`.
    pub fn original_range(&self, start: usize, end: usize) -> (usize, usize) {
        if self.text.is_empty() {
            return (self.base, self.base);
        }
        if start >= end {
            let p = if start < self.text.len() {
                self.align_of(start).0
            } else {
                self.align_of(self.text.len() - 1).1
            };
            return (p, p);
        }
        (self.align_of(start).0, self.align_of(end - 1).1)
    }

    /// Replace byte ranges of the text. `chunks` are `(start, end, replacement)`,
    /// sorted and non-overlapping; bytes outside every chunk stay as they are.
    /// Replacement bytes take the original range of the last character they
    /// replace (an insertion takes that of the character that follows it).
    pub fn transform(&mut self, chunks: Vec<(usize, usize, String)>) {
        if chunks.is_empty() {
            return;
        }
        let old_len = self.text.len();
        let mut text = String::with_capacity(old_len + 16);
        let track = self.track;
        let mut align: Vec<(u32, u32)> = Vec::with_capacity(if track { old_len + 16 } else { 0 });
        let mut pos = 0;
        for (a, b, rep) in chunks {
            if track {
                for i in pos..a {
                    let (s, e) = self.align_of(i);
                    align.push((s as u32, e as u32));
                }
            }
            text.push_str(&self.text[pos..a]);
            if !track {
                text.push_str(&rep);
            } else if !rep.is_empty() {
                let (s, e) = if a < b {
                    // as `tokenizers` does, a replacement takes the span of the
                    // last character it replaces
                    self.align_of(b - 1)
                } else if a < old_len {
                    // insertion: take the span of the following character
                    let ch = self.text[a..].chars().next().map_or(1, |c| c.len_utf8());
                    (self.align_of(a).0, self.align_of(a + ch - 1).1)
                } else if old_len > 0 {
                    let p = self.align_of(old_len - 1).1;
                    (p, p)
                } else {
                    (self.base, self.base)
                };
                text.push_str(&rep);
                align.extend(std::iter::repeat_n((s as u32, e as u32), rep.len()));
            }
            pos = b;
        }
        text.push_str(&self.text[pos..]);
        if !track {
            self.text = text;
            return;
        }
        for i in pos..old_len {
            let (s, e) = self.align_of(i);
            align.push((s as u32, e as u32));
        }
        if text.is_empty() {
            // keep the position for empty results
            self.base = self.original_range(0, 0).0;
            self.align = None;
        } else {
            self.align = Some(align);
        }
        self.text = text;
    }
}

impl NormalizedString {
    /// The part `text[start..end]`, keeping its alignments.
    pub fn slice(&self, start: usize, end: usize) -> NormalizedString {
        let text = self.text[start..end].to_string();
        match &self.align {
            None => NormalizedString {
                text,
                align: None,
                base: self.base + start,
                track: self.track,
            },
            Some(a) => NormalizedString {
                text,
                align: Some(a[start..end].to_vec()),
                base: self.original_range(start, start).0,
                track: self.track,
            },
        }
    }
}

impl NormalizedString {
    /// Rewrite the whole text from a list of `(char, change)`, with the
    /// alignment rules of `tokenizers`: `change == 0` replaces the next
    /// character (and takes its alignment), `change == -n` also drops the `n`
    /// characters after it, `change == 1` inserts a character that takes the
    /// alignment of the byte before it. `initial_removed` characters are
    /// dropped from the start.
    pub fn transform_changes(&mut self, dest: &[(char, isize)], initial_removed: usize) {
        let old = std::mem::take(&mut self.text);
        let mut chars = old.char_indices().map(|(i, c)| (i, c.len_utf8()));
        let mut offset = 0usize;
        for _ in 0..initial_removed {
            if let Some((_, l)) = chars.next() {
                offset += l;
            }
        }
        let mut text = String::with_capacity(old.len());
        let track = self.track;
        let mut align: Vec<(u32, u32)> = Vec::with_capacity(if track { old.len() } else { 0 });
        // alignment of byte i of the old text
        let old_align = |i: usize| -> (u32, u32) {
            match &self.align {
                None => {
                    let (s, e) = char_span(&old, i);
                    ((self.base + s) as u32, (self.base + e) as u32)
                }
                Some(a) => a[i],
            }
        };
        for &(c, change) in dest {
            let a = if !track {
                (0, 0)
            } else if change > 0 {
                if offset == 0 {
                    (self.base as u32, self.base as u32)
                } else {
                    old_align(offset - 1)
                }
            } else if offset < old.len() {
                old_align(offset)
            } else if offset > 0 {
                let (_, e) = old_align(offset - 1);
                (e, e)
            } else {
                (self.base as u32, self.base as u32)
            };
            if change <= 0 {
                if let Some((_, l)) = chars.next() {
                    offset += l;
                }
            }
            if change < 0 {
                for _ in 0..(-change) {
                    if let Some((_, l)) = chars.next() {
                        offset += l;
                    }
                }
            }
            text.push(c);
            if track {
                align.extend(std::iter::repeat_n(a, c.len_utf8()));
            }
        }
        if !track {
            self.text = text;
            return;
        }
        if text.is_empty() {
            let p = if old.is_empty() {
                self.base
            } else {
                old_align(old.len() - 1).1 as usize
            };
            self.base = p;
            self.align = None;
        } else {
            self.align = Some(align);
        }
        self.text = text;
    }
}

/// Byte range of the character that contains byte `i` of `text`.
fn char_span(text: &str, i: usize) -> (usize, usize) {
    let b = text.as_bytes();
    let mut s = i.min(b.len());
    while s > 0 && s < b.len() && (b[s] & 0xC0) == 0x80 {
        s -= 1;
    }
    let len = text[s..].chars().next().map_or(1, char::len_utf8);
    (s, s + len)
}
