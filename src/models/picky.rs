//! A PickyBPE model (`trainers::picky`): byte-level BPE whose training
//! events, merges and removals, are replayed on each piece.
//!
//! Encoding a piece (its bytes are the start): the events are replayed in
//! training order. A merge (a, b) -> t replaces every adjacent (a, b), left
//! to right, as training did; a removal of x splits every x into the
//! present tokens it was split into in training. An event whose time has
//! passed never applies again (a later merge of the same pair is another
//! event). What is left are tokens of the final vocabulary: each removed
//! token was split at its removal and can only come back through a later
//! merge, which is a restoration in training too.
//!
//! The replay is not one pass per event: each adjacent pair waits in a
//! heap for the first merge of that pair after the event that made it, and
//! each token for its first removal after that; the heap gives them in
//! event order, and, within one event, left to right. O(n log n) a piece.
//!
//! Ids: "symbols" are every token that ever existed in training (the 256
//! bytes are symbols 0-255, then one per merged token), events are written
//! in symbols; only the present ones have an id of the vocabulary.

use super::Model;
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::RwLock;

const NONE: u32 = u32::MAX;
const CACHE_CAPACITY: usize = 100_000;
const CACHE_MAX_PIECE: usize = 256;

/// One event in symbols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Merge {
        left: u32,
        right: u32,
        new: u32,
    },
    /// `parts` is a range of `PickyBpe::parts`.
    Remove {
        token: u32,
        parts: (u32, u32),
    },
}

/// Event input for [`PickyBpe::new`], in symbols.
pub enum EventSpec {
    Merge(u32, u32),
    Remove(u32, Vec<u32>),
}

type PieceCache = FxHashMap<Box<[u8]>, Box<[(u32, u32)]>>;

pub struct PickyBpe {
    /// Symbol -> its bytes.
    syms: Vec<Box<[u8]>>,
    /// Symbol -> its id in the vocabulary (`NONE` when removed for good).
    sym_id: Vec<u32>,
    vocab: FxHashMap<Vec<u8>, u32>,
    vocab_r: Vec<Option<Box<[u8]>>>,
    steps: Vec<Step>,
    parts: Vec<u32>,
    /// (left, right) -> the indexes of its merge events, ascending.
    merge_at: FxHashMap<(u32, u32), Vec<u32>>,
    /// Symbol -> the indexes of its removal events, ascending.
    remove_at: Vec<Vec<u32>>,
    /// Tokens pushed from outside (special tokens), written as their text.
    raw: rustc_hash::FxHashSet<Box<[u8]>>,
    cache: RwLock<PieceCache>,
}

