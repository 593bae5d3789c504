//! Flat open-addressing tables for the encoding hot path.
//!
//! `PieceTable` maps a short piece (at most `SHORT_MAX` bytes, packed into
//! two words by `short_key`) to its tokens, at most three of them, all in
//! one 32-byte slot: two slots share a cache line, and a lookup usually
//! touches exactly one line.

/// A slot of a `PieceTable`. An all-zero key is an empty slot: a real key
/// holds the piece's non-zero length in its top byte.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
pub struct Slot {
    pub key: [u64; 2],
    pub ids: [u32; 3],
    pub n: u32,
}

impl Slot {
    /// A slot holding `ids` (at most `SLOT_IDS`) for `key`.
    #[inline]
    pub fn new(key: [u64; 2], ids: &[u32]) -> Self {
        debug_assert!(ids.len() <= SLOT_IDS);
        // (id by id: a copy of a slice of unknown length is a call to
        // `memcpy`, whose narrow stores the slot's wide load then waits
        // for; after a merge, each piece's slot was made so)
        let id = |k: usize| ids.get(k).copied().unwrap_or(0);
        Slot {
            key,
            ids: [id(0), id(1), id(2)],
            n: ids.len() as u32,
        }
    }

    /// The slot's last 16 bytes as four words: its three ids, then `n` (one
    /// load for the window loop, which writes all four and keeps `n`).
    #[inline(always)]
    pub fn ids_and_count(&self) -> [u32; 4] {
        // SAFETY: `repr(C)`: `ids` at 16 and `n` at 28 (checked below), 16
        // bytes in all, within the slot
        unsafe { (self as *const Slot).cast::<u8>().add(16).cast::<[u32; 4]>().read() }
    }
}

const _: () = assert!(std::mem::offset_of!(Slot, ids) == 16 && std::mem::offset_of!(Slot, n) == 28);

/// Most tokens a `PieceTable` slot holds.
pub const SLOT_IDS: usize = 3;

pub struct PieceTable {
    slots: Box<[Slot]>,
    shift: u32,
    mask: usize,
    len: usize,
}

impl PieceTable {
    /// A table for about `n` pieces before it first grows.
    pub fn with_capacity(n: usize) -> Self {
        let cap = (n.max(8) * 2).next_power_of_two();
        PieceTable {
            slots: zeroed_slots(cap),
            shift: 64 - cap.trailing_zeros(),
            mask: cap - 1,
            len: 0,
        }
    }

