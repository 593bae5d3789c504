//! Hand-written pre-tokenizer scanners for the GPT-2 (`r50k`), GPT-4
//! (`cl100k`, Llama-3, Qwen2) and GPT-4o (`o200k`) split patterns.
//!
//! These patterns cover every character, so the pieces tile the text: each
//! piece starts where the previous one ended, and finding a piece means
//! finding where the leftmost-first (backtracking-priority) match that starts
//! at a given position ends. Each function below walks one pattern's
//! alternatives in order, with the backtracking of each alternative worked
//! out by hand (see the comments), over UTF-8 bytes: an ASCII byte is one
//! table lookup, other characters are decoded and looked up in a two-level
//! table.
//!
//! The Unicode property tables are built on first use from `regex-syntax`,
//! the parser the `regex` and `fancy-regex` crates use, so `\p{L}`, `\s`
//! and the case folding of `(?i:'s|...)` are exactly the regex engines'
//! (same Unicode version). The tests in `pattern.rs` check every code point,
//! the adversarial strings and random text against `fancy-regex`.

use std::sync::OnceLock;

mod window;
use window::Window;

/// Bytes of the text a window of `Scanner::for_each_in` covers: each piece
/// it offers `run` starts within this many bytes of `base`.
pub const WINDOW_BYTES: usize = window::WIDTH;

/// `\p{L}`
const L: u8 = 1;
/// `\p{N}`
const N: u8 = 2;
/// `\s` (Unicode `White_Space`)
const S: u8 = 4;
/// `\r` or `\n`
const NL: u8 = 8;
/// o200k's "upper" class `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
const UP: u8 = 16;
/// o200k's "lower" class `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
const LO: u8 = 32;
/// `\p{M}`
const M: u8 = 64;
/// `[\p{P}\p{S}]` (DeepSeek's punctuation)
const PS: u8 = 128;

/// The flags of an "other letter" (`\p{Lo}`: most CJK characters): a
/// letter in both of o200k's case classes.
const LO_LETTER: u8 = L | UP | LO;

/// The class `[^\s\p{L}\p{N}]` ("punctuation" below).
#[inline(always)]
fn is_punct(f: u8) -> bool {
    f & (L | N | S) == 0
}

/// The high bit of each byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is an ASCII byte in `lo..=hi`.
#[inline(always)]
fn ascii_in_range(w: u64, lo: u8, hi: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = w & !HIGH; // 7-bit bytes: the additions below carry into no neighbour
    let at_least_lo = x + ONES * (0x80 - lo as u64);
    let above_hi = x + ONES * (0x7F - hi as u64);
    at_least_lo & !above_hi & !w & HIGH
}

/// The high bit of each byte of `w` that is an ASCII member of the class
/// `mask` (`L`: `A-Za-z`, `UP`: `A-Z`, `LO`: `a-z`; the tables test that
/// these are exactly the ASCII members).
#[inline(always)]
fn ascii_run_mask(w: u64, mask: u8) -> u64 {
    // (no ASCII character is a mark)
    match mask & !M {
        // setting bit 5 maps A-Z onto a-z and no other byte into a-z
        L => ascii_in_range(w | 0x2020_2020_2020_2020, b'a', b'z'),
        UP => ascii_in_range(w, b'A', b'Z'),
        LO => ascii_in_range(w, b'a', b'z'),
        _ => 0,
    }
}

