//! The word-counts file (`.counts`): what a corpus was counted into, kept so
//! that counting and training can run apart (and counting on many machines).
//!
//! Layout, version 1 (integers little-endian; `docs/counts.md` is the user's
//! description):
//!
//! ```text
//! b"TSCOUNTS"  u32 version  u32 header length  header (UTF-8 JSON: the
//! pipeline the text went through and totals, written by the Python side)
//! u64 entries, then per entry in byte order of the piece:
//! varint piece length, piece bytes, varint count
//! ```
//!
//! Every length is checked against what is left of the file, so a damaged
//! or hostile file is an error, never a huge allocation.

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use std::io::{BufReader, BufWriter, Read, Write};

pub const MAGIC: &[u8; 8] = b"TSCOUNTS";
pub const VERSION: u32 = 1;

fn put_varint(out: &mut impl Write, mut v: u64) -> std::io::Result<()> {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            buf[n] = byte;
            n += 1;
            break;
        }
        buf[n] = byte | 0x80;
        n += 1;
    }
    out.write_all(&buf[..n])
}

/// Write `counts` with `header` to `path` (a temporary file renamed into
/// place, so a reader never sees half a file).
pub fn write(path: &str, header: &str, counts: &FxHashMap<Vec<u8>, u64>) -> Result<()> {
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let result = write_to(&tmp, header, counts).and_then(|_| std::fs::rename(&tmp, path).map_err(io(path)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn io(path: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io(format!("{path}: {e}"))
}

fn write_to(path: &str, header: &str, counts: &FxHashMap<Vec<u8>, u64>) -> Result<()> {
    let file = std::fs::File::create(path).map_err(io(path))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut entries: Vec<(&Vec<u8>, &u64)> = counts.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let header_len = u32::try_from(header.len()).map_err(|_| Error::Config("the counts header is too long".into()))?;
    let mut put = || -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&header_len.to_le_bytes())?;
        out.write_all(header.as_bytes())?;
        out.write_all(&(entries.len() as u64).to_le_bytes())?;
        for (piece, count) in &entries {
            put_varint(&mut out, piece.len() as u64)?;
            out.write_all(piece)?;
            put_varint(&mut out, **count)?;
        }
        out.flush()?;
        out.get_ref().sync_all()
    };
    put().map_err(io(path))
}

/// A reader that knows how many bytes the file has left.
struct Input {
    inner: BufReader<std::fs::File>,
    left: u64,
    path: String,
}

impl Input {
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>> {
        if n > self.left {
            return Err(self.damaged(&format!("{what} runs past the end of the file")));
        }
        let mut buf = vec![0u8; n as usize];
        self.inner.read_exact(&mut buf).map_err(io(&self.path))?;
        self.left -= n;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&b);
        Ok(u64::from_le_bytes(a))
    }

    fn varint(&mut self, what: &str) -> Result<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.bytes(1, what)?[0];
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.damaged(&format!("{what} is not a valid varint")))
    }

    fn damaged(&self, why: &str) -> Error {
        Error::Format(format!("{}: not a whole tokensmith counts file: {why}", self.path))
    }
}

fn open(path: &str) -> Result<(Input, String)> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let left = file.metadata().map_err(io(path))?.len();
    let mut input = Input {
        inner: BufReader::with_capacity(1 << 20, file),
        left,
        path: path.to_string(),
    };
    if input.bytes(8, "the signature")? != MAGIC {
        return Err(Error::Format(format!(
            "{path}: not a tokensmith counts file (no TSCOUNTS signature)"
        )));
    }
    let version = input.u32("the version")?;
    if version != VERSION {
        return Err(Error::Format(format!(
            "{path}: counts file version {version}; this tokensmith reads version {VERSION}"
        )));
    }
    let len = input.u32("the header length")?;
    let header = String::from_utf8(input.bytes(u64::from(len), "the header")?)
        .map_err(|_| input.damaged("the header is not UTF-8"))?;
    Ok((input, header))
}

/// The JSON header of a counts file, without reading its entries.
pub fn read_header(path: &str) -> Result<String> {
    open(path).map(|(_, header)| header)
}

/// Add the entries of the file at `path` to `counts`; returns its header.
pub fn read_into(path: &str, counts: &mut FxHashMap<Vec<u8>, u64>) -> Result<String> {
    let (mut input, header) = open(path)?;
    let n = input.u64("the number of entries")?;
    // (each entry takes at least two bytes: bounds what may be reserved)
    if n > input.left / 2 {
        return Err(input.damaged(&format!("it says {n} entries, more than its size holds")));
    }
    counts.reserve(n as usize);
    let mut previous: Option<Vec<u8>> = None;
    for i in 0..n {
        let len = input.varint("a piece length")?;
        let piece = input.bytes(len, "a piece")?;
        let count = input.varint("a count")?;
        if previous.as_ref().is_some_and(|p| *p >= piece) {
            return Err(input.damaged(&format!("entry {i} is out of order or repeated")));
        }
        let slot = counts.entry(piece.clone()).or_insert(0);
        *slot = slot
            .checked_add(count)
            .ok_or_else(|| Error::Config(format!("{path}: a count passes 2^64 - 1 when added")))?;
        previous = Some(piece);
    }
    if input.left != 0 {
        return Err(input.damaged(&format!("{} bytes follow the last entry", input.left)));
    }
    Ok(header)
}

