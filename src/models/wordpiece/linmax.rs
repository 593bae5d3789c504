//! LinMaxMatch (Song et al. 2021, "Fast WordPiece Tokenization"): greedy
//! longest-match-first WordPiece in one left-to-right pass over a word, with
//! Aho-Corasick-style failure links over the vocabulary trie.
//!
//! One byte trie holds every token as written. The node of the continuation
//! prefix (`##`), the suffix root, starts the continuation tokens: `##ing`
//! is the path `#`, `#`, `i`, `n`, `g`. For each node `v` the build records
//! the tokens greedy matching pops off `str(v)` when the next byte has no edge
//! (`pops(v)`), and the node of what is left (`fail(v)`, below the suffix
//! root, or none when the word cannot be split). Matching then follows an
//! edge per byte or a failure link, so a word costs O(its length) steps.
//!
//! A word that starts with the prefix itself (or any word, when the prefix
//! is empty) is matched by plain greedy search instead: from the root the
//! path through the suffix root means "a word spelled `##...`", which the
//! failure links (built for continuation) do not describe.
//!
//! The trie is stored as a double array: the child of slot `s` by byte `b`
//! is slot `base[s] + b` when that slot's `check` is `s`, one load each.

use rustc_hash::FxHashMap;

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

#[derive(Clone, Copy)]
struct Slot {
    base: u32,
    check: u32,
}

/// The LinMaxMatch automaton of one vocabulary and prefix.
pub struct Automaton {
    slots: Vec<Slot>,
    /// per slot: the token id spelled by the path to it (NONE if none)
    token: Vec<u32>,
    /// per slot: the failure link (NONE: the word cannot be split)
    fail: Vec<u32>,
    /// per slot: `pop_ids[pops[s].0..pops[s].1]` are the tokens popped
    pops: Vec<(u32, u32)>,
    pop_ids: Vec<u32>,
    /// bytes of the word each popped token covers (its length without the
    /// prefix for continuation tokens)
    pop_lens: Vec<u32>,
    suffix_root: u32,
    prefix: Box<[u8]>,
}

/// A word being matched byte by byte.
pub struct Cursor {
    /// the automaton state (NONE once the word cannot be split)
    state: u32,
    /// the length of the output when the word started
    pub start: usize,
}

/// The trie before packing: children sorted by byte.
struct Tree {
    children: Vec<Vec<(u8, u32)>>,
    token: Vec<u32>,
}

impl Tree {
    fn node(&mut self) -> u32 {
        self.children.push(Vec::new());
        self.token.push(NONE);
        (self.children.len() - 1) as u32
    }

    fn child(&self, node: u32, b: u8) -> Option<u32> {
        let kids = &self.children[node as usize];
        kids.binary_search_by_key(&b, |k| k.0).ok().map(|i| kids[i].1)
    }

    fn insert(&mut self, key: &[u8]) -> u32 {
        let mut node = ROOT;
        for &b in key {
            let kids = &self.children[node as usize];
            node = match kids.binary_search_by_key(&b, |k| k.0) {
                Ok(i) => kids[i].1,
                Err(i) => {
                    let n = self.node();
                    self.children[node as usize].insert(i, (b, n));
                    n
                }
            };
        }
        node
    }

    /// Breadth-first order from `start`, not descending into `skip`.
    fn bfs(&self, start: u32, skip: u32) -> Vec<u32> {
        let mut order = vec![start];
        let mut i = 0;
        while i < order.len() {
            let kids = self.children[order[i] as usize].iter().map(|k| k.1);
            order.extend(kids.filter(|&k| k != skip));
            i += 1;
        }
        order
    }
}

/// Failure links and pops in tree numbering.
struct Links {
    fail: Vec<u32>,
    pops: Vec<(u32, u32)>,
    pop_ids: Vec<u32>,
    pop_lens: Vec<u32>,
}

