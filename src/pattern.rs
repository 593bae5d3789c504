//! `{"String": ...}` / `{"Regex": ...}` patterns of `tokenizer.json`.

use crate::error::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Pattern {
    Literal(String),
    Regex { source: String, re: Arc<Engine> },
}

/// How a regex runs.
///
/// The GPT-2/GPT-4/GPT-4o family of patterns ends in `\s+(?!\S)|\s+`; the
/// look-ahead forces a backtracking engine on the whole pattern. For these
/// known patterns we drop `\s+(?!\S)` and run the linear-time `regex` crate,
/// then give back the last whitespace character of a run that the dropped
/// alternative would have stopped short of. Tests run every code point and
/// the adversarial strings through both engines.
#[derive(Debug)]
pub enum Engine {
    /// A hand-written scanner for the exact known patterns (`crate::scanner`).
    Scan(crate::scanner::Scanner),
    Fast {
        re: regex::Regex,
        dfa: Box<AnchoredDfa>,
        give_back: GiveBack,
    },
    Fancy(fancy_regex::Regex),
}

/// A lazy DFA run anchored at the current position: these patterns cover
/// every character, so a match starts where the previous one ended and one
/// forward pass finds its end (the general regex needs a second, reverse
/// pass to find the start).
pub struct AnchoredDfa {
    dfa: regex_automata::hybrid::dfa::DFA,
    caches: regex_automata::util::pool::Pool<regex_automata::hybrid::dfa::Cache, CacheMaker>,
}

type CacheMaker = Box<
    dyn Fn() -> regex_automata::hybrid::dfa::Cache + Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe,
>;

impl std::fmt::Debug for AnchoredDfa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnchoredDfa")
    }
}

impl AnchoredDfa {
    fn new(pattern: &str) -> Option<Self> {
        use regex_automata::hybrid::dfa::DFA;
        let dfa = DFA::builder()
            .configure(DFA::config().cache_capacity(64 << 20))
            .build(pattern)
            .ok()?;
        let for_cache = dfa.clone();
        let maker: CacheMaker = Box::new(move || for_cache.create_cache());
        Some(AnchoredDfa {
            dfa,
            caches: regex_automata::util::pool::Pool::new(maker),
        })
    }

    /// The anchored start state (the same at every position: no look-around).
    fn start(&self, cache: &mut regex_automata::hybrid::dfa::Cache) -> Option<regex_automata::hybrid::LazyStateID> {
        use regex_automata::util::start::Config;
        use regex_automata::Anchored;
        self.dfa.start_state(cache, &Config::new().anchored(Anchored::Yes)).ok()
    }

    /// End of the leftmost-first match that starts exactly at `pos`.
    ///
    /// A hand-run loop over the lazy DFA: the patterns have no look-around
    /// left, so the anchored start state is the same everywhere and each byte
    /// costs one cached transition. Matches show one byte late in these DFAs.
    fn match_end(
        &self,
        text: &str,
        pos: usize,
        cache: &mut regex_automata::hybrid::dfa::Cache,
        start: &mut (usize, regex_automata::hybrid::LazyStateID),
    ) -> Option<usize> {
        if cache.clear_count() != start.0 {
            // the cache was cleared: state ids from before are void
            start.1 = self.start(cache)?;
            start.0 = cache.clear_count();
        }
        let bytes = text.as_bytes();
        let mut sid = start.1;
        let mut last = None;
        let mut i = pos;
        while i < bytes.len() {
            sid = self.dfa.next_state(cache, sid, bytes[i]).ok()?;
            if sid.is_tagged() {
                if sid.is_match() {
                    last = Some(i);
                } else if sid.is_dead() {
                    return last;
                } else if sid.is_quit() || sid.is_unknown() {
                    return self.slow_end(text, pos, cache);
                }
            }
            i += 1;
        }
        sid = self.dfa.next_eoi_state(cache, sid).ok()?;
        if sid.is_match() {
            last = Some(bytes.len());
        }
        last
    }

