//! The lanes of `lanes` compiled for AVX-512F, their ranks in AVX-512
//! registers.

use super::*;

/// `RankVec`s in AVX-512 registers, sixteen ranks each: a rank set with
/// masked moves, the lowest found by one reduction. Only made inside the
/// lanes compiled for AVX-512F (`merge_bytes_many_wide_avx512`,
/// `merge_bytes_many_wider_avx512`), which run where the CPU has it.
macro_rules! ranks_in_zmm {
    ($($(#[$doc:meta])* $name:ident: $regs:literal registers, $w:literal ranks;)*) => {$(
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[derive(Clone, Copy)]
        pub(super) struct $name {
            v: [std::arch::x86_64::__m512i; $regs],
        }

        #[cfg(target_arch = "x86_64")]
        impl RankVec<$w> for $name {
            #[inline(always)]
            fn load(rank: &[i32; $w]) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type); the
                // loads read the ranks of `rank`, sixteen at a time.
                unsafe {
                    $name {
                        v: std::array::from_fn(|k| _mm512_loadu_si512(rank.as_ptr().add(16 * k).cast())),
                    }
                }
            }

            #[inline(always)]
            fn with(self, i: usize, rank: i32) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type).
                unsafe {
                    let bit = 1u64 << (i & ($w - 1));
                    let r = _mm512_set1_epi32(rank);
                    $name {
                        v: std::array::from_fn(|k| _mm512_mask_mov_epi32(self.v[k], (bit >> (16 * k)) as u16, r)),
                    }
                }
            }

            #[inline(always)]
            fn lowest(self) -> (i32, u64) {
                use std::arch::x86_64::*;
                // SAFETY: made only where AVX-512F is (see the type).
                unsafe {
                    let low = self.v.iter().skip(1).fold(self.v[0], |m, &v| _mm512_min_epi32(m, v));
                    let m = _mm512_reduce_min_epi32(low);
                    let x = _mm512_set1_epi32(m);
                    let hits = self
                        .v
                        .iter()
                        .enumerate()
                        .fold(0u64, |h, (k, &v)| h | ((_mm512_cmpeq_epi32_mask(v, x) as u64) << (16 * k)));
                    (m, hits)
                }
            }
        }
    )*};
}

ranks_in_zmm! {
    /// `RankVec` of a wide lane (32 ranks) in two AVX-512 registers.
    Ranks32x2: 2 registers, 32 ranks;
    /// `RankVec` of a lane of 64 ranks in four AVX-512 registers.
    Ranks64x4: 4 registers, 64 ranks;
}

lanes_compiled_for! {
    /// `merge_bytes_many_wide` compiled for AVX-512F, the ranks in two registers.
    merge_bytes_many_wide_avx512: "avx2,avx512f", 32, Ranks32x2;
    /// `merge_bytes_many_wider` compiled for AVX-512F, the ranks in four registers.
    merge_bytes_many_wider_avx512: "avx2,avx512f", 64, Ranks64x4;
}
