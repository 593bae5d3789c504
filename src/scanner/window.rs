//! Pieces of ASCII text found from bit masks of a 64-byte window.
//!
//! Most of English text and code is ASCII, where each of the pattern's
//! classes is a set of byte values. A `Window` holds, for 64 bytes of the
//! text, one bit per byte for each class (computed 32 bytes at a time with
//! AVX2, or 16 with SSE2, on x86-64), and `cl100k_starts` / `o200k_starts`
//! compute the start of every piece in it from the masks, with shifts,
//! carries and no branch on the text, as far as the masks are certain of
//! them: a non-ASCII byte (which may be a letter, a number, a space...) and
//! the window's end leave what comes after them unknown. 1 MB of English or
//! code is scanned about twice as fast as by the byte scanner, which takes
//! a branch on the class of each character.
//!
//! Every start is the byte scanner's; the tests check that on random text
//! against it (and the scanner's own tests check it against the regex
//! engine).

/// Bytes a window covers.
pub(super) const WIDTH: usize = 64;

/// The vector instructions `Window::at` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // (x86-64 levels)
pub(crate) enum Simd {
    /// SSE2 (every x86-64 CPU), or plain code elsewhere
    Sse2,
    /// AVX2, 32 bytes at a time
    Avx2,
    /// AVX-512 with byte instructions (BW) and byte permutes (VBMI): the
    /// 64 bytes in one register, each byte's classes from one table lookup
    /// (and BMI1/BMI2, which every such CPU has, for the loops around it)
    Avx512,
}

impl Simd {
    /// The best this CPU has, within the level in force (`crate::simd`).
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            let level = crate::simd::level();
            if level >= crate::simd::Level::Avx512
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vbmi")
                && std::is_x86_feature_detected!("bmi1")
                && std::is_x86_feature_detected!("bmi2")
                && std::is_x86_feature_detected!("lzcnt")
                && std::is_x86_feature_detected!("popcnt")
            {
                return Simd::Avx512;
            }
            if level >= crate::simd::Level::Avx2 && std::is_x86_feature_detected!("avx2") {
                return Simd::Avx2;
            }
        }
        Simd::Sse2
    }

    /// This and every weaker level (for tests: each must give the same masks).
    #[cfg(test)]
    pub fn and_below(self) -> Vec<Simd> {
        [Simd::Sse2, Simd::Avx2, Simd::Avx512]
            .into_iter()
            .filter(|&s| s as u8 <= self as u8)
            .collect()
    }
}

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
    /// `' '` (the one space that joins punctuation after it)
    pub blank: u64,
    /// `'`
    pub quote: u64,
    /// apostrophes followed by `s d m t` (either case): a one-letter
    /// contraction (set only at apostrophes: most windows have none, and
    /// their letters are read one by one)
    pub one: u64,
    /// apostrophes followed by `ll`, `ve` or `re` (either case)
    pub two: u64,
}

