//! Pieces of ASCII text found from bit masks of a 64-byte window.
//!
//! Most of English text and code is ASCII, where each of the pattern's
//! classes is a set of byte values. A `Window` holds, for 64 bytes of the
//! text, one bit per byte for each class (computed 32 bytes at a time with
//! AVX2, or 16 with SSE2, on x86-64).
//!
//! o200k asks a window for one piece at a time: the end of a run of
//! capitals, small letters, whitespace or punctuation is one shift and one
//! count of trailing zeros, where the byte scanner looks at each byte and
//! takes a branch on its class. A run that reaches a non-ASCII byte (which
//! may be a letter, a number, a space...) or the window's end is carried on
//! by the byte scanner from there, and a piece whose alternative the masks
//! cannot tell (a word after a non-ASCII character, say) is left to the
//! byte scanner whole (`None`).
//!
//! cl100k, whose pattern has no case classes, takes all the pieces of a
//! window at once: `cl100k_starts` computes the start of every piece from
//! the masks with shifts, carries and no branch on the text, as far as the
//! masks are certain of them (1 MB of English or code is scanned about
//! twice as fast as by the byte scanner).
//!
//! Either way every answer is the byte scanner's; the tests check that on
//! random text against it (and the scanner's own tests against the regex
//! engine).

use super::{Scanner, L, N, NL, S};

/// Bytes a window covers.
pub(super) const WIDTH: usize = 64;

/// A new window is taken when the next piece starts this far into the
/// current one (so that a piece of up to `WIDTH - REFILL` bytes starting
/// before it ends inside the window).
pub(super) const REFILL: usize = 48;

/// Class masks of 64 bytes of text: bit `k` is the byte at the window's
/// start plus `k`.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct Window {
    /// bytes below 0x80
    pub ascii: u64,
    /// `A-Za-z` (the ASCII `\p{L}`)
    pub letter: u64,
    /// `A-Z`
    pub upper: u64,
    /// `0-9` (the ASCII `\p{N}`)
    pub digit: u64,
    /// `\t \n \x0B \x0C \r` and space (the ASCII `\s`)
    pub space: u64,
    /// `\r \n`
    pub newline: u64,
    /// `/`
    pub slash: u64,
    /// The masks only cl100k's windows use (`Window::full`; zero otherwise).
    pub more: More,
}

/// Masks of the bytes cl100k's contractions and `' '` stand for.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct More {
    /// `' '` (the one space that joins punctuation after it)
    pub blank: u64,
    /// `'`
    pub quote: u64,
    /// `s d m t`, either case (the one-letter contractions)
    pub sdmt: u64,
    /// `l`, either case
    pub l: u64,
    /// `v r`, either case
    pub vr: u64,
    /// `e`, either case
    pub e: u64,
}

impl Window {
    /// The masks of `b[p..p + WIDTH]` (which must be in `b`), with AVX2
    /// when `avx2` (which the caller has checked the CPU has).
    #[inline]
    pub fn at(b: &[u8], p: usize, avx2: bool) -> Window {
        Self::masks::<false>(b, p, avx2)
    }

    /// `at` with the masks of `More` too.
    #[inline]
    pub fn full(b: &[u8], p: usize, avx2: bool) -> Window {
        Self::masks::<true>(b, p, avx2)
    }