    /// The hash of a key; the table uses its top bits.
    #[inline(always)]
    pub fn hash(key: &[u64; 2]) -> u64 {
        (key[0] ^ key[1].rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    #[inline(always)]
    pub fn get(&self, key: &[u64; 2], h: u64) -> Option<&Slot> {
        let mut i = self.home(h);
        loop {
            let s = &self.slots[i];
            if s.key == *key {
                return Some(s);
            }
            if s.key == [0, 0] {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Start loading the cache line where a lookup of `h` begins (a hint:
    /// nothing happens on targets without a prefetch instruction).
    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        crate::prefetch::prefetch(&self.slots[self.home(h)]);
    }

    /// Insert (or replace) `key` with `ids` (at most `SLOT_IDS`), growing
    /// the table when it gets half full.
    pub fn insert(&mut self, key: [u64; 2], h: u64, ids: &[u32]) {
        debug_assert!(ids.len() <= SLOT_IDS && key != [0, 0]);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let slot = Slot::new(key, ids);
        let mut i = self.home(h);
        loop {
            let s = &mut self.slots[i];
            if s.key == key {
                *s = slot;
                return;
            }
            if s.key == [0, 0] {
                *s = slot;
                self.len += 1;
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    fn grow(&mut self) {
        self.rehash(self.slots.len());
    }

    /// Make room for `n` entries before the table next grows (if it has
    /// less).
    pub fn reserve(&mut self, n: usize) {
        if n * 2 > self.slots.len() {
            self.rehash(n);
        }
    }

    /// Move every entry to a new table made for `n`.
    fn rehash(&mut self, n: usize) {
        let old = std::mem::replace(self, PieceTable::with_capacity(n));
        for s in old.slots.iter().filter(|s| s.key != [0, 0]) {
            self.insert(s.key, Self::hash(&s.key), &s.ids[..s.n as usize]);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of slots the table holds.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// Empty the table, keeping its size (cheaper than growing a new one
    /// back to it).
    pub fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.len = 0;
    }
}

/// `n` empty slots, from zeroed memory: a large block comes straight from a
/// fresh mapping, its pages zeroed by the kernel where they are first
/// touched, instead of every slot being written here (and then again by
/// the inserts).
pub fn zeroed_slots(n: usize) -> Box<[Slot]> {
    // SAFETY: a `Slot` is integers only, and all-zero is the empty slot
    // (`Slot::default()`)
    unsafe { Box::<[Slot]>::new_zeroed_slice(n).assume_init() }
}

/// `zeroed_slots` with the count in the type.
pub fn zeroed_array<const N: usize>() -> Box<[Slot; N]> {
    // SAFETY: as in `zeroed_slots`
    unsafe { Box::<[Slot; N]>::new_zeroed().assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_table_finds_what_was_inserted_and_grows() {
        let mut t = PieceTable::with_capacity(4);
        let key = |i: u64| [i.wrapping_mul(0x1234_5678_9ABC_DEF1) | 1, (i % 15 + 1) << 56];
        for i in 0..10_000u64 {
            let k = key(i);
            t.insert(k, PieceTable::hash(&k), &[i as u32, (i * 3) as u32][..(i % 3) as usize]);
        }
        assert_eq!(t.len(), 10_000);
        for i in 0..10_000u64 {
            let k = key(i);
            let s = t.get(&k, PieceTable::hash(&k)).expect("present");
            assert_eq!(s.n as u64, i % 3);
            assert_eq!(&s.ids[..s.n as usize], &[i as u32, (i * 3) as u32][..(i % 3) as usize]);
        }
        let absent = key(20_000);
        assert!(t.get(&absent, PieceTable::hash(&absent)).is_none());
        // replacing keeps one entry
        let k = key(7);
        t.insert(k, PieceTable::hash(&k), &[99]);
        assert_eq!(t.len(), 10_000);
        assert_eq!(t.get(&k, PieceTable::hash(&k)).unwrap().ids[0], 99);
        // cleared: nothing is found, and it fills again
        t.clear();
        assert_eq!(t.len(), 0);
        assert!((0..10_000u64).all(|i| t.get(&key(i), PieceTable::hash(&key(i))).is_none()));
        t.insert(k, PieceTable::hash(&k), &[5, 6]);
        assert_eq!(t.len(), 1);
        assert_eq!(&t.get(&k, PieceTable::hash(&k)).unwrap().ids[..2], &[5, 6]);
    }

    #[test]
    fn a_table_holds_its_capacity_without_growing_and_starts_empty() {
        let n = 1 << 15;
        let mut t = PieceTable::with_capacity(n);
        let bytes = t.bytes();
        assert_eq!(bytes, 2 << 20, "two slots per entry, 32 bytes each");
        let key = |i: u64| [i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, 3 << 56];
        // (zeroed memory is empty slots: nothing is found before inserts)
        assert!((0..1000u64).all(|i| t.get(&key(i), PieceTable::hash(&key(i))).is_none()));
        for i in 0..n as u64 {
            t.insert(key(i), PieceTable::hash(&key(i)), &[i as u32]);
        }
        assert_eq!((t.len(), t.bytes()), (n, bytes), "no growth up to the capacity");
        t.insert(key(n as u64), PieceTable::hash(&key(n as u64)), &[1]);
        assert_eq!(t.bytes(), 2 * bytes, "one more entry grows it");
        assert!((0..=n as u64).all(|i| t.get(&key(i), PieceTable::hash(&key(i))).is_some()));
        // room made ahead keeps every entry; room it has already is no change
        let mut small = PieceTable::with_capacity(16);
        for i in 0..16u64 {
            small.insert(key(i), PieceTable::hash(&key(i)), &[i as u32, 7]);
        }
        small.reserve(8);
        assert_eq!(small.bytes(), 32 * 32);
        small.reserve(1000);
        assert_eq!((small.len(), small.bytes()), (16, 2048 * 32));
        for i in 0..16u64 {
            assert_eq!(
                &small.get(&key(i), PieceTable::hash(&key(i))).unwrap().ids[..2],
                &[i as u32, 7]
            );
        }
    }
}
