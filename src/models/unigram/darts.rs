//! A double-array trie of the pieces, for the common-prefix search that
//! every lattice position makes.
//!
//! Node `s` has its child for byte `b` at `base(s) + b`, and that slot is
//! the child only if its `check` names `s`: a step is two loads from one
//! array of 8-byte units, with no search among siblings. The top bit of
//! `check` says whether a key ends at the node; its value is then read
//! from a second array. The arrays are padded by 256 units past the
//! largest base, so `base + b` is always inside them.

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Unit {
    base: u32,
    /// the parent's index; `NONE` for a free slot (and the root)
    check: u32,
    /// the value of the key that ends here, or `NONE`
    value: u32,
}

const FREE: Unit = Unit {
    base: 0,
    check: NONE,
    value: NONE,
};

#[derive(Clone, Copy, Debug)]
struct Packed {
    base: u32,
    /// the parent's index, with `LEAF` set when a key ends here
    check: u32,
}

const LEAF: u32 = 1 << 31;

#[derive(Clone, Debug)]
pub struct DoubleArray {
    units: Vec<Packed>,
    /// by node: the value of the key that ends there, and a weight the
    /// caller set for that value (see `set_weights`)
    leaves: Vec<Leaf>,
    /// By character of three UTF-8 bytes (U+0800..U+FFFF, less 0x800):
    /// the node its bytes lead to from the root, `NONE` if no key starts
    /// with it, `SLOW` if a key ends inside it (walked byte by byte then).
    three: Vec<u32>,
}

const SLOW: u32 = u32::MAX - 1;

#[derive(Clone, Copy, Debug)]
struct Leaf {
    value: u32,
    weight: f32,
}

impl Default for DoubleArray {
    fn default() -> Self {
        DoubleArray::build(Vec::new())
    }
}

/// Where free slots are found while building: `nxt[i]` leads to the first
/// free slot at or after `i` (`nxt[i] == i` for a free slot), with the
/// paths halved as they are followed, so taken runs are skipped at once.
struct Slots {
    units: Vec<Unit>,
    nxt: Vec<u32>,
}

impl Slots {
    fn new() -> Slots {
        let mut s = Slots {
            units: Vec::new(),
            nxt: Vec::new(),
        };
        s.grow(1024);
        // the root
        s.take(0);
        s
    }

    fn grow(&mut self, len: usize) {
        let old = self.units.len();
        if len > old {
            self.units.resize(len, FREE);
            self.nxt.extend(old as u32..len as u32);
        }
    }

    /// The first free slot at or after `i`.
    fn free_from(&mut self, mut i: usize) -> usize {
        loop {
            self.grow(i + 257);
            let n = self.nxt[i] as usize;
            if n == i {
                return i;
            }
            self.grow(n + 257);
            self.nxt[i] = self.nxt[n];
            i = n;
        }
    }

    fn is_free(&self, i: usize) -> bool {
        self.nxt[i] as usize == i
    }

    fn take(&mut self, i: usize) {
        self.grow(i + 258);
        self.nxt[i] = i as u32 + 1;
    }

    /// The smallest base (at least 1) that puts every label on a free slot.
    fn find_base(&mut self, labels: &[u8]) -> usize {
        let first = labels[0] as usize;
        let mut cell = self.free_from(first + 1);
        loop {
            let base = cell - first;
            self.grow(base + 257);
            if labels[1..].iter().all(|&l| self.is_free(base + l as usize)) {
                return base;
            }
            cell = self.free_from(cell + 1);
        }
    }
}

