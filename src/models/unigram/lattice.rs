//! The segmentation lattice (one node per piece occurrence, positions in
//! characters) and the algorithms `sentencepiece` runs on it: Viterbi,
//! n-best by A* search (the agenda is a binary heap that pops equal
//! priorities in the same order as the C++ standard library's
//! `std::priority_queue`, so ties come out as in `sentencepiece`), and
//! forward-filtering backward-sampling.

const NONE: u32 = u32::MAX;
const BOS: u32 = 0;
const EOS: u32 = 1;

/// A small seedable generator (SplitMix64) for sampling.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// An index drawn with probability proportional to `weights`.
    pub fn pick(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().filter(|w| w.is_finite() && **w > 0.0).sum();
        if weights.is_empty() {
            return 0;
        }
        if total <= 0.0 {
            return 0;
        }
        let mut r = self.uniform() * total;
        for (i, &w) in weights.iter().enumerate() {
            if !(w.is_finite() && w > 0.0) {
                continue;
            }
            if r < w {
                return i;
            }
            r -= w;
        }
        weights.iter().rposition(|w| w.is_finite() && *w > 0.0).unwrap_or(0)
    }
}

#[derive(Clone, Debug)]
struct Node {
    id: u32,
    /// start, in characters
    pos: usize,
    /// length, in characters
    len: usize,
    score: f64,
    backtrace: f64,
    prev: u32,
}

pub struct Lattice {
    f32_mode: bool,
    /// byte offset of every character, and the text length at the end
    char_start: Vec<usize>,
    /// character index of every byte offset that starts a character
    char_of_byte: Vec<u32>,
    nodes: Vec<Node>,
    begin: Vec<Vec<u32>>,
    end: Vec<Vec<u32>>,
}

/// `(start byte, end byte, id)` per piece.
pub type Path = Vec<(usize, usize, u32)>;

impl Lattice {
    /// `f32_mode`: sums rounded to single precision, as `sentencepiece` does.
    pub fn new(text: &str, f32_mode: bool) -> Self {
        let mut char_start: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        char_start.push(text.len());
        let mut char_of_byte = vec![NONE; text.len() + 1];
        for (c, &b) in char_start.iter().enumerate() {
            char_of_byte[b] = c as u32;
        }
        let len = char_start.len() - 1;
        let mut lat = Lattice {
            f32_mode,
            char_start,
            char_of_byte,
            nodes: Vec::with_capacity(len * 4 + 2),
            begin: vec![Vec::new(); len + 1],
            end: vec![Vec::new(); len + 1],
        };
        let blank = |pos| Node {
            id: NONE,
            pos,
            len: 0,
            score: 0.0,
            backtrace: 0.0,
            prev: NONE,
        };
        lat.nodes.push(blank(0));
        lat.nodes.push(blank(len));
        lat.end[0].push(BOS);
        lat.begin[len].push(EOS);
        lat
    }

