//! The library crate leaves the choice of global allocator to the program
//! that uses it: the huge-pages allocator is declared only in the Python
//! extension's build (feature `python`). This program declares its own; if
//! the rlib declared one too, this test would not link ("the
//! `#[global_allocator]` in this crate conflicts with global allocator
//! in: tokensmith"), and the count below shows the library's allocations
//! come here. (With the `python` feature the library is the extension,
//! which has its allocator: then there is nothing to check.)

#![cfg(not(feature = "python"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's promises about `layout` are `System`'s
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout`
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_library_allocates_through_the_programs_allocator() {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let vocab: Vec<(Vec<u8>, u32)> = (0..=255u8)
        .map(|b| (vec![b], b as u32))
        .chain([(b"ab".to_vec(), 256)])
        .collect();
    let bpe = tokensmith::models::Bpe::from_ranks(vocab).expect("a valid rank table");
    let mut out = Vec::new();
    tokensmith::models::Model::encode_piece(&bpe, b"abab", &mut out);
    assert_eq!(out.iter().map(|&(id, _)| id).collect::<Vec<_>>(), vec![256, 256]);
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before);
}
