//! Models: turn one pre-tokenized piece into token ids.

pub mod bpe;

pub use bpe::Bpe;

/// One pipeline stage: encode a piece into `(id, byte length)` pairs that
/// cover it in order.
pub trait Model: Send + Sync {
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<(u32, u32)>);
    fn id_to_bytes(&self, id: u32) -> Option<&[u8]>;
    fn token_to_id(&self, token: &[u8]) -> Option<u32>;
    /// One more than the largest id.
    fn vocab_len(&self) -> usize;
}