    fn slow_end(&self, text: &str, pos: usize, cache: &mut regex_automata::hybrid::dfa::Cache) -> Option<usize> {
        use regex_automata::{Anchored, Input};
        let input = Input::new(text).range(pos..).anchored(Anchored::Yes);
        match self.dfa.try_search_fwd(cache, &input) {
            Ok(Some(m)) => Some(m.offset()),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveBack {
    /// Every whitespace-only match (GPT-2: no other alternative matches whitespace).
    AnyWhitespace,
    /// Whitespace-only matches without `\r`/`\n` (cl100k, o200k: `\s*[\r\n]+` comes first).
    NoNewline,
}

const LOOKAHEAD_TAIL: &str = r"|\s+(?!\S)|\s+";

/// Whether this is one of the known GPT-2 / GPT-4 / GPT-4o family patterns,
/// whose pieces never cross a newline between two non-space characters.
pub fn is_line_safe(source: &str) -> bool {
    known_fast(source).is_some()
}

/// Whether this pattern ends every whitespace run at its last line break
/// (`\s*[\r\n]+` before the whitespace alternatives: GPT-4, GPT-4o, Qwen).
pub fn newline_ends_pieces(source: &str) -> bool {
    matches!(known_fast(source), Some((_, GiveBack::NoNewline)))
}

/// Patterns whose only look-around is the `\s+(?!\S)` tail, with the rule that
/// tells which whitespace matches came from it.
fn known_fast(source: &str) -> Option<(String, GiveBack)> {
    use crate::patterns::GPT2_PATTERN;
    const KNOWN_NEWLINE: [&str; 3] = [
        // cl100k / Llama-3
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        // Qwen2
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        // o200k
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ];
    let mode = if source == GPT2_PATTERN {
        GiveBack::AnyWhitespace
    } else if KNOWN_NEWLINE.contains(&source) {
        GiveBack::NoNewline
    } else {
        return None;
    };
    let head = source.strip_suffix(LOOKAHEAD_TAIL)?;
    Some((format!(r"{head}|\s+"), mode))
}

#[derive(Serialize, Deserialize)]
enum PatternDef {
    String(String),
    Regex(String),
}

/// Compile a user regex with the semantics tokenizer users expect.
///
/// Oniguruma, which Hugging Face `tokenizers` uses, reads `X{n,m}+` as
/// `(?:X{n,m})+` rather than as a possessive quantifier; we rewrite that
/// form so both engines agree.
pub fn compile_regex(source: &str) -> Result<Engine> {
    if let Some(scanner) = crate::scanner::Scanner::for_pattern(source) {
        return Ok(Engine::Scan(scanner));
    }
    if let Some(fast) = compile_fast(source) {
        return Ok(fast);
    }
    compile_fancy(source).map(Engine::Fancy)
}

/// The `regex`-crate engine for the known patterns (see [`Engine::Fast`]).
pub fn compile_fast(source: &str) -> Option<Engine> {
    if let Some((fast, give_back)) = known_fast(source) {
        if let Ok(re) = regex::RegexBuilder::new(&fast)
            .dfa_size_limit(256 << 20)
            .size_limit(64 << 20)
            .build()
        {
            if let Some(dfa) = AnchoredDfa::new(&fast) {
                return Some(Engine::Fast {
                    re,
                    dfa: Box::new(dfa),
                    give_back,
                });
            }
        }
    }
    None
}

pub fn compile_fancy(source: &str) -> Result<fancy_regex::Regex> {
    let translated = translate_onig(source);
    fancy_regex::RegexBuilder::new(&translated)
        .backtrack_limit(10_000_000)
        .build()
        .map_err(|e| Error::Config(format!("invalid regex {source:?}: {e}")))
}

/// Rewrite `{n,m}+` (Oniguruma: a repeated group) into `(?:...)` form is not
/// possible without a parser, so we do the equivalent: `A{n,m}+` ≡ `(?:A{n,m})+`
/// only differs from possessive `A{n,m}` in how far it runs; we parse the atom
/// before the quantifier for the common cases (escapes, classes, groups).
fn translate_onig(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<String> = Vec::new(); // one entry per atom
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // quantifier `{n,m}` followed by `+`
        if c == '{' && !out.is_empty() {
            if let Some(close) = chars[i..].iter().position(|&x| x == '}') {
                let body: String = chars[i + 1..i + close].iter().collect();
                let is_quant = !body.is_empty() && body.chars().all(|x| x.is_ascii_digit() || x == ',');
                if is_quant {
                    let quant: String = chars[i..=i + close].iter().collect();
                    let after = i + close + 1;
                    if after < chars.len() && chars[after] == '+' {
                        let atom = out.pop().unwrap_or_default();
                        out.push(format!("(?:{atom}{quant})+"));
                        i = after + 1;
                        continue;
                    }
                    if let Some(last) = out.last_mut() {
                        last.push_str(&quant);
                    }
                    i = after;
                    continue;
                }
            }
        }
        let start = i;
        match c {
            '\\' => {
                i += 2;
                // \p{..} / \P{..} / \x{..}
                if i <= chars.len() && matches!(chars[i - 1], 'p' | 'P' | 'x') && i < chars.len() && chars[i] == '{' {
                    while i < chars.len() && chars[i] != '}' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '[' => {
                i += 1;
                if i < chars.len() && chars[i] == '^' {
                    i += 1;
                }
                if i < chars.len() && chars[i] == ']' {
                    i += 1;
                }
                let mut depth = 1;
                while i < chars.len() && depth > 0 {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => depth += 1,
                        ']' => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
            }
            '(' => {
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '\\' => i += 1,
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        '[' => {
                            // skip class
                            i += 1;
                            while i < chars.len() && chars[i] != ']' {
                                if chars[i] == '\\' {
                                    i += 1;
                                }
                                i += 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
        let end = i.min(chars.len());
        let atom: String = chars[start..end].iter().collect();
        // quantifiers attach to the previous atom
        if matches!(c, '*' | '+' | '?') && !out.is_empty() {
            if let Some(last) = out.last_mut() {
                last.push_str(&atom);
            }
        } else {
            out.push(atom);
        }
    }
    out.concat()
}

impl Pattern {
    pub fn regex(source: &str) -> Result<Self> {
        Ok(Pattern::Regex {
            source: source.to_string(),
            re: Arc::new(compile_regex(source)?),
        })
    }

    /// All non-overlapping matches, as byte ranges.
    pub fn find_iter(&self, text: &str, out: &mut Vec<(usize, usize)>) -> Result<()> {
        match self {
            Pattern::Literal(lit) => {
                if lit.is_empty() {
                    return Ok(());
                }
                for (s, m) in text.match_indices(lit.as_str()) {
                    out.push((s, s + m.len()));
                }
            }
            Pattern::Regex { re, source } => re.find_iter(text, out).map_err(|e| match e {
                Error::Config(m) => Error::Config(format!("regex {source:?} failed on input: {m}")),
                other => other,
            })?,
        }
        Ok(())
    }
}

/// Seconds of backtracking any one call may take, plus one per 64 KB of text:
/// `TOKENSMITH_REGEX_SECONDS`, default 2.
fn regex_seconds() -> f64 {
    static SECONDS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *SECONDS.get_or_init(|| {
        std::env::var("TOKENSMITH_REGEX_SECONDS")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(2.0)
    })
}

/// The time a backtracking search over `len` bytes may take in all.
fn fancy_budget(len: usize) -> std::time::Duration {
    std::time::Duration::from_secs_f64(regex_seconds() + len as f64 / 65_536.0)
}

impl Engine {
    pub fn find_iter(&self, text: &str, out: &mut Vec<(usize, usize)>) -> Result<()> {
        match self {
            Engine::Scan(scanner) => scanner.find_iter(text, out),
            Engine::Fancy(re) => {
                // each search is limited (`backtrack_limit`), and the call as a
                // whole by a time budget: a pattern that backtracks on every
                // piece would otherwise take minutes a megabyte
                let budget = fancy_budget(text.len());
                let started = std::time::Instant::now();
                for (k, m) in re.find_iter(text).enumerate() {
                    let m = m.map_err(|e| Error::Config(e.to_string()))?;
                    out.push((m.start(), m.end()));
                    if k % 16 == 15 && started.elapsed() > budget {
                        return Err(Error::Config(format!(
                            "backtracking took more than its budget of {:.1} s for {} bytes ({} \
                             seconds plus one a 64 KB, TOKENSMITH_REGEX_SECONDS); simplify the \
                             pattern (nested quantifiers with look-around backtrack on every piece)",
                            budget.as_secs_f64(),
                            text.len(),
                            regex_seconds()
                        )));
                    }
                }
            }
            Engine::Fast { re, dfa, give_back } => {
                let mut cache = dfa.caches.get();
                let mut start = dfa.start(&mut cache).map(|sid| (cache.clear_count(), sid));
                let mut pos = 0;
                while pos < text.len() {
                    let anchored = match start.as_mut() {
                        Some(st) => dfa.match_end(text, pos, &mut cache, st),
                        None => None,
                    };
                    let (s, mut e) = match anchored {
                        Some(e) if e > pos => (pos, e),
                        _ => match re.find_at(text, pos) {
                            Some(m) => (m.start(), m.end()),
                            None => break,
                        },
                    };
                    if e < text.len() && e > s {
                        let piece = &text[s..e];
                        let mut chars = piece.chars();
                        let first_two = (chars.next(), chars.next());
                        if first_two.1.is_some()
                            && piece.chars().all(char::is_whitespace)
                            && (*give_back == GiveBack::AnyWhitespace || !piece.contains(['\r', '\n']))
                        {
                            e -= piece.chars().next_back().map_or(0, char::len_utf8);
                        }
                    }
                    out.push((s, e));
                    pos = if e > s {
                        e
                    } else {
                        e + text[e..].chars().next().map_or(1, char::len_utf8)
                    };
                }
            }
        }
        Ok(())
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Pattern::Literal(l) => PatternDef::String(l.clone()).serialize(s),
            Pattern::Regex { source, .. } => PatternDef::Regex(source.clone()).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match PatternDef::deserialize(d)? {
            PatternDef::String(s) => Ok(Pattern::Literal(s)),
            PatternDef::Regex(r) => Pattern::regex(&r).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onig_repeat_plus_is_rewritten() {
        assert_eq!(translate_onig(r"\p{N}{1,3}+"), r"(?:\p{N}{1,3})+");
        assert_eq!(translate_onig(r"a|\p{N}{1,3}| ?[^\s]+"), r"a|\p{N}{1,3}| ?[^\s]+");
        assert_eq!(translate_onig(r"(ab){2}+c"), r"(?:(ab){2})+c");
    }

    #[test]
    fn literal_and_regex_find() {
        let mut v = vec![];
        Pattern::Literal("ab".into()).find_iter("xabab", &mut v).unwrap();
        assert_eq!(v, vec![(1, 3), (3, 5)]);
        v.clear();
        Pattern::regex(r"\d+").unwrap().find_iter("a12b3", &mut v).unwrap();
        assert_eq!(v, vec![(1, 3), (4, 5)]);
        assert!(Pattern::regex("(").is_err());
    }

    fn both(source: &str, text: &str) {
        let fast = compile_fast(source).expect("the fast engine takes this pattern");
        let slow = Engine::Fancy(compile_fancy(source).unwrap());
        let (mut a, mut b) = (vec![], vec![]);
        fast.find_iter(text, &mut a).unwrap();
        slow.find_iter(text, &mut b).unwrap();
        if a != b {
            let k = a
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            panic!(
                "pattern {source:?}: fast {:?} vs fancy {:?} at match {k}",
                a.get(k).map(|r| &text[r.0..r.1]),
                b.get(k).map(|r| &text[r.0..r.1])
            );
        }
    }

    #[test]
    fn fast_engine_agrees_with_the_lookahead() {
        let cases = [
            "Hello  world",
            "a   b",
            "x \n  y",
            "  \n\nz",
            "tail   ",
            "\t-ilrsD",
            "\t%s",
            "\n    indented",
            " \u{a0}\u{a0}x",
            "a \u{3000}\u{3000}b",
            "1234567 89",
            "it's  'S  x\r\n  \r\n\t y",
            "   ",
            " ",
            "\u{2028} \u{2029}a",
            "\u{85}  b",
            "\u{1F600}  \u{1F600}",
            "\u{4e2d}\u{6587}  \u{5b57}",
        ];
        let patterns = [crate::patterns::GPT2_PATTERN, CL100K_TEST, O200K_TEST];
        for p in patterns {
            for c in cases {
                both(p, c);
            }
            // every code point of the BMP and the emoji planes next to spaces, letters and newlines
            let seps = ["  ", "a ", "\n ", " 1", "\t", "\r\n  "];
            let mut s = String::new();
            // (every code point in release builds; a sample in debug builds, which are slow)
            let step = if cfg!(debug_assertions) { 11 } else { 1 };
            for cp in (0u32..0x30000).filter(|c| *c < 0x3400 || *c >= 0xA000).step_by(step) {
                if let Some(ch) = char::from_u32(cp) {
                    s.push(ch);
                    s.push_str(seps[cp as usize % seps.len()]);
                    s.push(ch);
                }
            }
            both(p, &s);
        }
    }

    // ---- the hand-written scanners against fancy-regex ----

    use crate::patterns::{CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, QWEN2_PATTERN};

    const SCANNED: [&str; 4] = [GPT2_PATTERN, CL100K_PATTERN, QWEN2_PATTERN, O200K_PATTERN];

    /// The two engines for a pattern: the scanner and fancy-regex.
    fn scanner_and_fancy(source: &str) -> (Engine, Engine) {
        let scan = compile_regex(source).unwrap();
        assert!(matches!(scan, Engine::Scan(_)), "{source} should take the scanner");
        (scan, Engine::Fancy(compile_fancy(source).unwrap()))
    }

    /// Assert both engines cut `text` into the same pieces.
    fn same_pieces(source: &str, scan: &Engine, fancy: &Engine, text: &str) {
        let (mut a, mut b) = (vec![], vec![]);
        scan.find_iter(text, &mut a).unwrap();
        fancy.find_iter(text, &mut b).unwrap();
        if a != b {
            let k = a
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            let at = a.get(k).or(b.get(k)).map_or(0, |r| r.0);
            let mut from = at.saturating_sub(24);
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            panic!(
                "pattern {source:?}\n  near {:?}\n  scanner {:?}\n  fancy   {:?}",
                &text[from..(at + 24).min(text.len())],
                a.get(k).map(|r| &text[r.0..r.1]),
                b.get(k).map(|r| &text[r.0..r.1])
            );
        }
    }

    #[test]
    fn scanner_is_chosen_for_the_known_patterns_only() {
        for p in SCANNED {
            assert!(matches!(compile_regex(p).unwrap(), Engine::Scan(_)), "{p}");
        }
        // a pattern that differs in one character takes a regex engine
        let other = CL100K_PATTERN.replace("{1,3}", "{1,4}");
        assert!(!matches!(compile_regex(&other).unwrap(), Engine::Scan(_)));
    }

    /// Hand-picked strings that exercise each alternative and its backtracking.
    const TRICKY: &[&str] = &[
        "",
        " ",
        "Hello, world!",
        "  leading and trailing  ",
        "it's they'll WE'RE I'M you'D She'S 'll 's 'S 'Ll 're 'rE 'x 'sx ''s '",
        "don\u{2019}t 'ſ 'ſam \u{17F}'ſ 'K '\u{212A} 'd'd'd 'l 'lL 'lx",
        "\t-ilrsD \t%s \t\t-x",
        "def f():\n    return 1\n        \n\n\tpass",
        "line\r\nnext\r\n\r\n  end\r\r\n\n\r x",
        " \n \n x \r \t\n\t y  \n",
        "a/b//c\n/d /\n/ //\r\n/ e",
        "!!!\n\n!!\r\n x ?\n",
        "1234567 12 1 123456789012 \u{661}\u{662}\u{663}\u{664}\u{665} \u{ff10}\u{ff11}\u{ff12}\u{ff13} \u{e51}\u{e52}\u{e53}",
        "x\u{b2}\u{b3}\u{b9} \u{216B}\u{216B} \u{bd}1\u{bd} a1b2c3 1a 12ab",
        "e\u{301} a\u{308}\u{301} \u{915}\u{94d}\u{937} \u{e01}\u{e34}\u{e4a}",
        "\u{301}abc \u{301}ABC \u{301} A\u{301}B a\u{301}B \u{301}\u{301}x  \u{301}'s",
        "ABC ABCdef AbcDef aBC \u{1c5}ungla \u{1c4}\u{1c5}\u{1c6} \u{2b0}\u{2b0}A \u{2b0}A a\u{2b0}B",
        "HELLO'S Hello's hello'S HELLO'll 'ABC 'Abc !ABC !abc \u{3000}ABC",
        "\u{4e2d}\u{6587}\u{5206}\u{8bcd}\u{ff0c}\u{65e5}\u{672c}\u{8a9e}\u{306e}\u{6587}\u{7ae0}\u{3001}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} \u{1F44D}\u{1F3FD} \u{1F600}\u{1F600}",
        "\u{0}\u{1}\u{1f}\u{7f}\u{85}\u{200b}\u{200d}\u{feff}\u{fffd}",
        "\u{a0}\u{a0}x \u{2028}\u{2029}a \u{85}  b \u{1680}x \u{2000}\u{200a}y \u{202f}\u{205f}\u{3000}z",
        "\u{b}\u{c}\u{1c}\u{1d}\u{1e}\u{1f} a\u{b}b a\u{1c}b",
        "Stra\u{df}e \u{130}stanbul \u{1c5} \u{fb01} \u{210c} \u{216b} \u{bd}",
        "tail   ",
        "   ",
        "\n",
        "x \n",
        "x\n ",
        "a\r\n\r\n",
    ];

    #[test]
    fn scanner_agrees_on_runs_of_spaces() {
        // runs of every length around the eight-byte steps, between
        // everything that can end or follow a run of whitespace
        let before = ["", "a", "\n", "\t", "!", "\u{3000}"];
        let after = ["", "x", "\n", "\t", "\r\n", "\u{3000}", "\u{4e2d}", "!", "1", "'s"];
        for p in SCANNED {
            let (scan, fancy) = scanner_and_fancy(p);
            for n in 1..=26 {
                for b in before {
                    for a in after {
                        same_pieces(p, &scan, &fancy, &format!("{b}{}{a}", " ".repeat(n)));
                    }
                }
            }
        }
    }

    #[test]
    fn scanner_agrees_on_tricky_strings() {
        for p in SCANNED {
            let (scan, fancy) = scanner_and_fancy(p);
            for t in TRICKY {
                same_pieces(p, &scan, &fancy, t);
            }
            for long in [
                "a".repeat(5000),
                " ".repeat(3000) + "x",
                "\n".repeat(2000),
                "\u{4e2d}".repeat(3000),
            ] {
                same_pieces(p, &scan, &fancy, &long);
            }
        }
    }

    /// Contexts a code point is tried in (`@` stands for it).
    const CONTEXTS: &[&str] = &[
        "@",
        " @",
        "@ ",
        "a@b",
        "'@",
        "@'s",
        "1@2",
        "\n@\n",
        "A@",
        "@A",
        "@@",
        "  @  x",
        "\r\n@",
        "@'LL",
        "'@'",
        "/@/",
        "\u{301}@",
        "@\u{301}",
        "\u{3000}@",
        "@\u{4e2d}",
        "'@@'re ",
        "Ab@cD",
    ];

    /// Texts of 4096 code points each, every one in two of the `contexts`
    /// (`@` stands for it).
    fn in_contexts(cps: &[char], contexts: &[&str]) -> Vec<String> {
        let mut texts = Vec::new();
        for (n, chunk) in cps.chunks(4096).enumerate() {
            let mut s = String::new();
            for (k, &c) in chunk.iter().enumerate() {
                for ctx in [
                    contexts[(n + k) % contexts.len()],
                    contexts[(n * 7 + k * 3 + 5) % contexts.len()],
                ] {
                    for (i, part) in ctx.split('@').enumerate() {
                        if i > 0 {
                            s.push(c);
                        }
                        s.push_str(part);
                    }
                }
            }
            texts.push(s);
        }
        texts
    }

    #[test]
    fn scanner_agrees_on_every_code_point() {
        // every scalar value, each in two of the contexts; in debug builds
        // (slow) a sample plus the whole ASCII and Latin range
        let step = if cfg!(debug_assertions) { 7 } else { 1 };
        let cps: Vec<char> = (0u32..0x11_0000)
            .filter(|&c| c < 0x800 || c % step == 0)
            .filter_map(char::from_u32)
            .collect();
        let texts = in_contexts(&cps, CONTEXTS);
        for p in SCANNED {
            let (scan, fancy) = scanner_and_fancy(p);
            for s in &texts {
                same_pieces(p, &scan, &fancy, s);
            }
        }
    }

    /// One code point of each distinct combination of the properties the
    /// scanners read (several where there are many), plus all of ASCII.
    fn class_representatives() -> Vec<char> {
        representatives(&[
            r"\p{L}",
            r"\p{N}",
            r"\s",
            r"\p{Lu}",
            r"\p{Ll}",
            r"\p{Lt}",
            r"\p{Lm}",
            r"\p{Lo}",
            r"\p{M}",
            r"(?i:[strevmld])",
        ])
    }

    /// All of ASCII, and up to three code points of each combination of the
    /// classes `props` (regexes) that occurs.
    fn representatives(props: &[&str]) -> Vec<char> {
        let props: Vec<regex::Regex> = props
            .iter()
            .map(|re| regex::Regex::new(&format!("^{re}$")).unwrap())
            .collect();
        let mut seen: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        let mut reps: Vec<char> = (0u8..128).map(char::from).collect();
        for c in (0x80u32..0x11_0000).filter_map(char::from_u32) {
            let s = c.to_string();
            let sig = props
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, re)| acc | (u32::from(re.is_match(&s)) << i));
            let n = seen.entry(sig).or_insert(0);
            if *n < 3 {
                reps.push(c);
            }
            *n += 1;
        }
        reps
    }

    /// Every ordered pair of `reps` (with every `step`-th second one),
    /// each followed by a space or a letter, in texts of 64 first characters.
    fn pair_texts(reps: &[char], step: usize) -> Vec<String> {
        reps.chunks(64)
            .map(|chunk| {
                let mut s = String::new();
                for &a in chunk {
                    for &b in reps.iter().step_by(step) {
                        s.push(a);
                        s.push(b);
                        s.push(if (a as u32 + b as u32).is_multiple_of(2) {
                            ' '
                        } else {
                            'x'
                        });
                    }
                }
                s
            })
            .collect()
    }

    /// `cases` random strings of 1 to 24 characters: a third from `reps`,
    /// the rest from `special`.
    fn random_texts(reps: &[char], special: &str, mut x: u64, cases: usize) -> Vec<String> {
        let special: Vec<char> = special.chars().collect();
        let mut rand = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        (0..cases)
            .map(|_| {
                let len = 1 + rand(24);
                (0..len)
                    .map(|_| {
                        if rand(3) == 0 {
                            reps[rand(reps.len())]
                        } else {
                            special[rand(special.len())]
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn scanner_agrees_on_all_pairs_of_classes_and_random_text() {
        let reps = class_representatives();
        // weighted pools for the random strings: the characters the patterns treat specially
        let special = " \t\n\r'/sStTrReEvVmMlLdD\u{17F}1A a.\u{301}\u{3000}\u{a0}";
        let cases = if cfg!(debug_assertions) { 2000 } else { 20000 };
        let random = random_texts(&reps, special, 0x2545_F491_4F6C_DD1D, cases);
        // every ordered pair of representatives, between spaces and letters
        let pairs = pair_texts(&reps, 1);
        for p in SCANNED {
            let (scan, fancy) = scanner_and_fancy(p);
            for t in pairs.iter().chain(&random) {
                same_pieces(p, &scan, &fancy, t);
            }
        }
    }

    // ---- DeepSeek-V3's sequence of splits: its scanner against the three regexes ----

    /// The pieces of DeepSeek's three splits run one after the other by the
    /// regex engines, and the scanner's.
    type Pieces = Vec<(usize, usize)>;

    fn deepseek_both(text: &str) -> (Pieces, Pieces) {
        use crate::normalizers::NormalizedString;
        use crate::pre_tokenizers::{
            PreTokenize, PreTokenizedString, PreTokenizer, SplitBehavior, DEEPSEEK_CJK, DEEPSEEK_DIGITS, DEEPSEEK_WORDS,
        };
        let mut p = PreTokenizedString::new(NormalizedString::new(text, 0));
        for source in [DEEPSEEK_DIGITS, DEEPSEEK_CJK, DEEPSEEK_WORDS] {
            let split = PreTokenizer::Split {
                pattern: Pattern::regex(source).unwrap(),
                behavior: SplitBehavior::Isolated,
                invert: false,
            };
            split.pre_tokenize(&mut p).unwrap();
        }
        let mut scanned = Vec::new();
        crate::scanner::Scanner::deepseek().find_iter(text, &mut scanned);
        (p.pieces, scanned)
    }

    fn deepseek_same(text: &str) {
        let (want, got) = deepseek_both(text);
        if want != got {
            let k = want
                .iter()
                .zip(&got)
                .position(|(x, y)| x != y)
                .unwrap_or(want.len().min(got.len()));
            let show = |v: &[(usize, usize)]| v.get(k).map(|r| text[r.0..r.1].to_string());
            panic!("{text:?}\n  regexes {:?}\n  scanner {:?}", show(&want), show(&got));
        }
    }

    #[test]
    fn deepseek_scanner_is_chosen_for_its_sequence_only() {
        use crate::pre_tokenizers::{PreTokenizer, DEEPSEEK_WORDS};
        let json = |words: &str| {
            serde_json::json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
                {"type": "Split", "pattern": {"Regex": "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+"}, "behavior": "Isolated", "invert": false},
                {"type": "Split", "pattern": {"Regex": words}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
            ]})
        };
        let pt: PreTokenizer = serde_json::from_value(json(DEEPSEEK_WORDS)).unwrap();
        assert!(pt.scanner().is_some());
        let other: PreTokenizer = serde_json::from_value(json(&DEEPSEEK_WORDS.replace("[A-Za-z]+", "[A-Z]+"))).unwrap();
        assert!(other.scanner().is_none());
    }

    #[test]
    fn deepseek_scanner_agrees_with_its_regexes() {
        for t in TRICKY {
            deepseek_same(t);
        }
        for t in [
            "\u{4e2d}\u{6587}\u{30fb}\u{65e5}\u{672c}\u{3099}\u{309b}\u{30a0}\u{3040}\u{3097}x \u{30fc}\u{3042}",
            "abc123456def 12\u{4e2d}34 \u{ff11}\u{ff12}\u{ff13}\u{ff14} \u{4e00}\u{9fa5}\u{9fa6}\u{4dff}",
            "'abc\u{e9} .Net $HOME \u{201c}Hi\u{201d} ,\u{e9}x \u{ff0c}ab  ,, ,\n\r\n x",
            "\u{200d}a \u{200d} \u{0}\u{1}ab\u{7f}\u{85}  \u{301}x \u{301}\u{301} a\u{301}\u{300} \u{e000}\u{f8ff}q",
            "line\r\n  \n\tend   \u{3000}\u{4e2d}  \u{4e2d} \n",
        ] {
            deepseek_same(t);
        }
        for long in [
            "a".repeat(5000),
            " ".repeat(3000) + "x",
            "9".repeat(1000),
            "\u{4e2d}".repeat(3000),
        ] {
            deepseek_same(&long);
        }
    }

    #[test]
    fn deepseek_scanner_agrees_on_every_code_point() {
        let step = if cfg!(debug_assertions) { 7 } else { 1 };
        let cps: Vec<char> = (0u32..0x11_0000)
            .filter(|&c| c < 0x800 || (0x3000..0x3100).contains(&c) || c % step == 0)
            .filter_map(char::from_u32)
            .collect();
        let contexts = [
            CONTEXTS,
            &["@\u{3042}", "\u{4e2d}@", "$@x", "@9", "9@", " @\u{4e2d}", "@\u{301}a"],
        ]
        .concat();
        for s in in_contexts(&cps, &contexts) {
            deepseek_same(&s);
        }
    }

    #[test]
    fn deepseek_scanner_agrees_on_pairs_of_classes_and_random_text() {
        // one character of each combination of the classes DeepSeek's splits read
        let reps = representatives(&[
            r"\p{L}",
            r"\p{N}",
            r"\s",
            r"\p{M}",
            r"\p{P}",
            r"\p{S}",
            r"[\r\n]",
            crate::patterns::DEEPSEEK_CJK,
        ]);
        // (debug builds, slow: each with every third)
        let step = if cfg!(debug_assertions) { 3 } else { 1 };
        let special = " \t\n\r'$,.1aZ\u{301}\u{3000}\u{a0}\u{4e2d}\u{3042}\u{30fb}\u{ff0c}\u{200d}";
        let cases = if cfg!(debug_assertions) { 3000 } else { 30000 };
        for t in pair_texts(&reps, step)
            .iter()
            .chain(&random_texts(&reps, special, 0x9E37_79B9_7F4A_7C15, cases))
        {
            deepseek_same(t);
        }
    }

    const CL100K_TEST: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const O200K_TEST: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
}