impl Window {
    /// The masks of `b[p..p + WIDTH]` (which must be in `b`), with the
    /// vector instructions `simd` names (which the caller has checked the
    /// CPU has: `Simd::detect`).
    #[inline(always)]
    pub fn at(b: &[u8], p: usize, simd: Simd) -> Window {
        let block: &[u8; WIDTH] = b[p..p + WIDTH].try_into().expect("a whole window");
        #[cfg(target_arch = "x86_64")]
        {
            match simd {
                // SAFETY: `Simd::Avx512` only where the CPU has AVX-512
                // BW and VBMI, and BMI1/BMI2 (`Simd::detect`)
                Simd::Avx512 => unsafe { with_avx512(block) },
                // SAFETY: `Simd::Avx2` only where the CPU has AVX2
                Simd::Avx2 => unsafe { with_avx2(block) },
                Simd::Sse2 => sse2(block),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = simd;
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
            // (the classes of `CLASSES`, which `ascii_classes_are_the_tables`
            // checks against the scanner's tables; none from 0x80 on)
            let f = if c < 0x80 { CLASSES[c as usize] } else { 0 };
            set(&mut w.ascii, c < 0x80);
            set(&mut w.letter, f & CLASS_LETTER != 0);
            set(&mut w.upper, f & CLASS_UPPER != 0);
            set(&mut w.digit, f & CLASS_DIGIT != 0);
            set(&mut w.space, f & CLASS_SPACE != 0);
            set(&mut w.newline, f & CLASS_NEWLINE != 0);
            set(&mut w.slash, f & CLASS_SLASH != 0);
            set(&mut w.blank, f & CLASS_BLANK != 0);
            set(&mut w.quote, f & CLASS_QUOTE != 0);
            let next = |j: usize| block.get(k + j).map(u8::to_ascii_lowercase);
            let (a, b) = (next(1), next(2));
            set(&mut w.one, c == b'\'' && matches!(a, Some(b's' | b'd' | b'm' | b't')));
            set(
                &mut w.two,
                c == b'\'' && matches!((a, b), (Some(b'l'), Some(b'l')) | (Some(b'v' | b'r'), Some(b'e'))),
            );
        }
        w
    }

    /// `one` and `two` from the letters after each apostrophe of `quote`
    /// (within the window).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn contractions(&mut self, block: &[u8; WIDTH]) {
        let mut q = self.quote;
        while q != 0 {
            let k = q.trailing_zeros() as usize;
            q &= q - 1;
            let at = |k: usize| block.get(k).map_or(0, |c| c | 0x20);
            let (a, b) = (at(k + 1), at(k + 2));
            if matches!(a, b's' | b'd' | b'm' | b't') {
                self.one |= 1 << k;
            }
            if matches!((a, b), (b'l', b'l') | (b'v', b'e') | (b'r', b'e')) {
                self.two |= 1 << k;
            }
        }
    }
}

/// The masks with SSE2 (part of every x86-64 CPU), 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sse2(block: &[u8; WIDTH]) -> Window {
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
            // (setting bit 5 maps A-Z onto a-z and no other byte into a-z)
            let low = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let blank = eq(v, b' ');
            w.letter |= bits(in_range(low, b'a', 26)) << sh;
            w.upper |= bits(in_range(v, b'A', 26)) << sh;
            w.digit |= bits(in_range(v, b'0', 10)) << sh;
            w.space |= bits(_mm_or_si128(in_range(v, b'\t', 5), blank)) << sh;
            w.newline |= bits(_mm_or_si128(eq(v, b'\n'), eq(v, b'\r'))) << sh;
            w.slash |= bits(eq(v, b'/')) << sh;
            w.blank |= bits(blank) << sh;
            w.quote |= bits(eq(v, b'\'')) << sh;
        }
    }
    w.contractions(block);
    w
}

/// The masks with AVX2, 32 bytes at a time (the same steps as `sse2`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2(block: &[u8; WIDTH]) -> Window {
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
        let low = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        let blank = eq(v, b' ');
        w.letter |= bits(in_range(low, b'a', 26)) << sh;
        w.upper |= bits(in_range(v, b'A', 26)) << sh;
        w.digit |= bits(in_range(v, b'0', 10)) << sh;
        w.space |= bits(_mm256_or_si256(in_range(v, b'\t', 5), blank)) << sh;
        w.newline |= bits(_mm256_or_si256(eq(v, b'\n'), eq(v, b'\r'))) << sh;
        w.slash |= bits(eq(v, b'/')) << sh;
        w.blank |= bits(blank) << sh;
        w.quote |= bits(eq(v, b'\'')) << sh;
    }
    w.contractions(block);
    w
}

/// Each ASCII byte's classes as bits of one byte (`CLASSES`).
const CLASS_LETTER: u8 = 1;
const CLASS_UPPER: u8 = 2;
const CLASS_DIGIT: u8 = 4;
const CLASS_SPACE: u8 = 8;
const CLASS_NEWLINE: u8 = 16;
const CLASS_SLASH: u8 = 32;
const CLASS_BLANK: u8 = 64;
const CLASS_QUOTE: u8 = 128;

