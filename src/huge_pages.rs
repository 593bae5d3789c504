//! Large allocations on transparent huge pages (Linux).
//!
//! An encoder's tables (merges, the vocabulary's lookup tables, the
//! per-thread caches) take tens of megabytes read at random: on 4 KB pages
//! nearly every lookup misses the TLB, and a page walk, in a virtual
//! machine two of them nested, comes before the cache miss itself. Where
//! the kernel gives transparent huge pages only on request (the default
//! `madvise` mode), allocations of `MIN_SIZE` bytes and more are mapped
//! here on 2 MB boundaries and their whole 2 MB pages marked
//! `MADV_HUGEPAGE` before anything touches them (a partial last page only
//! when the block fills most of it: see `huge_part`); a few freed blocks are
//! kept for reuse; every other allocation goes to the system allocator.
//!
//! Huge pages are for what lives long and is read at random. A large
//! buffer made for one call (an encoding's ids, a batch's ids, a text
//! converted to UTF-8) is allocated inside [`plain`]: on ordinary pages.
//! In a virtual machine a fresh huge page can cost far more than its 2 MB
//! of zeroing (the host backs it on first touch: a 2 MB batch output took
//! 1 to 11 ms to fault in, against under 1 ms on ordinary pages), and a
//! buffer written once from start to end gains nothing from the TLB. Such
//! a block starts one page past its mapping's 2 MB boundary, which is how
//! `dealloc` and `realloc` tell it (a block grown keeps its kind).
//!
//! `TOKENSMITH_HUGE_PAGES=0` in the environment turns this off (read once,
//! at the first large allocation).

use std::alloc::{GlobalAlloc, Layout, System};

/// The allocator: the system's, with large blocks on huge pages.
pub struct HugePages;

/// A huge page.
const HUGE: usize = 2 << 20;
/// The smallest allocation placed on huge pages (it takes at most twice
/// its size of address space; only the pages touched are memory).
const MIN_SIZE: usize = 1 << 20;

/// Run `f` with the large blocks it allocates on this thread (and any they
/// grow into later, on any thread) on ordinary pages: for buffers made for
/// one call, see the module's documentation.
pub fn plain<R>(f: impl FnOnce() -> R) -> R {
    imp::enter_plain();
    /// Leaves the scope however `f` returns.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            imp::leave_plain();
        }
    }
    let _leave = Leave;
    f()
}

