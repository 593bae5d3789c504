//! tiktoken's rank files: one `base64(token) rank` per line.

use super::Bpe;
use crate::error::{Error, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// Parse a `.tiktoken` file into `(token bytes, rank)` pairs, checking that
/// ranks are unique and contiguous from 0 and tokens are unique.
pub fn parse(data: &[u8]) -> Result<Vec<(Vec<u8>, u32)>> {
    let mut out: Vec<(Vec<u8>, u32)> = Vec::with_capacity(data.len() / 12);
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let lineno = n + 1;
        let text = std::str::from_utf8(line).map_err(|_| Error::Format(format!("line {lineno}: not ASCII text")))?;
        let mut parts = text.split(' ');
        let (Some(tok), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::Format(format!(
                "line {lineno}: expected `<base64 token> <rank>`, found {text:?}"
            )));
        };
        let bytes = STANDARD
            .decode(tok)
            .map_err(|e| Error::Format(format!("line {lineno}: {tok:?} is not valid base64 ({e})")))?;
        let rank: u32 = rank
            .parse()
            .map_err(|_| Error::Format(format!("line {lineno}: rank {rank:?} is not a non-negative integer")))?;
        out.push((bytes, rank));
    }
    if out.is_empty() {
        return Err(Error::Format("the file has no tokens".into()));
    }
    let mut seen = vec![usize::MAX; out.len()];
    for (i, (_, rank)) in out.iter().enumerate() {
        let r = *rank as usize;
        if r >= out.len() {
            // ranks must be 0..n-1 with no gap
            let mut ranks: Vec<u32> = out.iter().map(|x| x.1).collect();
            ranks.sort_unstable();
            let gap = ranks
                .iter()
                .enumerate()
                .find(|(k, &v)| *k as u32 != v)
                .map_or(0, |(k, _)| k);
            return Err(Error::Format(format!(
                "rank {gap} is missing: ranks must run from 0 to {} without gaps",
                out.len() - 1
            )));
        }
        if seen[r] != usize::MAX {
            return Err(Error::Format(format!(
                "rank {r} appears twice (entries {} and {})",
                seen[r] + 1,
                i + 1
            )));
        }
        seen[r] = i;
    }
    Ok(out)
}

/// Render ranks as a `.tiktoken` file.
pub fn render(bpe: &Bpe) -> String {
    let mut s = String::with_capacity(bpe.vocab.len() * 12);
    for (id, tok) in bpe.vocab_iter() {
        s.push_str(&STANDARD.encode(tok));
        s.push(' ');
        s.push_str(&id.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_errors() {
        let ok = parse(b"YQ== 0\nYg== 1\nYWI= 2\n").unwrap();
        assert_eq!(ok[2], (b"ab".to_vec(), 2));
        assert!(parse(b"YQ== 0\nYg== 2\n")
            .unwrap_err()
            .to_string()
            .contains("rank 1 is missing"));
        assert!(parse(b"YQ== 0\nYg== 0\n").unwrap_err().to_string().contains("twice"));
        assert!(parse(b"YQ== 0\n!!! 1\n").unwrap_err().to_string().contains("line 2"));
        assert!(parse(b"YQ==0\n").unwrap_err().to_string().contains("line 1"));
        assert!(parse(b"").is_err());
    }
}
