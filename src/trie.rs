//! A compact byte trie for common-prefix search: every node's children are
//! stored together and sorted, so a lookup is a short binary search and the
//! whole trie is four flat arrays (about 11 bytes per distinct prefix).

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct Trie {
    labels: Vec<u8>,
    first: Vec<u32>,
    count: Vec<u16>,
    value: Vec<u32>,
}

impl Trie {
    /// Build from `(key, value)` pairs; when a key repeats, the last value wins.
    pub fn build(mut keys: Vec<(&[u8], u32)>) -> Trie {
        keys.sort_by(|a, b| a.0.cmp(b.0)); // stable: equal keys keep their order
        let mut dedup: Vec<(&[u8], u32)> = Vec::with_capacity(keys.len());
        for (k, v) in keys {
            match dedup.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => dedup.push((k, v)),
            }
        }
        let mut t = Trie {
            labels: vec![0],
            first: vec![0],
            count: vec![0],
            value: vec![NONE],
        };
        // breadth first: (node, key range, depth); children get contiguous slots
        let mut queue = std::collections::VecDeque::new();
        queue.push_back((0usize, 0usize, dedup.len(), 0usize));
        while let Some((node, mut lo, hi, depth)) = queue.pop_front() {
            if lo < hi && dedup[lo].0.len() == depth {
                t.value[node] = dedup[lo].1;
                lo += 1;
            }
            let start = t.labels.len();
            t.first[node] = start as u32;
            let mut i = lo;
            while i < hi {
                let b = dedup[i].0[depth];
                let mut j = i + 1;
                while j < hi && dedup[j].0[depth] == b {
                    j += 1;
                }
                let child = t.labels.len();
                t.labels.push(b);
                t.first.push(0);
                t.count.push(0);
                t.value.push(NONE);
                queue.push_back((child, i, j, depth + 1));
                i = j;
            }
            t.count[node] = (t.labels.len() - start) as u16;
        }
        t
    }

    #[inline]
    fn child(&self, node: usize, b: u8) -> Option<usize> {
        let s = self.first[node] as usize;
        let kids = &self.labels[s..s + self.count[node] as usize];
        kids.binary_search(&b).ok().map(|k| s + k)
    }

    /// Call `f(length, value)` for every key that is a prefix of `text`,
    /// shortest first.
    #[inline]
    pub fn prefixes(&self, text: &[u8], mut f: impl FnMut(usize, u32)) {
        let mut node = 0usize;
        for (i, &b) in text.iter().enumerate() {
            match self.child(node, b) {
                Some(c) => node = c,
                None => return,
            }
            let v = self.value[node];
            if v != NONE {
                f(i + 1, v);
            }
        }
    }

    /// The value of the longest key that is a prefix of `text`, with its length.
    pub fn longest_prefix(&self, text: &[u8]) -> Option<(usize, u32)> {
        let mut best = None;
        self.prefixes(text, |n, v| best = Some((n, v)));
        best
    }

    pub fn get(&self, key: &[u8]) -> Option<u32> {
        let mut node = 0usize;
        for &b in key {
            node = self.child(node, b)?;
        }
        Some(self.value[node]).filter(|&v| v != NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_in_order_and_last_duplicate_wins() {
        let t = Trie::build(vec![(b"ab", 1), (b"a", 2), (b"abc", 3), (b"b", 4), (b"ab", 5)]);
        let mut got = Vec::new();
        t.prefixes(b"abcd", |n, v| got.push((n, v)));
        assert_eq!(got, [(1, 2), (2, 5), (3, 3)]);
        assert_eq!(t.get(b"b"), Some(4));
        assert_eq!(t.get(b"c"), None);
        assert_eq!(t.longest_prefix(b"abx"), Some((2, 5)));
        let empty = Trie::build(vec![]);
        assert_eq!(empty.longest_prefix(b"a"), None);
    }
}
