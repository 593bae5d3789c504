//! UTF-8 from the code units CPython keeps a string in.
//!
//! A Python `str` that is not pure ASCII is stored as Latin-1, UCS-2 or
//! UCS-4 code units, one per character. Asking CPython for its UTF-8
//! (`PyUnicode_AsUTF8AndSize`) converts it with the GIL held, one character
//! at a time. The bindings read the code units instead and convert them
//! here, without the GIL (on the encoding threads, for a batch), sixteen
//! ASCII characters at a time where the text allows (thirty-two, from
//! UCS-2, where the CPU has AVX2).

/// The code units of a string, one per character.
#[derive(Clone, Copy, Debug)]
pub enum Units<'a> {
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
    Ucs4(&'a [u32]),
}

impl Units<'_> {
    /// The most UTF-8 bytes these units can take.
    pub fn max_utf8_len(&self) -> usize {
        match self {
            Units::Latin1(u) => 2 * u.len(),
            Units::Ucs2(u) => 3 * u.len(),
            Units::Ucs4(u) => 4 * u.len(),
        }
    }
}

/// A code point UTF-8 cannot hold: a surrogate (Python strings may contain
/// lone ones) or a value past U+10FFFF.
#[derive(Debug, PartialEq, Eq)]
pub struct NotEncodable {
    /// Index of the character (code unit) in the string.
    pub index: usize,
}

/// Append the UTF-8 of `units` to `out`. On a code point UTF-8 cannot hold,
/// `out` is left as it was.
pub fn push_units(units: Units<'_>, out: &mut String) -> Result<(), NotEncodable> {
    let start = out.len();
    // SAFETY: the bytes written are the UTF-8 of valid scalar values only
    // (anything else returns the error after truncating back to `start`,
    // itself a boundary), so `out` holds UTF-8 whenever this returns.
    let bytes = unsafe { out.as_mut_vec() };
    // (`SLACK` more: a block of UCS-2 converted with vector instructions
    // writes sixteen bytes for every four characters)
    // (a buffer for one call: on ordinary pages, see `huge_pages`)
    crate::huge_pages::plain(|| bytes.reserve(units.max_utf8_len() + SLACK));
    let written = match units {
        Units::Latin1(u) => {
            latin1(u, bytes);
            Ok(())
        }
        Units::Ucs2(u) => ucs2(u, bytes),
        Units::Ucs4(u) => ucs4(u, bytes),
    };
    if written.is_err() {
        bytes.truncate(start);
    }
    written
}

/// Bytes past the widest UTF-8 of the units that `Block::utf8_16` and
/// `ucs2_avx512` may write (the latter stores sixty-four bytes for sixteen
/// characters, which take forty-eight at most).
const SLACK: usize = 16;

/// Blocks of sixteen units (callers check `at + 16 <= len`).
trait Block {
    /// Sixteen units from `at` are ASCII.
    fn ascii16(&self, at: usize) -> bool;
    /// Write the sixteen ASCII units from `at` as bytes to `dst`.
    ///
    /// # Safety
    /// `dst` has room for 16 bytes and `ascii16(at)` holds.
    unsafe fn put16(&self, at: usize, dst: *mut u8);
    /// Write the UTF-8 of the sixteen units from `at` to `dst` at once: the
    /// bytes written, or `None` (then `convert` takes them one by one).
    ///
    /// # Safety
    /// `dst` has room for their UTF-8 at its widest and `SLACK` bytes more.
    #[inline(always)]
    unsafe fn utf8_16(&self, _at: usize, _dst: *mut u8) -> Option<usize> {
        None
    }
}

impl Block for [u8] {
    #[inline(always)]
    fn ascii16(&self, at: usize) -> bool {
        let w = u128::from_le_bytes(self[at..at + 16].try_into().expect("16 bytes"));
        w & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0
    }

    #[inline(always)]
    unsafe fn put16(&self, at: usize, dst: *mut u8) {
        assert!(at + 16 <= self.len());
        // SAFETY: sixteen bytes from `at` (just checked) to the sixteen of
        // room at `dst` (the caller's promise); a slice and a buffer being
        // written do not overlap
        unsafe { std::ptr::copy_nonoverlapping(self.as_ptr().add(at), dst, 16) };
    }
}

