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
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// no token has this id
    Unknown = 0,
    /// a model token: its bytes are in the arena
    Model = 1,
    /// an added token: the caller decodes it
    Added = 2,
}

pub struct DecodeTable {
    /// every model token's bytes, in id order
    bytes: Vec<u8>,
    /// token `id` is `bytes[starts[id]..starts[id + 1]]` (`ids + 1` entries)
    starts: Vec<u32>,
    kinds: Vec<Kind>,
    /// model vocabulary length and added-token count the table was built
    /// from: a tokenizer changed since then does not use it (`fits`)
    shape: (usize, usize),
}

impl DecodeTable {
    /// The table of `model_bytes(id)` for `id < ids`, ids in `added` marked
    /// as added. `None` when the arena would pass 4 GiB (offsets are `u32`).
    pub fn build<'a>(
        ids: usize,
        model_bytes: impl Fn(u32) -> Option<&'a [u8]>,
        is_added: impl Fn(u32) -> bool,
        shape: (usize, usize),
    ) -> Option<Self> {
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(ids + 1);
        let mut kinds = Vec::with_capacity(ids);
        for id in 0..ids as u32 {
            starts.push(u32::try_from(bytes.len()).ok()?);
            let kind = if is_added(id) {
                Kind::Added
            } else if let Some(b) = model_bytes(id) {
                bytes.extend_from_slice(b);
                Kind::Model
            } else {
                Kind::Unknown
            };
            kinds.push(kind);
        }
        starts.push(u32::try_from(bytes.len()).ok()?);
        bytes.shrink_to_fit();
        Some(DecodeTable {
            bytes,
            starts,
            kinds,
            shape,
        })
    }

    /// Whether the table was built for a tokenizer of this shape.
    pub fn fits(&self, shape: (usize, usize)) -> bool {
        self.shape == shape
    }

    /// What `id` is (`Unknown` beyond the table).
    #[inline]
    pub fn kind(&self, id: u32) -> Kind {
        self.kinds.get(id as usize).copied().unwrap_or(Kind::Unknown)
    }

    /// The bytes of model token `id` (empty for an id that is not one).
    #[inline]
    pub fn model_bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.bytes[a as usize..b as usize],
            _ => &[],
        }
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
            match self.kind(id) {
                Kind::Model => out.extend_from_slice(self.model_bytes(id)),
                Kind::Added => added(id, out),
                Kind::Unknown => return Err(Error::UnknownId(id)),
            }
        }
        Ok(())
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
    }
}