    #[inline(always)]
    fn masks<const MORE: bool>(b: &[u8], p: usize, avx2: bool) -> Window {
        let block: &[u8; WIDTH] = b[p..p + WIDTH].try_into().expect("a whole window");
        #[cfg(target_arch = "x86_64")]
        {
            if avx2 {
                // SAFETY: `avx2` is only set where the CPU has AVX2
                unsafe { with_avx2::<MORE>(block) }
            } else {
                sse2::<MORE>(block)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = avx2;
            Window::scalar(block)
        }
    }

    /// The masks computed one byte at a time (the reference the SIMD version
    /// is tested against, and the version on other targets).
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub fn scalar(block: &[u8; WIDTH]) -> Window {
        let mut w = Window::default();
        for (k, &c) in block.iter().enumerate() {
            let bit = 1u64 << k;
            let set = |m: &mut u64, yes: bool| {
                if yes {
                    *m |= bit;
                }
            };
            set(&mut w.ascii, c < 0x80);
            set(&mut w.letter, c.is_ascii_alphabetic());
            set(&mut w.upper, c.is_ascii_uppercase());
            set(&mut w.digit, c.is_ascii_digit());
            set(&mut w.space, matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' '));
            set(&mut w.newline, matches!(c, b'\r' | b'\n'));
            set(&mut w.slash, c == b'/');
            let m = &mut w.more;
            set(&mut m.blank, c == b' ');
            set(&mut m.quote, c == b'\'');
            let c = c.to_ascii_lowercase();
            set(&mut m.sdmt, matches!(c, b's' | b'd' | b'm' | b't'));
            set(&mut m.l, c == b'l');
            set(&mut m.vr, matches!(c, b'v' | b'r'));
            set(&mut m.e, c == b'e');
        }
        w
    }

    /// ASCII bytes outside letters, digits and whitespace: the ASCII
    /// `[^\s\p{L}\p{N}]`.
    #[inline(always)]
    fn punct(&self) -> u64 {
        self.ascii & !(self.letter | self.digit | self.space)
    }
}

/// The masks with SSE2 (part of every x86-64 CPU), 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sse2<const MORE: bool>(block: &[u8; WIDTH]) -> Window {
    use std::arch::x86_64::*;
    let mut w = Window::default();
    // SAFETY: SSE2 is in the x86-64 baseline; the loads read 4 x 16 bytes
    // of `block`, which has 64.
    unsafe {
        // bytes in `lo..lo + n`: shifted so that range starts at -128, then
        // a signed comparison
        let in_range = |v: __m128i, lo: u8, n: u8| {
            let shifted = _mm_add_epi8(v, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
            _mm_cmpgt_epi8(_mm_set1_epi8((0x80u8.wrapping_add(n)) as i8), shifted)
        };
        let eq = |v: __m128i, c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        let bits = |m: __m128i| _mm_movemask_epi8(m) as u16 as u64;
        for j in 0..WIDTH / 16 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * j) as *const __m128i);
            let sh = 16 * j;
            w.ascii |= (!bits(v) & 0xFFFF) << sh;
            // setting bit 5 maps A-Z onto a-z and no other byte into a-z
            w.letter |= bits(in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', 26)) << sh;
            w.upper |= bits(in_range(v, b'A', 26)) << sh;
            w.digit |= bits(in_range(v, b'0', 10)) << sh;
            w.space |= bits(_mm_or_si128(in_range(v, b'\t', 5), eq(v, b' '))) << sh;
            w.newline |= bits(_mm_or_si128(eq(v, b'\n'), eq(v, b'\r'))) << sh;
            w.slash |= bits(eq(v, b'/')) << sh;
            if MORE {
                let m = &mut w.more;
                let low = _mm_or_si128(v, _mm_set1_epi8(0x20));
                m.blank |= bits(eq(v, b' ')) << sh;
                m.quote |= bits(eq(v, b'\'')) << sh;
                let sdmt = _mm_or_si128(
                    _mm_or_si128(eq(low, b's'), eq(low, b'd')),
                    _mm_or_si128(eq(low, b'm'), eq(low, b't')),
                );
                m.sdmt |= bits(sdmt) << sh;
                m.l |= bits(eq(low, b'l')) << sh;
                m.vr |= bits(_mm_or_si128(eq(low, b'v'), eq(low, b'r'))) << sh;
                m.e |= bits(eq(low, b'e')) << sh;
            }
        }
    }
    w
}