/// The sixteen units from `at` are all below 0x80.
#[inline(always)]
fn wide_ascii16<T: Copy + Into<u32>>(units: &[T], at: usize) -> bool {
    units[at..at + 16].iter().fold(0, |acc, &u| acc | u.into()) < 0x80
}

impl Block for [u16] {
    #[inline(always)]
    fn ascii16(&self, at: usize) -> bool {
        wide_ascii16(self, at)
    }

    #[inline(always)]
    unsafe fn put16(&self, at: usize, dst: *mut u8) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            assert!(at + 16 <= self.len());
            // SAFETY: SSE2 is in every x86_64 target; two unaligned loads
            // of eight units from `at` (sixteen there, just checked), one
            // store of sixteen bytes where the caller promised room
            unsafe {
                let p = self.as_ptr().add(at) as *const __m128i;
                let packed = _mm_packus_epi16(_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
                _mm_storeu_si128(dst as *mut __m128i, packed);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        for k in 0..16 {
            // SAFETY: `dst` has room for sixteen bytes (the caller's promise)
            unsafe { *dst.add(k) = self[at + k] as u8 };
        }
    }

    #[inline(always)]
    unsafe fn utf8_16(&self, at: usize, dst: *mut u8) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if crate::has_avx2() {
            // SAFETY: the CPU has AVX2 (and so SSE4.1 and SSSE3); sixteen
            // units from `at` (the caller's), and room at `dst`
            return unsafe { ucs2_vector::utf8_16(self.as_ptr().add(at), dst) };
        }
        let _ = (at, dst);
        None
    }
}

/// UCS-2 to UTF-8 with vector instructions, four characters at a time: in
/// text that mixes widths (Chinese or Japanese with ASCII, English with
/// curly quotes) a branch on each character's width mispredicts wherever
/// the width changes, and even Japanese, three bytes nearly throughout,
/// takes a branch and three stores per character one by one.
#[cfg(target_arch = "x86_64")]
mod ucs2_vector {
    use std::arch::x86_64::*;

    /// For four characters, by (bit k: character k takes two bytes or more)
    /// | (bit 4 + k: three): the shuffle that packs the bytes each made in
    /// its own four (`utf8_16`) one after the other, and how many there are.
    static PACK: [([u8; 16], u8); 256] = pack_table();

    const fn pack_table() -> [([u8; 16], u8); 256] {
        let mut t = [([0x80u8; 16], 0u8); 256];
        let mut idx = 0;
        while idx < 256 {
            let mut m = [0x80u8; 16];
            let mut n = 0;
            let mut k = 0;
            while k < 4 {
                let len = 1 + (idx >> k & 1) + (idx >> (4 + k) & 1);
                let mut b = 0;
                while b < len {
                    m[n] = (4 * k + b) as u8;
                    n += 1;
                    b += 1;
                }
                k += 1;
            }
            t[idx] = (m, n as u8);
            idx += 1;
        }
        t
    }

    /// The UTF-8 of four characters, each in the low bytes of a 32-bit
    /// lane, at `dst` (sixteen bytes written): how many bytes they are.
    ///
    /// # Safety
    /// `dst` has room for sixteen bytes.
    #[inline]
    #[target_feature(enable = "sse4.1,ssse3")]
    unsafe fn four(c: __m128i, dst: *mut u8) -> usize {
        let x3f = _mm_set1_epi32(0x3F);
        let low = _mm_or_si128(_mm_set1_epi32(0x80), _mm_and_si128(c, x3f));
        let mid = _mm_or_si128(_mm_set1_epi32(0x80), _mm_and_si128(_mm_srli_epi32::<6>(c), x3f));
        // two bytes: 110xxxxx 10xxxxxx; three: 1110xxxx 10xxxxxx 10xxxxxx
        let w2 = _mm_or_si128(
            _mm_or_si128(_mm_set1_epi32(0xC0), _mm_srli_epi32::<6>(c)),
            _mm_slli_epi32::<8>(low),
        );
        let w3 = _mm_or_si128(
            _mm_or_si128(_mm_set1_epi32(0xE0), _mm_srli_epi32::<12>(c)),
            _mm_or_si128(_mm_slli_epi32::<8>(mid), _mm_slli_epi32::<16>(low)),
        );
        let two = _mm_cmpgt_epi32(c, _mm_set1_epi32(0x7F));
        let three = _mm_cmpgt_epi32(c, _mm_set1_epi32(0x7FF));
        let w = _mm_blendv_epi8(_mm_blendv_epi8(c, w2, two), w3, three);
        let idx = _mm_movemask_ps(_mm_castsi128_ps(two)) | _mm_movemask_ps(_mm_castsi128_ps(three)) << 4;
        let (mask, n) = &PACK[idx as usize];
        // SAFETY: `mask` is sixteen bytes; `dst` has room for sixteen
        unsafe {
            let packed = _mm_shuffle_epi8(w, _mm_loadu_si128(mask.as_ptr().cast()));
            _mm_storeu_si128(dst.cast(), packed);
        }
        *n as usize
    }

