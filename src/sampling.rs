//! N-best and sampled encodings through a whole tokenizer: the text is
//! normalized and pre-tokenized as `encode` does (added tokens are not split
//! out), then the Unigram model's lattice runs over the pieces.

use crate::error::{Error, Result};
use crate::models::unigram::{Rng, Unigram};
use crate::models::ModelKind;
use crate::normalizers::{Normalize, NormalizedString};
use crate::pre_tokenizers::{PreTokenize, PreTokenizedString};
use crate::tokenizer::Tokenizer;

fn unigram(tok: &Tokenizer) -> Result<&Unigram> {
    match &tok.model {
        ModelKind::Unigram(m) => Ok(m),
        other => Err(Error::Unsupported(format!(
            "n-best and sampled encodings need a Unigram model; this tokenizer's model is {}",
            other.type_name()
        ))),
    }
}

fn pieces(tok: &Tokenizer, text: &str) -> Result<PreTokenizedString> {
    let mut ns = NormalizedString::new(text, 0);
    if let Some(n) = &tok.normalizer {
        n.normalize(&mut ns)?;
    }
    let mut pt = PreTokenizedString::new(ns);
    if let Some(p) = &tok.pre_tokenizer {
        p.pre_tokenize(&mut pt)?;
    }
    Ok(pt)
}

/// The `n` best encodings of `text` with their scores, best first.
pub fn encode_nbest(tok: &Tokenizer, text: &str, n: usize) -> Result<Vec<(Vec<u32>, f64)>> {
    let m = unigram(tok)?;
    let pt = pieces(tok, text)?;
    let parts: Vec<&str> = pt.pieces.iter().map(|&(s, e)| &pt.ns.text[s..e]).collect();
    Ok(m.nbest_parts(&parts, n)
        .into_iter()
        .map(|(t, s)| (t.into_iter().map(|(id, _)| id).collect(), s))
        .collect())
}

/// One sampled encoding of `text`: Unigram sampling (see [`Unigram::sample`]),
/// or BPE-dropout for a SentencePiece BPE model (`alpha` = the probability
/// of skipping each merge; `nbest_size` does not apply).
pub fn sample_encode(tok: &Tokenizer, text: &str, nbest_size: i32, alpha: f64, seed: u64) -> Result<Vec<u32>> {
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(Error::Config(format!(
            "alpha must be a finite number >= 0, not {alpha}"
        )));
    }
    if let ModelKind::SentencePieceBpe(m) = &tok.model {
        if alpha > 1.0 {
            return Err(Error::Config(format!(
                "alpha is the probability of dropping a merge in BPE-dropout (0 to 1), not {alpha}"
            )));
        }
        let pt = pieces(tok, text)?;
        let mut rng = Rng::new(seed);
        let mut out = Vec::new();
        for &(s, e) in &pt.pieces {
            m.sample_text(&pt.ns.text[s..e], alpha, &mut rng, &mut out);
        }
        return Ok(out.into_iter().map(|(id, _)| id).collect());
    }
    let m = unigram(tok)?;
    let pt = pieces(tok, text)?;
    let parts: Vec<&str> = pt.pieces.iter().map(|&(s, e)| &pt.ns.text[s..e]).collect();
    let mut rng = Rng::new(seed);
    Ok(m.sample_parts(&parts, nbest_size, alpha, &mut rng)
        .into_iter()
        .map(|(id, _)| id)
        .collect())
}