/// The class bits of each ASCII byte: the classes of `Window::scalar`
/// (the reference the vector versions are tested against) and the table
/// `with_avx512` looks them up in.
const CLASSES: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        let mut f = 0;
        if b.is_ascii_alphabetic() {
            f |= CLASS_LETTER;
        }
        if b.is_ascii_uppercase() {
            f |= CLASS_UPPER;
        }
        if b.is_ascii_digit() {
            f |= CLASS_DIGIT;
        }
        if matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ') {
            f |= CLASS_SPACE;
        }
        if matches!(b, b'\r' | b'\n') {
            f |= CLASS_NEWLINE;
        }
        if b == b'/' {
            f |= CLASS_SLASH;
        }
        if b == b' ' {
            f |= CLASS_BLANK;
        }
        if b == b'\'' {
            f |= CLASS_QUOTE;
        }
        t[c] = f;
        c += 1;
    }
    t
};

/// The masks with AVX-512: the 64 bytes in one register, their classes
/// looked up in `CLASSES` by one two-table byte permute (its index is a
/// byte's low seven bits: the bytes from 0x80 on, which are no ASCII
/// class, are masked off by `ascii`), each mask one test.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn with_avx512(block: &[u8; WIDTH]) -> Window {
    use std::arch::x86_64::*;
    // SAFETY: 64 bytes of `block`, and 2 x 64 of `CLASSES`
    let (v, lo, hi) = unsafe {
        (
            _mm512_loadu_si512(block.as_ptr().cast()),
            _mm512_loadu_si512(CLASSES.as_ptr().cast()),
            _mm512_loadu_si512(CLASSES.as_ptr().add(64).cast()),
        )
    };
    let classes = _mm512_permutex2var_epi8(lo, v, hi);
    let ascii = !_mm512_movepi8_mask(v);
    let has = |bit: u8| _mm512_mask_test_epi8_mask(ascii, classes, _mm512_set1_epi8(bit as i8));
    let mut w = Window {
        ascii,
        letter: has(CLASS_LETTER),
        upper: has(CLASS_UPPER),
        digit: has(CLASS_DIGIT),
        space: has(CLASS_SPACE),
        newline: has(CLASS_NEWLINE),
        slash: has(CLASS_SLASH),
        blank: has(CLASS_BLANK),
        quote: has(CLASS_QUOTE),
        one: 0,
        two: 0,
    };
    // (the apostrophes one by one: they are rare, and a second table and
    // four more masks would cost every window)
    w.contractions(block);
    w
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
    starts::<false>(w, max_digits)
}

/// `cl100k_starts` for o200k, whose pattern differs in three ways:
///
/// - a word is a run of capitals and then a run of small letters
///   (`[\p{Lu}...]*[\p{Ll}...]+` or `[\p{Lu}...]+[\p{Ll}...]*`), so a
///   capital after a small letter starts a piece too;
/// - a contraction belongs to the word before it (`(?i:'s|...)?` after
///   the word), and is not a piece of its own;
/// - a punctuation run takes the line breaks and slashes after it
///   (`[\r\n/]*`).
///
/// An apostrophe after a word within two bytes of the unknown part may
/// begin a contraction the masks cannot see, and one just after another
/// contraction (`x't's`: a word takes one contraction, so the second
/// starts a piece, unless the first was itself such a second one): the
/// certain part ends at either.
#[inline(always)]
pub(super) fn o200k_starts(w: &Window) -> (u64, u32) {
    starts::<true>(w, 3)
}