/// Length of the run of `b' '` that `b` (non-empty, starting with one) starts with.
#[inline(always)]
fn space_run(b: &[u8]) -> usize {
    let mut k = 0;
    while let Some(w) = b.get(k..k + 8) {
        let other = !ascii_in_range(u64::from_le_bytes(w.try_into().unwrap()), b' ', b' ') & HIGH;
        if other != 0 {
            return k + (other.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    while k < b.len() && b[k] == b' ' {
        k += 1;
    }
    k
}

/// Bits per block of the two-level table: blocks of 128 code points.
const BLOCK_BITS: u32 = 7;

/// The letters of the contractions `'s 't 're 've 'm 'll 'd`, in `FOLD` order.
const CONTRACTION_LETTERS: [char; 8] = ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'];

struct Tables {
    /// flags of the ASCII characters
    ascii: [u8; 128],
    /// code point >> BLOCK_BITS -> block number
    index: Vec<u16>,
    /// the deduplicated blocks of flags, one after the other
    blocks: Vec<u8>,
    /// for each contraction letter, the characters `(?i:x)` matches
    /// (`s` also matches U+017F LATIN SMALL LETTER LONG S)
    folds: [Vec<char>; 8],
    /// Three-byte characters (`1110xxxx 10yyyyyy 10zzzzzz`) whose flags
    /// are exactly `LO_LETTER`, by their first two bytes: bit `y` of
    /// `lo_letter3[x]` is set when all 64 characters `x y *` are (the CJK
    /// ideographs, kana, Hangul syllables: a run of them is scanned without
    /// decoding a code point).
    lo_letter3: [u64; 16],
}

/// The code point ranges of a one-class regex, as `regex-syntax` reads it.
fn class_ranges(re: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(re)
        .expect("a built-in class parses");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(),
        HirKind::Literal(lit) => {
            let c = std::str::from_utf8(&lit.0)
                .ok()
                .and_then(|s| s.chars().next())
                .expect("one character");
            vec![(c as u32, c as u32)]
        }
        other => panic!("{re} is not a class: {other:?}"),
    }
}

impl Tables {
    fn build() -> Tables {
        const CPS: usize = 0x11_0000;
        let mut flags = vec![0u8; CPS];
        let mut set = |re: &str, bit: u8| {
            for (a, b) in class_ranges(re) {
                for f in &mut flags[a as usize..=b as usize] {
                    *f |= bit;
                }
            }
        };
        set(r"\p{L}", L);
        set(r"\p{N}", N);
        set(r"\s", S);
        set(r"[\r\n]", NL);
        set(r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UP);
        set(r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LO);
        set(r"\p{M}", M);
        set(r"[\p{P}\p{S}]", PS);
        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(&flags[..128]);
        // two-level table: identical blocks stored once
        let block = 1usize << BLOCK_BITS;
        let mut index = Vec::with_capacity(CPS / block);
        let mut blocks: Vec<u8> = Vec::new();
        let mut seen: std::collections::HashMap<&[u8], u16> = std::collections::HashMap::new();
        for chunk in flags.chunks(block) {
            let n = *seen.entry(chunk).or_insert_with(|| {
                blocks.extend_from_slice(chunk);
                (blocks.len() / block - 1) as u16
            });
            index.push(n);
        }
        let folds = CONTRACTION_LETTERS.map(|x| {
            class_ranges(&format!("(?i:{x})"))
                .into_iter()
                .flat_map(|(a, b)| (a..=b).filter_map(char::from_u32))
                .collect()
        });
        let mut lo_letter3 = [0u64; 16];
        for (x, bits) in lo_letter3.iter_mut().enumerate() {
            for y in 0..64 {
                let first = (x << 12) | (y << 6);
                // (below U+0800 a character has fewer bytes)
                if first >= 0x800 && flags[first..first + 64].iter().all(|&f| f == LO_LETTER) {
                    *bits |= 1 << y;
                }
            }
        }
        Tables {
            ascii,
            index,
            blocks,
            folds,
            lo_letter3,
        }
    }

    fn get() -> &'static Tables {
        static T: OnceLock<Tables> = OnceLock::new();
        T.get_or_init(Tables::build)
    }

    /// Flags of a code point.
    #[inline(always)]
    fn of(&self, cp: u32) -> u8 {
        let blk = self.index[(cp >> BLOCK_BITS) as usize] as usize;
        self.blocks[(blk << BLOCK_BITS) | (cp as usize & ((1 << BLOCK_BITS) - 1))]
    }
}

/// The code point and byte length of the (valid UTF-8) character at `b[i]`,
/// which is not ASCII.
#[inline(always)]
fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let c0 = b[i] as u32;
    let cont = |k: usize| (b[i + k] & 0x3F) as u32;
    if c0 < 0xE0 {
        (((c0 & 0x1F) << 6) | cont(1), 2)
    } else if c0 < 0xF0 {
        (((c0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (((c0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    }
}

/// DeepSeek's CJK class `[一-龥぀-ゟ゠-ヿ]`: U+4E00-U+9FA5 and U+3040-U+30FF.
#[inline(always)]
fn is_deepseek_cjk(cp: u32) -> bool {
    (0x4E00..=0x9FA5).contains(&cp) || (0x3040..=0x30FF).contains(&cp)
}

/// End of the run from `i` of three-byte characters in the blocks of
/// `Tables::lo_letter3` (all `\p{Lo}`).
#[inline(always)]
fn lo_letter3_run(t: &Tables, b: &[u8], mut i: usize) -> usize {
    // (valid UTF-8: a three-byte first byte has its two bytes after it)
    while i + 2 < b.len() && b[i] & 0xF0 == 0xE0 && t.lo_letter3[(b[i] & 0x0F) as usize] >> (b[i + 1] & 0x3F) & 1 != 0 {
        i += 3;
    }
    i
}

/// End of the run of bytes of the ASCII class `mask` (`UP`: `A-Z`, `LO`:
/// `a-z`, `L`: both) from `i`.
#[inline(always)]
fn ascii_class_run(b: &[u8], mut i: usize, mask: u8) -> usize {
    while let Some(w) = b.get(i..i + 8) {
        let stop = !ascii_run_mask(u64::from_le_bytes(w.try_into().unwrap()), mask) & HIGH;
        if stop != 0 {
            return i + (stop.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let want = |c: u8| match mask {
        UP => c.is_ascii_uppercase(),
        LO => c.is_ascii_lowercase(),
        _ => c.is_ascii_alphabetic(),
    };
    while i < b.len() && want(b[i]) {
        i += 1;
    }
    i
}

/// The commonest o200k word, found without class lookups: an optional
/// space, ASCII capitals, then ASCII small letters (at least one) up to an
/// ASCII byte that is not one or the end: `[^\r\n\p{L}\p{N}]?` takes the
/// space, `[\p{Lu}...]*` the capitals, `[\p{Ll}...]+` the small letters,
/// and nothing after them can extend the word (a longer character might:
/// then `None`, and the general path decides). The end of the word,
/// before any contraction.
#[inline(always)]
fn o200k_ascii_word(b: &[u8], i: usize) -> Option<usize> {
    let s = i + (b[i] == b' ') as usize;
    let upper = match b.get(s) {
        Some(c) if c.is_ascii_lowercase() => s,
        Some(c) if c.is_ascii_uppercase() => ascii_class_run(b, s + 1, UP),
        _ => return None,
    };
    let lower = ascii_class_run(b, upper, LO);
    (lower > upper && b.get(lower).is_none_or(|&c| c < 0x80)).then_some(lower)
}

/// Byte length of the UTF-8 character whose first byte is `c`.
#[inline(always)]
fn utf8_len(c: u8) -> usize {
    match c {
        0..0x80 => 1,
        0x80..0xE0 => 2,
        0xE0..0xF0 => 3,
        _ => 4,
    }
}

/// How far ahead of a window the text is prefetched (bytes): the first
/// load of a window waited for the text in about a third of its samples
/// (the encoder's tables push it out of the second-level cache); closer
/// is too late, further gains nothing (`docs/encoder.md`, constants).
const PREFETCH_AHEAD: usize = 1024;

/// Start loading the cache line of `b[i]` (nothing past the end).
#[inline(always)]
fn prefetch_text(b: &[u8], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < b.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch reads nothing; the address is inside `b`
        unsafe { _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().add(i).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, i);
}

/// Which of the known patterns a scanner runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
    Gpt2,
    /// cl100k (`\p{N}{1,3}`, `max_digits` 3) and Qwen2 (`\p{N}`, 1).
    Cl100k { max_digits: usize },
    /// o200k: case-aware words with contraction suffixes.
    O200k,
    /// DeepSeek-V3's sequence of three splits (`Scanner::deepseek`).
    DeepSeek,
}

/// A hand-written scanner for one of the known split patterns.
pub struct Scanner {
    kind: Kind,
    t: &'static Tables,
    /// the vector instructions `Window::at` uses (the CPU's best)
    simd: window::Simd,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scanner({:?})", self.kind)
    }
}

impl Scanner {
    /// The scanner for a pattern source, when it is exactly one of the known patterns.
    pub fn for_pattern(source: &str) -> Option<Scanner> {
        use crate::patterns::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, QWEN2_PATTERN};
        let kind = match source {
            s if s == GPT2_PATTERN => Kind::Gpt2,
            s if s == CL100K_PATTERN => Kind::Cl100k { max_digits: 3 },
            s if s == QWEN2_PATTERN => Kind::Cl100k { max_digits: 1 },
            s if s == O200K_PATTERN => Kind::O200k,
            _ => return None,
        };
        Some(Scanner {
            kind,
            t: Tables::get(),
            simd: window::Simd::detect(),
        })
    }

    /// The scanner for DeepSeek-V3's pre-tokenizer, a sequence of three
    /// isolating splits: `\p{N}{1,3}`, then `[一-龥぀-ゟ゠-ヿ]+` (CJK, kana), then
    /// `DEEPSEEK_WORDS` (see `crate::pre_tokenizers`) on each piece, whose
    /// unmatched stretches are pieces too. Its pieces are those of the
    /// three splits in turn.
    pub fn deepseek() -> Scanner {
        Scanner {
            kind: Kind::DeepSeek,
            t: Tables::get(),
            simd: window::Simd::Sse2,
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// All pieces of `text`, in order; they tile the text.
    pub fn find_iter(&self, text: &str, out: &mut Vec<(usize, usize)>) {
        self.for_each(text, |s, e| out.push((s, e)));
    }

    /// Call `f(start, end)` for each piece of `text`, in order.
    #[inline]
    pub fn for_each(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        self.for_each_in(text, &mut f, |_, i, _, bits| (i, bits), |f, s, e| f(s, e));
    }

    /// `for_each` with a context that both callbacks are given, and a
    /// second callback for the windows of ASCII text of the cl100k and
    /// o200k patterns: `run(ctx, i, base, bits)` is offered the pieces a
    /// window is certain of, from the one that starts at `i`: each ends at
    /// the next set bit of `bits` (bit `k` is `base + k`). It takes as
    /// many as it likes, in order, and returns where it stopped: the start
    /// of the next piece and the bits of the pieces it left. Each piece it
    /// does not take goes to `f(ctx, start, end)`, in order. (A caller's
    /// own tight loop over many pieces, with no call per piece.)
    #[inline]
    pub fn for_each_in<C>(
        &self,
        text: &str,
        ctx: &mut C,
        mut run: impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        mut f: impl FnMut(&mut C, usize, usize),
    ) {
        let b = text.as_bytes();
        let mut i = 0;
        // one loop per pattern, so each inlines its own piece function
        match self.kind {
            Kind::Gpt2 => {
                while i < b.len() {
                    let e = self.gpt2(b, i);
                    f(ctx, i, e);
                    i = e;
                }
            }
            Kind::Cl100k { max_digits } => self.cl100k_loop(b, max_digits, ctx, &mut run, &mut f),
            Kind::O200k => self.o200k_loop(b, ctx, &mut run, &mut f),
            Kind::DeepSeek => {
                while i < b.len() {
                    // the piece of the first two splits that starts here:
                    // digits, a CJK run, or a run of neither
                    let c = b[i];
                    let (fl, cjk) = if c < 0x80 {
                        (self.t.ascii[c as usize], false)
                    } else {
                        let (cp, _) = decode(b, i);
                        (self.t.of(cp), is_deepseek_cjk(cp))
                    };
                    if fl & N != 0 {
                        let e = self.digits(b, i, 3);
                        f(ctx, i, e);
                        i = e;
                        continue;
                    }
                    let end = if cjk {
                        self.cjk_run(b, i)
                    } else {
                        self.neither_run(b, i)
                    };
                    // the third split sees that piece alone (its end is the text's end)
                    self.deepseek_words(&b[..end], i, &mut |s, e| f(ctx, s, e));
                    i = end;
                }
            }
        }
    }

    /// The o200k pieces of `b` (see `windows`).
    #[inline(never)]
    fn o200k_loop<C>(
        &self,
        b: &[u8],
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.simd == window::Simd::Avx512 {
            // SAFETY: `Simd::Avx512` only where the CPU has those features
            unsafe { self.o200k_loop_avx512(b, ctx, run, f) };
            return;
        }
        self.o200k_windows(b, ctx, run, f);
    }

    /// `o200k_loop` compiled for AVX-512 (BW, VBMI) and BMI1/BMI2: the window's masks
    /// (`window::with_avx512`) inlined into the loop.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn o200k_loop_avx512<C>(
        &self,
        b: &[u8],
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        self.o200k_windows(b, ctx, run, f);
    }

    /// The body of both `o200k_loop`s.
    #[inline(always)]
    fn o200k_windows<C>(
        &self,
        b: &[u8],
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        // (a closure, not the function: passed as a function item, the
        // starts were a call out of the loop, through memory)
        #[allow(clippy::redundant_closure)]
        self.windows(b, ctx, |w| window::o200k_starts(w), |i| self.o200k(b, i), run, f);
    }

    /// The cl100k pieces of `b` (see `windows`).
    #[inline(never)]
    fn cl100k_loop<C>(
        &self,
        b: &[u8],
        max_digits: usize,
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.simd == window::Simd::Avx512 {
            // SAFETY: `Simd::Avx512` only where the CPU has those features
            unsafe { self.cl100k_loop_avx512(b, max_digits, ctx, run, f) };
            return;
        }
        self.cl100k_windows(b, max_digits, ctx, run, f);
    }

    /// `cl100k_loop` compiled for AVX-512 (BW, VBMI) and BMI1/BMI2: the window's masks
    /// (`window::with_avx512`) inlined into the loop.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn cl100k_loop_avx512<C>(
        &self,
        b: &[u8],
        max_digits: usize,
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        self.cl100k_windows(b, max_digits, ctx, run, f);
    }

    /// The body of both `cl100k_loop`s.
    #[inline(always)]
    fn cl100k_windows<C>(
        &self,
        b: &[u8],
        max_digits: usize,
        ctx: &mut C,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        self.windows(
            b,
            ctx,
            |w| window::cl100k_starts(w, max_digits),
            |i| self.cl100k(b, i, max_digits),
            run,
            f,
        );
    }

    /// The pieces of `b`: where sixteen ASCII bytes start a piece, all the
    /// pieces the masks of a window from there are certain of
    /// (`starts`), offered to `run` and then one after another to `f`,
    /// else one piece of the byte scanner (`piece`).
    #[inline(always)]
    fn windows<C>(
        &self,
        b: &[u8],
        ctx: &mut C,
        starts: impl Fn(&Window) -> (u64, u32),
        piece: impl Fn(usize) -> usize,
        run: &mut impl FnMut(&mut C, usize, usize, u64) -> (usize, u64),
        f: &mut impl FnMut(&mut C, usize, usize),
    ) {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let mut i = 0;
        // the window's certain starts after `i`, as bits from `base`
        let (mut base, mut bits) = (0, 0u64);
        while i < b.len() {
            if bits == 0 && i + window::WIDTH <= b.len() && (word(i) | word(i + 8)) & HIGH == 0 {
                prefetch_text(b, i + PREFETCH_AHEAD);
                base = i;
                bits = starts(&Window::at(b, i, self.simd)).0 & !1;
            }
            if bits != 0 {
                (i, bits) = run(ctx, i, base, bits);
                if bits == 0 {
                    // (the end of the piece at `i` is past what the window knows)
                    continue;
                }
            }
            // (one call of `f`, so that it is inlined once)
            let e = if bits != 0 {
                let e = base + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                e
            } else {
                piece(i)
            };
            f(ctx, i, e);
            i = e;
        }
    }

    /// End of the run from `i` of DeepSeek's CJK characters.
    #[inline]
    fn cjk_run(&self, b: &[u8], mut i: usize) -> usize {
        while i + 2 < b.len() && (0xE3..=0xE9).contains(&b[i]) {
            let (cp, len) = decode(b, i);
            if !is_deepseek_cjk(cp) {
                break;
            }
            i += len;
        }
        i
    }

    /// End of the run from `i` of characters that are neither numbers nor
    /// DeepSeek's CJK characters.
    #[inline]
    fn neither_run(&self, b: &[u8], mut i: usize) -> usize {
        while i < b.len() {
            // eight ASCII bytes without a digit at a time
            if let Some(w) = b.get(i..i + 8) {
                let w = u64::from_le_bytes(w.try_into().unwrap());
                let stop = (w & HIGH) | ascii_in_range(w, b'0', b'9');
                if stop == 0 {
                    i += 8;
                    continue;
                }
                i += (stop.trailing_zeros() / 8) as usize;
            }
            let c = b[i];
            if c < 0x80 {
                if self.t.ascii[c as usize] & N != 0 {
                    return i;
                }
                i += 1;
            } else {
                let (cp, len) = decode(b, i);
                if self.t.of(cp) & N != 0 || is_deepseek_cjk(cp) {
                    return i;
                }
                i += len;
            }
        }
        i
    }

    /// The pieces of DeepSeek's third split on `b[i..]`: its matches, and
    /// the stretches between them.
    #[inline]
    fn deepseek_words(&self, b: &[u8], mut i: usize, f: &mut impl FnMut(usize, usize)) {
        let mut gap = None;
        while i < b.len() {
            match self.deepseek_word(b, i) {
                Some(e) => {
                    if let Some(g) = gap.take() {
                        f(g, i);
                    }
                    f(i, e);
                    i = e;
                }
                None => {
                    gap.get_or_insert(i);
                    i += utf8_len(b[i]);
                }
            }
        }
        if let Some(g) = gap {
            f(g, b.len());
        }
    }

    /// The end of the match of `DEEPSEEK_WORDS` at `i`, if one starts there:
    /// its alternatives in order.
    #[inline(always)]
    fn deepseek_word(&self, b: &[u8], i: usize) -> Option<usize> {
        let c = b[i];
        // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
        if c.is_ascii_punctuation() && b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
            return Some(ascii_class_run(b, i + 1, L));
        }
        let (fl, len) = self.cls(b, i);
        // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ : with the optional character,
        // else without it (a mark can be either)
        if fl & (L | PS) == 0 && c != b'\r' && c != b'\n' && self.flags_at(b, i + len) & (L | M) != 0 {
            return Some(self.run(b, i + len, L | M));
        }
        if fl & (L | M) != 0 {
            return Some(self.run(b, i, L | M));
        }
        // ` ?[\p{P}\p{S}]+[\r\n]*`
        let punct_from = if fl & PS != 0 {
            Some(i)
        } else if c == b' ' && self.flags_at(b, i + 1) & PS != 0 {
            Some(i + 1)
        } else {
            None
        };
        if let Some(p) = punct_from {
            let mut e = self.run(b, p, PS);
            while e < b.len() && matches!(b[e], b'\r' | b'\n') {
                e += 1;
            }
            return Some(e);
        }
        // `\s*[\r\n]+|\s+(?!\S)|\s+`
        (fl & S != 0).then(|| self.whitespace(b, i, true))
    }

    /// Flags and byte length of the character at `b[i]` (`i < b.len()`).
    #[inline(always)]
    fn cls(&self, b: &[u8], i: usize) -> (u8, usize) {
        let c = b[i];
        if c < 0x80 {
            (self.t.ascii[c as usize], 1)
        } else {
            let (cp, len) = decode(b, i);
            (self.t.of(cp), len)
        }
    }

    /// Flags of the character at `b[i]`, or 0 at the end of the text.
    #[inline(always)]
    fn flags_at(&self, b: &[u8], i: usize) -> u8 {
        if i < b.len() {
            self.cls(b, i).0
        } else {
            0
        }
    }

    /// End of the longest run from `i` of characters having a flag of `mask`.
    ///
    /// For the letter classes, ASCII text is taken eight bytes at a time
    /// (`ascii_run_mask`): one step usually finds the end of a word, where a
    /// byte loop would mispredict its exit branch at a varying length.
    #[inline(always)]
    fn run(&self, b: &[u8], mut i: usize, mask: u8) -> usize {
        let swar = matches!(mask & !M, L | UP | LO);
        loop {
            if swar {
                if let Some(w) = b.get(i..i + 8) {
                    let w = u64::from_le_bytes(w.try_into().unwrap());
                    let stop = !ascii_run_mask(w, mask) & HIGH;
                    if stop == 0 {
                        i += 8;
                        continue;
                    }
                    i += (stop.trailing_zeros() / 8) as usize;
                    if b[i] < 0x80 {
                        // an ASCII byte outside the class ends the run
                        return i;
                    }
                    // a longer character: looked up below
                }
            }
            if i >= b.len() {
                return i;
            }
            let c = b[i];
            if c < 0x80 {
                if self.t.ascii[c as usize] & mask == 0 {
                    return i;
                }
                i += 1;
            } else {
                if mask & LO_LETTER != 0 {
                    // a run of CJK characters without decoding them
                    let e = lo_letter3_run(self.t, b, i);
                    if e > i {
                        i = e;
                        continue;
                    }
                }
                let (cp, len) = decode(b, i);
                if self.t.of(cp) & mask == 0 {
                    return i;
                }
                i += len;
            }
        }
    }

    /// End of the longest run from `i` of `[^\s\p{L}\p{N}]`.
    #[inline(always)]
    fn run_punct(&self, b: &[u8], mut i: usize) -> usize {
        while i < b.len() {
            let (f, len) = self.cls(b, i);
            if !is_punct(f) {
                break;
            }
            i += len;
        }
        i
    }

    /// End of `\p{N}{1,max}` from `i` (the character at `i` is a number).
    #[inline(always)]
    fn digits(&self, b: &[u8], mut i: usize, max: usize) -> usize {
        for _ in 0..max {
            if i >= b.len() {
                break;
            }
            let (f, len) = self.cls(b, i);
            if f & N == 0 {
                break;
            }
            i += len;
        }
        i
    }

    /// Whether the character at `b[i]` is one `(?i:x)` matches (or just `x`
    /// when `fold` is off), with its byte length.
    #[inline(always)]
    fn letter_at(&self, b: &[u8], i: usize, x: usize, fold: bool) -> Option<usize> {
        let c = *b.get(i)?;
        let want = CONTRACTION_LETTERS[x] as u8;
        if c < 0x80 {
            let hit = c == want || (fold && c.to_ascii_lowercase() == want);
            return hit.then_some(1);
        }
        if !fold {
            return None;
        }
        let (cp, len) = decode(b, i);
        self.t.folds[x].iter().any(|&f| f as u32 == cp).then_some(len)
    }

    /// Length of `'s|'t|'re|'ve|'m|'ll|'d` at `i` (case-insensitive when
    /// `fold`), 0 when none matches.
    #[inline]
    fn contraction(&self, b: &[u8], i: usize, fold: bool) -> usize {
        if b.get(i) != Some(&b'\'') {
            return 0;
        }
        let j = i + 1;
        // 's 't 'm 'd: one letter
        for x in [0, 1, 5, 7] {
            if let Some(n) = self.letter_at(b, j, x, fold) {
                return 1 + n;
            }
        }
        // 're 've 'll: two letters
        for (x, y) in [(2, 3), (4, 3), (6, 6)] {
            if let Some(n) = self.letter_at(b, j, x, fold) {
                if let Some(m) = self.letter_at(b, j + n, y, fold) {
                    return 1 + n + m;
                }
            }
        }
        0
    }

    /// The whitespace alternatives at `i` (a whitespace character):
    /// `\s*[\r\n]+` when `newline_first`, then `\s+(?!\S)`, then `\s+`.
    ///
    /// `\s*[\r\n]+` backtracks from the end of the whitespace run to its last
    /// line break and ends just after it. `\s+(?!\S)` matches the whole run
    /// at the end of the text, else the run minus its last character (which
    /// then starts the next piece, e.g. `" word"`), if that leaves anything.
    /// Otherwise `\s+` takes the single character.
    #[inline]
    fn whitespace(&self, b: &[u8], i: usize, newline_first: bool) -> usize {
        let mut e = i;
        let mut last_start = i;
        let mut after_newline = None;
        while e < b.len() {
            if b[e] == b' ' {
                // a run of spaces (indentation, alignment): eight at a time
                let k = space_run(&b[e..]);
                last_start = e + k - 1;
                e += k;
                continue;
            }
            let (f, len) = self.cls(b, e);
            if f & S == 0 {
                break;
            }
            if f & NL != 0 {
                after_newline = Some(e + len);
            }
            last_start = e;
            e += len;
        }
        if newline_first {
            if let Some(k) = after_newline {
                return k;
            }
        }
        if e == b.len() || last_start == i {
            e
        } else {
            last_start
        }
    }

    /// One GPT-2 piece starting at `i`.
    #[inline(always)]
    fn gpt2(&self, b: &[u8], i: usize) -> usize {
        let c = b[i];
        if c == b'\'' {
            let n = self.contraction(b, i, false);
            if n > 0 {
                return i + n;
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: a space joins the run after it
        if c == b' ' && i + 1 < b.len() {
            let (g, _) = self.cls(b, i + 1);
            if g & L != 0 {
                return self.run(b, i + 1, L);
            }
            if g & N != 0 {
                return self.run(b, i + 1, N);
            }
            if is_punct(g) {
                return self.run_punct(b, i + 1);
            }
        }
        let (f, _) = self.cls(b, i);
        if f & L != 0 {
            self.run(b, i, L)
        } else if f & N != 0 {
            self.run(b, i, N)
        } else if is_punct(f) {
            self.run_punct(b, i)
        } else {
            self.whitespace(b, i, false)
        }
    }

    /// One cl100k (or Qwen2) piece starting at `i`.
    #[inline(always)]
    fn cl100k(&self, b: &[u8], i: usize, max_digits: usize) -> usize {
        let c = b[i];
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        if c == b'\'' {
            let n = self.contraction(b, i, true);
            if n > 0 {
                return i + n;
            }
        }
        let (f, len) = self.cls(b, i);
        // [^\r\n\p{L}\p{N}]?\p{L}+ : a letter run, or one other character
        // (not a number or line break) followed by a letter run
        if f & L != 0 {
            return self.run(b, i + len, L);
        }
        if f & (N | NL) == 0 && self.flags_at(b, i + len) & L != 0 {
            return self.run(b, i + len, L);
        }
        // \p{N}{1,3}
        if f & N != 0 {
            return self.digits(b, i, max_digits);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        let punct_from = if is_punct(f) {
            Some(i)
        } else if c == b' ' && is_punct(self.flags_at(b, i + 1)) && i + 1 < b.len() {
            Some(i + 1)
        } else {
            None
        };
        if let Some(p) = punct_from {
            let mut e = self.run_punct(b, p);
            while e < b.len() && matches!(b[e], b'\r' | b'\n') {
                e += 1;
            }
            return e;
        }
        self.whitespace(b, i, true)
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `i`.
    ///
    /// The first part takes the whole "upper" run; if a "lower" character
    /// follows, the second part takes the "lower" run from there. Otherwise
    /// the first part gives back characters until the second can start: the
    /// match ends just after the last character of the run that is also
    /// "lower" (Lm, Lo, M are in both classes), if any.
    ///
    /// `(f, len)` is the class and length of the character at `i` (which
    /// the caller has looked up already).
    #[inline]
    fn upper_lower(&self, b: &[u8], mut i: usize, (mut f, mut len): (u8, usize)) -> Option<usize> {
        let mut last_lower_end = None;
        loop {
            if f & UP == 0 {
                if f & LO != 0 {
                    return Some(self.run(b, i + len, LO));
                }
                break;
            }
            i += len;
            if f & LO != 0 {
                last_lower_end = Some(i);
            }
            if i >= b.len() {
                break;
            }
            if b[i] >= 0x80 {
                // a run of CJK characters (in both classes) at once
                let e = lo_letter3_run(self.t, b, i);
                if e > i {
                    i = e;
                    last_lower_end = Some(i);
                    if i >= b.len() {
                        break;
                    }
                }
            }
            (f, len) = self.cls(b, i);
        }
        last_lower_end
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` from `i`:
    /// the whole "upper" run (at least one character), then the "lower" run.
    #[inline]
    fn upper_then_lower(&self, b: &[u8], i: usize) -> Option<usize> {
        let e = self.run(b, i, UP);
        (e > i).then(|| self.run(b, e, LO))
    }

    /// One o200k piece starting at `i`.
    #[inline(always)]
    fn o200k(&self, b: &[u8], i: usize) -> usize {
        // a word ends with an optional contraction (most words end without
        // an apostrophe: no call then)
        let word = |e: usize| {
            if b.get(e) == Some(&b'\'') {
                e + self.contraction(b, e, true)
            } else {
                e
            }
        };
        if let Some(e) = o200k_ascii_word(b, i) {
            return word(e);
        }
        let (f, len) = self.cls(b, i);
        // The two word alternatives, each tried with the optional prefix
        // `[^\r\n\p{L}\p{N}]` first and then without it.
        // Each alternative needs a letter or mark (`UP | LO`) where its word
        // starts: the ones that cannot match are not tried.
        let prefixed = f & (L | N | NL) == 0;
        let after = if prefixed && i + len < b.len() {
            self.cls(b, i + len)
        } else {
            (0, 0)
        };
        let word_after = after.0 & (UP | LO) != 0;
        let word_here = f & (UP | LO) != 0;
        if word_after {
            if let Some(e) = self.upper_lower(b, i + len, after) {
                return word(e);
            }
        }
        if word_here {
            if let Some(e) = self.upper_lower(b, i, (f, len)) {
                return word(e);
            }
        }
        if word_after {
            if let Some(e) = self.upper_then_lower(b, i + len) {
                return word(e);
            }
        }
        if word_here {
            if let Some(e) = self.upper_then_lower(b, i) {
                return word(e);
            }
        }
        // \p{N}{1,3}
        if f & N != 0 {
            return self.digits(b, i, 3);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let punct_from = if is_punct(f) {
            Some(i)
        } else if b[i] == b' ' && i + 1 < b.len() && is_punct(self.flags_at(b, i + 1)) {
            Some(i + 1)
        } else {
            None
        };
        if let Some(p) = punct_from {
            let mut e = self.run_punct(b, p);
            while e < b.len() && matches!(b[e], b'\r' | b'\n' | b'/') {
                e += 1;
            }
            return e;
        }
        self.whitespace(b, i, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_agree_with_the_regex_crate_on_every_code_point() {
        let t = Tables::get();
        let classes = [
            (L, r"\p{L}"),
            (N, r"\p{N}"),
            (S, r"\s"),
            (NL, r"[\r\n]"),
            (UP, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
            (LO, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
            (M, r"\p{M}"),
            (PS, r"[\p{P}\p{S}]"),
        ];
        let cjk = regex::Regex::new(&format!("^{}$", crate::patterns::DEEPSEEK_CJK)).unwrap();
        for cp in (0u32..0x11_0000).filter_map(char::from_u32) {
            assert_eq!(
                is_deepseek_cjk(cp as u32),
                cjk.is_match(cp.encode_utf8(&mut [0; 4])),
                "U+{:04X}",
                cp as u32
            );
            assert_eq!(utf8_len(cp.encode_utf8(&mut [0; 4]).as_bytes()[0]), cp.len_utf8());
        }
        for (bit, re) in classes {
            // a DFA over the whole class, checked on every scalar value
            let re = regex::Regex::new(&format!("^{re}$")).unwrap();
            let mut buf = [0u8; 4];
            for cp in (0u32..0x11_0000).filter_map(char::from_u32) {
                let s: &str = cp.encode_utf8(&mut buf);
                assert_eq!(
                    t.of(cp as u32) & bit != 0,
                    re.is_match(s),
                    "{re} on U+{:04X}",
                    cp as u32
                );
                if (cp as u32) < 128 {
                    assert_eq!(t.ascii[cp as usize], t.of(cp as u32));
                }
            }
        }
        // (?i:s) matches the long s; nothing else folds onto the contraction letters
        assert!(t.folds[0].contains(&'\u{17F}'));
        for (x, f) in CONTRACTION_LETTERS.iter().zip(&t.folds) {
            let re = regex::Regex::new(&format!("^(?i:{x})$")).unwrap();
            let matching: Vec<char> = (0u32..0x11_0000)
                .filter_map(char::from_u32)
                .filter(|c| re.is_match(c.encode_utf8(&mut [0; 4])))
                .collect();
            assert_eq!(&matching, f, "fold set of {x}");
        }
    }

    #[test]
    fn cjk_blocks_are_other_letters_throughout() {
        let t = Tables::get();
        let mut buf = [0u8; 4];
        let mut fast = 0;
        for cp in (0x800u32..0x1_0000).filter_map(char::from_u32) {
            let b = cp.encode_utf8(&mut buf).as_bytes();
            let bit = t.lo_letter3[(b[0] & 0x0F) as usize] >> (b[1] & 0x3F) & 1 != 0;
            if bit {
                fast += 1;
                assert_eq!(t.of(cp as u32), LO_LETTER, "U+{:04X}", cp as u32);
            }
            // a run of it alone, and before an ASCII letter and a combining mark
            let one = format!("{cp}{cp}a\u{301}");
            let e = lo_letter3_run(t, one.as_bytes(), 0);
            assert_eq!(e, if bit { 6 } else { 0 }, "U+{:04X}", cp as u32);
        }
        // the CJK ideographs, Hangul syllables and more are in it
        for c in ['\u{4E00}', '\u{9FA5}', '\u{AC00}', '\u{D700}', '\u{3400}'] {
            assert_eq!(lo_letter3_run(t, c.to_string().as_bytes(), 0), 3, "{c}");
        }
        assert!(fast > 20_000, "{fast}");
    }

    #[test]
    fn eight_byte_class_masks_agree_with_the_tables() {
        let t = Tables::get();
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        for k in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // every byte value shows up in every lane
            let w = if k < 256 {
                u64::from(k as u8) * 0x0101_0101_0101_0101
            } else {
                x
            };
            for mask in [L, UP, LO] {
                let m = ascii_run_mask(w, mask);
                for lane in 0..8 {
                    let byte = (w >> (8 * lane)) as u8;
                    let want = byte < 0x80 && t.ascii[byte as usize] & mask != 0;
                    assert_eq!(m >> (8 * lane + 7) & 1 == 1, want, "byte {byte:#x} mask {mask}");
                }
            }
        }
    }

    #[test]
    fn decode_agrees_with_std() {
        let s = "a\u{e9}\u{4e2d}\u{1F600}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}";
        for (i, c) in s.char_indices().filter(|(_, c)| !c.is_ascii()) {
            assert_eq!(decode(s.as_bytes(), i), (c as u32, c.len_utf8()));
        }
    }
}
