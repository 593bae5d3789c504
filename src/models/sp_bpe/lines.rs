//! The per-thread memo of whole lines met again, for the fused pass.
//!
//! Where no piece has `\n` beside another character, the walk always cuts
//! before and after a `\n`, and with byte fallback no unknown fuses across a
//! cut: so a line after the text's first (which alone takes the dummy
//! prefix) encodes the same wherever it stands, and its ids can be kept,
//! keyed by its bytes (with its `\n`), and given back when it comes again.
//!
//! Looking every line up costs new text a hash and a probe per line, so
//! the memo watches its own use: it always looks up (and keeps) one line in
//! every `SAMPLE` bytes, the *samples*. Once most of the recent samples'
//! bytes were met before (templates, boilerplate, a document encoded
//! again; bytes, not lines, so that blank lines met everywhere do not
//! count) it turns *hot*, and looks up and keeps every line, until half
//! the recent samples' bytes miss. (Only samples decide: while hot, the lines around them are new at
//! first, and kept then.) The memo never decides a result: an entry holds
//! the walk's ids for exactly its key, compared byte for byte.

/// One line in every this many bytes is looked up while cold.
pub(super) const SAMPLE: usize = 4096;
/// Longer lines are walked, never kept.
const LINE_MAX: usize = 4096;
const TABLE_BITS: u32 = 16;
/// At most half the table's slots hold lines (short probe runs).
const MAX_LINES: usize = 1 << (TABLE_BITS - 1);
const MAX_BYTES: usize = 2 << 20;
const MAX_IDS: usize = 1 << 20;
/// How many samples decide.
const RECENT: usize = 8;

/// A kept line: where its bytes and ids are in the arenas.
#[derive(Clone, Copy)]
struct Line {
    bytes: u32,
    len: u32,
    ids: u32,
    n: u32,
}

/// One generation of kept lines.
#[derive(Default)]
struct Store {
    /// `fingerprint << 32 | line index + 1`, 0 for an empty slot
    table: Box<[u64]>,
    lines: Vec<Line>,
    bytes: Vec<u8>,
    ids: Vec<u32>,
}

/// Kept lines in two generations: new lines go to `new`; when it is full
/// it becomes `old` (the previous `old` is dropped), and a line found in
/// `old` is kept again in `new`, so the lines in use outlive a turnover.
pub(super) struct LineMemo {
    new: Store,
    old: Store,
    hot: bool,
    /// the last `RECENT` samples' lookups: (bytes if a hit else 0, bytes)
    recent: [(u32, u32); RECENT],
    /// samples since the memo last turned hot or cold
    since: u32,
}

/// The hash of a line, 8 bytes at a time.
#[inline(always)]
fn hash(line: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = line.len() as u64;
    let mut words = line.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h.rotate_left(23) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ h >> 29
}

impl Store {
    fn full(&self, line: &[u8], ids: &[u32]) -> bool {
        self.lines.len() == MAX_LINES
            || self.bytes.len() + line.len() > MAX_BYTES
            || self.ids.len() + ids.len() > MAX_IDS
    }

    fn clear(&mut self) {
        self.table.fill(0);
        self.lines.clear();
        self.bytes.clear();
        self.ids.clear();
    }

    fn insert(&mut self, line: &[u8], h: u64, ids: &[u32]) {
        if self.table.is_empty() {
            self.table = vec![0u64; 1 << TABLE_BITS].into_boxed_slice();
        }
        let mut slot = slot_of(h);
        while self.table[slot] != 0 {
            slot = (slot + 1) & ((1 << TABLE_BITS) - 1);
        }
        self.table[slot] = (h >> 32) << 32 | (self.lines.len() as u64 + 1);
        self.lines.push(Line {
            bytes: self.bytes.len() as u32,
            len: line.len() as u32,
            ids: self.ids.len() as u32,
            n: ids.len() as u32,
        });
        self.bytes.extend_from_slice(line);
        self.ids.extend_from_slice(ids);
    }

    /// The ids kept for `line` (of hash `h`).
    #[inline(always)]
    fn find(&self, line: &[u8], h: u64) -> Option<&[u32]> {
        if self.table.is_empty() {
            return None;
        }
        let mut slot = slot_of(h);
        loop {
            let e = self.table[slot];
            if e == 0 {
                return None;
            }
            if e >> 32 == h >> 32 {
                let l = self.lines[(e as u32 - 1) as usize];
                if self.bytes[l.bytes as usize..(l.bytes + l.len) as usize] == *line {
                    return Some(&self.ids[l.ids as usize..(l.ids + l.n) as usize]);
                }
            }
            slot = (slot + 1) & ((1 << TABLE_BITS) - 1);
        }
    }
}

#[inline(always)]
fn slot_of(h: u64) -> usize {
    (h as usize) & ((1 << TABLE_BITS) - 1)
}

