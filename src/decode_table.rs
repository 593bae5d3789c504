//! Decoding by copying: every token's bytes end to end in one arena, so a
//! sequence of ids decodes in one pass of bounded copies, with no lookup in a
//! map and no allocation per token.
//!
//! The table is built on a tokenizer's first decode (loading pays nothing for
//! it) and covers the model's tokens; added tokens are marked and decoded
//! through the added vocabulary, as the general path does, because what they
//! decode to depends on the call (`decode` maps a byte-level added token's
//! content back to bytes, `decode_bytes` keeps it as written).

use crate::error::{Error, Result};

/// What an id is, for the copy loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    /// no token has this id
    Unknown = 0,
    /// a model token: its bytes are in the arena
    Model = 1,
    /// an added token: the caller decodes it
    Added = 2,
}

/// Tokens this long or shorter are copied as one 16-byte block (the arena
/// and the output keep that much room past their ends).
const BLOCK: usize = 16;

pub struct DecodeTable {
    /// every model token's bytes, in id order, then `BLOCK` zero bytes
    bytes: Vec<u8>,
    /// per id: start in `bytes` << 32 | length << 8 | kind — one load per id
    spans: Vec<u64>,
    /// model vocabulary length and added-token count the table was built
    /// from: a tokenizer changed since then does not use it (`fits`)
    shape: (usize, usize),
}

impl DecodeTable {
    /// The table of `model_bytes(id)` for `id < ids`, ids in `added` marked
    /// as added. `None` when the arena would pass 4 GiB or a token 16 MiB
    /// (the widths of a span's fields).
    pub fn build<'a>(
        ids: usize,
        model_bytes: impl Fn(u32) -> Option<&'a [u8]>,
        is_added: impl Fn(u32) -> bool,
        shape: (usize, usize),
    ) -> Option<Self> {
        let mut bytes = Vec::new();
        let mut spans = Vec::with_capacity(ids);
        for id in 0..ids as u32 {
            let start = u32::try_from(bytes.len()).ok()? as u64;
            let span = if is_added(id) {
                Kind::Added as u64
            } else if let Some(b) = model_bytes(id) {
                if b.len() >= 1 << 24 {
                    return None;
                }
                bytes.extend_from_slice(b);
                start << 32 | (b.len() as u64) << 8 | Kind::Model as u64
            } else {
                Kind::Unknown as u64
            };
            spans.push(span);
        }
        u32::try_from(bytes.len()).ok()?;
        bytes.extend_from_slice(&[0; BLOCK]);
        bytes.shrink_to_fit();
        Some(DecodeTable { bytes, spans, shape })
    }

    /// Whether the table was built for a tokenizer of this shape.
    pub fn fits(&self, shape: (usize, usize)) -> bool {
        self.shape == shape
    }

    /// What `id` is (`Unknown` beyond the table).
    #[inline]
    pub fn kind(&self, id: u32) -> Kind {
        match self.spans.get(id as usize).map(|&s| s as u8) {
            Some(1) => Kind::Model,
            Some(2) => Kind::Added,
            _ => Kind::Unknown,
        }
    }

    /// The bytes of model token `id` (empty for an id that is not one).
    #[inline]
    pub fn model_bytes(&self, id: u32) -> &[u8] {
        let span = self.spans.get(id as usize).copied().unwrap_or(0);
        let (start, len) = ((span >> 32) as usize, (span >> 8) as usize & 0xFF_FFFF);
        &self.bytes[start..start + len]
    }

    /// Append the bytes of `ids` to `out`; `added(id, out)` decodes an added
    /// token (and may skip it). An unknown id is an error, `out` then holds
    /// what came before it.
    pub fn decode_into(
        &self,
        ids: impl IntoIterator<Item = u32>,
        out: &mut Vec<u8>,
        mut added: impl FnMut(u32, &mut Vec<u8>),
    ) -> Result<()> {
        for id in ids {
            let span = self.spans.get(id as usize).copied().unwrap_or(0);
            match span as u8 {
                1 => self.copy((span >> 32) as usize, (span >> 8) as usize & 0xFF_FFFF, out),
                2 => added(id, out),
                _ => return Err(Error::UnknownId(id)),
            }
        }
        Ok(())
    }

    /// Append `bytes[start..start + len]` (a model token's) to `out`.
    #[inline(always)]
    fn copy(&self, start: usize, len: usize, out: &mut Vec<u8>) {
        if len > BLOCK {
            out.extend_from_slice(&self.bytes[start..start + len]);
            return;
        }
        out.reserve(BLOCK);
        // SAFETY: `start + BLOCK <= self.bytes.len()`: every token lies in the
        // arena, which ends with `BLOCK` padding bytes; `out` has room for
        // `BLOCK` more bytes (reserved above); the two buffers are distinct.
        // Only the first `len` copied bytes become part of `out` (`set_len`),
        // and they are initialised by the copy.
        unsafe {
            std::ptr::copy_nonoverlapping(self.bytes.as_ptr().add(start), out.as_mut_ptr().add(out.len()), BLOCK);
            out.set_len(out.len() + len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_decode_to_their_bytes_and_unknown_ids_fail() {
        let vocab: Vec<Option<&[u8]>> = vec![Some(b"ab"), None, Some(b""), Some(b"\xffc")];
        let t = DecodeTable::build(4, |i| vocab[i as usize], |i| i == 1, (4, 1)).unwrap();
        assert!(t.fits((4, 1)) && !t.fits((5, 1)));
        let mut out = Vec::new();
        t.decode_into([0, 1, 3, 2, 0], &mut out, |id, o| o.extend(format!("<{id}>").bytes()))
            .unwrap();
        assert_eq!(out, b"ab<1>\xffcab");
        let mut out = Vec::new();
        assert!(matches!(
            t.decode_into([0, 4], &mut out, |_, _| {}),
            Err(Error::UnknownId(4))
        ));
        assert_eq!(out, b"ab");
        assert!(t.kind(u32::MAX) == Kind::Unknown && t.model_bytes(u32::MAX).is_empty());
        assert_eq!(
            (t.kind(0), t.kind(1), t.kind(2)),
            (Kind::Model, Kind::Added, Kind::Model)
        );
    }

    #[test]
    fn tokens_of_every_length_around_the_block_copy_exactly() {
        let vocab: Vec<Vec<u8>> = (0..40u8)
            .map(|n| (0..n).map(|i| b'a' + (i + n) % 26).collect())
            .collect();
        let t = DecodeTable::build(40, |i| Some(&vocab[i as usize][..]), |_| false, (40, 0)).unwrap();
        let ids: Vec<u32> = (0..40).rev().chain(0..40).collect();
        let mut out = Vec::new();
        t.decode_into(ids.iter().copied(), &mut out, |_, _| {}).unwrap();
        let want: Vec<u8> = ids.iter().flat_map(|&i| vocab[i as usize].clone()).collect();
        assert_eq!(out, want);
    }
}