/// The failure chain of a node below the suffix root stays below it and
/// gets shorter, while a word-start node links below the suffix root: so the
/// suffix root's subtree is done first, breadth first, then the rest.
fn links(tree: &Tree, suffix_root: u32) -> Links {
    let mut order = tree.bfs(suffix_root, NONE);
    if suffix_root != ROOT {
        order.extend(tree.bfs(ROOT, suffix_root));
    }
    let n = tree.token.len();
    let mut l = Links {
        fail: vec![NONE; n],
        pops: vec![(0, 0); n],
        pop_ids: Vec::new(),
        pop_lens: Vec::new(),
    };
    // bytes of the word a node's path covers: its depth, less the prefix
    // below the suffix root
    let mut covered = vec![0u32; n];
    for &u in &order {
        for &(b, v) in &tree.children[u as usize] {
            let vi = v as usize;
            covered[vi] = if v == suffix_root { 0 } else { covered[u as usize] + 1 };
            if v == suffix_root {
                continue; // nothing matched yet: no pops, no link
            }
            let tok = tree.token[vi];
            if tok != NONE {
                // the longest match is the whole path; nothing is left
                let at = l.pop_ids.len() as u32;
                l.pop_ids.push(tok);
                l.pop_lens.push(covered[vi]);
                l.pops[vi] = (at, at + 1);
                l.fail[vi] = suffix_root;
                continue;
            }
            // not a token: pop what `u` pops, then keep popping from its
            // failure chain until byte `b` has an edge
            let (mut a, mut e) = l.pops[u as usize];
            let mut z = l.fail[u as usize];
            while z != NONE && tree.child(z, b).is_none() {
                let (za, ze) = l.pops[z as usize];
                if za < ze {
                    let start = l.pop_ids.len();
                    l.pop_ids.extend_from_within(a as usize..e as usize);
                    l.pop_ids.extend_from_within(za as usize..ze as usize);
                    l.pop_lens.extend_from_within(a as usize..e as usize);
                    l.pop_lens.extend_from_within(za as usize..ze as usize);
                    (a, e) = (start as u32, l.pop_ids.len() as u32);
                }
                z = l.fail[z as usize];
            }
            l.pops[vi] = (a, e);
            l.fail[vi] = match z {
                NONE => NONE,
                z => tree.child(z, b).unwrap_or(NONE),
            };
        }
    }
    l
}

/// Double-array placement: slot of every tree node, and base/check.
fn pack(tree: &Tree, order: &[u32]) -> (Vec<Slot>, Vec<u32>) {
    let empty = Slot { base: 0, check: NONE };
    let mut slots = vec![empty; 512];
    let mut slot_of = vec![NONE; tree.token.len()];
    slot_of[ROOT as usize] = 0;
    slots[0].check = NONE - 1; // taken, the child of nothing
                               // the search for a base starts at the first free slot; slots below 256
                               // are left alone, as only a child by a small byte could take them and
                               // a hole there would keep every search scanning from the start
    let mut first_free = 256usize;
    for &node in order {
        let kids = &tree.children[node as usize];
        let Some(&(c0, _)) = kids.first() else { continue };
        let mut base = first_free.max(c0 as usize + 1) - c0 as usize;
        loop {
            if slots.len() < base + 256 {
                slots.resize(base + 512, empty);
            }
            if kids.iter().all(|&(c, _)| slots[base + c as usize].check == NONE) {
                break;
            }
            base += 1;
        }
        let s = slot_of[node as usize];
        slots[s as usize].base = base as u32;
        for &(c, kid) in kids {
            slots[base + c as usize].check = s;
            slot_of[kid as usize] = (base + c as usize) as u32;
        }
        while slots[first_free].check != NONE {
            first_free += 1;
        }
    }
    (slots, slot_of)
}