impl PickyBpe {
    /// `syms`: every symbol's bytes (0-255 must be the bytes); `events` in
    /// order; `vocab`: (symbol, id) of the present tokens.
    pub fn new(syms: Vec<Vec<u8>>, events: Vec<EventSpec>, vocab: Vec<(u32, u32)>) -> Result<Self> {
        if syms.len() < 256 || (0..256).any(|b| syms[b] != [b as u8]) {
            return Err(Error::Format("model: the first 256 symbols must be the bytes".into()));
        }
        let mut by_bytes: FxHashMap<&[u8], u32> = FxHashMap::default();
        for (i, s) in syms.iter().enumerate() {
            if by_bytes.insert(s.as_slice(), i as u32).is_some() {
                return Err(Error::Format(format!(
                    "model.events: token {:?} is made twice",
                    crate::bytelevel::bytes_to_string(s)
                )));
            }
        }
        let n = syms.len() as u32;
        let mut steps = Vec::with_capacity(events.len());
        let mut parts = Vec::new();
        let mut merge_at: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
        let mut remove_at = vec![Vec::new(); syms.len()];
        let mut present: Vec<bool> = (0..syms.len()).map(|i| i < 256).collect();
        for (i, e) in events.into_iter().enumerate() {
            let i = i as u32;
            match e {
                EventSpec::Merge(a, b) => {
                    let ok = a < n && b < n && present[a as usize] && present[b as usize];
                    let joined = ok.then(|| [syms[a as usize].as_slice(), syms[b as usize].as_slice()].concat());
                    let Some(&t) = joined.as_deref().and_then(|j| by_bytes.get(j)) else {
                        return Err(Error::Format(format!(
                            "model.events[{i}]: a merge of tokens that are not in the vocabulary then"
                        )));
                    };
                    present[t as usize] = true;
                    merge_at.entry((a, b)).or_default().push(i);
                    steps.push(Step::Merge {
                        left: a,
                        right: b,
                        new: t,
                    });
                }
                EventSpec::Remove(x, into) => {
                    let spelled: Vec<u8> = into
                        .iter()
                        .filter(|&&p| p < n && present[p as usize])
                        .flat_map(|&p| syms[p as usize].iter().copied())
                        .collect();
                    if x < 256 || x >= n || !present[x as usize] || into.len() < 2 || spelled != syms[x as usize] {
                        return Err(Error::Format(format!(
                            "model.events[{i}]: a removal must split a learned token of the \
                             vocabulary then into tokens of the vocabulary that spell it"
                        )));
                    }
                    present[x as usize] = false;
                    let start = parts.len() as u32;
                    parts.extend_from_slice(&into);
                    remove_at[x as usize].push(i);
                    steps.push(Step::Remove {
                        token: x,
                        parts: (start, parts.len() as u32),
                    });
                }
            }
        }
        let mut sym_id = vec![NONE; syms.len()];
        let mut vocab_map = FxHashMap::default();
        let max_id = vocab.iter().map(|v| v.1 as usize + 1).max().unwrap_or(0);
        let mut vocab_r: Vec<Option<Box<[u8]>>> = crate::error::filled(None, max_id, "the id table")?;
        for (s, id) in vocab {
            if s >= n || vocab_r[id as usize].is_some() || sym_id[s as usize] != NONE {
                return Err(Error::Format(format!(
                    "model.vocab: id {id} or its token is listed twice"
                )));
            }
            sym_id[s as usize] = id;
            vocab_r[id as usize] = Some(syms[s as usize].clone().into_boxed_slice());
            vocab_map.insert(syms[s as usize].clone(), id);
        }
        if let Some(s) = (0..syms.len()).find(|&s| present[s] != (sym_id[s] != NONE)) {
            return Err(Error::Format(format!(
                "model.vocab: {:?} {} the vocabulary, but the events leave it {}",
                crate::bytelevel::bytes_to_string(&syms[s]),
                if present[s] { "is not in" } else { "is in" },
                if present[s] { "there" } else { "removed" }
            )));
        }
        Ok(PickyBpe {
            syms: syms.into_iter().map(Vec::into_boxed_slice).collect(),
            sym_id,
            vocab: vocab_map,
            vocab_r,
            steps,
            parts,
            merge_at,
            remove_at,
            raw: Default::default(),
            cache: RwLock::new(FxHashMap::default()),
        })
    }

    /// How many events remove a token.
    pub fn removals(&self) -> usize {
        self.steps.iter().filter(|s| matches!(s, Step::Remove { .. })).count()
    }

    /// The first merge of `pair` at event `from` or later.
    fn next_merge(&self, pair: (u32, u32), from: u32) -> Option<u32> {
        let at = self.merge_at.get(&pair)?;
        at.get(at.partition_point(|&e| e < from)).copied()
    }

    fn next_removal(&self, sym: u32, from: u32) -> Option<u32> {
        let at = self.remove_at.get(sym as usize)?;
        at.get(at.partition_point(|&e| e < from)).copied()
    }

    /// The symbols of a piece after every event (see the module text).
    pub fn replay(&self, piece: &[u8]) -> Vec<u32> {
        let n = piece.len();
        // tok[s]: the symbol of the node that starts at byte s (valid where
        // alive[s]); the next node starts at s + its length; prev[s] is the
        // node before (NONE for the first)
        let mut tok: Vec<u32> = piece.iter().map(|&b| b as u32).collect();
        let mut alive = vec![true; n];
        let mut prev: Vec<u32> = (0..n as u32).map(|s| s.wrapping_sub(1)).collect();
        if n > 0 {
            prev[0] = NONE;
        }
        let mut heap: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
        for s in 1..n {
            if let Some(e) = self.next_merge((tok[s - 1], tok[s]), 0) {
                heap.push(Reverse((e, s as u32 - 1)));
            }
        }
        let len = |sym: u32| self.syms[sym as usize].len();
        while let Some(Reverse((e, s))) = heap.pop() {
            let s = s as usize;
            if !alive[s] {
                continue;
            }
            match self.steps[e as usize] {
                Step::Merge { left, right, new } => {
                    let s2 = s + len(tok[s]);
                    if tok[s] != left || s2 >= n || tok[s2] != right {
                        continue;
                    }
                    tok[s] = new;
                    alive[s2] = false;
                    let s3 = s2 + len(right);
                    if s3 < n {
                        prev[s3] = s as u32;
                    }
                    self.schedule(&mut heap, &tok, &prev, s, s3, n, e + 1);
                }
                Step::Remove { token, parts } => {
                    if tok[s] != token {
                        continue;
                    }
                    let end = s + len(token);
                    let mut at = s;
                    let mut before = prev[s];
                    for &p in &self.parts[parts.0 as usize..parts.1 as usize] {
                        tok[at] = p;
                        alive[at] = true;
                        prev[at] = before;
                        before = at as u32;
                        at += len(p);
                    }
                    if end < n {
                        prev[end] = before;
                    }
                    self.schedule(&mut heap, &tok, &prev, s, end, n, e + 1);
                }
            }
        }
        let mut out = Vec::new();
        let mut s = 0;
        while s < n {
            out.push(tok[s]);
            s += len(tok[s]);
        }
        out
    }