    /// Number of characters.
    pub fn len(&self) -> usize {
        self.char_start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn byte_of(&self, c: usize) -> usize {
        self.char_start[c]
    }

    /// Characters in `text[a..b]`, when both are character boundaries.
    pub fn chars_between(&self, a: usize, b: usize) -> Option<usize> {
        let ca = *self.char_of_byte.get(a)?;
        let cb = *self.char_of_byte.get(b)?;
        if ca == NONE || cb == NONE || cb < ca {
            return None;
        }
        Some((cb - ca) as usize)
    }

    pub fn insert(&mut self, pos: usize, len: usize, id: u32, score: f64) {
        let idx = self.nodes.len() as u32;
        self.nodes.push(Node {
            id,
            pos,
            len,
            score,
            backtrace: 0.0,
            prev: NONE,
        });
        self.begin[pos].push(idx);
        self.end[pos + len].push(idx);
    }

    #[inline]
    fn add(&self, a: f64, b: f64) -> f64 {
        if self.f32_mode {
            (a as f32 + b as f32) as f64
        } else {
            a + b
        }
    }

    fn path_of(&self, node: u32) -> (usize, usize, u32) {
        let n = &self.nodes[node as usize];
        (self.char_start[n.pos], self.char_start[n.pos + n.len], n.id)
    }

    /// Fill the best-path scores; returns the best path.
    pub fn viterbi(&mut self) -> Path {
        let len = self.len();
        for pos in 0..=len {
            for bi in 0..self.begin[pos].len() {
                let r = self.begin[pos][bi] as usize;
                let mut best = NONE;
                let mut best_score = 0.0;
                for &l in &self.end[pos] {
                    let s = self.add(self.nodes[l as usize].backtrace, self.nodes[r].score);
                    if best == NONE || s > best_score {
                        best = l;
                        best_score = s;
                    }
                }
                if best == NONE {
                    return Vec::new();
                }
                self.nodes[r].prev = best;
                self.nodes[r].backtrace = best_score;
            }
        }
        let mut path = Vec::new();
        let mut node = self.nodes[EOS as usize].prev;
        while node != NONE && node != BOS {
            path.push(self.path_of(node));
            node = self.nodes[node as usize].prev;
        }
        path.reverse();
        path
    }

    /// The `n` best paths with their scores, best first (A* from the end,
    /// with the exact Viterbi scores as the heuristic).
    pub fn nbest(mut self, n: usize) -> Vec<(Path, f64)> {
        if n == 0 {
            return Vec::new();
        }
        let best = self.viterbi();
        if n == 1 {
            let score = self.nodes[EOS as usize].backtrace;
            return vec![(best, score)];
        }
        struct Hyp {
            node: u32,
            next: u32,
            fx: f64,
            gx: f64,
        }
        let mut hyps: Vec<Hyp> = vec![Hyp {
            node: EOS,
            next: NONE,
            fx: self.nodes[EOS as usize].backtrace,
            gx: 0.0,
        }];
        let mut agenda = StdHeap::default();
        agenda.push(0, &|a, b| hyps[a as usize].fx < hyps[b as usize].fx);
        let mut results = Vec::new();
        const MAX_AGENDA: usize = 10_000;
        const MIN_AGENDA: usize = 512;
        loop {
            let popped = agenda.pop(&|a, b| hyps[a as usize].fx < hyps[b as usize].fx);
            let Some(top) = popped else { break };
            let node = hyps[top as usize].node;
            if node == BOS {
                let mut path = Vec::new();
                let mut h = hyps[top as usize].next;
                while h != NONE && hyps[h as usize].next != NONE {
                    path.push(self.path_of(hyps[h as usize].node));
                    h = hyps[h as usize].next;
                }
                results.push((path, hyps[top as usize].fx));
                if results.len() == n {
                    break;
                }
                continue;
            }
            let pos = self.nodes[node as usize].pos;
            let top_gx = hyps[top as usize].gx;
            for &l in &self.end[pos] {
                let ln = &self.nodes[l as usize];
                let gx = self.add(ln.score, top_gx);
                let fx = self.add(ln.backtrace, top_gx);
                hyps.push(Hyp {
                    node: l,
                    next: top,
                    fx,
                    gx,
                });
                let idx = (hyps.len() - 1) as u32;
                agenda.push(idx, &|a, b| hyps[a as usize].fx < hyps[b as usize].fx);
            }
            if agenda.len() >= MAX_AGENDA {
                // keep the best few, as sentencepiece does on long inputs
                let keep = MIN_AGENDA.min(n * 10);
                let mut kept = StdHeap::default();
                for _ in 0..keep {
                    match agenda.pop(&|a, b| hyps[a as usize].fx < hyps[b as usize].fx) {
                        Some(h) => kept.push(h, &|a, b| hyps[a as usize].fx < hyps[b as usize].fx),
                        None => break,
                    }
                }
                agenda = kept;
            }
        }
        results
    }

    /// `log(exp(x) + exp(y))`, with sentencepiece's cut-off.
    fn log_sum_exp(x: f64, y: f64, init: bool) -> f64 {
        if init {
            return y;
        }
        let (lo, hi) = if x < y { (x, y) } else { (y, x) };
        if hi > lo + 50.0 {
            hi
        } else {
            hi + ((lo - hi).exp() + 1.0).ln()
        }
    }

    fn forward(&self, inv_theta: f64) -> Vec<f64> {
        let mut alpha = vec![0.0; self.nodes.len()];
        for pos in 0..=self.len() {
            for &r in &self.begin[pos] {
                for (k, &l) in self.end[pos].iter().enumerate() {
                    let v = inv_theta * self.nodes[l as usize].score + alpha[l as usize];
                    alpha[r as usize] = Self::log_sum_exp(alpha[r as usize], v, k == 0);
                }
            }
        }
        alpha
    }

    /// One path drawn with probability `∝ exp(inv_theta · score)`.
    pub fn sample(&self, inv_theta: f64, rng: &mut super::Rng) -> Path {
        if self.is_empty() {
            return Vec::new();
        }
        let alpha = self.forward(inv_theta);
        let mut z = alpha[EOS as usize];
        let mut node = EOS;
        let mut path = Vec::new();
        let mut probs = Vec::new();
        loop {
            let pos = self.nodes[node as usize].pos;
            let ends = &self.end[pos];
            probs.clear();
            probs.extend(
                ends.iter()
                    .map(|&l| (alpha[l as usize] + inv_theta * self.nodes[l as usize].score - z).exp()),
            );
            let Some(&pick) = ends.get(rng.pick(&probs)) else { break };
            if pick == BOS {
                break;
            }
            z = alpha[pick as usize];
            path.push(self.path_of(pick));
            node = pick;
            if path.len() > self.len() {
                break; // cannot happen: every node covers at least one character
            }
        }
        path.reverse();
        path
    }
}

/// A max-heap of indices that runs the same sift steps as libstdc++'s
/// `push_heap` / `pop_heap`, so that equal keys come out in the same order
/// as from a `std::priority_queue`.
#[derive(Default)]
struct StdHeap {
    v: Vec<u32>,
}

impl StdHeap {
    fn len(&self) -> usize {
        self.v.len()
    }