impl Automaton {
    pub fn build<'a>(vocab: impl Iterator<Item = (&'a [u8], u32)>, prefix: &[u8]) -> Self {
        let mut tree = Tree {
            children: Vec::new(),
            token: Vec::new(),
        };
        tree.node();
        for (tok, id) in vocab {
            let n = tree.insert(tok);
            if n != ROOT {
                tree.token[n as usize] = id;
            }
        }
        let suffix_root = tree.insert(prefix);
        let l = links(&tree, suffix_root);
        let (slots, slot_of) = pack(&tree, &tree.bfs(ROOT, NONE));
        let to_slot = |n: u32| if n == NONE { NONE } else { slot_of[n as usize] };
        let mut token = vec![NONE; slots.len()];
        let mut fail = vec![NONE; slots.len()];
        let mut pops = vec![(0, 0); slots.len()];
        for (n, &s) in slot_of.iter().enumerate() {
            let s = s as usize;
            token[s] = tree.token[n];
            fail[s] = to_slot(l.fail[n]);
            pops[s] = l.pops[n];
        }
        Automaton {
            slots,
            token,
            fail,
            pops,
            pop_ids: l.pop_ids,
            pop_lens: l.pop_lens,
            suffix_root: to_slot(suffix_root),
            prefix: prefix.into(),
        }
    }

    #[inline(always)]
    fn child(&self, s: u32, b: u8) -> Option<u32> {
        let t = self.slots[s as usize].base as usize + b as usize;
        // every base leaves 256 slots after it, so `t` is in bounds
        (self.slots[t].check == s).then_some(t as u32)
    }

    /// The token of a one-byte word (a punctuation character), if any.
    pub fn byte_token(&self, b: u8) -> Option<u32> {
        self.child(ROOT, b)
            .map(|s| self.token[s as usize])
            .filter(|&t| t != NONE)
    }

    /// Split a non-empty `word` greedily, longest match first, calling
    /// `emit(ids, byte lengths)` for each run of tokens; false (some tokens
    /// may have been emitted) when some position has no match.
    #[inline]
    pub fn split(&self, word: &[u8], emit: &mut impl FnMut(&[u32], &[u32])) -> bool {
        if self
            .prefix
            .first()
            .is_none_or(|&p| word[0] == p && word.starts_with(&self.prefix))
        {
            return self.greedy(word, emit);
        }
        let mut s = ROOT;
        for &b in word {
            loop {
                if let Some(t) = self.child(s, b) {
                    s = t;
                    break;
                }
                if !self.pop(&mut s, emit) {
                    return false;
                }
            }
        }
        while s != self.suffix_root {
            if !self.pop(&mut s, emit) {
                return false;
            }
        }
        true
    }

    /// Emit the pops of `s` and follow its failure link; false if none.
    #[inline(always)]
    fn pop(&self, s: &mut u32, emit: &mut impl FnMut(&[u32], &[u32])) -> bool {
        let (a, e) = self.pops[*s as usize];
        let (a, e) = (a as usize, e as usize);
        emit(&self.pop_ids[a..e], &self.pop_lens[a..e]);
        *s = self.fail[*s as usize];
        *s != NONE
    }

    /// Start a word that arrives byte by byte ([`Self::step`]); only for
    /// words that cannot start with the prefix (the caller's to ensure).
    #[inline(always)]
    pub fn start(&self, out_len: usize) -> Cursor {
        Cursor {
            state: ROOT,
            start: out_len,
        }
    }

    /// Feed the next byte of the word; its pops go to `out`. Once the word
    /// has failed (`cursor.failed()`), bytes are ignored.
    #[inline(always)]
    pub fn step(&self, cur: &mut Cursor, b: u8, out: &mut Vec<u32>) {
        while cur.state != NONE {
            if let Some(t) = self.child(cur.state, b) {
                cur.state = t;
                return;
            }
            self.pop_ids_into(cur, out);
        }
    }

    /// End the word: pop what is left; false if it cannot be split (the
    /// caller replaces what the word wrote with the unknown token).
    #[inline(always)]
    pub fn finish(&self, cur: &mut Cursor, out: &mut Vec<u32>) -> bool {
        while cur.state != self.suffix_root {
            if cur.state == NONE {
                return false;
            }
            self.pop_ids_into(cur, out);
        }
        true
    }

    #[inline(always)]
    fn pop_ids_into(&self, cur: &mut Cursor, out: &mut Vec<u32>) {
        let (a, e) = self.pops[cur.state as usize];
        if e == a + 1 {
            out.push(self.pop_ids[a as usize]);
        } else {
            out.extend_from_slice(&self.pop_ids[a as usize..e as usize]);
        }
        cur.state = self.fail[cur.state as usize];
    }

    /// Plain greedy longest-match-first: `tokenizers`' loop, each match a
    /// walk down the trie from the root (first piece) or the suffix root.
    fn greedy(&self, word: &[u8], emit: &mut impl FnMut(&[u32], &[u32])) -> bool {
        let mut start = 0;
        while start < word.len() {
            let mut s = if start == 0 { ROOT } else { self.suffix_root };
            let mut best = None;
            for (i, &b) in word[start..].iter().enumerate() {
                match self.child(s, b) {
                    Some(t) => s = t,
                    None => break,
                }
                let tok = self.token[s as usize];
                if tok != NONE {
                    best = Some((tok, i as u32 + 1));
                }
            }
            let Some((tok, len)) = best else { return false };
            emit(&[tok], &[len]);
            start += len as usize;
        }
        true
    }
}

