//! Streaming word counting: text -> normalizer -> pre-tokenizer -> piece counts.
//! Memory is bounded by the number of distinct pieces, not the corpus size.

use crate::cut::{char_boundary, cut_point, cut_rule, space_cut_point, word_cut_point, CutRule};
use crate::error::{Error, Result};
use crate::normalizers::{Normalize, NormalizedString, Normalizer};
use crate::pre_tokenizers::{PreTokenize, PreTokenizedString, PreTokenizer};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::io::Read;

/// What to do with bytes that are not UTF-8 in a corpus file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorPolicy {
    Strict,
    Replace,
    Skip,
}

pub struct WordCounter {
    normalizer: Option<Normalizer>,
    pre_tokenizer: Option<PreTokenizer>,
    rule: CutRule,
    /// Where a long line may be cut between words.
    word_cuts: WordCut,
    /// Each line is a text of its own (SentencePiece reads sentences, one per line).
    lines: bool,
    pub counts: FxHashMap<Vec<u8>, u64>,
    pub bytes_seen: u64,
}

const BLOCK: usize = 8 << 20;
const SUB_BLOCK: usize = 256 << 10;
/// A block is cut on a character boundary only past this size (a line longer than this).
const MAX_BLOCK: usize = 64 << 20;

/// Where a line too long to count whole may be cut without changing any
/// piece (the pipelines not listed have no such place: their lines are cut
/// on a character boundary past `MAX_BLOCK`, and counted whole below it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordCut {
    Never,
    /// Before a space between two letters: the GPT-2, GPT-4 and GPT-4o
    /// patterns without a normalizer (see [`word_cut_point`]).
    Letters,
    /// Before (`true`) or after a U+0020 between two other characters
    /// that are not spaces: pre-tokenizers that split at every space
    /// (`BertPreTokenizer`, `Whitespace`, `WhitespaceSplit`) behind
    /// character-local normalizers; and SentencePiece's sentences, whose
    /// trainer says which side keeps every word as it is (see `space_cut`).
    Space(bool),
}

/// `WordCut::Space(true)` for a pipeline that splits at every space behind
/// a normalizer that changes characters one by one.
fn splits_at_spaces(normalizer: Option<&Normalizer>, pre: Option<&PreTokenizer>) -> bool {
    fn local(n: &Normalizer) -> bool {
        match n {
            Normalizer::BertNormalizer(_) | Normalizer::Lowercase | Normalizer::StripAccents => true,
            Normalizer::NFC | Normalizer::NFD | Normalizer::NFKC | Normalizer::NFKD => true,
            Normalizer::Sequence { normalizers } => normalizers.iter().all(local),
            _ => false,
        }
    }
    normalizer.is_none_or(local)
        && matches!(
            pre,
            Some(PreTokenizer::BertPreTokenizer | PreTokenizer::Whitespace | PreTokenizer::WhitespaceSplit)
        )
}

impl WordCounter {
    pub fn new(normalizer: Option<Normalizer>, pre_tokenizer: Option<PreTokenizer>) -> Self {
        let letters = normalizer.is_none()
            && pre_tokenizer
                .as_ref()
                .and_then(|p| p.split_regex())
                .is_some_and(|r| crate::pattern::is_line_safe(&r));
        let word_cuts = if letters {
            WordCut::Letters
        } else if splits_at_spaces(normalizer.as_ref(), pre_tokenizer.as_ref()) {
            WordCut::Space(true)
        } else {
            WordCut::Never
        };
        WordCounter {
            rule: cut_rule(pre_tokenizer.as_ref()),
            word_cuts,
            normalizer,
            pre_tokenizer,
            lines: false,
            counts: FxHashMap::default(),
            bytes_seen: 0,
        }
    }

    /// A counter that treats every line as a text of its own (a trailing
    /// `\r` is dropped), as SentencePiece's trainers read their input.
    /// `space_cut`: where a long line may be cut at a space (see
    /// `WordCut::Space`), as the caller's normalizer allows; `None`: nowhere.
    pub fn by_lines(
        normalizer: Option<Normalizer>,
        pre_tokenizer: Option<PreTokenizer>,
        space_cut: Option<bool>,
    ) -> Self {
        WordCounter {
            rule: CutRule::Line,
            lines: true,
            word_cuts: space_cut.map_or(WordCut::Never, WordCut::Space),
            ..WordCounter::new(normalizer, pre_tokenizer)
        }
    }