    /// The UTF-8 of the sixteen units at `src`, at `dst`: the bytes
    /// written, or `None` if a unit is a surrogate (then what was written
    /// is to be overwritten).
    ///
    /// # Safety
    /// The CPU has SSE4.1 and SSSE3; sixteen units at `src`; room for 48
    /// bytes and `SLACK` more at `dst`.
    #[target_feature(enable = "sse4.1,ssse3")]
    pub unsafe fn utf8_16(src: *const u16, dst: *mut u8) -> Option<usize> {
        let mut k = 0;
        let zero = _mm_setzero_si128();
        for half in 0..2 {
            // SAFETY: sixteen units at `src` (the caller's promise)
            let v = unsafe { _mm_loadu_si128(src.add(8 * half).cast()) };
            let sur = _mm_cmpeq_epi16(
                _mm_and_si128(v, _mm_set1_epi16(0xF800u16 as i16)),
                _mm_set1_epi16(0xD800u16 as i16),
            );
            if _mm_movemask_epi8(sur) != 0 {
                return None;
            }
            // SAFETY: at most 12 bytes a four, and room for 48 and `SLACK`
            // at `dst`, so sixteen from `dst + k` are there
            k += unsafe { four(_mm_unpacklo_epi16(v, zero), dst.add(k)) };
            // SAFETY: as above
            k += unsafe { four(_mm_unpackhi_epi16(v, zero), dst.add(k)) };
        }
        Some(k)
    }
}

impl Block for [u32] {
    #[inline(always)]
    fn ascii16(&self, at: usize) -> bool {
        wide_ascii16(self, at)
    }

    #[inline(always)]
    unsafe fn put16(&self, at: usize, dst: *mut u8) {
        for k in 0..16 {
            // SAFETY: `dst` has room for sixteen bytes (the caller's promise)
            unsafe { *dst.add(k) = self[at + k] as u8 };
        }
    }
}

/// Write `c` (a scalar value) at `dst`, returning the bytes written.
///
/// # Safety
/// `dst` has room for `c`'s UTF-8.
#[inline(always)]
unsafe fn put_char(c: u32, dst: *mut u8) -> usize {
    // SAFETY: every write is within the character's UTF-8 length, for which
    // the caller promised room
    unsafe {
        if c < 0x80 {
            *dst = c as u8;
            1
        } else if c < 0x800 {
            *dst = 0xC0 | (c >> 6) as u8;
            *dst.add(1) = 0x80 | (c & 0x3F) as u8;
            2
        } else if c < 0x1_0000 {
            *dst = 0xE0 | (c >> 12) as u8;
            *dst.add(1) = 0x80 | ((c >> 6) & 0x3F) as u8;
            *dst.add(2) = 0x80 | (c & 0x3F) as u8;
            3
        } else {
            *dst = 0xF0 | (c >> 18) as u8;
            *dst.add(1) = 0x80 | ((c >> 12) & 0x3F) as u8;
            *dst.add(2) = 0x80 | ((c >> 6) & 0x3F) as u8;
            *dst.add(3) = 0x80 | (c & 0x3F) as u8;
            4
        }
    }
}

