//! The merge of one chunk, on symbols: repeatedly join the neighbours whose
//! piece has the highest score, the leftmost among equal scores (as
//! `sentencepiece`'s agenda pops them), until no neighbours make a piece.
//!
//! Chunks are short (a word, a run of punctuation), so the pairs live in
//! arrays and each step scans them for the best: no heap, no allocation.
//! A chunk of more than `MAX_SYMS` characters is left to the caller.

use super::tables::{symbol_of, Tables, SPACE_CODE};

pub(super) const MAX_SYMS: usize = 64;
const NO_PAIR: u32 = u32::MAX;

/// The symbols a chunk merged into, with their byte spans in the chunk:
/// symbol `k` is `chunk[starts[k]..starts[k + 1]]`.
pub(super) struct Merged {
    pub syms: [u32; MAX_SYMS],
    pub starts: [u16; MAX_SYMS + 1],
    pub n: usize,
}

/// The code of the character at `b[i]` (`▁` as the space) and its length.
/// `b[i..]` starts with a whole UTF-8 character.
#[inline(always)]
pub(super) fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let c = b[i] as u32;
    if c < 0x80 {
        return (c, 1);
    }
    let cont = |k: usize| (b[i + k] & 0x3F) as u32;
    if c < 0xE0 {
        ((c & 0x1F) << 6 | cont(1), 2)
    } else if c < 0xF0 {
        let code = (c & 0x0F) << 12 | cont(1) << 6 | cont(2);
        (if code == 0x2581 { SPACE_CODE } else { code }, 3)
    } else {
        ((c & 0x07) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3), 4)
    }
}

/// Merge `chunk` (whole characters, a space standing for `▁`); None if it
/// has more than `MAX_SYMS` characters.
pub(super) fn merge(t: &Tables, chunk: &[u8]) -> Option<Merged> {
    let mut m = Merged {
        syms: [0; MAX_SYMS],
        starts: [0; MAX_SYMS + 1],
        n: 0,
    };
    let mut i = 0;
    while i < chunk.len() {
        if m.n == MAX_SYMS {
            return None;
        }
        let (code, len) = decode(chunk, i);
        m.syms[m.n] = symbol_of(t.info(code));
        m.starts[m.n] = i as u16;
        m.n += 1;
        i += len;
    }
    m.starts[m.n] = chunk.len() as u16;
    // ranks[k], ids[k]: the piece symbols k and k + 1 make
    let mut ranks = [NO_PAIR; MAX_SYMS];
    let mut ids = [0u32; MAX_SYMS];
    let pair =
        |syms: &[u32; MAX_SYMS], k: usize| t.merge(syms[k], syms[k + 1]).map_or((NO_PAIR, 0), |p| (p.rank, p.id));
    for k in 0..m.n.saturating_sub(1) {
        (ranks[k], ids[k]) = pair(&m.syms, k);
    }
    while m.n > 1 {
        let pairs = m.n - 1;
        let mut best = 0;
        for k in 1..pairs {
            if ranks[k] < ranks[best] {
                best = k;
            }
        }
        if ranks[best] == NO_PAIR {
            break;
        }
        m.syms[best] = ids[best];
        // symbol best + 1 and the pair it started go
        m.syms.copy_within(best + 2..m.n, best + 1);
        m.starts.copy_within(best + 2..=m.n, best + 1);
        ranks.copy_within(best + 1..pairs, best);
        ids.copy_within(best + 1..pairs, best);
        m.n -= 1;
        if best + 1 < m.n {
            (ranks[best], ids[best]) = pair(&m.syms, best);
        }
        if best > 0 {
            (ranks[best - 1], ids[best - 1]) = pair(&m.syms, best - 1);
        }
    }
    Some(m)
}