/// Build from a token -> id map.
pub fn from_map(vocab: &FxHashMap<Vec<u8>, u32>, prefix: &[u8]) -> Automaton {
    Automaton::build(vocab.iter().map(|(t, &id)| (t.as_slice(), id)), prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(a: &Automaton, word: &str, linmax: bool) -> Option<Vec<(u32, u32)>> {
        let mut out = vec![];
        let mut emit = |ids: &[u32], lens: &[u32]| out.extend(ids.iter().copied().zip(lens.iter().copied()));
        let ok = if linmax {
            a.split(word.as_bytes(), &mut emit)
        } else {
            a.greedy(word.as_bytes(), &mut emit)
        };
        ok.then_some(out)
    }

    fn automaton(tokens: &[&str]) -> Automaton {
        Automaton::build(tokens.iter().enumerate().map(|(i, t)| (t.as_bytes(), i as u32)), b"##")
    }

    #[test]
    fn failure_links_pop_what_greedy_pops() {
        let a = automaton(&[
            "a", "ab", "abcd", "##b", "##c", "##cd", "##bcde", "##d", "##e", "b", "c",
        ]);
        assert_eq!(split(&a, "abcde", true), Some(vec![(2, 4), (8, 1)]));
        assert_eq!(split(&a, "abce", true), Some(vec![(1, 2), (4, 1), (8, 1)]));
        assert_eq!(split(&a, "abx", true), None);
        assert_eq!(split(&a, "x", true), None);
    }

    /// Every word over a small alphabet, against plain greedy matching.
    #[test]
    fn linmax_equals_greedy_on_all_short_words() {
        let vocab = [
            "a", "b", "ab", "aab", "abab", "bba", "##a", "##b", "##ab", "##ba", "##bab", "##aaa", "#", "##", "###",
            "ba", "bbb",
        ];
        let a = automaton(&vocab);
        let mut words = vec![String::new()];
        for _ in 0..7 {
            let next: Vec<String> = words
                .iter()
                .flat_map(|w| ["a", "b", "#"].map(|c| format!("{w}{c}")))
                .collect();
            for w in &next {
                assert_eq!(split(&a, w, true), split(&a, w, false), "{w}");
            }
            words = next;
        }
    }

    #[test]
    fn multibyte_tokens_split_at_characters() {
        let a = automaton(&["\u{e9}", "##t\u{e9}", "##\u{e9}", "t"]);
        assert_eq!(split(&a, "\u{e9}t\u{e9}", true), Some(vec![(0, 2), (1, 3)]));
        assert_eq!(split(&a, "\u{e9}\u{e9}", true), Some(vec![(0, 2), (2, 2)]));
        assert_eq!(split(&a, "tt", true), None);
    }
}