/// The loop every width shares: blocks of sixteen ASCII units copied at
/// once, other characters one by one through `one` (the bytes it wrote, or
/// `None` for a unit UTF-8 cannot hold, whose index is then the error).
///
/// # Safety
/// `out` has spare capacity for the units' UTF-8 at its widest, and
/// `SLACK` bytes more.
#[inline(always)]
unsafe fn convert<T: Copy>(
    units: &[T],
    out: &mut Vec<u8>,
    one: impl Fn(T, *mut u8) -> Option<usize>,
) -> Result<(), NotEncodable>
where
    [T]: Block,
{
    // Invariant: `dst` is `base` plus the UTF-8 written for the units
    // before `i`, so the spare capacity the caller promised covers every
    // write from `dst` for the units from `i` (and `SLACK`).
    let n = units.len();
    // SAFETY: `out.len()` is within its allocation
    let mut dst = unsafe { out.as_mut_ptr().add(out.len()) };
    let base = dst;
    let mut i = 0;
    while i < n {
        if i + 16 <= n {
            if units.ascii16(i) {
                // SAFETY: sixteen ASCII units from `i`, sixteen bytes of room
                // at `dst` (the invariant)
                unsafe {
                    units.put16(i, dst);
                    dst = dst.add(16);
                }
                i += 16;
                continue;
            }
            // SAFETY: sixteen units from `i`; room for their widest UTF-8
            // and `SLACK` at `dst` (the invariant)
            if let Some(k) = unsafe { units.utf8_16(i, dst) } {
                // SAFETY: `k` bytes were written there
                dst = unsafe { dst.add(k) };
                i += 16;
                continue;
            }
        }
        // one character at a time up to the next block boundary (a block
        // that is not ASCII is not tried again unit by unit from each start)
        let stop = (i + 16).min(n);
        while i < stop {
            match one(units[i], dst) {
                // SAFETY: `k` bytes were written there
                Some(k) => dst = unsafe { dst.add(k) },
                None => return Err(NotEncodable { index: i }),
            }
            i += 1;
        }
    }
    // SAFETY: the bytes from `base` to `dst` were written above, as UTF-8
    unsafe { out.set_len(out.len() + dst.offset_from(base) as usize) };
    Ok(())
}

fn latin1(units: &[u8], out: &mut Vec<u8>) {
    // SAFETY: `push_units` reserved two bytes per unit.
    let done = unsafe { convert(units, out, |u, dst| Some(put_char(u as u32, dst))) };
    debug_assert!(done.is_ok(), "every Latin-1 unit is a scalar value");
}

/// One UCS-2 unit's UTF-8 at `dst` (`None` for a surrogate).
///
/// # Safety
/// `dst` has room for three bytes.
#[inline(always)]
unsafe fn ucs2_one(u: u16, dst: *mut u8) -> Option<usize> {
    let c = u as u32;
    // SAFETY: room for three bytes, the most a UCS-2 unit takes
    (c & 0xF800 != 0xD800).then(|| unsafe { put_char(c, dst) })
}