    /// After an event at `from - 1` changed the nodes from `s` up to `end`
    /// (exclusive): wait for the next merge of each pair that touches them
    /// and the next removal of each of them.
    #[allow(clippy::too_many_arguments)]
    fn schedule(
        &self,
        heap: &mut BinaryHeap<Reverse<(u32, u32)>>,
        tok: &[u32],
        prev: &[u32],
        s: usize,
        end: usize,
        n: usize,
        from: u32,
    ) {
        let len = |sym: u32| self.syms[sym as usize].len();
        let mut left = prev[s];
        let mut at = s;
        loop {
            if left != NONE {
                if let Some(e) = self.next_merge((tok[left as usize], tok[at]), from) {
                    heap.push(Reverse((e, left)));
                }
            }
            if at >= end {
                break;
            }
            if let Some(e) = self.next_removal(tok[at], from) {
                heap.push(Reverse((e, at as u32)));
            }
            left = at as u32;
            at += len(tok[at]);
            if at >= n {
                break;
            }
        }
    }

    fn encode_uncached(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        for sym in self.replay(piece) {
            out.push((self.sym_id[sym as usize], self.syms[sym as usize].len() as u32));
        }
    }

    /// The `"model"` section's events: `["left", "right"]` for a merge,
    /// `{"remove": "token", "into": [...]}` for a removal.
    fn events_json(&self) -> Vec<Value> {
        let s = |sym: u32| crate::bytelevel::bytes_to_string(&self.syms[sym as usize]);
        self.steps
            .iter()
            .map(|step| match *step {
                Step::Merge { left, right, .. } => json!([s(left), s(right)]),
                Step::Remove { token, parts } => json!({
                    "remove": s(token),
                    "into": self.parts[parts.0 as usize..parts.1 as usize].iter().map(|&p| s(p)).collect::<Vec<_>>(),
                }),
            })
            .collect()
    }

    /// Read the `"model"` section that [`Model::to_json`] writes.
    pub fn from_json(model: &Value) -> Result<Self> {
        let obj = model
            .as_object()
            .ok_or_else(|| Error::Format("model: expected an object".into()))?;
        let vocab = super::vocab_from_json(obj)?;
        let events = obj
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Format("model.events: expected a list of merges and removals".into()))?;
        let mut syms: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut by_bytes: FxHashMap<Vec<u8>, u32> =
            syms.iter().enumerate().map(|(i, s)| (s.clone(), i as u32)).collect();
        let bytes_of = |i: usize, t: &Value| -> Result<Vec<u8>> {
            t.as_str()
                .and_then(crate::bytelevel::string_to_bytes)
                .ok_or_else(|| Error::Format(format!("model.events[{i}]: {t} is not a byte-level token")))
        };
        let mut specs = Vec::with_capacity(events.len());
        for (i, e) in events.iter().enumerate() {
            let known = |b: &[u8], by: &FxHashMap<Vec<u8>, u32>| {
                by.get(b).copied().ok_or_else(|| {
                    Error::Format(format!(
                        "model.events[{i}]: {:?} is not made before",
                        crate::bytelevel::bytes_to_string(b)
                    ))
                })
            };
            if let Some(pair) = e.as_array().filter(|p| p.len() == 2) {
                let (a, b) = (bytes_of(i, &pair[0])?, bytes_of(i, &pair[1])?);
                let (ia, ib) = (known(&a, &by_bytes)?, known(&b, &by_bytes)?);
                let joined = [a, b].concat();
                if !by_bytes.contains_key(&joined) {
                    by_bytes.insert(joined.clone(), syms.len() as u32);
                    syms.push(joined);
                }
                specs.push(EventSpec::Merge(ia, ib));
            } else if let (Some(x), Some(into)) = (e.get("remove"), e.get("into").and_then(Value::as_array)) {
                let x = known(&bytes_of(i, x)?, &by_bytes)?;
                let into = into
                    .iter()
                    .map(|p| known(&bytes_of(i, p)?, &by_bytes))
                    .collect::<Result<Vec<u32>>>()?;
                specs.push(EventSpec::Remove(x, into));
            } else {
                return Err(Error::Format(format!(
                    "model.events[{i}]: expected [\"left\", \"right\"] or {{\"remove\": ..., \"into\": [...]}}"
                )));
            }
        }
        // the vocabulary: learned tokens by their symbol; anything else
        // (special tokens, written as their text) is pushed afterwards
        let mut ids = Vec::new();
        let mut extra = Vec::new();
        for (tok, id) in vocab {
            let sym = crate::bytelevel::string_to_bytes(&tok).and_then(|b| by_bytes.get(&b).copied());
            match sym {
                Some(s) if !ids.iter().any(|&(t, _)| t == s) => ids.push((s, id)),
                _ => extra.push((tok, id)),
            }
        }
        let mut m = PickyBpe::new(syms, specs, ids)?;
        for (tok, id) in extra {
            super::check_id("model.vocab", &tok, id as u64, m.syms.len())?;
            m.push_token(tok.as_bytes(), id);
        }
        Ok(m)
    }
}

