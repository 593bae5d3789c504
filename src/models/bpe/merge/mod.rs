//! Applying merges to a sequence of symbols: repeatedly merge the adjacent
//! pair of lowest rank, leftmost first.
//!
//! - `reference`: `merge_symbols`, the oracle every other path is tested
//!   against (a scan for short sequences, a heap for long ones);
//! - `pair_table`: the merges as one flat table, the hot path's lookup;
//! - `lanes`: many short pieces merged at once, portable; `avx2` and
//!   `avx512`: the same lanes compiled for those levels; `across`: sixteen
//!   pieces in the lanes of AVX-512 registers.
//!
//! Each dispatcher chooses a level at run time from the CPU and the level
//! in force (`crate::simd`); every level gives `merge_symbols`' result.

/// `merge_bytes_many_with` compiled for a set of CPU features, lanes of
/// `W` ranks in `R`: the versions the dispatchers above choose from.
#[cfg(target_arch = "x86_64")]
macro_rules! lanes_compiled_for {
    ($(#[$doc:meta] $name:ident: $features:literal, $w:literal, $r:ty;)*) => {$(
        #[$doc]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $name<'a>(
            count: usize,
            piece: impl Fn(usize) -> &'a [u8],
            byte_ids: &[u32; 256],
            table: &[(i32, u32)],
            merges: &impl PairLookup,
            ids: &mut [[u32; $w]],
            counts: &mut [u8],
            whole_absent: bool,
        ) {
            merge_bytes_many_with::<$w, $r>(count, piece, byte_ids, table, merges, ids, counts, whole_absent);
        }
    )*};
}

#[cfg(target_arch = "x86_64")]
mod across;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod lanes;
mod pair_table;
mod reference;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "x86_64")]
use across::*;
#[cfg(target_arch = "x86_64")]
use avx2::*;
#[cfg(target_arch = "x86_64")]
use avx512::*;
pub use lanes::*;
pub use pair_table::*;
pub use reference::*;

use rustc_hash::FxHashMap;

type Merges = FxHashMap<(u32, u32), (u32, u32)>;

/// Where merges are looked up.
pub trait PairLookup {
    /// The merge of `a` followed by `b`: (rank, merged id).
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)>;

    /// Where `pair(a, b)` looks (for `prefetch_at` and `rank_at`: the
    /// hash is computed once).
    #[inline(always)]
    fn locate(&self, _a: u32, _b: u32) -> usize {
        0
    }

    /// Start loading what `rank_at` will read at `at` (a hint; by default
    /// nothing).
    #[inline(always)]
    fn prefetch_at(&self, _at: usize) {}

    /// `pair(a, b)` as (rank, merged id), `NO_MERGE` for none; `at` is
    /// `locate(a, b)`.
    #[inline(always)]
    fn rank_at(&self, a: u32, b: u32, _at: usize) -> (i32, u32)
    where
        Self: Sized,
    {
        lookup(self, a, b)
    }
}

impl PairLookup for Merges {
    #[inline(always)]
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.get(&(a, b)).copied()
    }
}

/// `merge_bytes_many` where merges are ranked by the ids they make (the
/// tiktoken files: a pair's rank is its merged token) and the CPU has
/// AVX-512 (F and DQ): sixteen pieces merged at once, one in each 32-bit
/// lane of a vector, the pieces sorted by length (pieces merged together
/// take about as many steps). A step finds every lane's lowest pair with a
/// minimum over the rows, merges it with masked moves (reading the merged
/// token's neighbours on the way), and prefetches the two new pairs' slots
/// in the pair table; the group's next step, after a step of each other
/// group, reads them with gathers. The scalar lanes' unpredictable
/// branches (a piece that is done, the lowest pair's place) become masks.
/// Where it does not apply (`across_applies`), `merge_bytes_many` merges
/// the pieces; the results are `merge_bytes_many`'s exactly.
#[allow(clippy::too_many_arguments)]
pub fn merge_bytes_across<'a>(
    count: usize,
    piece: impl Fn(usize) -> &'a [u8],
    byte_ids: &[u32; 256],
    table: &[(i32, u32)],
    merges: &PairTable,
    ids: &mut [[u32; MANY_MAX + 1]],
    counts: &mut [u8],
    whole_absent: bool,
) {
    if across_applies(merges) {
        // SAFETY: AVX-512F and DQ are there (`across_lanes`), and the
        // table is ranked by id.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            merge_bytes_across_avx512(count, piece, byte_ids, table, merges, ids, counts, whole_absent)
        };
        #[cfg(target_arch = "x86_64")]
        return;
    }
    merge_bytes_many(count, piece, byte_ids, table, merges, ids, counts, whole_absent);
}

/// Whether `merge_bytes_across` merges across vector lanes: merges ranked
/// by the ids they make, all in the pair table's slots, on a CPU with
/// AVX-512 F and DQ.
pub fn across_applies(merges: &PairTable) -> bool {
    merges.by_id && merges.big.is_none() && across_lanes()
}

/// Whether this CPU has what `merge_bytes_across` needs.
fn across_lanes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::simd::allows(crate::simd::Level::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && crate::has_avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}