fn ucs2(units: &[u16], out: &mut Vec<u8>) -> Result<(), NotEncodable> {
    #[cfg(target_arch = "x86_64")]
    if has_avx512_compress() {
        // SAFETY: the CPU has those features; `push_units` reserved three
        // bytes per unit, and `SLACK`.
        return unsafe { ucs2_avx512(units, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::has_avx2() {
        // SAFETY: the CPU has AVX2; `push_units` reserved three bytes per
        // unit, and `SLACK`.
        return unsafe { ucs2_avx2(units, out) };
    }
    // SAFETY: `push_units` reserved three bytes per unit, and `SLACK`.
    unsafe { convert(units, out, |u, dst| ucs2_one(u, dst)) }
}

/// `ucs2` with runs of ASCII taken 32 units at a time (English in a
/// string that holds one curly quote: a megabyte's conversion was a tenth
/// of its encoding's time), the rest by `convert` 32 units at a time.
///
/// # Safety
/// The CPU has AVX2; `out` has room for three bytes a unit, and `SLACK`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ucs2_avx2(units: &[u16], out: &mut Vec<u8>) -> Result<(), NotEncodable> {
    use std::arch::x86_64::*;
    // Invariant: `out` holds the UTF-8 of the units before `i`, and has
    // room for three bytes for each unit from `i`, and `SLACK`.
    let n = units.len();
    let mut i = 0;
    while i < n {
        let start = i;
        // SAFETY: `out.len()` is within its allocation
        let mut dst = unsafe { out.as_mut_ptr().add(out.len()) };
        while i + 32 <= n {
            // SAFETY: 32 units from `i` (checked above)
            let (a, b) = unsafe {
                let src = units.as_ptr().add(i).cast::<__m256i>();
                (_mm256_loadu_si256(src), _mm256_loadu_si256(src.add(1)))
            };
            if _mm256_testz_si256(_mm256_or_si256(a, b), _mm256_set1_epi16(0xFF80u16 as i16)) == 0 {
                break;
            }
            // (the pack interleaves the halves of `a` and `b`: 64-bit
            // quarters 0, 2, 1, 3 put them back in order)
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi16(a, b));
            // SAFETY: room for 32 bytes at `dst` (the invariant)
            unsafe {
                _mm256_storeu_si256(dst.cast(), packed);
                dst = dst.add(32);
            }
            i += 32;
        }
        // SAFETY: the ASCII units from `start` were written as one byte each
        unsafe { out.set_len(out.len() + (i - start)) };
        if i == n {
            break;
        }
        let end = (i + 32).min(n);
        // SAFETY: room as the invariant says
        unsafe { convert(&units[i..end], out, |u, dst| ucs2_one(u, dst)) }
            .map_err(|e| NotEncodable { index: i + e.index })?;
        i = end;
    }
    Ok(())
}

/// Whether the CPU has what `ucs2_avx512` needs (std caches the answer).
#[cfg(target_arch = "x86_64")]
fn has_avx512_compress() -> bool {
    crate::simd::allows(crate::simd::Level::Avx512)
        && std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vbmi2")
        && std::is_x86_feature_detected!("bmi2")
        && std::is_x86_feature_detected!("popcnt")
}

/// `ucs2` with AVX-512, thirty-two units at a time: a block of ASCII
/// narrowed to bytes at once; any other block as two sets of sixteen
/// characters, each widened to a 32-bit lane that gets the character's one
/// to three UTF-8 bytes, and the bytes that are used compressed together
/// (one `vpcompressb`). Chinese or Japanese text converts several times
/// faster than four characters at a time (`ucs2_vector`).
///
/// A block with a surrogate, and the last units (fewer than thirty-two),
/// go to `convert`, which reports the surrogate.
///
/// # Safety
/// The CPU has the features of `has_avx512_compress`; `out` has room for
/// three bytes a unit, and `SLACK`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,bmi2,popcnt")]
unsafe fn ucs2_avx512(units: &[u16], out: &mut Vec<u8>) -> Result<(), NotEncodable> {
    use std::arch::x86_64::*;
    // Invariant: `dst` is `base` plus the UTF-8 of the units before `i`;
    // the caller's room (three bytes a unit, and `SLACK`) covers a block's
    // 64-byte store from `dst`, since 32 units before the end of the units
    // leave at least 96 bytes.
    let n = units.len();
    let mut i = 0;
    // SAFETY: `out.len()` is within its allocation
    let base = unsafe { out.as_mut_ptr().add(out.len()) };
    let mut dst = base;
    let set = _mm512_set1_epi32;
    while i + 32 <= n {
        // SAFETY: 32 units from `i` (checked above)
        let v = unsafe { _mm512_loadu_si512(units.as_ptr().add(i).cast()) };
        if _mm512_test_epi16_mask(v, _mm512_set1_epi16(0xFF80u16 as i16)) == 0 {
            // SAFETY: room for 32 bytes (the invariant)
            unsafe {
                _mm256_storeu_si256(dst.cast(), _mm512_cvtepi16_epi8(v));
                dst = dst.add(32);
            }
            i += 32;
            continue;
        }
        let surrogate = _mm512_cmpeq_epi16_mask(
            _mm512_and_si512(v, _mm512_set1_epi16(0xF800u16 as i16)),
            _mm512_set1_epi16(0xD800u16 as i16),
        );
        if surrogate != 0 {
            break;
        }
        for half in [_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v)] {
            let c = _mm512_cvtepu16_epi32(half);
            let two = _mm512_cmpgt_epu32_mask(c, set(0x7F));
            let three = _mm512_cmpgt_epu32_mask(c, set(0x7FF));
            let low = _mm512_or_si512(set(0x80), _mm512_and_si512(c, set(0x3F)));
            let mid = _mm512_or_si512(set(0x80), _mm512_and_si512(_mm512_srli_epi32::<6>(c), set(0x3F)));
            // two bytes: 110xxxxx 10xxxxxx; three: 1110xxxx 10xxxxxx 10xxxxxx
            let w2 = _mm512_or_si512(
                _mm512_or_si512(set(0xC0), _mm512_srli_epi32::<6>(c)),
                _mm512_slli_epi32::<8>(low),
            );
            let w3 = _mm512_or_si512(
                _mm512_or_si512(set(0xE0), _mm512_srli_epi32::<12>(c)),
                _mm512_or_si512(_mm512_slli_epi32::<8>(mid), _mm512_slli_epi32::<16>(low)),
            );
            let w = _mm512_mask_mov_epi32(_mm512_mask_mov_epi32(c, two, w2), three, w3);
            // of each lane's four bytes: the first always, the second for
            // two bytes or three, the third for three
            let keep = 0x1111_1111_1111_1111u64
                | _pdep_u64(two as u64, 0x2222_2222_2222_2222)
                | _pdep_u64(three as u64, 0x4444_4444_4444_4444);
            // SAFETY: room for 64 bytes (the invariant); the bytes kept
            // are this half's UTF-8
            unsafe {
                _mm512_storeu_si512(dst.cast(), _mm512_maskz_compress_epi8(keep, w));
                dst = dst.add(keep.count_ones() as usize);
            }
        }
        i += 32;
    }
    // SAFETY: the bytes from `base` to `dst` were written above, as UTF-8
    unsafe { out.set_len(out.len() + dst.offset_from(base) as usize) };
    if i < n {
        // SAFETY: room as the invariant says
        unsafe { convert(&units[i..], out, |u, dst| ucs2_one(u, dst)) }
            .map_err(|e| NotEncodable { index: i + e.index })?;
    }
    Ok(())
}

