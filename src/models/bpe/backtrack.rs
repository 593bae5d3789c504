//! Byte-pair encoding without merging: the longest token first, checked
//! pair by pair, backtracking when a check fails.
//!
//! A sequence of tokens is the BPE encoding of its text exactly when every
//! two neighbours are *compatible*: encoding the bytes of `a` followed by
//! those of `b` gives `[a, b]` again (no merge across their boundary comes
//! before the merges that build them). So instead of merging pairs one
//! merge at a time, the encoder takes the longest token that starts the
//! text, checks it against the token before, and on a failure tries the
//! next shorter token starting there, or gives up that position and steps
//! back. Compatibility is decided by undoing the two tokens' merges at the
//! boundary in the reverse of the order they happened (`compatible_slow`),
//! and remembered in a small table.
//!
//! It applies to models whose merges follow their ranks like tiktoken's:
//! a merge's rank is the id of the token it makes, and every token is made
//! from two tokens of lower id. `Backtrack::new` checks that, and returns
//! `None` for any other model (which keeps the merging encoder).

use super::merge::{merge_symbols, PairLookup};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::atomic::{AtomicU32, Ordering};

const NONE: u32 = u32::MAX;
/// The work (compatibility steps, candidate tokens) `Backtrack::encode`
/// may spend per byte of a piece, and on any piece, before it gives up.
const WORK_PER_BYTE: usize = 8;
const WORK_BASE: usize = 64;
/// Bits of the compatibility memo index (entries of 4 bytes).
const MEMO_BITS: u32 = 17;
/// Bits of a token id in a memo key: the key's high part (two ids less
/// `MEMO_BITS`) takes 30 bits of an entry.
const ID_BITS: u32 = (30 + MEMO_BITS) / 2;
/// Ids this encoder takes.
const MAX_ID: u32 = 1 << ID_BITS;

pub struct Backtrack {
    /// The two tokens whose merge makes each token, `(t, t)` for a byte.
    split: Box<[(u32, u32)]>,
    /// Byte length of each token (0: the encoding never produces it).
    len: Box<[u16]>,
    /// The longest token that is a proper prefix of each token, or NONE.
    next_prefix: Box<[u32]>,
    trie: Trie,
    /// Remembered compatibility of pairs, see `compatible`.
    memo: Box<[AtomicU32]>,
    /// The tokens BPE does not make from their own bytes (special tokens
    /// kept in the vocabulary, say), by their bytes: a piece that is one of
    /// them is that token only where the model looks whole pieces up first.
    /// Any other piece that is a token encodes as that token here too, so
    /// this small table stands in for a lookup in the whole vocabulary.
    unmade: FxHashMap<Box<[u8]>, u32>,
}

/// One trie node, stored in its parent's group of children: the byte that
/// leads to it, the token ending at it, and where its own children are.
#[derive(Clone, Copy)]
struct Node {
    token: u32,
    /// index in `Trie::nodes` of the first child (the children are sorted by byte)
    kids: u32,
    /// number of children
    n: u16,
    byte: u8,
}

/// Children of a group larger than this are found by binary search.
const SCAN_KIDS: usize = 8;

/// A longest-match result in the trie's tables: `id << 5 | CHARS? | len`,
/// or NONE.
type Best = u32;
/// In a `Best` of a node at a character boundary: the node has children,
/// and every longer token under it goes on with a whole three-byte
/// character (so `Trie::chars` knows all of them).
const CHARS: u32 = 16;

#[inline(always)]
const fn pack((id, len): (u32, usize)) -> Best {
    if id == NONE {
        NONE
    } else {
        (id << 5) | len as u32
    }
}

/// (id, byte length) of a `Best`; (NONE, 0) for none.
#[inline(always)]
const fn unpack(b: Best) -> (u32, usize) {
    if b == NONE {
        (NONE, 0)
    } else {
        (b >> 5, (b & 15) as usize)
    }
}

/// The 16 bits a three-byte UTF-8 character at the start of `t` carries.
#[inline(always)]
fn three(t: &[u8]) -> Option<usize> {
    match t {
        [a, b, c, ..] if a & 0xF0 == 0xE0 && b & 0xC0 == 0x80 && c & 0xC0 == 0x80 => {
            Some(((*a as usize & 0x0F) << 12) | ((*b as usize & 0x3F) << 6) | (*c as usize & 0x3F))
        }
        _ => None,
    }
}

