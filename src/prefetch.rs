//! A hint to the CPU to start loading a cache line: the caches, the pair
//! table and the backtracking encoder's tables read slots they prefetched a
//! step earlier. A leaf module, used across the models and the bindings.

/// Start loading the cache line of `r` (a hint: nothing happens on targets
/// without a prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch reads nothing, and the address is a valid reference's
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