    fn count_text(&self, text: &str, local: &mut FxHashMap<Vec<u8>, u64>) -> Result<()> {
        if text.len() > SUB_BLOCK {
            // (a long text in parts: the memory of normalizing and splitting
            // follows the part, not the text)
            let mut rest = text;
            while !rest.is_empty() {
                let cut = self.part_end(rest);
                self.count_lines(&rest[..cut], local)?;
                rest = &rest[cut..];
            }
            return Ok(());
        }
        self.count_lines(text, local)
    }

    /// Where the first part of a long text ends: a safe cut near
    /// `SUB_BLOCK`, else the whole text.
    fn part_end(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        if bytes.len() <= SUB_BLOCK {
            return bytes.len();
        }
        self.safe_cut(bytes, SUB_BLOCK).unwrap_or(bytes.len())
    }

    fn count_lines(&self, text: &str, local: &mut FxHashMap<Vec<u8>, u64>) -> Result<()> {
        if self.lines {
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if !line.is_empty() {
                    self.count_one(line, local)?;
                }
            }
            return Ok(());
        }
        self.count_one(text, local)
    }

    fn count_one(&self, text: &str, local: &mut FxHashMap<Vec<u8>, u64>) -> Result<()> {
        let mut ns = NormalizedString::untracked(text);
        if let Some(n) = &self.normalizer {
            n.normalize(&mut ns)?;
        }
        let mut pt = PreTokenizedString::new(ns);
        if let Some(p) = &self.pre_tokenizer {
            p.pre_tokenize(&mut pt)?;
        }
        let bytes = pt.ns.text.as_bytes();
        for &(s, e) in &pt.pieces {
            let piece = &bytes[s..e];
            if let Some(c) = local.get_mut(piece) {
                *c += 1;
            } else {
                local.insert(piece.to_vec(), 1);
            }
        }
        Ok(())
    }

    fn absorb(&mut self, maps: Vec<FxHashMap<Vec<u8>, u64>>) {
        for m in maps {
            if self.counts.is_empty() {
                self.counts = m;
                continue;
            }
            for (k, v) in m {
                *self.counts.entry(k).or_insert(0) += v;
            }
        }
    }

    /// Count a batch of documents, in parallel.
    pub fn feed_texts(&mut self, texts: &[&str]) -> Result<()> {
        self.bytes_seen += texts.iter().map(|t| t.len() as u64).sum::<u64>();
        let this = &*self;
        let maps: Vec<FxHashMap<Vec<u8>, u64>> = crate::parallel::install(None, || {
            texts
                .par_chunks(texts.len().div_ceil(rayon::current_num_threads() * 4).max(1))
                .map(|chunk| {
                    let mut local = FxHashMap::default();
                    for t in chunk {
                        this.count_text(t, &mut local)?;
                    }
                    Ok(local)
                })
                .collect::<Result<_>>()
        })?;
        self.absorb(maps);
        Ok(())
    }

    /// A cut between words near `limit`, for a line too long to count whole.
    fn word_cut(&self, buf: &[u8], limit: usize) -> Option<usize> {
        match self.word_cuts {
            WordCut::Never => None,
            WordCut::Letters => word_cut_point(buf, limit),
            WordCut::Space(before) => space_cut_point(buf, limit, before),
        }
    }

    fn feed_block(&mut self, text: &str) -> Result<()> {
        let mut parts = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let cut = self.part_end(&text[start..]);
            parts.push(&text[start..start + cut]);
            start += cut;
        }
        self.feed_texts(&parts)
    }

    /// Count a UTF-8 text file, read in blocks; returns the bytes read.
    pub fn feed_file(&mut self, path: &str, policy: ErrorPolicy) -> Result<u64> {
        self.feed_file_range(path, 0, u64::MAX, policy)
    }

    /// A safe place to cut `buf` near `limit` for this pipeline, after a line
    /// (see `cut_point`) or between words (see `WordCut`): the last at or
    /// before `limit`, else the first after it. Counting the parts apart
    /// gives the counts of the whole.
    pub fn safe_cut(&self, buf: &[u8], limit: usize) -> Option<usize> {
        let line = cut_point(buf, limit, self.rule);
        if line.is_some_and(|c| c <= limit) {
            return line;
        }
        // (a line's end far past the limit would make a part as long as
        // the text: a place between words before the limit comes first)
        let word = self.word_cut(buf, limit);
        if word.is_some_and(|c| c <= limit) {
            return word;
        }
        line.into_iter().chain(word).min()
    }

    /// Count bytes `start..end` of a UTF-8 text file (`end` past the end: to the
    /// end), read in blocks; returns the bytes read. The range must begin and end
    /// at safe cuts (`safe_cut`) for the parts of a file to add up to the whole.
    pub fn feed_file_range(&mut self, path: &str, start: u64, end: u64, policy: ErrorPolicy) -> Result<u64> {
        use std::io::{Seek, SeekFrom};
        let mut file = std::fs::File::open(path).map_err(|e| Error::Corpus(format!("{path}: cannot open: {e}")))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| Error::Corpus(format!("{path}: cannot seek to byte {start}: {e}")))?;
        // (read straight into `buf`, up to `want` bytes: the text held is
        // one block, counted in place; no larger than the range)
        let size = file.metadata().map_or(u64::MAX, |m| m.len());
        let block = usize::try_from(end.min(size).saturating_sub(start)).map_or(BLOCK, |n| BLOCK.min(n + 1));
        let mut f = file.take(end.saturating_sub(start));
        // (on ordinary pages: a buffer read once, front to back; a huge page
        // would round a small file's buffer up to 2 MB, see `huge_pages`)
        let mut buf: Vec<u8> = crate::huge_pages::plain(|| Vec::with_capacity(block));
        let mut offset: u64 = start; // file offset of buf[0]
        let mut eof = false;
        let mut total = 0u64;
        let mut want = block;
        loop {
            while !eof && buf.len() < want {
                let held = buf.len();
                buf.resize(want, 0);
                let n = f
                    .read(&mut buf[held..])
                    .map_err(|e| Error::Corpus(format!("{path}: read error: {e}")))?;
                buf.truncate(held + n);
                eof = n == 0;
                total += n as u64;
            }
            if buf.is_empty() {
                break;
            }
            let cut = if eof {
                buf.len()
            } else {
                match self.safe_cut(&buf, BLOCK) {
                    Some(c) => c,
                    // no safe cut yet: read on (up to a bound on memory)
                    None if buf.len() < MAX_BLOCK => {
                        want = buf.len() + BLOCK;
                        continue;
                    }
                    None => char_boundary(&buf, MAX_BLOCK),
                }
            };
            want = block;
            match std::str::from_utf8(&buf[..cut]) {
                Ok(text) => self.feed_block(text)?,
                Err(e) => {
                    let text = match policy {
                        ErrorPolicy::Strict => {
                            return Err(Error::CorpusEncoding {
                                path: path.to_string(),
                                offset: offset + e.valid_up_to() as u64,
                            });
                        }
                        ErrorPolicy::Replace => String::from_utf8_lossy(&buf[..cut]).into_owned(),
                        ErrorPolicy::Skip => skip_invalid(&buf[..cut]),
                    };
                    self.feed_block(&text)?;
                }
            }
            buf.drain(..cut);
            offset += cut as u64;
        }
        Ok(total)
    }
}