/// A counts file read one entry at a time, in its (increasing) byte order.
struct Run {
    input: Input,
    left: u64,
    previous: Option<Vec<u8>>,
}

impl Run {
    fn open(path: &str) -> Result<Run> {
        let (mut input, _) = open(path)?;
        let left = input.u64("the number of entries")?;
        Ok(Run {
            input,
            left,
            previous: None,
        })
    }

    fn next(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        if self.left == 0 {
            if self.input.left != 0 {
                return Err(self
                    .input
                    .damaged(&format!("{} bytes follow the last entry", self.input.left)));
            }
            return Ok(None);
        }
        self.left -= 1;
        let len = self.input.varint("a piece length")?;
        let piece = self.input.bytes(len, "a piece")?;
        let count = self.input.varint("a count")?;
        if self.previous.as_ref().is_some_and(|p| *p >= piece) {
            return Err(self.input.damaged("an entry is out of order or repeated"));
        }
        self.previous = Some(piece.clone());
        Ok(Some((piece, count)))
    }
}

/// Add up counts files (each sorted by piece) entry by entry, in one pass over
/// all of them, and add to `into` the pieces whose total reaches `min_count`:
/// memory for what is kept and one entry per file, however large the files.
pub fn merge_runs(paths: &[String], min_count: u64, into: &mut FxHashMap<Vec<u8>, u64>) -> Result<()> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut runs = paths.iter().map(|p| Run::open(p)).collect::<Result<Vec<_>>>()?;
    let mut heap = BinaryHeap::new();
    for (k, run) in runs.iter_mut().enumerate() {
        if let Some((piece, count)) = run.next()? {
            heap.push(Reverse((piece, k, count)));
        }
    }
    let mut keep = |piece: Vec<u8>, total: u64| -> Result<()> {
        if total >= min_count {
            let slot = into.entry(piece).or_insert(0);
            *slot = slot
                .checked_add(total)
                .ok_or_else(|| Error::Config("a count passes 2^64 - 1 when added".into()))?;
        }
        Ok(())
    };
    let mut current: Option<(Vec<u8>, u64)> = None;
    while let Some(Reverse((piece, k, count))) = heap.pop() {
        current = match current {
            Some((p, total)) if p == piece => Some((
                p,
                total
                    .checked_add(count)
                    .ok_or_else(|| Error::Config("a count passes 2^64 - 1 when added".into()))?,
            )),
            Some((p, total)) => {
                keep(p, total)?;
                Some((piece, count))
            }
            None => Some((piece, count)),
        };
        if let Some((piece, count)) = runs[k].next()? {
            heap.push(Reverse((piece, k, count)));
        }
    }
    if let Some((p, total)) = current {
        keep(p, total)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_add_up_and_rare_pieces_drop() {
        let mut a: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
        let mut b: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
        for (w, n) in [("a", 1u64), ("b", 5), ("c", 1)] {
            a.insert(w.as_bytes().to_vec(), n);
        }
        for (w, n) in [("b", 2u64), ("c", 1), ("d", 1)] {
            b.insert(w.as_bytes().to_vec(), n);
        }
        let (pa, pb) = (tmp("ra"), tmp("rb"));
        write(&pa, "{}", &a).unwrap();
        write(&pb, "{}", &b).unwrap();
        let mut all = FxHashMap::default();
        merge_runs(&[pa.clone(), pb.clone()], 1, &mut all).unwrap();
        let want: FxHashMap<Vec<u8>, u64> = [("a", 1u64), ("b", 7), ("c", 2), ("d", 1)]
            .iter()
            .map(|(w, n)| (w.as_bytes().to_vec(), *n))
            .collect();
        assert_eq!(all, want);
        let mut common = FxHashMap::default();
        merge_runs(&[pb.clone(), pa.clone()], 2, &mut common).unwrap();
        assert_eq!(common.len(), 2); // b 7, c 2 (counted across both runs)
        std::fs::remove_file(&pa).unwrap();
        std::fs::remove_file(&pb).unwrap();
    }

    fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("ts-counts-{}-{name}", std::process::id()));
        dir.to_string_lossy().into_owned()
    }

    #[test]
    fn round_trip_and_damage() {
        let mut counts: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
        counts.insert(b" the".to_vec(), 1 << 40);
        counts.insert(b"\xff\x00".to_vec(), 1);
        counts.insert(Vec::new(), 3);
        let path = tmp("rt");
        write(&path, "{\"a\": 1}", &counts).unwrap();
        let mut back = FxHashMap::default();
        assert_eq!(read_into(&path, &mut back).unwrap(), "{\"a\": 1}");
        assert_eq!(back, counts);
        // read twice: the counts add up
        read_into(&path, &mut back).unwrap();
        assert_eq!(back[&b" the".to_vec()], 2 << 40);
        let data = std::fs::read(&path).unwrap();
        for cut in [4, 12, 20, data.len() - 1] {
            std::fs::write(&path, &data[..cut]).unwrap();
            let e = read_into(&path, &mut FxHashMap::default()).unwrap_err();
            assert!(matches!(e, Error::Format(_)), "{cut}: {e}");
        }
        let mut longer = data.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(read_into(&path, &mut FxHashMap::default()).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