impl DoubleArray {
    /// Build from `(key, value)` pairs; when a key repeats, the last value
    /// wins (as [`crate::trie::Trie::build`]). Empty keys are ignored.
    pub fn build(mut keys: Vec<(&[u8], u32)>) -> DoubleArray {
        keys.retain(|k| !k.0.is_empty());
        keys.sort_by(|a, b| a.0.cmp(b.0)); // stable: equal keys keep their order
        let mut dedup: Vec<(&[u8], u32)> = Vec::with_capacity(keys.len());
        for (k, v) in keys {
            match dedup.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => dedup.push((k, v)),
            }
        }
        let mut slots = Slots::new();
        // depth first: (node, key range, depth)
        let mut stack = vec![(0usize, 0usize, dedup.len(), 0usize)];
        let mut labels = Vec::with_capacity(256);
        let mut ranges = Vec::with_capacity(256);
        while let Some((node, mut lo, hi, depth)) = stack.pop() {
            if lo < hi && dedup[lo].0.len() == depth {
                slots.units[node].value = dedup[lo].1;
                lo += 1;
            }
            labels.clear();
            ranges.clear();
            let mut i = lo;
            while i < hi {
                let b = dedup[i].0[depth];
                let mut j = i + 1;
                while j < hi && dedup[j].0[depth] == b {
                    j += 1;
                }
                labels.push(b);
                ranges.push((i, j));
                i = j;
            }
            if labels.is_empty() {
                continue;
            }
            let base = slots.find_base(&labels);
            slots.units[node].base = base as u32;
            for (&l, &(a, b)) in labels.iter().zip(&ranges) {
                let child = base + l as usize;
                slots.take(child);
                slots.units[child].check = node as u32;
                stack.push((child, a, b, depth + 1));
            }
        }
        let mut units = slots.units;
        let top = units.iter().map(|u| u.base as usize).max().unwrap_or(0);
        units.truncate(top + 256);
        units.resize(top + 256, FREE);
        // (indices stay below 2^31: a vocabulary is far smaller)
        let packed = units
            .iter()
            .map(|u| Packed {
                base: u.base,
                check: u.check & !LEAF | if u.value != NONE { LEAF } else { 0 },
            })
            .collect();
        let leaves = units
            .iter()
            .map(|u| Leaf {
                value: u.value,
                weight: 0.0,
            })
            .collect();
        let mut da = DoubleArray {
            units: packed,
            leaves,
            three: Vec::new(),
        };
        da.three = (0x800..0x10000u32).map(|cp| da.walk_char(cp)).collect();
        da
    }

    /// The entry of `three` for the code point `cp`.
    fn walk_char(&self, cp: u32) -> u32 {
        let Some(ch) = char::from_u32(cp) else { return SLOW };
        let mut buf = [0u8; 4];
        let mut node = 0usize;
        for (k, &b) in ch.encode_utf8(&mut buf).as_bytes().iter().enumerate() {
            let next = self.units[node].base as usize + b as usize;
            let u = self.units[next];
            if u.check & !LEAF != node as u32 {
                return NONE;
            }
            if k < 2 && u.check & LEAF != 0 {
                return SLOW;
            }
            node = next;
        }
        node as u32
    }

    /// Give every key's value the weight `w(value)`, handed to
    /// [`DoubleArray::prefixes_weighted`] with it (read with the value,
    /// rather than looked up by it afterwards).
    pub fn set_weights(&mut self, w: impl Fn(u32) -> f32) {
        for leaf in &mut self.leaves {
            if leaf.value != NONE {
                leaf.weight = w(leaf.value);
            }
        }
    }

    /// Call `f(length, value)` for every key that is a prefix of `text`,
    /// shortest first.
    #[inline(always)]
    pub fn prefixes(&self, text: &[u8], mut f: impl FnMut(usize, u32)) {
        self.prefixes_weighted(text, |len, value, _| f(len, value))
    }

    /// [`DoubleArray::prefixes`], with each value's weight.
    #[inline(always)]
    pub fn prefixes_weighted(&self, text: &[u8], mut f: impl FnMut(usize, u32, f32)) {
        let units = &self.units[..];
        let mut node = 0usize;
        let mut done = 0;
        // a character of three bytes in one step, from `three`
        if let [c0 @ 0xE0..=0xEF, c1 @ 0x80..=0xBF, c2 @ 0x80..=0xBF, ..] = *text {
            let cp = ((c0 as usize & 0x0F) << 12) | ((c1 as usize & 0x3F) << 6) | (c2 as usize & 0x3F);
            match self.three.get(cp.wrapping_sub(0x800)).copied() {
                Some(NONE) => return,
                Some(n) if n != SLOW => {
                    node = n as usize;
                    done = 3;
                    // SAFETY: `n` is a node `build` reached, inside the array
                    let u = unsafe { *units.get_unchecked(node) };
                    if u.check & LEAF != 0 {
                        // SAFETY: `leaves` has the length of `units`
                        let leaf = unsafe { *self.leaves.get_unchecked(node) };
                        f(3, leaf.value, leaf.weight);
                    }
                }
                _ => {}
            }
        }
        for (i, &b) in text.iter().enumerate().skip(done) {
            // SAFETY: `node` is 0 or a slot reached below, so inside the
            // array; every base is at most its length minus 256 (`build`
            // pads it so, and a unit's base is 0 or one of those), so
            // `next` is inside it too; `leaves` has the same length.
            let next = unsafe { units.get_unchecked(node) }.base as usize + b as usize;
            // SAFETY: see above
            let u = unsafe { *units.get_unchecked(next) };
            if u.check & !LEAF != node as u32 {
                return;
            }
            node = next;
            if u.check & LEAF != 0 {
                // SAFETY: see above
                let leaf = unsafe { *self.leaves.get_unchecked(next) };
                f(i + 1, leaf.value, leaf.weight);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_in_order_and_last_duplicate_wins() {
        let t = DoubleArray::build(vec![(b"ab", 1), (b"a", 2), (b"abc", 3), (b"b", 4), (b"ab", 5)]);
        let mut got = Vec::new();
        t.prefixes(b"abcd", |n, v| got.push((n, v)));
        assert_eq!(got, [(1, 2), (2, 5), (3, 3)]);
        let get = |k: &[u8]| {
            let mut found = None;
            t.prefixes(k, |n, v| found = found.or((n == k.len()).then_some(v)));
            found
        };
        assert_eq!(get(b"b"), Some(4));
        assert_eq!(get(b"c"), None);
        assert_eq!(get(b"abcd"), None);
        let empty = DoubleArray::build(vec![]);
        empty.prefixes(b"a", |_, _| panic!("no keys"));
    }

    #[test]
    fn three_byte_characters_in_one_step() {
        let keys: Vec<&str> = vec!["\u{4E2D}", "\u{4E2D}\u{6587}", "\u{6587}", "\u{E9}", "\u{4E2D}x"];
        let t = DoubleArray::build(keys.iter().enumerate().map(|(i, k)| (k.as_bytes(), i as u32)).collect());
        let mut got = Vec::new();
        t.prefixes("\u{4E2D}\u{6587}\u{5B57}".as_bytes(), |n, v| got.push((n, v)));
        assert_eq!(got, [(3, 0), (6, 1)]);
        got.clear();
        t.prefixes("\u{5B57}\u{4E2D}".as_bytes(), |n, v| got.push((n, v)));
        assert!(got.is_empty());
        t.prefixes("\u{4E2D}x".as_bytes(), |n, v| got.push((n, v)));
        assert_eq!(got, [(3, 0), (4, 4)]);
    }

    #[test]
    fn agrees_with_the_sorted_trie_on_many_keys() {
        // pseudo-random keys over a small and a large alphabet
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for _ in 0..3000 {
            let mut k = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 1 + (x % 7) as usize;
            for j in 0..len {
                let b = (x >> (8 * j)) as u8;
                k.push(if x & 1 == 0 { b'a' + b % 4 } else { b });
            }
            keys.push(k);
        }
        let pairs: Vec<(&[u8], u32)> = keys.iter().enumerate().map(|(i, k)| (&k[..], i as u32)).collect();
        let da = DoubleArray::build(pairs.clone());
        let trie = crate::trie::Trie::build(pairs);
        for k in &keys {
            let mut probe = k.clone();
            probe.extend_from_slice(b"abcd\xFF");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            da.prefixes(&probe, |n, v| a.push((n, v)));
            trie.prefixes(&probe, |n, v| b.push((n, v)));
            assert_eq!(a, b);
        }
    }
}