/// Longest-prefix matching over the tokens: the first two bytes (or one
/// whole three-byte character) through direct tables, two or three whole
/// three-byte characters (most of Chinese, Japanese and Korean text)
/// through one hash table probed for both at once, each further byte
/// through the node's group of children.
///
/// Groups are laid out depth first, a node's children right after the
/// group it is in when it is the first child, so a walk down a long token
/// (or along the bytes of a character) reads neighbouring memory.
struct Trie {
    /// token of each single byte (NONE when it is none)
    first: Box<[u32; 256]>,
    /// (node, longest token within the first two bytes) by the first two bytes
    second: Box<[(u32, Best); 1 << 16]>,
    /// (node, longest token within the first three bytes) by the 16 bits a
    /// three-byte UTF-8 character carries
    third: Box<[(u32, Best); 1 << 16]>,
    /// (node, longest token within them) by two or three whole three-byte
    /// characters that some token starts with
    chars: CharTable,
    /// every node; 0 is the root, and node 0 as a child means "none"
    nodes: Vec<Node>,
}

/// Open addressing over `CharSlot`s (key 0: empty).
struct CharTable {
    slots: Box<[CharSlot]>,
    shift: u32,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct CharSlot {
    key: u64,
    /// the node after the characters (0: it has no children)
    node: u32,
    best: Best,
}

impl CharTable {
    /// The key of two characters, or of three.
    #[inline(always)]
    fn key2(c1: usize, c2: usize) -> u64 {
        (1 << 62) | ((c1 as u64) << 16) | c2 as u64
    }

    #[inline(always)]
    fn key3(c1: usize, c2: usize, c3: usize) -> u64 {
        (2 << 62) | ((c1 as u64) << 32) | ((c2 as u64) << 16) | c3 as u64
    }

    fn new(entries: &[CharSlot]) -> Self {
        let bits = (entries.len() * 2).next_power_of_two().max(2).trailing_zeros();
        let mut t = CharTable {
            slots: vec![CharSlot::default(); 1 << bits].into_boxed_slice(),
            shift: 64 - bits,
        };
        let mask = t.slots.len() - 1;
        for e in entries {
            let mut i = t.slot(e.key);
            while t.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            t.slots[i] = *e;
        }
        t
    }