fn skip_invalid(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.push_str(std::str::from_utf8(&bytes[..good]).unwrap_or_default());
                let bad = e.error_len().unwrap_or(bytes.len() - good);
                bytes = &bytes[good + bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_points_fall_after_newlines() {
        let b = b"ab\n  cd\nef\ngh";
        assert_eq!(cut_point(b, 9, CutRule::Strict), Some(8));
        assert_eq!(cut_point(b, 5, CutRule::Strict), Some(8)); // none before 5: the next one
        assert_eq!(cut_point(b, 5, CutRule::Newline), Some(3)); // spaces may follow
        assert_eq!(cut_point(b"a \n \nb", 3, CutRule::Newline), Some(5)); // not inside "\n \n"
                                                                          // whitespace around the newline makes a strict cut unsafe
        assert_eq!(cut_point(b"a  \nb c", 6, CutRule::Strict), None);
        assert_eq!(cut_point("a\u{3000}\nb c".as_bytes(), 7, CutRule::Strict), None);
        assert_eq!(cut_point("\u{4e2d}\n\u{6587}x".as_bytes(), 6, CutRule::Strict), Some(4));
        assert_eq!(cut_point(b"x.\n/y", 4, CutRule::Newline), None);
        assert_eq!(skip_invalid(b"a\xffb\xc3"), "ab");
    }

    #[test]
    fn word_cuts_keep_every_piece() {
        use crate::pattern::Pattern;
        use crate::pre_tokenizers::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN};
        let known = [GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN];
        let atoms = [
            "a", "Z", "é", "\u{5206}", " ", "  ", "'s", "'", "1", "23", ".", ",", "\u{0301}", "\u{093E}", "\u{2167}",
            "-", "\t", "\u{3002}",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut cuts = 0;
        for source in known {
            assert!(crate::pattern::is_line_safe(source), "{source}");
            let pat = Pattern::regex(source).unwrap();
            let pieces = |t: &str| {
                let mut v = Vec::new();
                pat.find_iter(t, &mut v).unwrap();
                v.into_iter().map(|(a, b)| t[a..b].to_string()).collect::<Vec<_>>()
            };
            for _ in 0..1500 {
                let mut text = String::new();
                for _ in 0..40 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    text.push_str(atoms[(seed % atoms.len() as u64) as usize]);
                }
                let b = text.as_bytes();
                let mut at = 0;
                let mut parts: Vec<String> = Vec::new();
                while let Some(c) = word_cut_point(&b[at..], 7) {
                    parts.extend(pieces(&text[at..at + c]));
                    at += c;
                    cuts += 1;
                }
                parts.extend(pieces(&text[at..]));
                assert_eq!(parts, pieces(&text), "{source} on {text:?}");
            }
        }
        assert!(cuts > 500, "only {cuts} cuts: the test text must have word boundaries");
    }

    #[test]
    fn long_paragraphs_are_counted_in_parts_between_words() {
        use crate::normalizers::bert::BertNormalizer;
        // paragraphs far longer than a part, apart by blank lines: the one
        // line end that is a safe cut for a split without a regex is far
        // past the limit, a space is near it
        let para = "Ab cd, \u{5206}ef gh. ".repeat(SUB_BLOCK / 8);
        let last = format!("{para}end.\nEnd");
        let text = format!("{para}\n\n{para}\n\n{last}");
        let make = || {
            WordCounter::new(
                Some(Normalizer::BertNormalizer(BertNormalizer::default())),
                Some(PreTokenizer::BertPreTokenizer),
            )
        };
        let counter = make();
        let end = counter.part_end(&text);
        assert!(end <= SUB_BLOCK && end > SUB_BLOCK / 2, "part of {end} bytes");
        let mut whole = make();
        whole.feed_texts(&[&text]).unwrap();
        let mut by_para = make();
        by_para.feed_texts(&[&para, &para, &last]).unwrap();
        assert_eq!(whole.counts, by_para.counts);
        assert_eq!(whole.counts[&b"\xe5\x88\x86"[..]], 3 * (SUB_BLOCK / 8) as u64);
    }

    #[test]
    fn file_errors_report_the_offset() {
        let dir = std::env::temp_dir().join(format!("ts-counter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.txt");
        std::fs::write(&p, b"hello\nwor\xffld\n").unwrap();
        let path = p.to_str().unwrap();
        let mut c = WordCounter::new(None, None);
        match c.feed_file(path, ErrorPolicy::Strict) {
            Err(Error::CorpusEncoding { offset, .. }) => assert_eq!(offset, 9),
            other => panic!("unexpected {:?}", other.map(|_| ())),
        }
        let mut c = WordCounter::new(None, None);
        c.feed_file(path, ErrorPolicy::Skip).unwrap();
        assert_eq!(c.counts.get(&b"hello\nworld\n"[..]), Some(&1));
        std::fs::remove_dir_all(&dir).ok();
    }
}