/// Give the memory a load left free back to the system: the large blocks
/// kept for reuse (a load's temporary tables, not an encode's buffers) and,
/// with glibc, the free pages of the system allocator's heap (a parsed
/// `tokenizer.json` is millions of small blocks, freed once the tokenizer is
/// built, which the heap keeps mapped otherwise: Llama-3's was 80 MB).
pub fn release_free_memory() {
    imp::release_kept();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free heap pages to the kernel; it
    // takes the allocator's locks itself and touches no block in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{HUGE, MIN_SIZE};
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::Mutex;

    /// 0: not decided yet, 1: on, 2: off.
    static STATE: AtomicU8 = AtomicU8::new(0);

    fn enabled() -> bool {
        match STATE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                // (inside the allocator: `var_os` allocates, but a small
                // block, which never comes here)
                let off = std::env::var_os("TOKENSMITH_HUGE_PAGES").is_some_and(|v| v == "0");
                STATE.store(if off { 2 } else { 1 }, Ordering::Relaxed);
                !off
            }
        }
    }

    /// Whether a block of this layout is (or would be) one of ours. The
    /// same answer for the same layout for the life of the process: the
    /// switch is read once, and a block made before it was read is small.
    #[inline]
    pub fn ours(size: usize, align: usize) -> bool {
        size >= MIN_SIZE && align <= HUGE && enabled()
    }

    #[inline]
    pub fn rounded(size: usize) -> usize {
        size.div_ceil(HUGE) * HUGE
    }

    /// Where a block on ordinary pages starts in its mapping (the page
    /// before it holds whether the mapping was marked for huge pages).
    pub const PLAIN_OFFSET: usize = 4096;

    thread_local! {
        /// How deep this thread is in `plain` scopes.
        static PLAIN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }

    pub fn enter_plain() {
        let _ = PLAIN.try_with(|p| p.set(p.get() + 1));
    }

    pub fn leave_plain() {
        let _ = PLAIN.try_with(|p| p.set(p.get().saturating_sub(1)));
    }

    /// Whether this thread is in a `plain` scope.
    pub fn in_plain() -> bool {
        PLAIN.try_with(|p| p.get() > 0).unwrap_or(false)
    }

    /// Whether the block of ours at `p` is on ordinary pages.
    #[inline]
    pub fn is_plain(p: *mut u8) -> bool {
        !(p as usize).is_multiple_of(HUGE)
    }

    /// The mapping's length for a block of `size` bytes of that kind.
    #[inline]
    pub fn mapped(size: usize, plain: bool) -> usize {
        rounded(if plain { size + PLAIN_OFFSET } else { size })
    }

    /// Blocks unmapped last, kept for the next of their size (an encode's
    /// output and work buffers come and go with each call: a fresh mapping
    /// is page faults, and a huge page 2 MB zeroed by the kernel):
    /// (address, length, marked for huge pages).
    static FREE: Mutex<[(usize, usize, bool); KEEP]> = Mutex::new([(0, 0, false); KEEP]);
    const KEEP: usize = 8;
    /// At most this much address space is kept in `FREE`.
    const KEEP_BYTES: usize = 32 << 20;

    /// `FREE`, unless another thread holds it (then the block is mapped or
    /// unmapped as if none were kept: never a wait inside the allocator,
    /// nor a lock a fork could leave held for good).
    fn kept() -> Option<std::sync::MutexGuard<'static, [(usize, usize, bool); KEEP]>> {
        match FREE.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// A block of `size` bytes (zeroed if `zeroed`), or null: on huge pages
    /// at a 2 MB boundary, or on ordinary pages (`plain`) `PLAIN_OFFSET`
    /// past one. A kept mapping of the length serves either kind, except
    /// one not marked for huge pages a block that wants them.
    pub unsafe fn alloc(size: usize, zeroed: bool, plain: bool) -> *mut u8 {
        let len = mapped(size, plain);
        let kept = kept().and_then(|mut free| {
            let b = free
                .iter_mut()
                .find(|b| b.1 == len && (plain || b.2 || huge_part(size) == 0))?;
            let (p, _, huge) = std::mem::take(b);
            Some((p, huge))
        });
        let (base, huge) = match kept {
            Some((p, huge)) => {
                let p = p as *mut u8;
                if zeroed {
                    // SAFETY: the block is `len` bytes, ours alone now
                    unsafe { std::ptr::write_bytes(p.add(if plain { PLAIN_OFFSET } else { 0 }), 0, size) };
                }
                (p, huge)
            }
            None => {
                let huge = if plain { 0 } else { huge_part(size) };
                // SAFETY: a new mapping
                (unsafe { map(len, huge) }, huge > 0)
            }
        };
        if base.is_null() || !plain {
            return base;
        }
        // SAFETY: the mapping's first page is before the block
        unsafe {
            *base = huge as u8;
            base.add(PLAIN_OFFSET)
        }
    }

    /// Give back a block `alloc(size, _, _)` returned: kept for reuse, or unmapped.
    pub unsafe fn free(p: *mut u8, size: usize) {
        let plain = is_plain(p);
        let len = mapped(size, plain);
        // SAFETY: (the caller's) a block of ours: a plain one has its
        // mapping's first page before it, holding the mark
        let (base, huge) = unsafe {
            if plain {
                let base = p.sub(PLAIN_OFFSET);
                (base, *base != 0)
            } else {
                (p, true)
            }
        };
        if let Some(mut free) = kept() {
            let held: usize = free.iter().map(|b| b.1).sum();
            if held + len <= KEEP_BYTES {
                if let Some(b) = free.iter_mut().find(|b| b.1 == 0) {
                    *b = (base as usize, len, huge);
                    return;
                }
            }
        }
        // SAFETY: (the caller's) `base` is a mapping of `len` bytes
        unsafe { libc::munmap(base.cast(), len) };
    }

    /// Unmap every kept block.
    pub fn release_kept() {
        let Some(mut free) = kept() else { return };
        for b in free.iter_mut() {
            let (base, len, _) = std::mem::take(b);
            if len > 0 {
                // SAFETY: a kept block is a mapping of `len` bytes at `base`
                // that no one uses (it was freed; taken out of the list here)
                unsafe { libc::munmap(base as *mut libc::c_void, len) };
            }
        }
    }

    /// How much of a block of `size` bytes goes on huge pages: its whole
    /// 2 MB pages, and the last, partial one only when the block fills most
    /// of it. A huge page is memory as a whole once touched, so a last page
    /// on huge pages would add up to 2 MB a table (a 200K vocabulary's
    /// tables are a dozen blocks); on ordinary pages it holds what the block
    /// has there, and its few hundred small pages fit the TLB.
    pub fn huge_part(size: usize) -> usize {
        let whole = size / HUGE * HUGE;
        if size - whole >= HUGE / 4 * 3 {
            whole + HUGE
        } else {
            whole
        }
    }

    /// A new zeroed mapping of `len` bytes (a multiple of `HUGE`) on a
    /// 2 MB boundary, its first `huge` bytes marked for huge pages, or null.
    unsafe fn map(len: usize, huge: usize) -> *mut u8 {
        let Some(span) = len.checked_add(HUGE) else {
            return std::ptr::null_mut();
        };
        // SAFETY: an anonymous private mapping touches no existing memory
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let start = p as usize;
        let aligned = start.next_multiple_of(HUGE);
        // SAFETY: the head and tail unmapped lie inside the mapping just made
        unsafe {
            if aligned > start {
                libc::munmap(p, aligned - start);
            }
            let tail = start + span - (aligned + len);
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            // (advice only: if the kernel declines, these are ordinary pages)
            if huge > 0 {
                libc::madvise(aligned as *mut libc::c_void, huge.min(len), libc::MADV_HUGEPAGE);
            }
        }
        aligned as *mut u8
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    #[inline]
    pub fn ours(_size: usize, _align: usize) -> bool {
        false
    }
    pub fn enter_plain() {}
    pub fn leave_plain() {}
    pub fn in_plain() -> bool {
        false
    }
    pub const PLAIN_OFFSET: usize = 4096;
    pub fn is_plain(_p: *mut u8) -> bool {
        false
    }
    pub fn mapped(size: usize, _plain: bool) -> usize {
        size
    }
    pub unsafe fn alloc(_size: usize, _zeroed: bool, _plain: bool) -> *mut u8 {
        std::ptr::null_mut()
    }
    pub unsafe fn free(_p: *mut u8, _size: usize) {}
    pub fn release_kept() {}
}