#[inline(always)]
fn starts<const O200K: bool>(w: &Window, max_digits: usize) -> (u64, u32) {
    // bits at and after the first non-ASCII byte count as no class
    let known_len = w.ascii.trailing_ones();
    let known = below(known_len);
    let (letter, digit, space, nl) = (w.letter & known, w.digit & known, w.space & known, w.newline & known);
    let (blank, quote) = (w.blank & known, w.quote & known);
    // (x << 1: bit k is x's bit k - 1, "the byte before"; x >> 1: "after")
    let (one, two) = (w.one, w.two);
    // o200k: the apostrophes of contractions after a word
    let (word_one, word_two) = if O200K {
        let q = quote & (letter << 1);
        (q & one, q & two)
    } else {
        (0, 0)
    };
    let punct = known & !(letter | digit | space) & !(word_one | word_two);
    // the line breaks (and for o200k slashes) after a punctuation run are its own
    let breaks = if O200K { nl | (w.slash & known) } else { nl };
    // (from the first line break after punctuation to the end of the run
    // of breaks; a later one in the same run, after a slash the run took,
    // adds to the carry and stays set in the sum, hence `| after`)
    let after = nl & (punct << 1);
    let taken = (breaks & !breaks.wrapping_add(after)) | after;
    let punct = punct & !taken;
    let punct_start = punct & !(punct << 1);
    let ws = space & !taken;
    let ws_start = ws & !(ws << 1);
    let ws_last = ws & !(ws >> 1);
    // the whitespace after each run's last line break: the run's tail,
    // found from its end backwards (a carry through the reversed masks)
    let tail_bits = ws & !nl;
    let tail_start = {
        // Mostly each run of whitespace other than line breaks is such a
        // tail: unless a line break follows it (the sum carries each run's
        // start to the bit just past the run), its start is the tail's.
        let run_start = tail_bits & !(tail_bits << 1);
        if tail_bits.wrapping_add(run_start) & ws == 0 {
            run_start
        } else {
            let (ws_r, tail_r) = (ws.reverse_bits(), tail_bits.reverse_bits());
            let ends_r = ws_r & !(ws_r << 1) & tail_r;
            let tail = (tail_r & !tail_r.wrapping_add(ends_r)).reverse_bits();
            tail & !(tail << 1)
        }
    };
    // prefixes that start a piece, before a letter
    let lone_punct = punct_start & !(blank << 1);
    let prefix = (lone_punct | (ws & !nl)) & (letter >> 1);
    let mut letter_start = letter & !(letter << 1) & !(prefix << 1);
    let after_contraction = if O200K {
        let upper = w.upper & known;
        // a capital after a small letter; not inside a contraction
        letter_start |= upper & ((letter & !upper) << 1);
        letter_start &= !((word_one | word_two) << 1) & !(word_two << 2);
        (word_one << 2) | (word_two << 3)
    } else {
        // cl100k: an apostrophe that starts a piece
        let q = quote & lone_punct;
        (((q & one) << 2) | ((q & two) << 3)) & letter
    };
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
    let mut cut = known_len - open_ws;
    if O200K {
        // an apostrophe after a word whose contraction the masks cannot
        // see yet, or just after another contraction: left to the byte
        // scanner
        let after_word = quote & (letter << 1);
        let open = after_word & !below(known_len.saturating_sub(2));
        let chained = after_word & ((word_one << 2) | (word_two << 3));
        cut = cut.min((open | chained).trailing_zeros());
    }
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

#[cfg(test)]
mod tests {
    use super::super::{Scanner, L, N, NL, S};
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
                assert_eq!(at(w.blank), c == b' ');
                assert_eq!(at(w.quote), c == b'\'');
                // (the punctuation the starts take)
                let punct = w.ascii & !(w.letter | w.digit | w.space);
                assert_eq!(at(punct), super::super::is_punct(f), "{c:#x}");
            }
        }
    }

    #[test]
    fn contraction_masks_at_every_level() {
        // an apostrophe then two of these letters, at every offset of the
        // window (the last two: letters past its end count as none)
        let letters = b"sSdDmMtTlLvVrReExX'";
        let levels = Simd::detect().and_below();
        let mut text = vec![b'.'; 2 * WIDTH];
        for k in 0..WIDTH {
            for &a in letters {
                for &b in letters {
                    text.fill(b'.');
                    text[k] = b'\'';
                    text[k + 1] = a;
                    text[k + 2] = b;
                    let block: &[u8; WIDTH] = text[..WIDTH].try_into().unwrap();
                    let want = Window::scalar(block);
                    let one = matches!(a | 0x20, b's' | b'd' | b'm' | b't') && k + 1 < WIDTH;
                    let two = matches!((a | 0x20, b | 0x20), (b'l', b'l') | (b'v' | b'r', b'e')) && k + 2 < WIDTH;
                    assert_eq!(want.one >> k & 1 == 1, one, "{k} {a} {b}");
                    assert_eq!(want.two >> k & 1 == 1, two, "{k} {a} {b}");
                    for &simd in &levels {
                        assert_eq!(Window::at(&text, 0, simd), want, "{k} {a} {b} {simd:?}");
                    }
                }
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
                for simd in Simd::detect().and_below() {
                    assert_eq!(Window::at(&text, p, simd), want, "at {p}, {simd:?}");
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

    /// The pieces of cl100k's (`max_digits` = 3 or 1) or o200k's (0) byte
    /// scanner alone.
    fn byte_scanner_pieces(sc: &Scanner, text: &str, max_digits: usize) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let (mut i, mut v) = (0, vec![]);
        while i < b.len() {
            let e = if max_digits == 0 {
                sc.o200k(b, i)
            } else {
                sc.cl100k(b, i, max_digits)
            };
            v.push((i, e));
            i = e;
        }
        v
    }

    #[test]
    fn window_starts_are_the_byte_scanners() {
        use crate::pre_tokenizers::{CL100K_PATTERN, O200K_PATTERN, QWEN2_PATTERN};
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let pool = if cfg!(debug_assertions) { 150 } else { 1500 };
        let mut texts: Vec<String> = (0..pool).map(|k| random_text(&mut x, 64 + k % 600)).collect();
        // and dense mixes of the characters the rules turn on, one at a time
        const DENSE: &[&str] = &[
            " ", " ", "\n", "\r", "\t", "\x0B", "'", "'", "s", "S", "l", "L", "v", "e", "E", "r", "d", "m", "t", "a",
            "B", "1", "2", "/", ".", "(", "\u{e9}", "\u{a0}",
        ];
        texts.extend((0..pool).map(|k| {
            let mut s = String::new();
            while s.len() < 64 + k % 200 {
                s.push_str(DENSE[xorshift(&mut x) as usize % DENSE.len()]);
            }
            s
        }));
        for (pattern, max_digits) in [(CL100K_PATTERN, 3), (QWEN2_PATTERN, 1), (O200K_PATTERN, 0)] {
            let sc = Scanner::for_pattern(pattern).unwrap();
            let (mut windows, mut certain, mut pieces) = (0usize, 0usize, 0usize);
            for (k, text) in texts.iter().enumerate() {
                let b = text.as_bytes();
                let want = byte_scanner_pieces(&sc, text, max_digits);
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
                    for simd in sc.simd.and_below() {
                        let w = Window::at(b, i, simd);
                        let (bits, cut) = if max_digits == 0 {
                            o200k_starts(&w)
                        } else {
                            cl100k_starts(&w, max_digits)
                        };
                        let expected: u64 = starts[n..]
                            .iter()
                            .take_while(|&&s| s < i + cut as usize)
                            .fold(0, |m, &s| m | 1 << (s - i));
                        assert_eq!(bits, expected, "{pattern} window at {i}, cut {cut}\n{text:?}");
                        if k >= pool {
                            // (the dense mixes cut windows short on purpose)
                            continue;
                        }
                        windows += 1;
                        certain += bits.count_ones() as usize;
                        pieces += starts[n..].iter().take_while(|&&s| s < i + WIDTH).count();
                    }
                }
            }
            // the windows are certain of most of their pieces (else this
            // test proves little; a non-ASCII character ends what a window
            // knows, and these texts have many)
            assert!(
                certain * 2 > pieces,
                "{pattern}: {certain} of {pieces} in {windows} windows"
            );
        }
    }
}