    fn push(&mut self, x: u32, less: &dyn Fn(u32, u32) -> bool) {
        self.v.push(x);
        let hole = self.v.len() - 1;
        self.sift_up(hole, 0, x, less);
    }

    fn sift_up(&mut self, mut hole: usize, top: usize, value: u32, less: &dyn Fn(u32, u32) -> bool) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !less(self.v[parent], value) {
                break;
            }
            self.v[hole] = self.v[parent];
            hole = parent;
        }
        self.v[hole] = value;
    }

    fn pop(&mut self, less: &dyn Fn(u32, u32) -> bool) -> Option<u32> {
        let n = self.v.len();
        if n == 0 {
            return None;
        }
        let top = self.v[0];
        if n > 1 {
            let value = self.v[n - 1];
            self.v[n - 1] = top;
            let len = n - 1;
            // __adjust_heap(first, 0, len, value)
            let mut hole = 0usize;
            let mut second = 0usize;
            while second < (len - 1) / 2 {
                second = 2 * (second + 1);
                if less(self.v[second], self.v[second - 1]) {
                    second -= 1;
                }
                self.v[hole] = self.v[second];
                hole = second;
            }
            if len & 1 == 0 && second == (len - 2) / 2 {
                second = 2 * (second + 1);
                self.v[hole] = self.v[second - 1];
                hole = second - 1;
            }
            self.sift_up(hole, 0, value, less);
        }
        self.v.pop();
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_heap_pops_in_priority_order() {
        let keys = [5.0, 1.0, 9.0, 9.0, 3.0, 7.0, 7.0, 0.0, 8.0];
        let less = |a: u32, b: u32| keys[a as usize] < keys[b as usize];
        let mut h = StdHeap::default();
        for i in 0..keys.len() as u32 {
            h.push(i, &less);
        }
        let mut got = Vec::new();
        while let Some(x) = h.pop(&less) {
            got.push(keys[x as usize]);
        }
        assert_eq!(got, [9.0, 9.0, 8.0, 7.0, 7.0, 5.0, 3.0, 1.0, 0.0]);
    }

    #[test]
    fn rng_picks_by_weight() {
        let mut r = Rng::new(7);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[r.pick(&[1.0, 0.0, 3.0])] += 1;
        }
        assert_eq!(counts[1], 0);
        let ratio = counts[2] as f64 / counts[0] as f64;
        assert!((2.6..3.4).contains(&ratio), "{counts:?}");
    }
}