// SAFETY: blocks are mapped and unmapped whole, at the size their layout
// gives (which decides, the same way each time, whose block it is), and
// the system allocator serves every other layout.
impl HugePages {
    /// `alloc`, or `alloc_zeroed` when `zeroed`.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`.
    #[inline]
    unsafe fn get(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        // SAFETY: a block of ours, for this layout; else the caller's
        // layout, as given, for the system allocator
        unsafe {
            if imp::ours(layout.size(), layout.align()) {
                let plain = imp::in_plain() && layout.align() <= imp::PLAIN_OFFSET;
                imp::alloc(layout.size(), zeroed, plain)
            } else if zeroed {
                System.alloc_zeroed(layout)
            } else {
                System.alloc(layout)
            }
        }
    }
}

// SAFETY: every method hands the layout to `System` (or to `alloc_large`,
// which maps whole pages aligned to at least the layout's alignment) and
// frees a block through the same way it was made, told by its size.
unsafe impl GlobalAlloc for HugePages {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: (the caller's) a valid layout
        unsafe { self.get(layout, false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: (the caller's) a valid layout
        unsafe { self.get(layout, true) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if imp::ours(layout.size(), layout.align()) {
            // SAFETY: a block of this layout came from `imp::alloc`
            unsafe { imp::free(ptr, layout.size()) }
        } else {
            // SAFETY: a block of this layout came from the system allocator
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old_ours, new_ours) = (
            imp::ours(layout.size(), layout.align()),
            imp::ours(new_size, layout.align()),
        );
        if !old_ours && !new_ours {
            // SAFETY: the caller's block and layout, both the system's
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // (a block of ours grows into one of its kind)
        let plain = if old_ours {
            imp::is_plain(ptr)
        } else {
            imp::in_plain() && layout.align() <= imp::PLAIN_OFFSET
        };
        if old_ours && new_ours && imp::mapped(new_size, plain) == imp::mapped(layout.size(), plain) {
            // (the mapping has room for it already)
            return ptr;
        }
        // SAFETY: the new layout is valid (same alignment, a size the
        // caller vouches for); the copy is within both blocks
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let new = if new_ours {
                imp::alloc(new_size, false, plain)
            } else {
                System.alloc(new_layout)
            };
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn large_blocks_are_aligned_zeroed_and_reused_zeroed() {
        let a = HugePages;
        for &size in &[MIN_SIZE, 3 * MIN_SIZE + 17, 5 * HUGE] {
            for _ in 0..3 {
                let l = layout(size, 8);
                // SAFETY: a valid layout; the block is used within its size
                unsafe {
                    let p = a.alloc_zeroed(l);
                    assert!(!p.is_null());
                    if imp::ours(size, 8) {
                        assert_eq!(p as usize % HUGE, 0, "on a huge page boundary");
                    }
                    let s = std::slice::from_raw_parts_mut(p, size);
                    assert!(s.iter().all(|&b| b == 0), "zeroed, even when kept and reused");
                    s.fill(0xA5);
                    a.dealloc(p, l);
                }
            }
        }
    }

    #[test]
    fn realloc_keeps_contents_across_the_threshold_both_ways() {
        let a = HugePages;
        let fill = |p: *mut u8, n: usize| {
            for i in 0..n {
                // SAFETY: within the block
                unsafe { *p.add(i) = (i % 251) as u8 };
            }
        };
        let check = |p: *const u8, n: usize| {
            // SAFETY: within the block
            (0..n).all(|i| unsafe { *p.add(i) } == (i % 251) as u8)
        };
        // small -> large -> larger -> same mapping -> small
        let sizes = [4096, MIN_SIZE + 1, 3 * HUGE + 5, 3 * HUGE + 1000, 100];
        // SAFETY: each realloc is given the block and layout of the last
        unsafe {
            let mut l = layout(sizes[0], 16);
            let mut p = a.alloc(l);
            fill(p, sizes[0]);
            for &n in &sizes[1..] {
                p = a.realloc(p, l, n);
                assert!(!p.is_null());
                assert!(check(p, l.size().min(n)), "{} -> {n} bytes", l.size());
                l = layout(n, 16);
                fill(p, n);
            }
            a.dealloc(p, l);
        }
    }

    #[test]
    fn plain_blocks_stay_plain_as_they_grow_and_huge_ones_huge() {
        let a = HugePages;
        let kind = |p: *mut u8| p as usize % HUGE;
        for zeroed in [false, true] {
            for _ in 0..3 {
                // SAFETY: each block is used within its size and given back
                // with its layout (a realloc's result with the new size)
                unsafe {
                    let l = layout(MIN_SIZE + 100, 8);
                    let p = plain(|| if zeroed { a.alloc_zeroed(l) } else { a.alloc(l) });
                    assert!(!p.is_null());
                    if !imp::ours(l.size(), 8) {
                        a.dealloc(p, l);
                        continue;
                    }
                    assert_eq!(kind(p), imp::PLAIN_OFFSET, "a plain block, a page past 2 MB");
                    let s = std::slice::from_raw_parts_mut(p, l.size());
                    if zeroed {
                        assert!(s.iter().all(|&b| b == 0));
                    }
                    s.fill(7);
                    // grown outside the scope (as a vector grows later): still
                    // plain, contents kept; then within its mapping
                    let q = a.realloc(p, l, 3 * HUGE);
                    assert_eq!(kind(q), imp::PLAIN_OFFSET);
                    assert!(std::slice::from_raw_parts(q, l.size()).iter().all(|&b| b == 7));
                    let r = a.realloc(q, layout(3 * HUGE, 8), 3 * HUGE + 10);
                    assert_eq!(kind(r), imp::PLAIN_OFFSET);
                    a.dealloc(r, layout(3 * HUGE + 10, 8));
                    // a block allocated outside the scope is on huge pages, even
                    // where a plain one was just given back
                    let h = a.alloc(l);
                    assert_eq!(kind(h), 0);
                    let g = plain(|| a.realloc(h, l, 2 * MIN_SIZE + 5));
                    assert_eq!(kind(g), 0, "a huge block grows into a huge one");
                    a.dealloc(g, layout(2 * MIN_SIZE + 5, 8));
                    // an alignment past the plain offset keeps huge pages
                    let big = layout(MIN_SIZE, 2 * imp::PLAIN_OFFSET);
                    let b = plain(|| a.alloc(big));
                    assert_eq!(kind(b), 0);
                    a.dealloc(b, big);
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mostly_empty_last_huge_page_stays_on_small_pages() {
        assert_eq!(imp::huge_part(MIN_SIZE), 0);
        assert_eq!(imp::huge_part(HUGE), HUGE);
        assert_eq!(imp::huge_part(4 * HUGE + HUGE / 2), 4 * HUGE);
        assert_eq!(imp::huge_part(4 * HUGE + HUGE / 4 * 3), 5 * HUGE);
        for size in [MIN_SIZE, 3 * MIN_SIZE + 1, 9 * MIN_SIZE - 1] {
            let part = imp::huge_part(size);
            assert!(part.is_multiple_of(HUGE) && part <= imp::rounded(size));
            assert!(imp::rounded(size) - size < HUGE / 4 * 3 || part == imp::rounded(size));
        }
    }

    #[test]
    fn alignment_beyond_a_huge_page_goes_to_the_system() {
        let a = HugePages;
        let l = layout(MIN_SIZE, 2 * HUGE);
        // SAFETY: a valid layout, freed with itself
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            assert_eq!(p as usize % (2 * HUGE), 0);
            a.dealloc(p, l);
        }
    }

    #[test]
    fn blocks_from_many_threads_stay_their_own() {
        std::thread::scope(|s| {
            for t in 0..4u8 {
                s.spawn(move || {
                    let v = vec![t; 3 * MIN_SIZE];
                    for _ in 0..20 {
                        let w = vec![t.wrapping_add(1); MIN_SIZE + 7];
                        assert!(w.iter().all(|&b| b == t.wrapping_add(1)));
                    }
                    assert!(v.iter().all(|&b| b == t));
                });
            }
        });
    }
}