/// Whether this CPU runs `Window::at` with AVX2.
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The masks with AVX2, 32 bytes at a time (the same steps as `sse2`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2<const MORE: bool>(block: &[u8; WIDTH]) -> Window {
    use std::arch::x86_64::*;
    let mut w = Window::default();
    let in_range = |v: __m256i, lo: u8, n: u8| {
        let shifted = _mm256_add_epi8(v, _mm256_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
        _mm256_cmpgt_epi8(_mm256_set1_epi8((0x80u8.wrapping_add(n)) as i8), shifted)
    };
    let eq = |v: __m256i, c: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8));
    let bits = |m: __m256i| _mm256_movemask_epi8(m) as u32 as u64;
    for j in 0..WIDTH / 32 {
        // SAFETY: 2 x 32 bytes of `block`, which has 64
        let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * j) as *const __m256i) };
        let sh = 32 * j;
        w.ascii |= (!bits(v) & 0xFFFF_FFFF) << sh;
        w.letter |= bits(in_range(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), b'a', 26)) << sh;
        w.upper |= bits(in_range(v, b'A', 26)) << sh;
        w.digit |= bits(in_range(v, b'0', 10)) << sh;
        w.space |= bits(_mm256_or_si256(in_range(v, b'\t', 5), eq(v, b' '))) << sh;
        w.newline |= bits(_mm256_or_si256(eq(v, b'\n'), eq(v, b'\r'))) << sh;
        w.slash |= bits(eq(v, b'/')) << sh;
        if MORE {
            let m = &mut w.more;
            let low = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
            m.blank |= bits(eq(v, b' ')) << sh;
            m.quote |= bits(eq(v, b'\'')) << sh;
            let sdmt = _mm256_or_si256(
                _mm256_or_si256(eq(low, b's'), eq(low, b'd')),
                _mm256_or_si256(eq(low, b'm'), eq(low, b't')),
            );
            m.sdmt |= bits(sdmt) << sh;
            m.l |= bits(eq(low, b'l')) << sh;
            m.vr |= bits(_mm256_or_si256(eq(low, b'v'), eq(low, b'r'))) << sh;
            m.e |= bits(eq(low, b'e')) << sh;
        }
    }
    w
}

/// End of the run of `mask` bits from `k` (at most `WIDTH`), and whether
/// the masks know it ends there: inside the window, at an ASCII byte.
#[inline(always)]
fn run_end(mask: u64, k: u32, ascii: u64) -> (u32, bool) {
    let e = k + (!(mask >> k)).trailing_zeros();
    (e, e < WIDTH as u32 && ascii >> e & 1 != 0)
}

impl Scanner {
    /// The end of a run of `mask` bits from offset `k` of the window at
    /// `base`; where the masks cannot tell (the window's end, a non-ASCII
    /// byte), `more` carries the run on from there with the byte scanner.
    #[inline(always)]
    fn window_run(w: &Window, base: usize, k: u32, mask: u64, more: impl FnOnce(usize) -> usize) -> usize {
        let (e, known) = run_end(mask, k, w.ascii);
        if known {
            base + e as usize
        } else {
            more(base + e as usize)
        }
    }

    /// `[\r\n/]*` from offset `k`.
    #[inline(always)]
    fn window_breaks(w: &Window, b: &[u8], base: usize, k: u32) -> usize {
        let e = k + (!((w.newline | w.slash) >> k)).trailing_zeros();
        let e = base + e as usize;
        if e == base + WIDTH {
            super::o200k_breaks(b, e)
        } else {
            e
        }
    }

    /// The whitespace alternatives `\s*[\r\n]+|\s+(?!\S)|\s+` at `i` (a
    /// whitespace byte at offset `k`).
    #[inline(always)]
    fn window_whitespace(&self, w: &Window, b: &[u8], i: usize, k: u32) -> usize {
        // the run must end inside the window (so not at the text's end),
        // at a character that is not a space
        let (e, known) = run_end(w.space, k, w.ascii);
        let base = i - k as usize;
        // (a non-ASCII character after the run is looked up: most are not
        // spaces)
        if !known && (e == WIDTH as u32 || self.cls(b, base + e as usize).0 & S != 0) {
            return self.whitespace(b, i, true);
        }
        // \s*[\r\n]+ : just after the run's last line break
        let breaks = w.newline & ((1u64 << e) - 1) >> k << k;
        if breaks != 0 {
            return base + (64 - breaks.leading_zeros()) as usize;
        }
        // \s+(?!\S) : all but the last character, if that leaves any; else \s+
        base + if e - k > 1 { e - 1 } else { e } as usize
    }