impl LineMemo {
    pub fn new() -> Self {
        LineMemo {
            new: Store::default(),
            old: Store::default(),
            hot: false,
            recent: [(0, 0); RECENT],
            since: 0,
        }
    }

    /// Is every line to be looked up (not one in `SAMPLE` bytes)?
    #[inline(always)]
    pub fn hot(&self) -> bool {
        self.hot
    }

    /// Push the ids of `line` to `out` if it is kept; true if it was.
    /// (`sample`: the line is a sample, its lookup counts.)
    pub fn lookup(&mut self, line: &[u8], sample: bool, out: &mut Vec<u32>) -> bool {
        let h = hash(line);
        let found = if let Some(ids) = self.new.find(line, h) {
            out.extend_from_slice(ids);
            true
        } else if let Some(ids) = self.old.find(line, h) {
            let from = out.len();
            out.extend_from_slice(ids);
            self.keep_hashed(line, h, &out[from..]);
            true
        } else {
            false
        };
        if sample {
            self.record(found, line.len() as u32);
        }
        found
    }

    /// Keep `ids` as the ids of `line` (one `lookup` just missed).
    pub fn keep(&mut self, line: &[u8], ids: &[u32]) {
        self.keep_hashed(line, hash(line), ids)
    }

    fn keep_hashed(&mut self, line: &[u8], h: u64, ids: &[u32]) {
        if line.len() > LINE_MAX || ids.is_empty() {
            return;
        }
        if self.new.full(line, ids) {
            std::mem::swap(&mut self.new, &mut self.old);
            self.new.clear();
        }
        self.new.insert(line, h, ids);
    }

    /// Count a sample's lookup (`len` bytes); turn hot when 3/4 of the
    /// last `RECENT` samples' bytes hit, cold when under half did.
    fn record(&mut self, hit: bool, len: u32) {
        self.recent[self.since as usize % RECENT] = (if hit { len } else { 0 }, len);
        self.since = self.since.saturating_add(1);
        if (self.since as usize) < RECENT {
            return;
        }
        let (hits, all) = self
            .recent
            .iter()
            .fold((0u64, 0u64), |(h, a), &(x, y)| (h + x as u64, a + y as u64));
        let flip = if self.hot { 2 * hits < all } else { 4 * hits >= 3 * all };
        if flip {
            self.hot = !self.hot;
            self.since = 0;
        }
    }
}

/// Where the line that contains `text[at]` ends (after its `\n`, or at the
/// end of the text).
#[inline(always)]
pub(super) fn line_end(text: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_back_and_keys_are_whole_lines() {
        let mut m = LineMemo::new();
        let mut out = vec![];
        assert!(!m.lookup(b"abc\n", true, &mut out));
        m.keep(b"abc\n", &[1, 2]);
        m.keep(b"abc", &[1]);
        assert!(m.lookup(b"abc\n", true, &mut out));
        assert!(m.lookup(b"abc", true, &mut out));
        assert!(!m.lookup(b"ab\n", true, &mut out));
        assert_eq!(out, [1, 2, 1]);
    }

    #[test]
    fn turns_hot_on_hits_and_cold_on_misses() {
        let mut m = LineMemo::new();
        m.keep(b"x\n", &[7]);
        let mut out = vec![];
        for _ in 0..8 {
            m.lookup(b"x\n", true, &mut out);
        }
        assert!(m.hot());
        for _ in 0..32 {
            m.lookup(b"y\n", false, &mut out); // not samples: no say
        }
        assert!(m.hot());
        for _ in 0..RECENT - 1 {
            m.lookup(b"y\n", true, &mut out);
        }
        assert!(m.hot()); // a flip waits for `RECENT` samples
        m.lookup(b"y\n", true, &mut out);
        assert!(!m.hot());
    }

    #[test]
    fn a_full_generation_turns_old_and_lines_in_use_survive() {
        let mut m = LineMemo::new();
        let mut out = vec![];
        m.keep(b"kept\n", &[1]);
        for i in 0..2 * MAX_LINES + 10 {
            m.keep(format!("{i}\n").as_bytes(), &[i as u32]);
            if i % 1000 == 0 {
                assert!(m.lookup(b"kept\n", false, &mut out)); // found, so kept again
            }
        }
        assert!(m.lookup(b"kept\n", false, &mut out));
        assert!(m.lookup(format!("{}\n", 2 * MAX_LINES + 5).as_bytes(), false, &mut out));
        assert!(m.lookup(format!("{}\n", MAX_LINES + 100).as_bytes(), false, &mut out)); // in `old`
        assert!(!m.lookup(b"3\n", false, &mut out)); // dropped with the first generation
        assert_eq!(out.len(), 2 * MAX_LINES / 1000 + 4);
    }
}