    #[inline(always)]
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline(always)]
    fn prefetch(&self, key: u64) {
        crate::prefetch::prefetch(&self.slots[self.slot(key)]);
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<&CharSlot> {
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let s = &self.slots[i];
            if s.key == key {
                return Some(s);
            }
            if s.key == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

impl Trie {
    /// The trie of `tokens` (bytes, id), none of them empty, ids below `MAX_ID`.
    fn new(tokens: &[(&[u8], u32)]) -> Self {
        let mut trie = Trie {
            first: Box::new([NONE; 256]),
            second: vec![(0, NONE); 1 << 16]
                .into_boxed_slice()
                .try_into()
                .expect("2^16 entries"),
            third: vec![(0, NONE); 1 << 16]
                .into_boxed_slice()
                .try_into()
                .expect("2^16 entries"),
            chars: CharTable::new(&[]),
            nodes: Self::layout(tokens),
        };
        // Until the tables are filled, `walk` from the root answers.
        trie.fill_bytes();
        let (prefixes, tails) = char_prefixes(tokens);
        trie.fill_third(&tails);
        trie.chars = trie.char_table(prefixes, &tails);
        trie
    }

    /// The nodes of the trie of `tokens`, group by group, depth first, a
    /// node's children right after the group it is in when it is the first
    /// child (see `Trie`).
    fn layout(tokens: &[(&[u8], u32)]) -> Vec<Node> {
        // Sorted, the tokens under a node are one range, and its children
        // split that range by the next byte: the nodes come out group by
        // group, depth first, with no trie built first.
        let mut sorted = tokens.to_vec();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let blank = Node {
            token: NONE,
            kids: 0,
            n: 0,
            byte: 0,
        };
        let mut nodes = vec![blank];
        // (node, its tokens sorted[lo..hi], depth), each sharing the node's bytes
        let mut stack = vec![(0usize, 0usize, sorted.len(), 0usize)];
        let mut groups: Vec<(usize, usize)> = Vec::new();
        while let Some((node, lo, hi, depth)) = stack.pop() {
            // the node's own token sorts first (the shortest), already placed
            let mut i = lo;
            if i < hi && sorted[i].0.len() == depth {
                i += 1;
            }
            groups.clear();
            while i < hi {
                let byte = sorted[i].0[depth];
                let j = i + sorted[i..hi].partition_point(|t| t.0[depth] == byte);
                groups.push((i, j));
                i = j;
            }
            nodes[node].kids = nodes.len() as u32;
            nodes[node].n = groups.len() as u16;
            let first = nodes.len();
            for &(a, _) in &groups {
                let (bytes, id) = sorted[a];
                nodes.push(Node {
                    token: if bytes.len() == depth + 1 { id } else { NONE },
                    byte: bytes[depth],
                    ..blank
                });
            }
            // the first child is placed next (popped first)
            for (k, &(a, b)) in groups.iter().enumerate().rev() {
                stack.push((first + k, a, b, depth + 1));
            }
        }
        nodes
    }

    /// `node`, or 0 (no further token) when it has no children.
    fn with_kids(&self, node: u32) -> u32 {
        if self.nodes[node as usize].n > 0 {
            node
        } else {
            0
        }
    }

    /// Fill `first` and `second`, the tables by the first byte and by the
    /// first two, from the nodes.
    fn fill_bytes(&mut self) {
        for byte in 0..256usize {
            let Some(one) = self.child(0, byte as u8) else { continue };
            self.first[byte] = self.nodes[one as usize].token;
            for byte2 in 0..256usize {
                let pair = [byte as u8, byte2 as u8];
                let node = self.child(one, byte2 as u8).map_or(0, |n| self.with_kids(n));
                self.second[(byte << 8) | byte2] = (node, pack(self.walk(0, (NONE, 0), &pair, 0)));
            }
        }
    }

    /// The node at the end of `bytes`, one, two or three whole three-byte
    /// characters that some token starts with (0 when it has no children),
    /// and the longest token they start with. CHARS is set where it
    /// applies: the node has children, `bytes` are fewer than three
    /// characters, and their `key` is not in `tails` (see `char_prefixes`).
    fn char_entry(&self, tails: &FxHashSet<u64>, key: u64, bytes: &[u8]) -> (u32, Best) {
        let mut node = 0;
        for &b in bytes {
            node = self.child(node, b).expect("a token's prefix is a node");
        }
        let node = self.with_kids(node);
        let mut b = pack(self.walk(0, (NONE, 0), bytes, 0));
        if node != 0 && bytes.len() < 9 && !tails.contains(&key) {
            b |= CHARS;
        }
        (node, b)
    }

    /// Fill `third`, the table by the first three-byte character, from the
    /// nodes (`tails`: see `char_prefixes`).
    fn fill_third(&mut self, tails: &FxHashSet<u64>) {
        for code in 0x800u32..0x10000 {
            let Some(ch) = char::from_u32(code) else { continue };
            let mut buf = [0u8; 4];
            let t = ch.encode_utf8(&mut buf).as_bytes();
            let c1 = three(t).expect("a three-byte character");
            self.third[c1] = match self
                .child(0, t[0])
                .and_then(|n| self.child(n, t[1]))
                .and_then(|n| self.child(n, t[2]))
            {
                Some(_) => self.char_entry(tails, c1 as u64, t),
                None => (0, pack(self.walk(0, (NONE, 0), t, 0))),
            };
        }
    }

    /// The table of the two and three characters whose keys are `prefixes`
    /// (`tails`: see `char_prefixes`), from the nodes.
    fn char_table(&self, prefixes: FxHashSet<u64>, tails: &FxHashSet<u64>) -> CharTable {
        let mut entries: Vec<CharSlot> = prefixes
            .into_iter()
            .map(|key| {
                // (the key's top bits say two characters or three)
                let n = if key >> 62 == 1 { 6 } else { 9 };
                let mut bytes = [0u8; 9];
                let cs = [(key >> 32) & 0xFFFF, (key >> 16) & 0xFFFF, key & 0xFFFF];
                let cs = if n == 6 { &cs[1..] } else { &cs[..] };
                for (k, &c) in cs.iter().enumerate() {
                    let ch = char::from_u32(c as u32).expect("a token's character");
                    ch.encode_utf8(&mut bytes[3 * k..]);
                }
                let (node, best) = self.char_entry(tails, key, &bytes[..n]);
                CharSlot { key, node, best }
            })
            .collect();
        entries.sort_unstable_by_key(|e| e.key);
        CharTable::new(&entries)
    }

    /// The child of `node` (0: the root) by `byte`.
    #[inline(always)]
    fn child(&self, node: u32, byte: u8) -> Option<u32> {
        let nd = self.nodes[node as usize];
        let kids = &self.nodes[nd.kids as usize..nd.kids as usize + nd.n as usize];
        let i = if kids.len() <= SCAN_KIDS {
            kids.iter().position(|k| k.byte == byte)?
        } else {
            kids.binary_search_by_key(&byte, |k| k.byte).ok()?
        };
        Some(nd.kids + i as u32)
    }

    /// The longest token that `text` (non-empty) starts with, and its
    /// length: (NONE, 0) when none does.
    #[inline(always)]
    fn longest(&self, text: &[u8]) -> (u32, usize) {
        let Some(c1) = three(text) else {
            if text.len() == 1 {
                let t = self.first[text[0] as usize];
                return (t, if t == NONE { 0 } else { 1 });
            }
            let (node, b) = self.second[((text[0] as usize) << 8) | text[1] as usize];
            return self.finish(node, b, text, 2);
        };
        let (node, b) = self.third[c1];
        if b == NONE || b & CHARS == 0 {
            return self.finish(node, b, text, 3);
        }
        // whole characters: two and three looked up at once
        let Some(c2) = three(&text[3..]) else {
            return self.finish(node, b, text, 3);
        };
        let k2 = CharTable::key2(c1, c2);
        let k3 = three(&text[6..]).map(|c3| CharTable::key3(c1, c2, c3));
        if let Some(k3) = k3 {
            self.chars.prefetch(k3);
        }
        let Some(e2) = self.chars.get(k2) else {
            return unpack(b);
        };
        if e2.best & CHARS != 0 {
            if let Some(k3) = k3 {
                return match self.chars.get(k3) {
                    Some(e3) => self.finish(e3.node, e3.best, text, 9),
                    None => unpack(e2.best),
                };
            }
        }
        self.finish(e2.node, e2.best, text, 6)
    }

    /// The longest token of `text`, whose first `from` bytes lead to `node`
    /// (0: no further token) with `b` the longest token within them.
    #[inline(always)]
    fn finish(&self, node: u32, b: Best, text: &[u8], from: usize) -> (u32, usize) {
        if node == 0 {
            return unpack(b);
        }
        self.walk(node, unpack(b), &text[from..], from)
    }

    /// The longest token along `text` from `node`, reached after `depth`
    /// bytes whose longest token is `found` (id, length).
    #[inline(always)]
    fn walk(&self, node: u32, mut found: (u32, usize), text: &[u8], depth: usize) -> (u32, usize) {
        let mut nd = self.nodes[node as usize];
        for (i, &b) in text.iter().enumerate() {
            let kids = &self.nodes[nd.kids as usize..nd.kids as usize + nd.n as usize];
            let k = if kids.len() <= SCAN_KIDS {
                kids.iter().find(|k| k.byte == b)
            } else {
                kids.binary_search_by_key(&b, |k| k.byte).ok().map(|i| &kids[i])
            };
            let Some(&k) = k else { break };
            if k.token != NONE {
                found = (k.token, depth + i + 1);
            }
            nd = k;
        }
        found
    }
}

/// The keys of what `tokens` start with in whole three-byte characters,
/// for the trie's tables: (prefixes, tails).
///
/// `prefixes`: the two and three characters some token starts with
/// (`CharTable::key2`, `key3`). `tails`: the one or two characters (one
/// character's key is its 16 bits) that some token goes on from with
/// something else (part of a character, another script); their nodes are
/// walked byte by byte.
fn char_prefixes(tokens: &[(&[u8], u32)]) -> (FxHashSet<u64>, FxHashSet<u64>) {
    let mut tails = FxHashSet::default();
    let mut prefixes = FxHashSet::default();
    for &(t, _) in tokens {
        let Some(c1) = three(t) else { continue };
        if t.len() > 3 && three(&t[3..]).is_none() {
            tails.insert(c1 as u64);
            continue;
        }
        let Some(c2) = three(&t[3..]) else { continue };
        prefixes.insert(CharTable::key2(c1, c2));
        if t.len() > 6 && three(&t[6..]).is_none() {
            tails.insert(CharTable::key2(c1, c2));
            continue;
        }
        let Some(c3) = three(&t[6..]) else { continue };
        prefixes.insert(CharTable::key3(c1, c2, c3));
    }
    (prefixes, tails)
}

/// Merges capped below a rank: the state just before a token is made.
struct Capped<'a, P: PairLookup> {
    merges: &'a P,
    below: u32,
}

impl<P: PairLookup> PairLookup for Capped<'_, P> {
    #[inline]
    fn pair(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.merges.pair(a, b).filter(|&(rank, _)| rank < self.below)
    }
}

/// The last merge of every token (see `last_merge`), by id.
///
/// In parallel on threads of its own: this runs inside encodes that may be
/// on a rayon pool, whose workers steal other jobs while they wait (an
/// encode on this same thread would wait for this build).
fn last_merges<P: PairLookup + Sync>(
    vocab_r: &[Option<Box<[u8]>>],
    byte_ids: &[u32; 256],
    merges: &P,
) -> Vec<Option<(u32, u32)>> {
    let n = vocab_r.len();
    let threads = crate::parallel::default_threads().clamp(1, 16);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|lo| {
                scope.spawn(move || {
                    (lo..(lo + chunk).min(n))
                        .map(|id| last_merge(vocab_r, byte_ids, merges, id))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().expect("a build thread"))
            .collect()
    })
}

/// The two tokens whose merge makes token `id`, found by encoding its bytes
/// with the merges of lower rank only: a token made by BPE then stands as
/// exactly two tokens whose merge is it (`(id, id)` for the token of a
/// byte).
///
/// None for a token the encoding never produces: one without bytes, a
/// single byte that is not that byte's token, one BPE does not make.
/// `(NONE, NONE)` for a token that rules the encoder out: BPE makes it but
/// not by that last merge (the merges do not follow the ids), or it is
/// longer than `u16::MAX` bytes (`Backtrack::len` keeps 16 bits).
fn last_merge<P: PairLookup>(
    vocab_r: &[Option<Box<[u8]>>],
    byte_ids: &[u32; 256],
    merges: &P,
    id: usize,
) -> Option<(u32, u32)> {
    let bytes = vocab_r[id].as_deref()?;
    if bytes.len() == 1 {
        return (byte_ids[bytes[0] as usize] == id as u32).then_some((id as u32, id as u32));
    }
    if bytes.len() > u16::MAX as usize {
        return Some((NONE, NONE));
    }
    let mut syms: Vec<(u32, u32)> = bytes.iter().map(|&b| (byte_ids[b as usize], 1)).collect();
    let capped = Capped {
        merges,
        below: id as u32,
    };
    merge_symbols(&mut syms, &capped, None);
    let split = match syms[..] {
        [(l, _), (r, _)] if merges.pair(l, r) == Some((id as u32, id as u32)) => Some((l, r)),
        _ => None,
    };
    // Without the cap, BPE must make the token exactly when the capped
    // merges end one merge before it (else merges do not follow ids, and
    // this encoder does not apply). Merging without the cap repeats the
    // capped merges first (while a pair below the cap is left, the lowest
    // pair is one), so it goes on from where they stopped; with a split,
    // the one pair left is the token's own merge, and it makes the token.
    if split.is_some() {
        return split;
    }
    let uncapped = Capped {
        merges,
        below: u32::MAX,
    };
    merge_symbols(&mut syms, &uncapped, None);
    let made = matches!(syms[..], [(t, _)] if t == id as u32);
    made.then_some((NONE, NONE))
}

impl Backtrack {
    /// The encoder for a byte-level model with these tokens (`vocab_r[id]`:
    /// the bytes of token `id`), single-byte tokens `byte_ids` and merges,
    /// or None when the model's merges do not follow its ids (see the module
    /// documentation).
    pub fn new<P: PairLookup + Sync>(vocab_r: &[Option<Box<[u8]>>], byte_ids: &[u32; 256], merges: &P) -> Option<Self> {
        let n = vocab_r.len();
        if n as u32 >= MAX_ID || byte_ids.contains(&NONE) {
            return None;
        }
        let splits = last_merges(vocab_r, byte_ids, merges);
        if splits.contains(&Some((NONE, NONE))) {
            return None;
        }
        let mut split = vec![(NONE, NONE); n];
        let mut len = vec![0u16; n];
        let mut tokens = Vec::new();
        for (id, s) in splits.iter().enumerate() {
            if let Some(s) = *s {
                let bytes = vocab_r[id].as_deref().expect("a token with a split has bytes");
                split[id] = s;
                len[id] = bytes.len() as u16;
                tokens.push((bytes, id as u32));
            }
        }
        let trie = Trie::new(&tokens);
        // the longest token that is a proper prefix: what the token's bytes
        // but the last start with
        let next_prefix = (0..n)
            .map(|id| match vocab_r[id].as_deref().filter(|_| len[id] > 0) {
                Some(bytes) if bytes.len() > 1 => trie.longest(&bytes[..bytes.len() - 1]).0,
                _ => NONE,
            })
            .collect::<Vec<u32>>();
        // (a token with bytes but no split: one BPE does not make)
        let unmade = splits
            .iter()
            .zip(vocab_r)
            .enumerate()
            .filter(|(_, (s, _))| s.is_none())
            .filter_map(|(id, (_, bytes))| Some((bytes.clone()?, id as u32)))
            .collect();
        Some(Backtrack {
            unmade,
            split: split.into_boxed_slice(),
            len: len.into_boxed_slice(),
            next_prefix: next_prefix.into_boxed_slice(),
            trie,
            memo: (0..1usize << MEMO_BITS).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// BPE makes every token from its bytes: a piece that is a token
    /// encodes as that token here, with no whole-piece lookup before.
    #[cfg(test)]
    pub fn complete(&self) -> bool {
        self.unmade.is_empty()
    }

    /// The token `piece` is, if it is one that BPE does not make from its
    /// bytes (see `unmade`).
    #[inline]
    pub fn unmade(&self, piece: &[u8]) -> Option<u32> {
        if self.unmade.is_empty() {
            return None;
        }
        self.unmade.get(piece).copied()
    }

    /// Whether `a` followed by `b` encodes as `[a, b]`, remembered.
    ///
    /// The pair's key splits into a low part of `MEMO_BITS` bits and a
    /// high part; the slot is the low part mixed with a hash of the high
    /// part, so a slot and the high part stored in it give back the whole
    /// key (no two pairs can be mistaken for each other), in 4 bytes:
    /// high part << 2 | known << 1 | compatible.
    ///
    /// `a_longest`: `a` is the longest token at its place in the piece, so
    /// `a` and `b` themselves cannot merge (their merge would be a longer
    /// token there) and that lookup is skipped.
    #[inline]
    fn compatible(&self, merges: &impl PairLookup, a: u32, b: u32, a_longest: bool, work: &mut usize) -> bool {
        let (at, hi) = Self::memo_at(a, b);
        let slot = &self.memo[at];
        let seen = slot.load(Ordering::Relaxed);
        if seen >> 2 == hi as u32 && seen & 2 != 0 {
            return seen & 1 != 0;
        }
        let ok = self.compatible_slow(merges, a, b, a_longest, work);
        slot.store(((hi as u32) << 2) | 2 | ok as u32, Ordering::Relaxed);
        ok
    }

    /// Where the memo keeps the pair `a`, `b`, and the high part of its key.
    #[inline(always)]
    fn memo_at(a: u32, b: u32) -> (usize, u64) {
        let key = ((a as u64) << ID_BITS) | b as u64;
        let (lo, hi) = (key & ((1 << MEMO_BITS) - 1), key >> MEMO_BITS);
        let mix = hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_BITS);
        ((lo ^ mix) as usize, hi)
    }

    /// Undo the merges at the boundary of `a` and `b`, the later one first
    /// (a higher id was merged later; of two equal tokens, the right one),
    /// and fail if at some point the two tokens at the boundary merge with
    /// each other before the merge that was undone last (`limit`): BPE
    /// would have merged across. A merge left of the boundary's last merge
    /// wins a tie with it (leftmost first), one right of it loses.
    #[inline(never)]
    fn compatible_slow(
        &self,
        merges: &impl PairLookup,
        mut a: u32,
        mut b: u32,
        a_longest: bool,
        work: &mut usize,
    ) -> bool {
        let mut limit = u32::MAX;
        let mut check = !a_longest;
        loop {
            *work += 1;
            if check {
                if let Some((rank, _)) = merges.pair(a, b) {
                    if rank < limit {
                        return false;
                    }
                }
            }
            check = true;
            if a > b {
                // `a` was made last: undo it, the boundary now has its right part
                limit = a;
                a = self.split[a as usize].1;
                if a == limit {
                    // `a` is a byte: undo `b` instead
                    limit = b + 1;
                    b = self.split[b as usize].0;
                    if b + 1 == limit {
                        return true;
                    }
                }
            } else {
                limit = b + 1;
                b = self.split[b as usize].0;
                if b + 1 == limit {
                    limit = a;
                    a = self.split[a as usize].1;
                    if a == limit {
                        return true;
                    }
                }
            }
        }
    }

    /// Encode `piece` (non-empty) into `out` as (id, byte length). False,
    /// with `out` as it was, if it could not (which the tests say never
    /// happens for a model it was built for).
    ///
    /// Random text (every pair new, so every check undoes merges) can make
    /// this slower than merging: past a budget of work proportional to the
    /// piece's length it gives up, and the caller merges.
    pub fn encode(&self, merges: &impl PairLookup, piece: &[u8], out: &mut Vec<(u32, u32)>) -> bool {
        let budget = WORK_PER_BYTE * piece.len() + WORK_BASE;
        let mut work = 0;
        let start = out.len();
        // Most pieces: the longest token every time, each compatible with
        // the one before. The longest tokens first, all of them (they do
        // not depend on the checks), the memo's entries for their pairs
        // loading meanwhile; then the checks, in order. (Checked as each
        // token was found, a piece waited for the memo at every token.)
        let mut pos = 0;
        while pos < piece.len() {
            let (t, l) = self.trie.longest(&piece[pos..]);
            if t == NONE {
                out.truncate(start);
                return self.encode_backtracking(
                    merges,
                    piece,
                    out,
                    (start, 0, self.trie.longest(piece).0),
                    work,
                    budget,
                );
            }
            if let Some(&(last, _)) = out[start..].last() {
                crate::prefetch::prefetch(&self.memo[Self::memo_at(last, t).0]);
            }
            // (where a check the memo does not answer starts undoing
            // merges: loaded while the next token is found)
            crate::prefetch::prefetch(&self.split[t as usize]);
            out.push((t, l as u32));
            pos += l;
        }
        for k in start + 1..out.len() {
            // (the token before was the longest at its place)
            let fits = self.compatible(merges, out[k - 1].0, out[k].0, true, &mut work);
            if work > budget {
                out.truncate(start);
                return false;
            }
            if !fits {
                // The tokens before are where backtracking from the start
                // would be by now (each the longest at its place and
                // compatible with the one before): it goes on from there.
                let pos = out[start..k].iter().map(|&(_, l)| l as usize).sum();
                let next = out[k].0;
                out.truncate(k);
                return self.encode_backtracking(merges, piece, out, (start, pos, next), work, budget);
            }
        }
        true
    }

    /// Backtracking from `pos`, where the piece's tokens from `start` on in
    /// `out` end and the token `next` (the longest there) is to be tried.
    fn encode_backtracking(
        &self,
        merges: &impl PairLookup,
        piece: &[u8],
        out: &mut Vec<(u32, u32)>,
        (start, mut pos, mut next): (usize, usize, u32),
        mut work: usize,
        budget: usize,
    ) -> bool {
        let n = piece.len();
        // positions from which the rest of the piece can still be encoded
        // (on the stack for pieces up to 256 bytes)
        let mut short = [u64::MAX; 4];
        let mut long = Vec::new();
        let open: &mut [u64] = if n / 64 < short.len() {
            &mut short
        } else {
            long.resize(n / 64 + 1, u64::MAX);
            &mut long
        };
        let is_open = |open: &[u64], p: usize| open[p / 64] >> (p % 64) & 1 != 0;
        while next != NONE {
            let mut token = next;
            let last = if out.len() > start { out[out.len() - 1].0 } else { NONE };
            loop {
                let end = pos + self.len[token as usize] as usize;
                work += 1;
                if work > budget {
                    out.truncate(start);
                    return false;
                }
                if is_open(open, end) && (last == NONE || self.compatible(merges, last, token, false, &mut work)) {
                    out.push((token, (end - pos) as u32));
                    pos = end;
                    next = if pos < n {
                        self.trie.longest(&piece[pos..]).0
                    } else {
                        NONE
                    };
                    break;
                }
                let shorter = self.next_prefix[token as usize];
                if shorter != NONE {
                    token = shorter;
                    continue;
                }
                // nothing fits from here: close it and step back
                open[pos / 64] &= !(1 << (pos % 64));
                next = NONE;
                if out.len() > start {
                    let (t, l) = out.pop().expect("non-empty");
                    pos -= l as usize;
                    next = t;
                }
                break;
            }
        }
        if pos != n {
            out.truncate(start);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// A toy rank model: bytes a, b, c are 0, 1, 2; merges make ids from 3.
    type Merges = FxHashMap<(u32, u32), (u32, u32)>;
    type Tokens = Vec<Option<Box<[u8]>>>;

    fn model(tokens: &[&str]) -> (Tokens, [u32; 256], Merges) {
        let mut vocab_r: Vec<Option<Box<[u8]>>> = Vec::new();
        let mut byte_ids = [NONE; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = b as u32;
            vocab_r.push(Some(vec![b].into_boxed_slice()));
        }
        let mut ids: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        let mut merges = FxHashMap::default();
        for t in tokens {
            let id = vocab_r.len() as u32;
            let bytes = t.as_bytes().to_vec();
            for cut in 1..bytes.len() {
                if let (Some(&l), Some(&r)) = (ids.get(&bytes[..cut]), ids.get(&bytes[cut..])) {
                    merges.insert((l, r), (id, id));
                }
            }
            ids.insert(bytes.clone(), id);
            vocab_r.push(Some(bytes.into_boxed_slice()));
        }
        (vocab_r, byte_ids, merges)
    }

    fn reference(piece: &[u8], byte_ids: &[u32; 256], merges: &Merges) -> Vec<(u32, u32)> {
        let mut syms: Vec<(u32, u32)> = piece.iter().map(|&b| (byte_ids[b as usize], 1)).collect();
        merge_symbols(&mut syms, merges, None);
        syms
    }

    #[test]
    fn agrees_with_merging_on_every_short_string() {
        let (vocab_r, byte_ids, merges) =
            model(&["ab", "bc", "abc", "ca", "cab", "aa", "aaa", "bcab", "cc", "ccc", "bca"]);
        let bt = Backtrack::new(&vocab_r, &byte_ids, &merges).expect("a rank model");
        // every string over {a, b, c} up to length 9
        for len in 1..=9u32 {
            for code in 0..3u32.pow(len) {
                let mut c = code;
                let piece: Vec<u8> = (0..len)
                    .map(|_| {
                        let b = b"abc"[(c % 3) as usize];
                        c /= 3;
                        b
                    })
                    .collect();
                let mut got = Vec::new();
                assert!(bt.encode(&merges, &piece, &mut got));
                assert_eq!(
                    got,
                    reference(&piece, &byte_ids, &merges),
                    "{:?}",
                    String::from_utf8_lossy(&piece)
                );
            }
        }
    }

    #[test]
    fn long_pieces_agree_with_merging_or_are_left_to_it() {
        // pieces past 256 bytes (the positions left open no longer fit on
        // the stack), over few letters so that checks fail and the encoder
        // backtracks, from where the longest tokens stopped fitting
        let (vocab_r, byte_ids, merges) =
            model(&["ab", "bc", "abc", "ca", "cab", "aa", "aaa", "bcab", "cc", "ccc", "bca"]);
        let bt = Backtrack::new(&vocab_r, &byte_ids, &merges).expect("a rank model");
        let mut x = 99u64;
        let (mut encoded, mut backtracked, mut long) = (0, 0, 0);
        for round in 0..400 {
            let len = if round % 2 == 0 {
                1 + round % 250
            } else {
                250 + round * 3
            };
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    b"abc"[(x >> 33) as usize % 3]
                })
                .collect();
            let mut got = vec![(7, 7)];
            let ok = bt.encode(&merges, &piece, &mut got);
            if !ok {
                // (given up: `out` as it was, for the caller to merge)
                assert_eq!(got, [(7, 7)]);
                continue;
            }
            encoded += 1;
            long += usize::from(len > 256);
            assert_eq!(got[0], (7, 7));
            let want = reference(&piece, &byte_ids, &merges);
            assert_eq!(got[1..], want[..], "{:?}", String::from_utf8_lossy(&piece));
            // (whether the longest tokens alone would have done)
            let mut greedy = Vec::new();
            let mut pos = 0;
            while pos < piece.len() {
                let (t, l) = bt.trie.longest(&piece[pos..]);
                greedy.push((t, l as u32));
                pos += l;
            }
            if greedy != want {
                backtracked += 1;
            }
        }
        assert!(
            encoded > 300 && backtracked > 200 && long > 100,
            "{encoded} encoded ({long} long), {backtracked} backtracked"
        );
    }

    /// Random tokens of up to `most` characters of `chars`, cut anywhere
    /// (tokens may end inside a character), and random texts of them: the
    /// trie's longest token (and its length) is a plain search's.
    fn check_trie(chars: &[&str], most: usize, tokens_made: usize, mut x: u64) {
        let mut rnd = |n: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as usize % n
        };
        let text_of = |k: usize, rnd: &mut dyn FnMut(usize) -> usize| -> Vec<u8> {
            (0..k).flat_map(|_| chars[rnd(chars.len())].bytes()).collect()
        };
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for _ in 0..tokens_made {
            let k = 1 + rnd(most);
            let t = text_of(k, &mut rnd);
            // whole characters half the time, cut anywhere the other half
            let cut = if rnd(2) == 0 { t.len() } else { 1 + rnd(t.len()) };
            if !tokens.contains(&t[..cut].to_vec()) {
                tokens.push(t[..cut].to_vec());
            }
        }
        let list: Vec<(&[u8], u32)> = tokens.iter().enumerate().map(|(i, t)| (&t[..], i as u32)).collect();
        let trie = Trie::new(&list);
        for _ in 0..5000 {
            let k = 1 + rnd(most + 3);
            let text = text_of(k, &mut rnd);
            let start = rnd(text.len());
            let text = &text[start..];
            let want = tokens
                .iter()
                .enumerate()
                .filter(|(_, t)| text.starts_with(t))
                .max_by_key(|(_, t)| t.len())
                .map_or((NONE, 0), |(i, t)| (i as u32, t.len()));
            assert_eq!(trie.longest(text), want, "{text:?}");
        }
    }

    #[test]
    fn trie_finds_the_longest_token_like_a_plain_search() {
        // one-, two-, three- and four-byte characters
        check_trie(&["a", "é", "中", "文", "字", "𝄞", " "], 4, 400, 7);
        // mostly three-byte characters, tokens of up to six (looked up two
        // and three at a time, then byte by byte)
        let cjk = ["中", "文", "字", "的", "一", "是", "。", "a", " "];
        for seed in 1..6 {
            check_trie(&cjk, 6, 300 * seed as usize, seed);
        }
        check_trie(&["中", "文", "字"], 6, 2000, 11);
    }

    #[test]
    fn refuses_merges_that_do_not_follow_ids() {
        // "abc" (257) is made from "a" + "bc", and "bc" is a later id (258)
        let (mut vocab_r, byte_ids, mut merges) = model(&["xy"]);
        vocab_r.push(Some(b"abc".to_vec().into_boxed_slice()));
        vocab_r.push(Some(b"bc".to_vec().into_boxed_slice()));
        merges.insert((98, 99), (258, 258));
        merges.insert((97, 258), (257, 257));
        let bt = Backtrack::new(&vocab_r, &byte_ids, &merges);
        assert!(bt.is_none());
    }
}