    /// `\p{N}{1,max}` at `i` (a digit at offset `k`).
    #[inline(always)]
    fn window_digits(&self, w: &Window, b: &[u8], i: usize, k: u32, max: usize) -> usize {
        let (e, known) = run_end(w.digit, k, w.ascii);
        let n = (e - k) as usize;
        if n >= max {
            i + max
        } else if known {
            i + n
        } else {
            // a non-ASCII number may follow
            self.digits(b, i + n, max - n)
        }
    }

    /// An o200k piece at `i`, an ASCII byte at offset `k` of the window `w`:
    /// the same end as `o200k`, or `None` when the masks do not decide it.
    #[inline(always)]
    pub(super) fn o200k_window(&self, w: &Window, b: &[u8], i: usize, k: u32) -> Option<usize> {
        debug_assert!(b[i] < 0x80 && (k as usize) < REFILL);
        debug_assert!(self.t.ascii[b[i] as usize] & (L | N | S | NL) == class_bits(w, k));
        let base = i - k as usize;
        let c = b[i];
        let bit = 1u64 << k;
        // The two word alternatives: in ASCII the "upper" and "lower"
        // classes are A-Z and a-z, so either matches a word starting at a
        // letter: the capitals, then the small letters (both alternatives
        // end there), then an optional contraction. With the optional
        // prefix `[^\r\n\p{L}\p{N}]` first.
        let start = if w.letter & bit != 0 {
            Some(k)
        } else if (w.digit | w.newline) & bit == 0 {
            if w.letter >> (k + 1) & 1 != 0 {
                Some(k + 1)
            } else if w.ascii >> (k + 1) & 1 == 0 {
                // the next character may be a letter or a mark
                return None;
            } else {
                None
            }
        } else {
            None
        };
        if let Some(s) = start {
            // (a non-ASCII byte after either run may be of either class,
            // and the window's end leaves the run open: the byte scanner
            // then decides)
            let (upper, known) = run_end(w.upper, s, w.ascii);
            if !known {
                return None;
            }
            let (lower, known) = run_end(w.letter & !w.upper, upper, w.ascii);
            if !known {
                return None;
            }
            let e = base + lower as usize;
            return Some(if b[e] == b'\'' {
                e + self.contraction(b, e, true)
            } else {
                e
            });
        }
        // \p{N}{1,3}
        if w.digit & bit != 0 {
            return Some(self.window_digits(w, b, i, k, 3));
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let punct = w.punct();
        let from = if punct & bit != 0 {
            Some(k)
        } else if c == b' ' && punct >> (k + 1) & 1 != 0 {
            Some(k + 1)
        } else {
            None
        };
        if let Some(p) = from {
            let e = Self::window_run(w, base, p, punct, |p| self.run_punct(b, p));
            return Some(if e < base + WIDTH {
                Self::window_breaks(w, b, base, (e - base) as u32)
            } else {
                super::o200k_breaks(b, e)
            });
        }
        Some(self.window_whitespace(w, b, i, k))
    }
}

/// The cl100k pieces of the window `w` at a piece start, as far as its
/// masks know them: a bit at the start of each piece before the offset
/// where the masks stop being certain, and that offset.
///
/// The pattern `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}|
/// ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+` cuts ASCII text at:
///
/// - the start of each letter run, unless the character before it is a
///   prefix (`[^\r\n\p{L}\p{N}]`) that starts a piece: a whitespace
///   character other than a line break (always the start of a piece: the
///   last of a run of them is given back by `\s+(?!\S)`), or a single
///   punctuation character that is not joined to a space before it;
/// - each `max_digits` digits of a run of digits, from its start;
/// - the start of a run of punctuation, or the space just before it (which
///   `" ?"` joins to it); the line breaks right after the run are its own
///   (`[\r\n]*`);
/// - in a run of whitespace (less the line breaks a punctuation run took):
///   its start, just after its last line break (`\s*[\r\n]`), and its last
///   character if that is not a line break (`\s+(?!\S)` gives it back);
/// - a contraction: an apostrophe that starts a piece (not inside a run of
///   punctuation, not after a space) followed by `s d m t`, or `ll ve re`,
///   in either case: the letters after it start a new piece.
///
/// Bits past the first non-ASCII byte are unknown, and so is the end of a
/// run of whitespace that reaches it or the window's end (the next byte may
/// be whitespace too): the certain part ends before that.
#[inline(always)]
pub(super) fn cl100k_starts(w: &Window, max_digits: usize) -> (u64, u32) {
    // bits at and after the first non-ASCII byte count as no class
    let known_len = w.ascii.trailing_ones();
    let known = below(known_len);
    let (letter, digit, space, nl) = (w.letter & known, w.digit & known, w.space & known, w.newline & known);
    let punct = known & !(letter | digit | space);
    let m = &w.more;
    let blank = m.blank & known;
    // (x << 1: bit k is x's bit k - 1, "the byte before"; x >> 1: "after")
    let punct_start = punct & !(punct << 1);
    // a punctuation run's line breaks
    let after_punct = nl & (punct << 1);
    let taken = nl & !nl.wrapping_add(after_punct);
    let ws = space & !taken;
    let ws_start = ws & !(ws << 1);
    let ws_last = ws & !(ws >> 1);
    // the whitespace after each run's last line break: the run's tail,
    // found from its end backwards (a carry through the reversed masks)
    let tail_bits = ws & !nl;
    let (ws_r, tail_r) = (ws.reverse_bits(), tail_bits.reverse_bits());
    let ends_r = ws_r & !(ws_r << 1) & tail_r;
    let tail = (tail_r & !tail_r.wrapping_add(ends_r)).reverse_bits();
    let tail_start = tail & !(tail << 1);
    // prefixes that start a piece, before a letter
    let lone_punct = punct_start & !(blank << 1);
    let prefix = (lone_punct | (ws & !nl)) & (letter >> 1);
    let letter_start = letter & !(letter << 1) & !(prefix << 1);
    // contractions
    let quote = m.quote & lone_punct;
    let one = quote & (m.sdmt >> 1);
    let two = quote & (((m.l >> 1) & (m.l >> 2)) | ((m.vr >> 1) & (m.e >> 2)));
    let after_contraction = ((one << 2) | (two << 3)) & letter;
    // digits, `max_digits` at a time
    let mut groups = digit & !(digit << 1);
    if max_digits > 1 {
        let mut full = digit;
        for k in 1..max_digits {
            full &= digit << k;
        }
        loop {
            let next = groups | ((groups << max_digits) & full);
            if next == groups {
                break;
            }
            groups = next;
        }
    } else {
        groups = digit;
    }
    let starts = 1
        | letter_start
        | (punct_start & !(blank << 1))
        | groups
        | ws_start
        | tail_start
        | (ws_last & !nl)
        | after_contraction;
    // the run of whitespace that reaches the unknown part
    let open_ws = if known_len > 0 && space >> (known_len - 1) & 1 != 0 {
        (space << (64 - known_len)).leading_ones()
    } else {
        0
    };
    let cut = known_len - open_ws;
    (starts & known & below(cut), cut)
}

/// The bits below `k` (at most 64).
#[inline(always)]
fn below(k: u32) -> u64 {
    if k >= 64 {
        !0
    } else {
        (1u64 << k) - 1
    }
}

/// The scanner classes of the byte at `k` as the window sees them (for a
/// debug check against the tables).
fn class_bits(w: &Window, k: u32) -> u8 {
    let at = |m: u64| m >> k & 1 != 0;
    (if at(w.letter) { L } else { 0 })
        | (if at(w.digit) { N } else { 0 })
        | (if at(w.space) { S } else { 0 })
        | (if at(w.newline) { NL } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn ascii_classes_are_the_tables() {
        // the byte values the window's masks stand for are exactly the
        // scanner tables' ASCII members of each class
        let t = super::super::Tables::get();
        let mut block = [0u8; WIDTH];
        for base in (0..256).step_by(WIDTH) {
            for (k, c) in block.iter_mut().enumerate() {
                *c = (base + k) as u8;
            }
            let w = Window::scalar(&block);
            for (k, &c) in block.iter().enumerate() {
                let at = |m: u64| m >> k & 1 != 0;
                assert_eq!(at(w.ascii), c < 0x80);
                if c >= 0x80 {
                    assert_eq!(
                        (at(w.letter), at(w.digit), at(w.space), at(w.newline)),
                        (false, false, false, false)
                    );
                    continue;
                }
                let f = t.ascii[c as usize];
                assert_eq!(at(w.letter), f & L != 0, "{c:#x}");
                assert_eq!(at(w.upper), f & super::super::UP != 0 && f & L != 0, "{c:#x}");
                assert_eq!(at(w.letter) && !at(w.upper), f & super::super::LO != 0, "{c:#x}");
                assert_eq!(at(w.digit), f & N != 0, "{c:#x}");
                assert_eq!(at(w.space), f & S != 0, "{c:#x}");
                assert_eq!(at(w.newline), f & NL != 0, "{c:#x}");
                assert_eq!(at(w.slash), c == b'/');
                assert_eq!(at(w.punct()), super::super::is_punct(f), "{c:#x}");
            }
        }
    }

    #[test]
    fn simd_masks_equal_the_byte_loop() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut text = vec![0u8; 4096];
        for round in 0..64 {
            for c in text.iter_mut() {
                let r = xorshift(&mut x);
                // every byte value, and runs of ASCII
                *c = if round % 2 == 0 { r as u8 } else { (r % 128) as u8 };
            }
            for p in 0..text.len() - WIDTH {
                let block: &[u8; WIDTH] = text[p..p + WIDTH].try_into().unwrap();
                let want = Window::scalar(block);
                let less = Window {
                    more: More::default(),
                    ..want
                };
                assert_eq!(Window::full(&text, p, false), want, "at {p}");
                assert_eq!(Window::at(&text, p, false), less, "at {p}");
                if has_avx2() {
                    assert_eq!(Window::full(&text, p, true), want, "at {p}, AVX2");
                    assert_eq!(Window::at(&text, p, true), less, "at {p}, AVX2");
                }
            }
        }
    }

    /// Random text of `len` characters, mostly ASCII: words of both cases,
    /// numbers, runs of spaces and line breaks, punctuation, apostrophes,
    /// and characters that end or extend ASCII runs in the byte scanner's
    /// view (letters, marks, numbers, spaces outside ASCII, the long s and
    /// Kelvin sign that contractions fold).
    fn random_text(x: &mut u64, len: usize) -> String {
        const POOL: &[&str] = &[
            "the",
            "The",
            "THE",
            "tHe",
            "a",
            "I",
            "x",
            "supercalifragilistic",
            "0",
            "12",
            "345",
            "2024",
            " ",
            " ",
            " ",
            "  ",
            "    ",
            "\t",
            "\n",
            "\n",
            "\r\n",
            "\n\n",
            " \n",
            "\n   ",
            ".",
            ",",
            "'",
            "'s",
            "'S",
            "'ll",
            "'LL",
            "'re",
            "'ve",
            "'d",
            "'m",
            "'t",
            "'x",
            "'r",
            "'v",
            "'l",
            "'rE",
            "'Ve",
            "/",
            "//",
            "(",
            ")",
            "{",
            "}",
            "_",
            "-",
            "\"",
            "#",
            ":",
            "\x0B",
            "\x0C",
            "\x00",
            "\x1F",
            "\x7F",
            "\u{e9}",
            "\u{4e2d}",
            "\u{a0}",
            "\u{301}",
            "\u{17f}",
            "\u{212a}",
            "\u{b2}",
            "\u{3000}",
            "\u{2028}",
            "\u{85}",
            "\u{2019}",
            "\u{ff0c}",
            "\u{1F600}",
            "\u{2b0}",
            "\u{1c5}",
        ];
        let mut s = String::new();
        while s.len() < len {
            let r = xorshift(x) as usize;
            // mostly the ASCII entries (the non-ASCII ones are at the end)
            let k = if r.is_multiple_of(8) {
                r / 8 % POOL.len()
            } else {
                r / 8 % (POOL.len() - 15)
            };
            s.push_str(POOL[k]);
        }
        s
    }

    /// The pieces of the byte scanner alone.
    fn byte_pieces(sc: &Scanner, text: &str) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let (mut i, mut v) = (0, vec![]);
        while i < b.len() {
            let e = sc.o200k(b, i);
            v.push((i, e));
            i = e;
        }
        v
    }