impl Model for PickyBpe {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>) {
        if piece.is_empty() {
            return;
        }
        let cacheable = piece.len() <= CACHE_MAX_PIECE;
        if cacheable {
            if let Ok(cache) = self.cache.read() {
                if let Some(hit) = cache.get(piece) {
                    out.extend_from_slice(hit);
                    return;
                }
            }
        }
        let start = out.len();
        self.encode_uncached(piece, out);
        if cacheable {
            if let Ok(mut cache) = self.cache.write() {
                if cache.len() >= CACHE_CAPACITY {
                    cache.clear();
                }
                cache.insert(piece.into(), out[start..].into());
            }
        }
    }

    fn id_to_bytes(&self, id: u32) -> Option<&[u8]> {
        self.vocab_r.get(id as usize).and_then(|t| t.as_deref())
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    fn vocab_len(&self) -> usize {
        self.vocab_r.len()
    }

    fn vocab_entries(&self) -> Vec<(u32, &[u8])> {
        super::table_entries(&self.vocab_r)
    }

    fn token_string(&self, bytes: &[u8]) -> String {
        if self.raw.contains(bytes) {
            String::from_utf8_lossy(bytes).into_owned()
        } else {
            crate::bytelevel::bytes_to_string(bytes)
        }
    }

    fn byte_level(&self) -> bool {
        true
    }

    fn to_json(&self) -> Value {
        let mut vocab = Map::with_capacity(self.vocab.len());
        for (id, tok) in self.vocab_entries() {
            vocab.insert(self.token_string(tok), json!(id));
        }
        json!({"type": "PickyBPE", "vocab": vocab, "events": self.events_json()})
    }

    fn push_token(&mut self, token: &[u8], id: u32) {
        if self.vocab_r.len() <= id as usize {
            self.vocab_r.resize(id as usize + 1, None);
        }
        self.vocab_r[id as usize] = Some(token.into());
        self.vocab.insert(token.to_vec(), id);
        self.raw.insert(token.into());
        if let Ok(mut cache) = self.cache.write() {
            cache.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Symbols 256 "ab", 257 "abc"; events: (a, b), (ab, c), remove ab.
    fn model() -> PickyBpe {
        let mut syms: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        syms.push(b"ab".to_vec());
        syms.push(b"abc".to_vec());
        let events = vec![
            EventSpec::Merge(97, 98),
            EventSpec::Merge(256, 99),
            EventSpec::Remove(256, vec![97, 98]),
        ];
        let vocab = (0..256).map(|b| (b, b)).chain([(257, 256)]).collect();
        PickyBpe::new(syms, events, vocab).unwrap()
    }

    #[test]
    fn removal_splits_what_is_left() {
        let m = model();
        assert_eq!(m.replay(b"abcab"), vec![257, 97, 98]);
        assert_eq!(m.replay(b"ababc"), vec![97, 98, 257]);
        assert_eq!(m.replay(b""), Vec::<u32>::new());
        let mut out = Vec::new();
        m.encode_piece(b"xabc", &mut out);
        assert_eq!(out, vec![(120, 1), (256, 3)]);
    }

    #[test]
    fn json_round_trip() {
        let m = model();
        let again = PickyBpe::from_json(&m.to_json()).unwrap();
        assert_eq!(again.steps, m.steps);
        assert_eq!(again.replay(b"abcab"), vec![257, 97, 98]);
    }

    #[test]
    fn inconsistent_events_are_refused() {
        let mut syms: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        syms.push(b"ab".to_vec());
        let vocab: Vec<(u32, u32)> = (0..257).map(|b| (b, b)).collect();
        // "ab" is split into "a", "c"
        let bad = vec![EventSpec::Merge(97, 98), EventSpec::Remove(256, vec![97, 99])];
        assert!(PickyBpe::new(syms.clone(), bad, vocab.clone()).is_err());
        // "ab" removed but listed in the vocabulary
        let gone = vec![EventSpec::Merge(97, 98), EventSpec::Remove(256, vec![97, 98])];
        assert!(PickyBpe::new(syms, gone, vocab).is_err());
    }
}