fn ucs4(units: &[u32], out: &mut Vec<u8>) -> Result<(), NotEncodable> {
    // SAFETY: `push_units` reserved four bytes per unit.
    unsafe { convert(units, out, |c, dst| char::from_u32(c).map(|_| put_char(c, dst))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic mix of characters of every UTF-8 width, with ASCII
    /// runs of all lengths around the 16-unit blocks.
    fn sample(seed: u64, n: usize, max: u32) -> Vec<char> {
        let mut x = seed | 1;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let run = (x % 40) as usize;
            if x >> 60 < 10 {
                out.extend((0..run).map(|k| (b'a' + (k % 26) as u8) as char));
                continue;
            }
            let c = ((x >> 20) as u32) % max;
            if let Some(c) = char::from_u32(c) {
                out.push(c);
            }
        }
        out.truncate(n);
        out
    }

    fn check(chars: &[char]) {
        let want: String = chars.iter().collect();
        let mut got = String::from("prefix ");
        if chars.iter().all(|&c| (c as u32) < 0x100) {
            let u: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
            push_units(Units::Latin1(&u), &mut got).unwrap();
            assert_eq!(&got[7..], want);
            got.truncate(7);
        }
        if chars.iter().all(|&c| (c as u32) < 0x1_0000) {
            let u: Vec<u16> = chars.iter().map(|&c| c as u16).collect();
            push_units(Units::Ucs2(&u), &mut got).unwrap();
            assert_eq!(&got[7..], want);
            got.truncate(7);
            for (way, res) in ucs2_each(&u) {
                assert_eq!(res.as_deref(), Ok(want.as_str()), "{way}");
            }
        }
        let u: Vec<u32> = chars.iter().map(|&c| c as u32).collect();
        push_units(Units::Ucs4(&u), &mut got).unwrap();
        assert_eq!(&got[7..], want);
    }

    /// The UCS-2 conversions this CPU can run, each on its own (`push_units`
    /// takes the fastest): their UTF-8, or their error.
    fn ucs2_each(u: &[u16]) -> Vec<(&'static str, Result<String, NotEncodable>)> {
        type Way = fn(&[u16], &mut Vec<u8>) -> Result<(), NotEncodable>;
        // SAFETY: (each) room for three bytes a unit and `SLACK`, below
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut ways: Vec<(&'static str, Way)> =
            vec![("four at a time", |u, v| unsafe { convert(u, v, |x, d| ucs2_one(x, d)) })];
        #[cfg(target_arch = "x86_64")]
        {
            if crate::has_avx2() {
                // SAFETY: the CPU has AVX2
                ways.push(("avx2", |u, v| unsafe { ucs2_avx2(u, v) }));
            }
            if has_avx512_compress() {
                // SAFETY: the CPU has those features
                ways.push(("avx512", |u, v| unsafe { ucs2_avx512(u, v) }));
            }
        }
        ways.into_iter()
            .map(|(name, f)| {
                let mut v = Vec::with_capacity(3 * u.len() + SLACK);
                (name, f(u, &mut v).map(|()| String::from_utf8(v).expect("UTF-8")))
            })
            .collect()
    }

    #[test]
    fn every_width_matches_std() {
        for n in [0, 1, 15, 16, 17, 31, 32, 33, 100, 1000, 5000] {
            for (seed, max) in [(1, 0x100), (2, 0x800), (3, 0x1_0000), (4, 0x11_0000), (5, 0x80)] {
                check(&sample(seed * 7919 + n as u64, n, max));
            }
        }
        // every code point once, each width that holds it
        let all: Vec<char> = (0..=0x10_FFFF).filter_map(char::from_u32).collect();
        check(&all[..0x100]);
        check(&all[..0xD800]);
        let bmp: Vec<char> = all.iter().copied().filter(|&c| (c as u32) < 0x1_0000).collect();
        check(&bmp);
        check(&all);
    }

    #[test]
    fn long_ascii_runs_with_one_other_character_anywhere() {
        // (the 32-unit ASCII blocks of `ucs2_avx2` and the 16-unit ones,
        // broken by one character at every position, then resumed)
        let ascii: Vec<char> = (0..100).map(|k| (b'a' + (k % 26) as u8) as char).collect();
        for at in 0..ascii.len() {
            for other in ['\u{e9}', '\u{2019}', '\u{4e2d}', '\u{1F600}'] {
                let mut chars = ascii.clone();
                chars[at] = other;
                check(&chars);
            }
            let mut u: Vec<u16> = ascii.iter().map(|&c| c as u16).collect();
            u[at] = 0xDC00;
            let mut out = String::from("kept");
            assert_eq!(push_units(Units::Ucs2(&u), &mut out), Err(NotEncodable { index: at }));
            assert_eq!(out, "kept");
        }
    }

    #[test]
    fn surrogates_and_out_of_range_are_refused_with_their_index() {
        for bad in [0xD800u32, 0xDBFF, 0xDC00, 0xDFFF] {
            for at in [0usize, 5, 16, 40] {
                let mut u: Vec<u16> = "0123456789abcdefghijklmnopqrstuvwxyz0123456789"
                    .encode_utf16()
                    .collect();
                u[at] = bad as u16;
                let mut out = String::from("kept");
                assert_eq!(push_units(Units::Ucs2(&u), &mut out), Err(NotEncodable { index: at }));
                assert_eq!(out, "kept");
                let w: Vec<u32> = u.iter().map(|&c| c as u32).collect();
                assert_eq!(push_units(Units::Ucs4(&w), &mut out), Err(NotEncodable { index: at }));
                assert_eq!(out, "kept");
            }
        }
        let mut out = String::new();
        assert_eq!(
            push_units(Units::Ucs4(&[0x41, 0x11_0000]), &mut out),
            Err(NotEncodable { index: 1 })
        );
        assert!(out.is_empty());
        // inside blocks of sixteen or thirty-two characters of every width
        // (converted four, or sixteen, at a time until the block with the
        // bad one), and in the last units after them
        let base: Vec<u16> = "中文 é テキスト, mixed 字符 and ASCII; 한국어 ÿ text ß end. Ωμέγα"
            .repeat(3)
            .encode_utf16()
            .collect();
        assert!(base.len() > 112);
        for at in [0usize, 3, 8, 15, 16, 17, 24, 31, 40, 47, 63, 64, 90, base.len() - 1] {
            for bad in [0xD800u16, 0xDBFF, 0xDC00, 0xDFFF] {
                let mut u = base.clone();
                u[at] = bad;
                let mut out = String::from("kept");
                assert_eq!(push_units(Units::Ucs2(&u), &mut out), Err(NotEncodable { index: at }));
                assert_eq!(out, "kept");
                for (way, res) in ucs2_each(&u) {
                    assert_eq!(res, Err(NotEncodable { index: at }), "{way}");
                }
            }
        }
    }
}