    #[test]
    fn window_answers_are_the_byte_scanners() {
        use crate::pre_tokenizers::O200K_PATTERN;
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let texts: Vec<String> = (0..if cfg!(debug_assertions) { 150 } else { 1500 })
            .map(|n| random_text(&mut x, 64 + n % 600))
            .collect();
        for pattern in [O200K_PATTERN] {
            let sc = Scanner::for_pattern(pattern).unwrap();
            let (mut asked, mut answered) = (0usize, 0usize);
            for text in &texts {
                let b = text.as_bytes();
                let want = byte_pieces(&sc, text);
                // the whole scan, windows and all
                let mut got = vec![];
                sc.find_iter(text, &mut got);
                assert_eq!(got, want, "{pattern}\n{text:?}");
                // every piece from every window offset it can be asked at
                for &(i, e) in &want {
                    if b[i] >= 0x80 {
                        continue;
                    }
                    for k in 0..REFILL.min(i + 1) {
                        let w0 = i - k;
                        if w0 + WIDTH > b.len() {
                            continue;
                        }
                        let w = Window::at(b, w0, sc.avx2);
                        let answer = sc.o200k_window(&w, b, i, k as u32);
                        asked += 1;
                        if let Some(a) = answer {
                            answered += 1;
                            assert_eq!(a, e, "{pattern} at {i} (window {w0})\n{text:?}");
                        }
                    }
                }
            }
            // the windows decide most pieces (else this test proves little)
            assert!(answered * 10 > asked * 7, "{pattern}: {answered} of {asked}");
        }
    }

