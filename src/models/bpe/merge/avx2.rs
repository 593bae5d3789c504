//! The lanes of `lanes` compiled for AVX2, their ranks in AVX2 registers.

use super::*;

/// `RankVec` in two AVX2 registers: a third of the SSE2 instructions.
/// Only made inside `merge_bytes_many_avx2`, which runs where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Ranks8 {
    v: [std::arch::x86_64::__m256i; 2],
}

#[cfg(target_arch = "x86_64")]
impl RankVec<16> for Ranks8 {
    #[inline(always)]
    fn load(rank: &[i32; 16]) -> Self {
        use std::arch::x86_64::*;
        let p = rank.as_ptr() as *const __m256i;
        // SAFETY: made only where AVX2 is (see the type); the loads read
        // the 64 bytes of `rank`.
        unsafe {
            Ranks8 {
                v: [_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))],
            }
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let at = _mm256_set1_epi32(i as i32);
            let r = _mm256_set1_epi32(rank);
            let lo = _mm256_cmpeq_epi32(at, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            let hi = _mm256_cmpeq_epi32(at, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
            Ranks8 {
                v: [
                    _mm256_blendv_epi8(self.v[0], r, lo),
                    _mm256_blendv_epi8(self.v[1], r, hi),
                ],
            }
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let [a, b] = self.v;
            let m = _mm256_min_epi32(a, b);
            let m = _mm256_min_epi32(m, _mm256_permute2x128_si256(m, m, 1));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b01_00_11_10));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b10_11_00_01));
            let lo = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, m))) as u32;
            let hi = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(b, m))) as u32;
            (_mm256_cvtsi256_si32(m), (lo | (hi << 8)) as u64)
        }
    }
}

/// `RankVec` of a wide lane (32 ranks) in four AVX2 registers. Only made
/// inside `merge_bytes_many_wide_avx2`, which runs where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Ranks32 {
    v: [std::arch::x86_64::__m256i; 4],
}

#[cfg(target_arch = "x86_64")]
impl RankVec<32> for Ranks32 {
    #[inline(always)]
    fn load(rank: &[i32; 32]) -> Self {
        use std::arch::x86_64::*;
        let p = rank.as_ptr() as *const __m256i;
        // SAFETY: made only where AVX2 is (see the type); the loads read
        // the 128 bytes of `rank`.
        unsafe {
            Ranks32 {
                v: [
                    _mm256_loadu_si256(p),
                    _mm256_loadu_si256(p.add(1)),
                    _mm256_loadu_si256(p.add(2)),
                    _mm256_loadu_si256(p.add(3)),
                ],
            }
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let at = _mm256_set1_epi32(i as i32);
            let r = _mm256_set1_epi32(rank);
            let mut v = self.v;
            for (k, v) in v.iter_mut().enumerate() {
                let k = 8 * k as i32;
                let here = _mm256_cmpeq_epi32(
                    at,
                    _mm256_setr_epi32(k, k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7),
                );
                *v = _mm256_blendv_epi8(*v, r, here);
            }
            Ranks32 { v }
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        use std::arch::x86_64::*;
        // SAFETY: made only where AVX2 is (see the type).
        unsafe {
            let [a, b, c, d] = self.v;
            let m = _mm256_min_epi32(_mm256_min_epi32(a, b), _mm256_min_epi32(c, d));
            let m = _mm256_min_epi32(m, _mm256_permute2x128_si256(m, m, 1));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b01_00_11_10));
            let m = _mm256_min_epi32(m, _mm256_shuffle_epi32(m, 0b10_11_00_01));
            let mask = |x: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, m))) as u32;
            (
                _mm256_cvtsi256_si32(m),
                (mask(a) | (mask(b) << 8) | (mask(c) << 16) | (mask(d) << 24)) as u64,
            )
        }
    }
}

/// `RankVec` of a lane of 64 ranks as two `Ranks32` halves (eight AVX2
/// registers). Only made inside `merge_bytes_many_wider_avx2`, which runs
/// where AVX2 is.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Ranks64 {
    lo: Ranks32,
    hi: Ranks32,
}

#[cfg(target_arch = "x86_64")]
impl RankVec<64> for Ranks64 {
    #[inline(always)]
    fn load(rank: &[i32; 64]) -> Self {
        let (lo, hi) = rank.split_at(32);
        Ranks64 {
            lo: Ranks32::load(lo.try_into().expect("32 ranks")),
            hi: Ranks32::load(hi.try_into().expect("32 ranks")),
        }
    }

    #[inline(always)]
    fn with(self, i: usize, rank: i32) -> Self {
        // (a position below 32 is no position of the upper half: `with`
        // compares it with 0..31 there, and nothing matches)
        Ranks64 {
            lo: self.lo.with(i, rank),
            hi: self.hi.with(i.wrapping_sub(32), rank),
        }
    }

    #[inline(always)]
    fn lowest(self) -> (i32, u64) {
        let ((a, ha), (b, hb)) = (self.lo.lowest(), self.hi.lowest());
        let m = a.min(b);
        let keep = |x: i32, h: u64| if x == m { h } else { 0 };
        (m, keep(a, ha) | (keep(b, hb) << 32))
    }
}

lanes_compiled_for! {
    /// `merge_bytes_many` compiled for AVX2.
    merge_bytes_many_avx2: "avx2", 16, Ranks8;
    /// `merge_bytes_many_wide` compiled for AVX2.
    merge_bytes_many_wide_avx2: "avx2", 32, Ranks32;
    /// `merge_bytes_many_wider` compiled for AVX2.
    merge_bytes_many_wider_avx2: "avx2", 64, Ranks64;
}