    /// The pieces of cl100k's byte scanner alone.
    fn cl100k_byte_pieces(sc: &Scanner, text: &str, max_digits: usize) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let (mut i, mut v) = (0, vec![]);
        while i < b.len() {
            let e = sc.cl100k(b, i, max_digits);
            v.push((i, e));
            i = e;
        }
        v
    }

    #[test]
    fn cl100k_window_starts_are_the_byte_scanners() {
        use crate::pre_tokenizers::{CL100K_PATTERN, QWEN2_PATTERN};
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let texts: Vec<String> = (0..if cfg!(debug_assertions) { 150 } else { 1500 })
            .map(|n| random_text(&mut x, 64 + n % 600))
            .collect();
        for (pattern, max_digits) in [(CL100K_PATTERN, 3), (QWEN2_PATTERN, 1)] {
            let sc = Scanner::for_pattern(pattern).unwrap();
            let (mut windows, mut certain, mut pieces) = (0usize, 0usize, 0usize);
            for text in &texts {
                let b = text.as_bytes();
                let want = cl100k_byte_pieces(&sc, text, max_digits);
                // the whole scan, windows and all
                let mut got = vec![];
                sc.find_iter(text, &mut got);
                assert_eq!(got, want, "{pattern}\n{text:?}");
                // a window at every piece start: its certain starts are
                // exactly the byte scanner's before its cut
                let starts: Vec<usize> = want.iter().map(|p| p.0).collect();
                for (n, &i) in starts.iter().enumerate() {
                    if i + WIDTH > b.len() {
                        continue;
                    }
                    for avx2 in [false, sc.avx2] {
                        let (bits, cut) = cl100k_starts(&Window::full(b, i, avx2), max_digits);
                        let expected: u64 = starts[n..]
                            .iter()
                            .take_while(|&&s| s < i + cut as usize)
                            .fold(0, |m, &s| m | 1 << (s - i));
                        assert_eq!(bits, expected, "{pattern} window at {i}, cut {cut}\n{text:?}");
                        windows += 1;
                        certain += bits.count_ones() as usize;
                        pieces += starts[n..].iter().take_while(|&&s| s < i + WIDTH).count();
                    }
                }
            }
            // the windows are certain of most of their pieces (else this
            // test proves little)
            assert!(
                certain * 2 > pieces,
                "{pattern}: {certain} of {pieces} in {windows} windows"
            );
        }
    }
}
