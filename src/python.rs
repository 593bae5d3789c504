//! Python bindings (`tokensmith._core`). Thin: argument shaping and error
//! mapping only; every O(input) call releases the GIL.

use crate::added_tokens::{AddedToken, Allowed};
use crate::error::Error;
use crate::formats::protobuf::{self, DefaultValue, Field, Value};
use crate::formats::sp_schema;
use crate::models::{Bpe, Model, ModelKind};
use crate::normalizers::Normalizer;
use crate::pre_tokenizers::PreTokenizer;
use crate::tokenizer::Tokenizer as CoreTokenizer;
use crate::trainers::bpe::{self as bpe_trainer, BpeTrainerConfig};
use crate::trainers::{ErrorPolicy, TrainEvent, WordCounter};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use rayon::prelude::*;
use std::sync::Arc;

fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let (class, msg) = match &e {
        Error::Config(m) => ("ConfigError", m.clone()),
        Error::VocabSize(m) => ("VocabSizeError", m.clone()),
        Error::Format(m) => ("TokenizerFormatError", m.clone()),
        Error::Unsupported(m) => ("UnsupportedComponentError", m.clone()),
        Error::UnknownId(_) => ("UnknownIdError", e.to_string()),
        Error::DisallowedSpecial(t) => ("DisallowedSpecialTokenError", t.clone()),
        Error::Corpus(m) => ("CorpusError", m.clone()),
        Error::CorpusEncoding { .. } => ("CorpusEncodingError", e.to_string()),
        Error::Interrupted => return PyRuntimeError::new_err("interrupted"),
        Error::Memory(_) => return pyo3::exceptions::PyMemoryError::new_err(e.to_string()),
        Error::Io(m) => return pyo3::exceptions::PyOSError::new_err(m.clone()),
    };
    let made = py.import("tokensmith.errors").and_then(|m| {
        let cls = m.getattr(class)?;
        let obj = match &e {
            Error::UnknownId(id) => cls.call1((msg, *id))?,
            Error::CorpusEncoding { path, offset } => cls.call1((msg, path.clone(), *offset))?,
            _ => cls.call1((msg,))?,
        };
        Ok(PyErr::from_value(obj))
    });
    made.unwrap_or_else(|_| PyValueError::new_err(e.to_string()))
}

fn err(e: Error) -> PyErr {
    Python::attach(|py| to_py(py, e))
}

/// The boundary every call from Python crosses (each `#[pymethods]` and
/// `#[pyfunction]` body runs inside it): a Rust panic, on this thread or
/// on the pool, becomes `tokensmith.errors.InternalError`, which asks for a
/// bug report, and never reaches Python as pyo3's `PanicException` (a
/// `BaseException` that `except Exception` does not catch). What the call
/// had changed stays changed: the core's shared state is read-only or
/// behind locks, and a half-fed `WordCounter` is the caller's to drop.
fn error_policy(errors: &str) -> PyResult<ErrorPolicy> {
    match errors {
        "strict" => Ok(ErrorPolicy::Strict),
        "replace" => Ok(ErrorPolicy::Replace),
        "skip" => Ok(ErrorPolicy::Skip),
        other => Err(PyValueError::new_err(format!(
            "errors must be 'strict', 'replace' or 'skip', not {other:?}"
        ))),
    }
}

fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| Err(internal(&*payload)))
}

/// `InternalError` for a panic's payload (its message, when it has one).
fn internal(payload: &(dyn std::any::Any + Send)) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    Python::attach(|py| {
        py.import("tokensmith.errors")
            .and_then(|m| m.getattr("InternalError")?.call1((what.clone(),)))
            .map(PyErr::from_value)
            .unwrap_or_else(|_| PyRuntimeError::new_err(format!("tokensmith internal error: {what}")))
    })
}

fn parse_allowed(v: &Bound<'_, PyAny>) -> PyResult<Allowed> {
    if let Ok(s) = v.cast::<PyString>() {
        return match s.to_str()? {
            "all" => Ok(Allowed::All),
            "none" => Ok(Allowed::None),
            other => Err(PyValueError::new_err(format!(
                "expected 'all', 'none' or a list of ids, got {other:?}"
            ))),
        };
    }
    Ok(Allowed::Only(v.extract::<Vec<u32>>()?))
}

fn parse_permitted(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Allowed>> {
    v.map(parse_allowed).transpose()
}

/// An argument that may be left out (its default) or given as any object,
/// `None` included.
enum Given<'py> {
    Absent,
    Is(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Given<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Given::Is(obj.to_owned()))
    }
}

/// `Tokenizer.encode` and `Tokenizer.count` of the Python package for their
/// common calls, without a Python frame (a short text's call costs more
/// than its encoding): the default policy, `disallowed_special=()` or
/// `"all"`, no `allowed_special`, on a `str`. Every other call, and any
/// call that fails here, goes to the Python method (`fallbacks`) with the
/// arguments as they were given.
#[pyclass(module = "tokensmith._core")]
struct FastEncode {
    core: Py<Tokenizer>,
    /// `permitted` of the default policy: the special tokens' text refused
    /// when there are special tokens
    refuse: Option<Allowed>,
    /// the Python `encode` and `count` (none once cleared by the collector)
    fallbacks: Option<[Py<PyAny>; 2]>,
}

impl FastEncode {
    /// The policy of a call the fast path takes, as `Tokenizer._policy`
    /// gives it; `None` for the others.
    fn policy(&self, allowed: &Given<'_>, disallowed: &Given<'_>) -> PyResult<Option<(Allowed, Option<Allowed>)>> {
        if let Given::Is(a) = allowed {
            if a.is_truthy()? {
                return Ok(None);
            }
        }
        let refuse = || Some((Allowed::None, self.refuse.clone()));
        Ok(match disallowed {
            Given::Absent => refuse(),
            Given::Is(d) if !d.is_truthy()? => Some((Allowed::None, None)),
            Given::Is(d) => match d.cast_exact::<PyString>() {
                Ok(s) if s.to_str()? == "all" => refuse(),
                _ => None,
            },
        })
    }

    /// The ids of a call the fast path takes and that succeeds, else the
    /// Python method `which` (0: `encode`, 1: `count`) called as given.
    fn call<'py>(
        &self,
        py: Python<'py>,
        which: usize,
        text: &Bound<'py, PyAny>,
        allowed_special: Given<'py>,
        disallowed_special: Given<'py>,
        add_special_tokens: bool,
    ) -> PyResult<Result<Vec<u32>, Bound<'py, PyAny>>> {
        if let (Ok(s), Some((allowed, permitted))) = (
            text.cast_exact::<PyString>(),
            self.policy(&allowed_special, &disallowed_special)?,
        ) {
            // (an error, such as a special token's text or a lone
            // surrogate, is the Python method's to raise or to mend)
            if let Ok(ids) = self.core.get().ids_with(py, s, allowed, permitted, add_special_tokens) {
                return Ok(Ok(ids));
            }
        }
        let Some(fallbacks) = &self.fallbacks else {
            return Err(PyRuntimeError::new_err("the tokenizer of this call is gone"));
        };
        let kwargs = PyDict::new(py);
        if let Given::Is(a) = allowed_special {
            kwargs.set_item("allowed_special", a)?;
        }
        if let Given::Is(d) = disallowed_special {
            kwargs.set_item("disallowed_special", d)?;
        }
        kwargs.set_item("add_special_tokens", add_special_tokens)?;
        Ok(Err(fallbacks[which].bind(py).call((text,), Some(&kwargs))?))
    }
}

#[pymethods]
impl FastEncode {
    #[new]
    fn new(core: Py<Tokenizer>, has_specials: bool, encode: Py<PyAny>, count: Py<PyAny>) -> PyResult<Self> {
        guarded(|| {
            Ok(FastEncode {
                core,
                refuse: has_specials.then_some(Allowed::None),
                fallbacks: Some([encode, count]),
            })
        })
    }

    /// Token ids of ``text``.
    ///
    /// Text that spells a special token is refused (``DisallowedSpecialTokenError``)
    /// unless ``allowed_special`` names it (or is ``"all"``), which encodes it as the
    /// special token, or ``disallowed_special=()``, which encodes it as ordinary text.
    /// ``add_special_tokens`` lets the post-processor add its tokens (BOS, CLS/SEP …)
    /// when the tokenizer has one.
    #[pyo3(signature = (text, *, allowed_special = Given::Absent, disallowed_special = Given::Absent, add_special_tokens = true), text_signature = "($self, text, *, allowed_special=(), disallowed_special='all', add_special_tokens=True)")]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
        allowed_special: Given<'py>,
        disallowed_special: Given<'py>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(
            || match self.call(py, 0, text, allowed_special, disallowed_special, add_special_tokens)? {
                Ok(ids) => Ok(self.core.get().id_list(py, &ids)?.into_any()),
                Err(done) => Ok(done),
            },
        )
    }

    /// Number of tokens of ``text`` (the arguments as for ``encode``).
    #[pyo3(signature = (text, *, allowed_special = Given::Absent, disallowed_special = Given::Absent, add_special_tokens = true), text_signature = "($self, text, *, allowed_special=(), disallowed_special='all', add_special_tokens=True)")]
    fn count<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
        allowed_special: Given<'py>,
        disallowed_special: Given<'py>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(
            || match self.call(py, 1, text, allowed_special, disallowed_special, add_special_tokens)? {
                Ok(ids) => Ok(ids.len().into_pyobject(py)?.into_any()),
                Err(done) => Ok(done),
            },
        )
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.core)?;
        for f in self.fallbacks.iter().flatten() {
            visit.call(f)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.fallbacks = None;
    }
}

#[pyclass(frozen, module = "tokensmith._core")]
struct Tokenizer {
    inner: Arc<CoreTokenizer>,
    /// A Python int for every id: results are lists of ints, and making an
    /// int costs more than encoding its token. Made once the lists given
    /// out hold as many ids as the vocabulary (`listed`), so that it costs at
    /// most the ints it saves (a 200K vocabulary's take 8 MB: a tokenizer
    /// used for a few short texts does without).
    ints: pyo3::sync::PyOnceLock<IdInts>,
    /// Ids given out as lists before `ints` was made.
    listed: std::sync::atomic::AtomicUsize,
    /// Ids per 1024 characters of a batch's strings stored one byte a
    /// character, and of the others (CJK text), as the last big batch had
    /// them: how much room a batch's ids get (see `batch_ids`).
    rates: [std::sync::atomic::AtomicU32; 2],
}

/// The ints `0..n` as Python objects: the list that owns them and their addresses.
struct IdInts {
    _owner: Py<PyList>,
    ptrs: Vec<usize>,
}

impl Tokenizer {
    fn wrap(t: CoreTokenizer) -> Self {
        use std::sync::atomic::AtomicU32;
        Tokenizer {
            inner: Arc::new(t),
            ints: pyo3::sync::PyOnceLock::new(),
            listed: std::sync::atomic::AtomicUsize::new(0),
            // (to start with: English has about 1 id per 4 bytes, Chinese
            // about 1 a character)
            rates: [AtomicU32::new(1024 / 3), AtomicU32::new(1024)],
        }
    }

    /// The ids of one text, the policy arguments parsed (for `encode`,
    /// `encode_flat` and `count`).
    fn ids_of(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
    ) -> PyResult<Vec<u32>> {
        let allowed = parse_allowed(allowed)?;
        let permitted = parse_permitted(permitted)?;
        self.ids_with(py, text, allowed, permitted, add_special_tokens)
    }

    /// `ids_of` with the policy parsed.
    fn ids_with(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        allowed: Allowed,
        permitted: Option<Allowed>,
        add_special_tokens: bool,
    ) -> PyResult<Vec<u32>> {
        let encode = |t: &str| self.inner.encode(t, &allowed, permitted.as_ref(), add_special_tokens);
        // SAFETY: `text` (borrowed for this whole call) keeps its string alive.
        let raw = unsafe { RawText::of(text)? };
        let done = unlocked(py, raw.len(), || {
            let mut buf = String::new();
            raw.utf8(&mut buf).map(encode)
        });
        match done {
            Ok(ids) => ids.map_err(err),
            // a lone surrogate: CPython raises its UnicodeEncodeError
            Err(_) => encode(text.to_str()?).map_err(err),
        }
    }

    /// The ids of each text of a batch, on `num_threads` threads (for
    /// `encode_batch` and `encode_batch_flat`): one vector, text after text
    /// (see `parallel::map_flat`).
    ///
    /// The strings' code units are read with the GIL held (a pointer and a
    /// length each, see `RawText`); their conversion to UTF-8 and their
    /// encoding run on the pool, the GIL let go.
    fn batch_ids(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyList>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
        num_threads: Option<usize>,
    ) -> PyResult<crate::parallel::Flat> {
        let allowed = parse_allowed(allowed)?;
        let permitted = parse_permitted(permitted)?;
        // (owned references: the strings outlive the pool's work even if the
        // list is changed meanwhile by another thread)
        let strings: Vec<Bound<'_, PyString>> = texts
            .iter()
            .map(|t| t.cast_into::<PyString>().map_err(PyErr::from))
            .collect::<PyResult<_>>()?;
        // SAFETY: `strings` keeps every string alive until this returns.
        let raws: Vec<RawText> = strings
            .iter()
            .map(|s| unsafe { RawText::of(s) })
            .collect::<PyResult<_>>()?;
        /// Why a text was not encoded.
        enum Failed {
            /// at this index, a string UTF-8 cannot hold
            Surrogate(usize),
            Encode(Error),
        }
        // Room for the ids: their number at the rates of the last batch big
        // enough to tell (too little costs a copy, too much a page fault
        // for each 4 KB between the two ends, see `map_flat`).
        use std::sync::atomic::Ordering::Relaxed;
        let mut units = [0usize; 2];
        for r in &raws {
            units[r.wide() as usize] += r.len();
        }
        let rate = |k: usize| self.rates[k].load(Relaxed) as usize;
        let guess = units[0]
            .saturating_mul(rate(0))
            .saturating_add(units[1].saturating_mul(rate(1)))
            / 1024;
        let guess = guess.saturating_add(guess / 8);
        let one = |buf: &mut String, i: usize, out: &mut Vec<u32>| -> Result<(), Failed> {
            let text = raws[i].utf8(buf).map_err(|_| Failed::Surrogate(i))?;
            self.inner
                .encode_append(text, &allowed, permitted.as_ref(), add_special_tokens, out)
                .map_err(Failed::Encode)
        };
        let done = py.detach(|| {
            let all = || crate::parallel::map_flat(num_threads, raws.len(), guess, String::new, one);
            if raws.len() == 1 {
                // one text, on the caller's thread (split on the pool when
                // it is big)
                return crate::parallel::install(num_threads, all);
            }
            all()
        });
        match done {
            Ok(flat) => {
                let mut ids = [0usize; 2];
                for (r, w) in raws.iter().zip(flat.offsets.windows(2)) {
                    ids[r.wide() as usize] += w[1] - w[0];
                }
                for k in 0..2 {
                    if units[k] >= 1 << 16 {
                        let r = (ids[k] as u64 * 1024 / units[k] as u64).clamp(1, 4 * 1024);
                        self.rates[k].store(r as u32, Relaxed);
                    }
                }
                Ok(flat)
            }
            Err(Failed::Encode(e)) => Err(err(e)),
            Err(Failed::Surrogate(i)) => {
                // CPython's UnicodeEncodeError for that string
                strings[i].to_str()?;
                Err(PyValueError::new_err("a text cannot be encoded as UTF-8"))
            }
        }
    }

    /// The cached int objects, once `ids` more ids make them worth it (see `ints`).
    fn int_table(&self, py: Python<'_>, ids: usize) -> PyResult<Option<&IdInts>> {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(t) = self.ints.get(py) {
            return Ok(Some(t));
        }
        let n = self.inner.vocab_size();
        if self.listed.fetch_add(ids, Relaxed).saturating_add(ids) < n {
            return Ok(None);
        }
        self.ints
            .get_or_try_init(py, || -> PyResult<IdInts> {
                let owner = PyList::new(py, 0..n as u32)?;
                let ptrs = owner.iter().map(|o| o.as_ptr() as usize).collect();
                Ok(IdInts {
                    _owner: owner.unbind(),
                    ptrs,
                })
            })
            .map(Some)
    }

    /// `ids` as a Python list of ints (the cached int objects, where there are).
    fn id_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        use pyo3::ffi;
        let table = self.int_table(py, ids.len())?;
        // SAFETY: with the GIL held, a new list of `ids.len()` slots, each set
        // exactly once (`PyList_SetItem` takes over the new reference); the
        // cached ints live as long as `table`, which outlives this call.
        unsafe {
            let list = ffi::PyList_New(ids.len() as ffi::Py_ssize_t);
            if list.is_null() {
                return Err(PyErr::fetch(py));
            }
            let list = Bound::from_owned_ptr(py, list);
            let ptrs: &[usize] = table.map_or(&[], |t| &t.ptrs);
            for (i, &id) in ids.iter().enumerate() {
                // The int objects of a vocabulary take megabytes, and each
                // id's is touched (its reference count): start loading the
                // table's entry 32 ids ahead and that object 16 ahead.
                if let Some(&ahead) = ids.get(i + 32) {
                    if let Some(slot) = ptrs.get(ahead as usize) {
                        crate::prefetch::prefetch(slot);
                    }
                }
                if let Some(&ahead) = ids.get(i + 16) {
                    if let Some(&p) = ptrs.get(ahead as usize) {
                        crate::prefetch::prefetch(&*(p as *const ffi::PyObject));
                    }
                }
                let obj = match ptrs.get(id as usize) {
                    Some(&p) => {
                        let p = p as *mut ffi::PyObject;
                        ffi::Py_INCREF(p);
                        p
                    }
                    None => {
                        let p = ffi::PyLong_FromUnsignedLong(id.into());
                        if p.is_null() {
                            return Err(PyErr::fetch(py));
                        }
                        p
                    }
                };
                // (the list is new and its slots empty: set, not replaced)
                #[cfg(not(Py_LIMITED_API))]
                ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, obj);
                #[cfg(Py_LIMITED_API)]
                ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, obj);
            }
            Ok(list.cast_into_unchecked())
        }
    }
}

/// A sequence of ids: a list of ints read directly, anything else the
/// general way (raising `TypeError` / `OverflowError` for a bad item).
fn extract_ids(ids: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    match crate::py_ids::ids_of_list(ids) {
        Some(v) => Ok(v),
        None => ids.extract(),
    }
}

#[pymethods]
impl Tokenizer {
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        guarded(|| {
            let t = py.detach(|| CoreTokenizer::from_json(text)).map_err(err)?;
            Ok(Tokenizer::wrap(t))
        })
    }

    /// Read and build a `tokenizer.json` file: its bytes never become a
    /// Python string (which would be converted back to UTF-8 and leave its
    /// megabytes freed on the heap behind the new tokenizer).
    #[staticmethod]
    fn from_json_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        guarded(|| {
            let data = py.detach(|| crate::huge_pages::plain(|| std::fs::read(&path)))?;
            let t = py.detach(|| -> crate::error::Result<CoreTokenizer> {
                let text = std::str::from_utf8(&data)
                    .map_err(|e| Error::Format(format!("not UTF-8 text at byte {}", e.valid_up_to())))?;
                if text.trim().is_empty() {
                    return Err(Error::Format("tokenizer.json is empty".into()));
                }
                CoreTokenizer::from_json(text)
            });
            drop(data);
            // the parsed file is freed behind the tokenizer: give it back (not
            // after every build: a rank file's load leaves little, and a trim
            // there cost cl100k's English batches 15-20%, cause not found yet)
            crate::huge_pages::release_free_memory();
            Ok(Tokenizer::wrap(t.map_err(err)?))
        })
    }

    /// Build from a trained model and the components, as `tokenizer.json` writes them.
    #[staticmethod]
    fn from_trained(trained: &TrainedBpe, components_json: &str, added_json: &str) -> PyResult<Self> {
        guarded(|| {
            let mut guard = trained
                .model
                .lock()
                .map_err(|_| PyRuntimeError::new_err("lock poisoned"))?;
            let model = guard
                .take()
                .ok_or_else(|| PyValueError::new_err("this trained model was already used"))?;
            assemble_trained(ModelKind::Bpe(model), components_json, added_json)
        })
    }

    /// Build from a trained PickyBPE model and the components, as
    /// `tokenizer.json` writes them.
    #[staticmethod]
    fn from_trained_picky(trained: &TrainedPicky, components_json: &str, added_json: &str) -> PyResult<Self> {
        guarded(|| {
            let model = trained.inner.to_model().map_err(err)?;
            assemble_trained(model, components_json, added_json)
        })
    }

    /// Build from the bytes of a SentencePiece `.model` file.
    #[staticmethod]
    fn from_sentencepiece(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        guarded(|| {
            let t = py
                .detach(|| crate::formats::sp_model::tokenizer_from_model_proto(data))
                .map_err(err)?;
            Ok(Tokenizer::wrap(t))
        })
    }

    /// The `n` best encodings (Unigram models) with their scores, best first.
    fn encode_nbest(&self, py: Python<'_>, text: &str, n: usize) -> PyResult<Vec<(Vec<u32>, f64)>> {
        guarded(|| {
            py.detach(|| crate::sampling::encode_nbest(&self.inner, text, n))
                .map_err(err)
        })
    }

    /// A sampled encoding (Unigram models), as sentencepiece's `SampleEncode`.
    fn sample_encode(&self, py: Python<'_>, text: &str, nbest_size: i32, alpha: f64, seed: u64) -> PyResult<Vec<u32>> {
        guarded(|| {
            py.detach(|| crate::sampling::sample_encode(&self.inner, text, nbest_size, alpha, seed))
                .map_err(err)
        })
    }

    /// Build from a tiktoken rank file (its bytes), a split regex and special tokens.
    #[staticmethod]
    fn from_tiktoken(py: Python<'_>, data: &[u8], pattern: &str, specials: Vec<(String, u32)>) -> PyResult<Self> {
        guarded(|| {
            let t = py
                .detach(|| CoreTokenizer::from_tiktoken(data, pattern, &specials))
                .map_err(err)?;
            Ok(Tokenizer::wrap(t))
        })
    }

    /// Build BERT's pipeline from the bytes of a `vocab.txt` and its options.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_vocab_txt(
        py: Python<'_>,
        data: &[u8],
        lowercase: bool,
        strip_accents: Option<bool>,
        tokenize_chinese_chars: bool,
        clean_text: bool,
        unk_token: String,
        sep_token: String,
        cls_token: String,
        pad_token: String,
        mask_token: String,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
    ) -> PyResult<Self> {
        guarded(|| {
            let options = crate::formats::vocab_txt::BertOptions {
                lowercase,
                strip_accents,
                tokenize_chinese_chars,
                clean_text,
                unk_token,
                sep_token,
                cls_token,
                pad_token,
                mask_token,
                continuing_subword_prefix,
                max_input_chars_per_word,
            };
            let t = py
                .detach(|| CoreTokenizer::from_vocab_txt(data, &options))
                .map_err(err)?;
            Ok(Tokenizer::wrap(t))
        })
    }

    /// Build a byte-level BPE from the bytes of `vocab.json` and `merges.txt`
    /// (`names`: theirs in error messages) and special tokens (`None`:
    /// `<|endoftext|>` when the vocabulary has it).
    #[staticmethod]
    fn from_vocab_merges(
        py: Python<'_>,
        vocab: &[u8],
        merges: &[u8],
        special_tokens: Option<Vec<String>>,
        names: (String, String),
    ) -> PyResult<Self> {
        guarded(|| {
            let names = crate::formats::vocab_merges::FileNames {
                vocab: &names.0,
                merges: &names.1,
            };
            let t = py
                .detach(|| CoreTokenizer::from_vocab_merges(vocab, merges, special_tokens.as_deref(), names))
                .map_err(err)?;
            Ok(Tokenizer::wrap(t))
        })
    }

    /// The model as tiktoken rank-file text (raises when it cannot be exact).
    fn to_tiktoken(&self, py: Python<'_>) -> PyResult<String> {
        guarded(|| {
            let t = self.inner.clone();
            py.detach(move || t.to_tiktoken()).map_err(err)
        })
    }

    /// The split regex, when the pre-tokenizer is one regex split.
    fn split_regex(&self) -> PyResult<Option<String>> {
        guarded(|| Ok(self.inner.split_regex()))
    }

    #[pyo3(signature = (pretty=true))]
    fn to_json(&self, py: Python<'_>, pretty: bool) -> PyResult<String> {
        guarded(|| {
            let t = self.inner.clone();
            py.detach(move || t.to_json(pretty)).map_err(err)
        })
    }

    #[pyo3(signature = (text, allowed, permitted=None, add_special_tokens=true))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let ids = self.ids_of(py, text, allowed, permitted, add_special_tokens)?;
            self.id_list(py, &ids)
        })
    }

    #[pyo3(signature = (text, allowed, permitted=None, add_special_tokens=true))]
    fn count(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
    ) -> PyResult<usize> {
        guarded(|| Ok(self.ids_of(py, text, allowed, permitted, add_special_tokens)?.len()))
    }

    #[pyo3(signature = (texts, allowed, permitted=None, add_special_tokens=true, num_threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyList>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let all = self.batch_ids(py, texts, allowed, permitted, add_special_tokens, num_threads)?;
            let lists = all
                .offsets
                .windows(2)
                .map(|w| self.id_list(py, &all.ids[w[0]..w[1]]))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, lists)
        })
    }

    /// The ids of one text as a little-endian u32 buffer (no Python int per token).
    #[pyo3(signature = (text, allowed, permitted=None, add_special_tokens=true))]
    fn encode_flat<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(|| {
            let ids = self.ids_of(py, text, allowed, permitted, add_special_tokens)?;
            ids_out(py, ids)
        })
    }

    /// A batch as flat little-endian buffers, without one Python int per token:
    /// (u32 ids, u64 document offsets into the ids, one more than the documents).
    #[pyo3(signature = (texts, allowed, permitted=None, add_special_tokens=true, num_threads=None))]
    fn encode_batch_flat<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyList>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
        num_threads: Option<usize>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyBytes>)> {
        guarded(|| {
            let all = self.batch_ids(py, texts, allowed, permitted, add_special_tokens, num_threads)?;
            let offs = PyBytes::new_with(py, all.offsets.len() * 8, |buf| {
                for (&n, out) in all.offsets.iter().zip(buf.chunks_exact_mut(8)) {
                    out.copy_from_slice(&(n as u64).to_le_bytes());
                }
                Ok(())
            })?;
            Ok((ids_out(py, all.ids)?, offs))
        })
    }

    /// Returns (ids, type_ids, offsets, special_tokens_mask, tokens); offsets are
    /// character offsets into the original strings.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (text, pair, allowed, permitted=None, add_special_tokens=true))]
    fn encode_full(
        &self,
        py: Python<'_>,
        text: &str,
        pair: Option<&str>,
        allowed: &Bound<'_, PyAny>,
        permitted: Option<&Bound<'_, PyAny>>,
        add_special_tokens: bool,
    ) -> PyResult<(Vec<u32>, Vec<u32>, Vec<(usize, usize)>, Vec<u8>, Vec<String>)> {
        guarded(|| {
            let allowed = parse_allowed(allowed)?;
            let permitted = parse_permitted(permitted)?;
            let e = py
                .detach(|| {
                    self.inner
                        .encode_full(text, pair, &allowed, permitted.as_ref(), add_special_tokens)
                })
                .map_err(err)?;
            Ok((e.ids, e.type_ids, e.offsets, e.special_mask, e.tokens))
        })
    }

    #[pyo3(signature = (ids, skip_special_tokens=false))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        skip_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyString>> {
        guarded(|| {
            // a list of ints: each token copied as its id is read (the GIL
            // stays held, the list being read throughout)
            if let Some(mut list) = crate::py_ids::ListIds::new(ids) {
                let mut bytes = Vec::new();
                if let Some(done) = self.inner.decode_raw(&mut list, skip_special_tokens, &mut bytes) {
                    if !list.failed {
                        done.map_err(err)?;
                        return crate::py_ids::str_from_utf8_lossy(py, &bytes);
                    }
                }
            }
            let ids = extract_ids(ids)?;
            let text = py
                .detach(|| self.inner.decode(&ids, skip_special_tokens))
                .map_err(err)?;
            Ok(PyString::new(py, &text))
        })
    }

    #[pyo3(signature = (batch, skip_special_tokens=false))]
    fn decode_batch(&self, py: Python<'_>, batch: Vec<Vec<u32>>, skip_special_tokens: bool) -> PyResult<Vec<String>> {
        guarded(|| {
            py.detach(|| {
                crate::parallel::install(None, || {
                    batch
                        .par_iter()
                        .map(|ids| self.inner.decode(ids, skip_special_tokens))
                        .collect::<crate::error::Result<Vec<_>>>()
                })
            })
            .map_err(err)
        })
    }

    fn decode_bytes<'py>(&self, py: Python<'py>, ids: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        guarded(|| {
            if let Some(mut list) = crate::py_ids::ListIds::new(ids) {
                let mut bytes = Vec::new();
                let done = self.inner.decode_bytes_into(&mut list, &mut bytes);
                if !list.failed {
                    done.map_err(err)?;
                    return Ok(PyBytes::new(py, &bytes));
                }
            }
            let ids = extract_ids(ids)?;
            let b = py.detach(|| self.inner.decode_bytes(&ids)).map_err(err)?;
            Ok(PyBytes::new(py, &b))
        })
    }

    fn id_to_token(&self, id: u32) -> PyResult<Option<String>> {
        guarded(|| Ok(self.inner.id_to_token(id)))
    }

    fn id_to_bytes<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Option<Bound<'py, PyBytes>>> {
        guarded(|| Ok(self.inner.id_to_bytes(id).map(|b| PyBytes::new(py, &b))))
    }

    fn token_to_id(&self, token: &str) -> PyResult<Option<u32>> {
        guarded(|| Ok(self.inner.token_to_id(token)))
    }

    #[getter]
    fn vocab_size(&self) -> PyResult<usize> {
        guarded(|| Ok(self.inner.vocab_size()))
    }

    #[getter]
    fn byte_level(&self) -> PyResult<bool> {
        guarded(|| Ok(self.inner.model.byte_level()))
    }

    /// The model type as `tokenizer.json` names it ("BPE", "WordPiece", ...).
    #[getter]
    fn model_type(&self) -> PyResult<&'static str> {
        guarded(|| Ok(self.inner.model.type_name()))
    }

    fn get_vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guarded(|| {
            let d = PyDict::new(py);
            for (id, tok) in self.inner.model.vocab_entries() {
                d.set_item(self.inner.model.token_string(tok), id)?;
            }
            for t in &self.inner.added.tokens {
                d.set_item(&t.content, t.id)?;
            }
            Ok(d)
        })
    }

    /// (content, id, special) for every added token.
    fn added_tokens(&self) -> PyResult<Vec<(String, u32, bool)>> {
        guarded(|| {
            let tokens = &self.inner.added.tokens;
            Ok(tokens.iter().map(|t| (t.content.clone(), t.id, t.special)).collect())
        })
    }

    /// Merges as pairs of token strings, in rank order.
    fn merges(&self) -> PyResult<Vec<(String, String)>> {
        guarded(|| {
            let Some(m) = self.inner.model.as_bpe() else {
                return Ok(Vec::new());
            };
            Ok(m.merges_in_order()
                .into_iter()
                .map(|(a, b)| (m.id_to_string(a), m.id_to_string(b)))
                .collect())
        })
    }
}

/// The pipeline around a trained model (see `Tokenizer::from_trained`).
fn assemble_trained(model: ModelKind, components_json: &str, added_json: &str) -> PyResult<Tokenizer> {
    let comps: serde_json::Value =
        serde_json::from_str(components_json).map_err(|e| err(Error::Format(format!("components: {e}"))))?;
    let get = |k: &str| comps.get(k).cloned().unwrap_or(serde_json::Value::Null);
    let de = |k: &str| -> PyResult<serde_json::Value> { Ok(get(k)) };
    let normalizer: Option<Normalizer> =
        serde_json::from_value(de("normalizer")?).map_err(|e| err(Error::Format(format!("normalizer: {e}"))))?;
    let pre: Option<PreTokenizer> =
        serde_json::from_value(de("pre_tokenizer")?).map_err(|e| err(Error::Format(format!("pre_tokenizer: {e}"))))?;
    let post = serde_json::from_value(de("post_processor")?)
        .map_err(|e| err(Error::Format(format!("post_processor: {e}"))))?;
    let decoder = serde_json::from_value(de("decoder")?).map_err(|e| err(Error::Format(format!("decoder: {e}"))))?;
    let added: Vec<AddedToken> =
        serde_json::from_str(added_json).map_err(|e| err(Error::Format(format!("added_tokens: {e}"))))?;
    let mut model = model;
    // as `tokenizers` trainers do, special tokens are in the model vocabulary too
    for t in &added {
        model.push_token(t.content.as_bytes(), t.id);
    }
    if let Some(unk) = comps.get("unk_token").and_then(|v| v.as_str()) {
        model.set_unk(unk);
    }
    let t = CoreTokenizer::new(normalizer, pre, model, post, decoder, added).map_err(err)?;
    Ok(Tokenizer::wrap(t))
}

/// A PickyBPE training's result (see `trainers::picky`).
#[pyclass(module = "tokensmith._core")]
struct TrainedPicky {
    inner: crate::trainers::picky::TrainedPicky,
}

#[pymethods]
impl TrainedPicky {
    /// The events in order: ("merge", left, right, count) and
    /// ("remove", token, parts, IoS, index of the triggering merge event),
    /// tokens as bytes.
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        use crate::trainers::picky::Event;
        guarded(|| {
            let tok = |i: u32| PyBytes::new(py, &self.inner.tokens[i as usize]);
            let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(self.inner.events.len());
            for e in &self.inner.events {
                items.push(match e {
                    Event::Merge { left, right, count, .. } => {
                        ("merge", tok(*left), tok(*right), *count).into_pyobject(py)?.into_any()
                    }
                    Event::Remove {
                        token,
                        parts,
                        ios,
                        merge,
                    } => {
                        let parts: Vec<Bound<'py, PyBytes>> = parts.iter().map(|&p| tok(p)).collect();
                        ("remove", tok(*token), parts, *ios, *merge)
                            .into_pyobject(py)?
                            .into_any()
                    }
                });
            }
            PyList::new(py, items)
        })
    }

    /// The tokens of the vocabulary, the 256 bytes included (no special tokens).
    #[getter]
    fn vocab_len(&self) -> PyResult<usize> {
        guarded(|| Ok(self.inner.vocab_len()))
    }

    #[getter]
    fn removals(&self) -> PyResult<usize> {
        guarded(|| Ok(self.inner.removals()))
    }

    /// Whether training stopped at its guard (`MAX_MERGES_PER_SLOT` merges
    /// per slot) rather than with a full vocabulary or no pair left.
    #[getter]
    fn stopped_by_guard(&self) -> PyResult<bool> {
        guarded(|| Ok(self.inner.stopped_by_guard))
    }
}

#[pyclass(module = "tokensmith._core")]
struct TrainedBpe {
    model: std::sync::Mutex<Option<Bpe>>,
    merges: Vec<(u32, u32, u32, u64)>,
    #[pyo3(get)]
    alphabet_size: usize,
}

#[pymethods]
impl TrainedBpe {
    /// (left id, right id, new id, count) per merge, in order.
    fn merges(&self) -> PyResult<Vec<(u32, u32, u32, u64)>> {
        guarded(|| Ok(self.merges.clone()))
    }
}

#[pyclass(module = "tokensmith._core")]
struct WordCounter_ {
    inner: WordCounter,
}

#[pymethods]
impl WordCounter_ {
    #[new]
    fn new(components_json: &str) -> PyResult<Self> {
        guarded(|| {
            let comps: serde_json::Value =
                serde_json::from_str(components_json).map_err(|e| err(Error::Format(format!("components: {e}"))))?;
            let normalizer: Option<Normalizer> =
                serde_json::from_value(comps.get("normalizer").cloned().unwrap_or_default())
                    .map_err(|e| err(Error::Format(format!("normalizer: {e}"))))?;
            let pre: Option<PreTokenizer> =
                serde_json::from_value(comps.get("pre_tokenizer").cloned().unwrap_or_default())
                    .map_err(|e| err(Error::Format(format!("pre_tokenizer: {e}"))))?;
            let by_lines = comps.get("lines").and_then(|v| v.as_bool()).unwrap_or(false);
            // where SentencePiece's sentences may be cut ("before"/"after" a space)
            let space_cut = match comps.get("space_cut").and_then(|v| v.as_str()) {
                Some("before") => Some(true),
                Some("after") => Some(false),
                _ => None,
            };
            Ok(WordCounter_ {
                inner: if by_lines {
                    WordCounter::by_lines(normalizer, pre, space_cut)
                } else {
                    WordCounter::new(normalizer, pre)
                },
            })
        })
    }

    fn feed(&mut self, py: Python<'_>, texts: Vec<String>) -> PyResult<()> {
        guarded(|| {
            let inner = &mut self.inner;
            py.detach(|| {
                let refs: Vec<&str> = texts.iter().map(|s| s.as_str()).collect();
                inner.feed_texts(&refs)
            })
            .map_err(err)
        })
    }

    fn feed_file(&mut self, py: Python<'_>, path: &str, errors: &str) -> PyResult<u64> {
        guarded(|| {
            let policy = error_policy(errors)?;
            let inner = &mut self.inner;
            py.detach(|| inner.feed_file(path, policy)).map_err(err)
        })
    }

    /// Count bytes `start..end` of a text file (parts cut at `safe_cut`).
    fn feed_file_range(&mut self, py: Python<'_>, path: &str, start: u64, end: u64, errors: &str) -> PyResult<u64> {
        guarded(|| {
            let policy = error_policy(errors)?;
            let inner = &mut self.inner;
            py.detach(|| inner.feed_file_range(path, start, end, policy))
                .map_err(err)
        })
    }

    /// A safe cut of `data` near `limit` for this pipeline, or None.
    fn safe_cut(&self, data: &[u8], limit: usize) -> PyResult<Option<usize>> {
        guarded(|| Ok(self.inner.safe_cut(data, limit)))
    }

    #[getter]
    fn distinct(&self) -> PyResult<usize> {
        guarded(|| Ok(self.inner.counts.len()))
    }

    #[getter]
    fn bytes_seen(&self) -> PyResult<u64> {
        guarded(|| Ok(self.inner.bytes_seen))
    }

    /// The sum of all counts (pieces counted, repeats included).
    #[getter]
    fn total(&self) -> PyResult<u64> {
        guarded(|| Ok(self.inner.counts.values().fold(0u64, |a, &c| a.saturating_add(c))))
    }

    /// Add counts of pieces (as `(bytes, count)`) and the bytes they came from.
    fn add_counts(&mut self, items: Vec<(Vec<u8>, u64)>, bytes_seen: u64) -> PyResult<()> {
        guarded(|| {
            for (piece, count) in items {
                let slot = self.inner.counts.entry(piece).or_insert(0);
                *slot = slot
                    .checked_add(count)
                    .ok_or_else(|| err(Error::Config("a count passes 2^64 - 1".into())))?;
            }
            self.inner.bytes_seen = self.inner.bytes_seen.saturating_add(bytes_seen);
            Ok(())
        })
    }

    /// Add every count of `other` (counted with the same pipeline) to these.
    fn absorb(&mut self, py: Python<'_>, other: PyRef<'_, WordCounter_>) -> PyResult<()> {
        guarded(|| {
            let theirs = &other.inner;
            let mine = &mut self.inner;
            py.detach(|| {
                mine.counts.reserve(theirs.counts.len());
                for (piece, &count) in &theirs.counts {
                    let slot = mine.counts.entry(piece.clone()).or_insert(0);
                    *slot = slot
                        .checked_add(count)
                        .ok_or_else(|| Error::Config("a count passes 2^64 - 1 when counts are added".into()))?;
                }
                mine.bytes_seen = mine.bytes_seen.saturating_add(theirs.bytes_seen);
                Ok(())
            })
            .map_err(err)
        })
    }

    /// Keep the pieces seen at least `min_count` times and, of those, the `top`
    /// most frequent (ties: smaller bytes first).
    #[pyo3(signature = (min_count, top=None))]
    fn retain(&mut self, py: Python<'_>, min_count: u64, top: Option<usize>) -> PyResult<()> {
        guarded(|| {
            let counts = &mut self.inner.counts;
            py.detach(|| {
                counts.retain(|_, c| *c >= min_count);
                if let Some(top) = top.filter(|&t| t < counts.len()) {
                    let mut v: Vec<(Vec<u8>, u64)> = counts.drain().collect();
                    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                    v.truncate(top);
                    counts.extend(v);
                }
            });
            Ok(())
        })
    }

    /// Write the counts to `path` (see `trainers::counts_file`) under `header`.
    fn save_counts(&self, py: Python<'_>, path: &str, header: &str) -> PyResult<()> {
        guarded(|| {
            let counts = &self.inner.counts;
            py.detach(|| crate::trainers::counts_file::write(path, header, counts))
                .map_err(err)
        })
    }

    /// Add up sorted counts files (spilled runs) in one pass, keeping the pieces
    /// whose total reaches `min_count`.
    fn merge_runs(&mut self, py: Python<'_>, paths: Vec<String>, min_count: u64) -> PyResult<()> {
        guarded(|| {
            let counts = &mut self.inner.counts;
            py.detach(|| crate::trainers::counts_file::merge_runs(&paths, min_count, counts))
                .map_err(err)
        })
    }

    /// An estimate of the memory the table of pieces takes, in bytes.
    #[getter]
    fn table_bytes(&self) -> PyResult<usize> {
        guarded(|| {
            let counts = &self.inner.counts;
            // (a bucket holds the key's Vec and the count, 32 bytes, plus a control
            // byte; each key's bytes are a heap block of their own)
            let keys: usize = counts.keys().map(|k| k.len().div_ceil(16) * 16 + 16).sum();
            Ok(counts.capacity() * 33 + keys)
        })
    }

    /// Add the counts of the file at `path`; returns its header.
    fn load_counts(&mut self, py: Python<'_>, path: &str) -> PyResult<String> {
        guarded(|| {
            let counts = &mut self.inner.counts;
            py.detach(|| crate::trainers::counts_file::read_into(path, counts))
                .map_err(err)
        })
    }

    /// The most frequent pieces, for inspection.
    fn most_common<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let mut v: Vec<(&Vec<u8>, &u64)> = self.inner.counts.iter().collect();
            v.sort_unstable_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let items: Vec<(Bound<'py, PyBytes>, u64)> =
                v.into_iter().take(n).map(|(k, c)| (PyBytes::new(py, k), *c)).collect();
            PyList::new(py, items)
        })
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (vocab_size, min_frequency, max_token_length, byte_level, continuing_subword_prefix, end_of_word_suffix, limit_alphabet, trace, callback=None))]
    fn train_bpe(
        &self,
        py: Python<'_>,
        vocab_size: usize,
        min_frequency: u64,
        max_token_length: Option<usize>,
        byte_level: bool,
        continuing_subword_prefix: Option<String>,
        end_of_word_suffix: Option<String>,
        limit_alphabet: Option<usize>,
        trace: usize,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<TrainedBpe> {
        guarded(|| {
            let cfg = BpeTrainerConfig {
                vocab_size,
                min_frequency,
                max_token_length,
                byte_level,
                continuing_subword_prefix,
                end_of_word_suffix,
                limit_alphabet,
                trace,
                character_coverage: None,
                sp_rules: None,
            };
            let counts = &self.inner.counts;
            let t = with_events(py, callback, |on_event| bpe_trainer::train(counts, &cfg, on_event))?;
            Ok(TrainedBpe {
                model: std::sync::Mutex::new(Some(t.model)),
                merges: t.merges,
                alphabet_size: t.alphabet_size,
            })
        })
    }

    /// PickyBPE (see `trainers::picky`): byte-level merges, and removals of
    /// the parts whose IoS reaches `threshold`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (vocab_size, min_frequency, max_token_length, threshold, trace, callback=None))]
    fn train_picky_bpe(
        &self,
        py: Python<'_>,
        vocab_size: usize,
        min_frequency: u64,
        max_token_length: Option<usize>,
        threshold: f64,
        trace: usize,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<TrainedPicky> {
        guarded(|| {
            let cfg = crate::trainers::picky::PickyConfig {
                vocab_size,
                min_frequency,
                max_token_length,
                threshold,
                trace,
            };
            let counts = &self.inner.counts;
            let inner = with_events(py, callback, |on_event| {
                crate::trainers::picky::train(counts, &cfg, on_event)
            })?;
            Ok(TrainedPicky { inner })
        })
    }

    /// BPE continued on top of `tokenizer`'s model (see
    /// `trainers::continued`): (new characters as (id, bytes), merges as
    /// (left id, right id, new id, count, token bytes)). `protect`: pieces
    /// counted from text whose ids must not change. `sp_rules` is
    /// SentencePiece's (max_piece_length, split_by_unicode_script,
    /// split_by_number, split_digits, treat_whitespace_as_suffix,
    /// allow_whitespace_only_pieces).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (tokenizer, new_tokens, min_frequency, max_token_length, byte_level, continuing_subword_prefix, end_of_word_suffix, foreign, character_coverage, sp_rules, trace, callback=None, protect=None, scripts=Vec::new()))]
    fn continue_bpe<'py>(
        &self,
        py: Python<'py>,
        tokenizer: &Tokenizer,
        new_tokens: usize,
        min_frequency: u64,
        max_token_length: Option<usize>,
        byte_level: bool,
        continuing_subword_prefix: Option<String>,
        end_of_word_suffix: Option<String>,
        foreign: Vec<u32>,
        character_coverage: f64,
        sp_rules: Option<(usize, bool, bool, bool, bool, bool)>,
        trace: usize,
        callback: Option<Py<PyAny>>,
        protect: Option<PyRef<'py, WordCounter_>>,
        scripts: Vec<(u32, u32)>,
    ) -> PyResult<(
        Vec<(u32, Bound<'py, PyBytes>)>,
        Vec<(u32, u32, u32, u64, Bound<'py, PyBytes>)>,
    )> {
        guarded(|| {
            use crate::trainers::continued::{continue_training, ContinueConfig};
            let cfg = ContinueConfig {
                new_tokens,
                min_frequency,
                max_token_length,
                byte_level,
                continuing_subword_prefix,
                end_of_word_suffix,
                foreign: foreign.into_iter().collect(),
                character_coverage,
                sp_rules: sp_rules.map(|r| crate::trainers::sp_common::PieceRules {
                    max_piece_length: r.0,
                    split_by_unicode_script: r.1,
                    split_by_number: r.2,
                    split_digits: r.3,
                    treat_whitespace_as_suffix: r.4,
                    allow_whitespace_only_pieces: r.5,
                }),
                trace,
                protected: protect
                    .map(|p| p.inner.counts.keys().cloned().collect())
                    .unwrap_or_default(),
                scripts,
            };
            let core = tokenizer.inner.clone();
            let counts = &self.inner.counts;
            let t = with_events(py, callback, |on_event| {
                continue_training(&core.model, core.vocab_size(), counts, &cfg, on_event)
            })?;
            let symbols = t.new_symbols.iter().map(|(id, b)| (*id, PyBytes::new(py, b))).collect();
            let merges = t
                .merges
                .iter()
                .map(|&(a, b, n, c)| (a, b, n, c, PyBytes::new(py, &t.tokens[n as usize])))
                .collect();
            Ok((symbols, merges))
        })
    }

    /// WordPiece by likelihood: (the vocabulary's tokens in id order, the
    /// alphabet size, the number of merges).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (vocab_size, min_frequency, limit_alphabet, continuing_subword_prefix, max_input_chars_per_word, trace, callback=None, score="likelihood", candidates=None))]
    fn train_wordpiece(
        &self,
        py: Python<'_>,
        vocab_size: usize,
        min_frequency: u64,
        limit_alphabet: Option<usize>,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
        trace: usize,
        callback: Option<Py<PyAny>>,
        score: &str,
        candidates: Option<usize>,
    ) -> PyResult<(Vec<String>, usize, usize)> {
        guarded(|| {
            use crate::trainers::wordpiece::Score;
            let score = match score {
                "likelihood" => Score::Likelihood,
                "ratio" => Score::Ratio,
                "frequency" => Score::Frequency,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "score must be 'likelihood', 'ratio' or 'frequency', not {other:?}"
                    )))
                }
            };
            let cfg = crate::trainers::wordpiece::WordPieceTrainerConfig {
                vocab_size,
                min_frequency,
                limit_alphabet,
                continuing_subword_prefix,
                max_input_chars_per_word,
                trace,
                score,
                candidates,
            };
            let counts = &self.inner.counts;
            // what counting left free (its parts' buffers, kept for reuse)
            // and what the trainer frees go back before the next step
            // allocates: they would add to the peak
            crate::huge_pages::release_free_memory();
            let t = with_events(py, callback, |on_event| {
                crate::trainers::wordpiece::train(counts, &cfg, on_event)
            });
            crate::huge_pages::release_free_memory();
            let t = t?;
            Ok((t.vocabulary(), t.alphabet_size, t.merges.len()))
        })
    }

    /// SentencePiece-style BPE over the counted words (characters, no
    /// prefix or suffix; merges only into valid pieces): (the alphabet, the
    /// merged pieces in merge order with their counts).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (vocab_size, character_coverage, max_piece_length, split_by_unicode_script, split_by_number, split_digits, treat_whitespace_as_suffix, allow_whitespace_only_pieces, trace, callback=None))]
    fn train_sentencepiece_bpe(
        &self,
        py: Python<'_>,
        vocab_size: usize,
        character_coverage: f64,
        max_piece_length: usize,
        split_by_unicode_script: bool,
        split_by_number: bool,
        split_digits: bool,
        treat_whitespace_as_suffix: bool,
        allow_whitespace_only_pieces: bool,
        trace: usize,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<(Vec<String>, Vec<(String, u64)>)> {
        guarded(|| {
            let cfg = BpeTrainerConfig {
                vocab_size,
                min_frequency: 0,
                max_token_length: None,
                byte_level: false,
                continuing_subword_prefix: None,
                end_of_word_suffix: None,
                limit_alphabet: None,
                trace,
                character_coverage: Some(character_coverage),
                sp_rules: Some(crate::trainers::sp_common::PieceRules {
                    max_piece_length,
                    split_by_unicode_script,
                    split_by_number,
                    split_digits,
                    treat_whitespace_as_suffix,
                    allow_whitespace_only_pieces,
                }),
            };
            let counts = &self.inner.counts;
            let t = with_events(py, callback, |on_event| bpe_trainer::train(counts, &cfg, on_event))?;
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let mut alphabet: Vec<String> = t.tokens[..t.alphabet_size].iter().map(|b| text(b)).collect();
            crate::trainers::sp_common::order_by_frequency(counts, &mut alphabet);
            let merged = t
                .merges
                .iter()
                .map(|&(_, _, id, count)| (text(&t.tokens[id as usize]), count))
                .collect();
            Ok((alphabet, merged))
        })
    }

    /// Unigram (EM + pruning) over the counted words: (pieces with scores,
    /// best first; characters dropped by the coverage rule).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (vocab_size, character_coverage, max_piece_length, seed_size, shrinking_factor, num_sub_iterations, hard_vocab_limit, split_by_unicode_script, split_by_number, split_digits, treat_whitespace_as_suffix, allow_whitespace_only_pieces, callback=None))]
    fn train_unigram(
        &self,
        py: Python<'_>,
        vocab_size: usize,
        character_coverage: f64,
        max_piece_length: usize,
        seed_size: usize,
        shrinking_factor: f64,
        num_sub_iterations: usize,
        hard_vocab_limit: bool,
        split_by_unicode_script: bool,
        split_by_number: bool,
        split_digits: bool,
        treat_whitespace_as_suffix: bool,
        allow_whitespace_only_pieces: bool,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<(Vec<(String, f64)>, usize)> {
        guarded(|| {
            let cfg = crate::trainers::unigram::UnigramTrainerConfig {
                vocab_size,
                character_coverage,
                seed_size,
                shrinking_factor,
                num_sub_iterations,
                hard_vocab_limit,
                rules: crate::trainers::sp_common::PieceRules {
                    max_piece_length,
                    split_by_unicode_script,
                    split_by_number,
                    split_digits,
                    treat_whitespace_as_suffix,
                    allow_whitespace_only_pieces,
                },
            };
            let counts = &self.inner.counts;
            let t = with_events(py, callback, |on_event| {
                crate::trainers::unigram::train(counts, &cfg, on_event)
            })?;
            Ok((t.pieces, t.dropped_chars))
        })
    }
}

/// Parity-aware byte-level BPE over one counter per language (see
/// `trainers::parity`): (the trained model, per merge the index of the
/// language it was chosen for or None, per language the tokens measured at
/// the end). `measure` is "dev" (with one dev counter per language), "bytes"
/// or "lines" (with one line count per language).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pyfunction]
#[pyo3(signature = (train, dev, lines, measure, vocab_size, min_frequency, max_token_length, parity_start, trace, callback=None))]
fn train_parity_bpe(
    py: Python<'_>,
    train: Vec<PyRef<'_, WordCounter_>>,
    dev: Vec<PyRef<'_, WordCounter_>>,
    lines: Vec<u64>,
    measure: &str,
    vocab_size: usize,
    min_frequency: u64,
    max_token_length: Option<usize>,
    parity_start: usize,
    trace: usize,
    callback: Option<Py<PyAny>>,
) -> PyResult<(TrainedBpe, Vec<Option<usize>>, Vec<u64>)> {
    guarded(|| {
        use crate::trainers::parity::{Measure, ParityConfig};
        let measure = match measure {
            "dev" => Measure::Dev,
            "bytes" => Measure::Bytes,
            "lines" => Measure::Lines(lines),
            other => {
                return Err(err(Error::Config(format!(
                    "parity_measure must be 'dev', 'bytes' or 'lines', not {other:?}"
                ))))
            }
        };
        let cfg = ParityConfig {
            vocab_size,
            min_frequency,
            max_token_length,
            parity_start,
            trace,
            measure,
        };
        let train_counts: Vec<&rustc_hash::FxHashMap<Vec<u8>, u64>> = train.iter().map(|c| &c.inner.counts).collect();
        let dev_counts: Vec<&rustc_hash::FxHashMap<Vec<u8>, u64>> = dev.iter().map(|c| &c.inner.counts).collect();
        let t = with_events(py, callback, |on_event| {
            crate::trainers::parity::train(&train_counts, &dev_counts, &cfg, on_event)
        })?;
        Ok((
            TrainedBpe {
                model: std::sync::Mutex::new(Some(t.bpe.model)),
                merges: t.bpe.merges,
                alphabet_size: t.bpe.alphabet_size,
            },
            t.languages,
            t.tokens,
        ))
    })
}

/// Run a trainer without the GIL, passing its events to a Python callback
/// (which may interrupt it by raising).
fn with_events<T: Send>(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    run: impl FnOnce(&mut dyn FnMut(TrainEvent) -> crate::error::Result<()>) -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    let mut pending: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut on_event = |ev: TrainEvent| -> crate::error::Result<()> {
            let Some(cb) = &callback else { return Ok(()) };
            Python::attach(|py| {
                let r = match ev {
                    TrainEvent::Merge {
                        index,
                        left,
                        right,
                        new_id,
                        count,
                    } => cb.call1(
                        py,
                        (
                            "merge",
                            (index, PyBytes::new(py, left), PyBytes::new(py, right), new_id, count),
                        ),
                    ),
                    TrainEvent::LanguageMerge {
                        index,
                        left,
                        right,
                        new_id,
                        count,
                        language,
                    } => cb.call1(
                        py,
                        (
                            "merge",
                            (
                                index,
                                PyBytes::new(py, left),
                                PyBytes::new(py, right),
                                new_id,
                                count,
                                language,
                            ),
                        ),
                    ),
                    TrainEvent::Removal {
                        index,
                        token,
                        ios,
                        left,
                        right,
                        merge,
                    } => cb.call1(
                        py,
                        (
                            "removal",
                            (
                                index,
                                PyBytes::new(py, token),
                                ios,
                                PyBytes::new(py, left),
                                PyBytes::new(py, right),
                                merge,
                            ),
                        ),
                    ),
                    TrainEvent::Progress { done, total } => cb.call1(py, ("progress", (done, total))),
                    TrainEvent::Em {
                        round,
                        sub,
                        pieces,
                        objective,
                        tokens,
                    } => cb.call1(py, ("em", (round, sub, pieces, objective, tokens))),
                };
                r.and_then(|_| py.check_signals()).map(|_| ()).map_err(|e| {
                    pending = Some(e);
                    Error::Interrupted
                })
            })
        };
        run(&mut on_event)
    });
    match result {
        Ok(t) => Ok(t),
        Err(Error::Interrupted) => Err(pending.unwrap_or_else(|| PyRuntimeError::new_err("training interrupted"))),
        Err(e) => Err(err(e)),
    }
}

/// The JSON header of a word-counts file, without reading its entries.
#[pyfunction]
fn read_counts_header(path: &str) -> PyResult<String> {
    guarded(|| crate::trainers::counts_file::read_header(path).map_err(err))
}

/// The Unigram trainer's steps, one at a time (for tests against the Python reference).
#[pyfunction]
fn _unigram_seed(
    words: Vec<(String, u64)>,
    coverage: f64,
    max_len: usize,
    seed_size: usize,
) -> PyResult<Vec<(String, f64)>> {
    guarded(|| crate::trainers::unigram::steps::seed_pieces(&words, coverage, max_len, seed_size).map_err(err))
}

#[pyfunction]
fn _unigram_e_step(
    pieces: Vec<(String, f64)>,
    words: Vec<(String, u64)>,
    chars: &str,
) -> PyResult<(Vec<f64>, f64, u64)> {
    guarded(|| Ok(crate::trainers::unigram::steps::e_step_of(&pieces, &words, chars)))
}

#[pyfunction]
fn _unigram_m_step(pieces: Vec<(String, f64)>, expected: Vec<f64>, chars: &str) -> PyResult<Vec<(String, f64)>> {
    guarded(|| Ok(crate::trainers::unigram::steps::m_step_of(&pieces, &expected, chars)))
}

#[pyfunction]
fn _unigram_prune(
    pieces: Vec<(String, f64)>,
    words: Vec<(String, u64)>,
    chars: &str,
    target: usize,
    shrinking: f64,
) -> PyResult<Vec<(String, f64)>> {
    guarded(|| {
        Ok(crate::trainers::unigram::steps::prune_of(
            &pieces, &words, chars, target, shrinking,
        ))
    })
}

/// Compile a regex as tokenizer pipelines do; raises ConfigError when invalid.
#[pyfunction]
fn check_regex(pattern: &str) -> PyResult<()> {
    guarded(|| crate::pattern::compile_regex(pattern).map(|_| ()).map_err(err))
}

/// Map raw bytes to the GPT-2 byte-level alphabet and back.
#[pyfunction]
fn bytes_to_unicode(b: &[u8]) -> PyResult<String> {
    guarded(|| Ok(crate::bytelevel::bytes_to_string(b)))
}

/// Drop the thread pools in a forked child (their threads do not exist there).
#[pyfunction]
fn after_fork() -> PyResult<()> {
    guarded(|| {
        crate::parallel::after_fork();
        Ok(())
    })
}

/// The number of threads parallel calls use by default.
#[pyfunction]
fn default_threads() -> PyResult<usize> {
    guarded(|| Ok(crate::parallel::default_threads()))
}

/// The SIMD level kernels run at: `"scalar"`, `"avx2"` or `"avx512"` (the
/// level in force, `TOKENSMITH_SIMD` or `set_simd_level`, within what the CPU has).
#[pyfunction]
fn simd_level() -> PyResult<&'static str> {
    guarded(|| Ok(crate::simd::effective().name()))
}

/// Caps the SIMD level (`None`: the CPU's best) and returns the cap before.
/// Tokenizers built before may keep the strategy they chose; set it first.
#[pyfunction]
#[pyo3(signature = (level))]
fn set_simd_level(level: Option<&str>) -> PyResult<&'static str> {
    let parsed = match level {
        None => None,
        Some(name) => Some(crate::simd::Level::parse(name).ok_or_else(|| bad_simd_level(name))?),
    };
    guarded(|| Ok(crate::simd::set_level(parsed).name()))
}

fn bad_simd_level(name: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!(
        "{} must be one of scalar, avx2, avx512 (got {name:?})",
        crate::simd::ENV
    ))
}

/// The fields of one protobuf message (`formats::protobuf`), for Python's
/// `.model` reader: `(number, wire type, value, start, end)`, the value an
/// int (a varint, or the bits of a 64- or 32-bit value) or the bytes of a
/// length-delimited one, offsets counted from `base`. Errors name the field
/// under `where` (by the SentencePiece schema when `where` is a message of it);
/// the fields before the bad one are the error's `fields`.
#[pyfunction]
#[pyo3(signature = (data, r#where, base))]
fn proto_fields<'py>(py: Python<'py>, data: &[u8], r#where: &str, base: usize) -> PyResult<Bound<'py, PyList>> {
    guarded(|| {
        let schema = sp_schema::message_at(r#where);
        let (fields, bad) = py.detach(|| protobuf::split(data, base, r#where, schema));
        let rows = field_rows(py, &fields)?;
        match bad {
            None => Ok(rows),
            Some(e) => {
                let e = err(e);
                e.value(py).setattr("fields", rows)?;
                Err(e)
            }
        }
    })
}

/// The rows of `proto_fields`.
fn field_rows<'py>(py: Python<'py>, fields: &[Field]) -> PyResult<Bound<'py, PyList>> {
    let rows = fields.iter().map(|f| {
        let value = match f.value {
            Value::Varint(v) | Value::Fixed64(v) => v.into_pyobject(py)?.into_any(),
            Value::Fixed32(v) => v.into_pyobject(py)?.into_any(),
            Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        };
        (f.number, f.wire(), value, f.start, f.end).into_pyobject(py)
    });
    PyList::new(py, rows.collect::<PyResult<Vec<_>>>()?)
}

/// The schema of SentencePiece's `.model` (`formats::sp_schema`): message
/// name -> its fields as `(name, number, kind, repeated, default)`.
#[pyfunction]
fn sentencepiece_schema(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use DefaultValue as D;
    guarded(|| {
        let out = PyDict::new(py);
        for m in sp_schema::MESSAGES {
            let rows = m.fields.iter().map(|f| {
                let default = match f.default {
                    D::None => py.None().into_bound(py),
                    D::Str(s) => PyString::new(py, s).into_any(),
                    D::Bytes(b) => PyBytes::new(py, b).into_any(),
                    D::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
                    D::Int(i) => i.into_pyobject(py)?.into_any(),
                    D::Float(x) => x.into_pyobject(py)?.into_any(),
                };
                (f.name, f.number, f.kind.name(), f.repeated, default).into_pyobject(py)
            });
            out.set_item(m.name, PyList::new(py, rows.collect::<PyResult<Vec<_>>>()?)?)?;
        }
        Ok(out)
    })
}

/// Panics on purpose: the test of the panic boundary (`guarded`) calls it.
#[pyfunction]
fn _panic_for_test(message: &str) -> PyResult<()> {
    guarded(|| panic!("{message}"))
}

// (safe without the GIL: the shared core is immutable or behind locks and atomics,
// non-frozen classes are borrow-checked by pyo3, strings are read as immutable data,
// and the UTF-8 cache is not read when the GIL is disabled, see `RawText::of`)
#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if let Err(bad) = crate::simd::env_level() {
        return Err(bad_simd_level(&bad));
    }
    m.add_class::<Tokenizer>()?;
    m.add_class::<FastEncode>()?;
    #[cfg(all(not(Py_LIMITED_API), target_endian = "little"))]
    m.add_class::<IdBuffer>()?;
    m.add_class::<TrainedBpe>()?;
    m.add_class::<TrainedPicky>()?;
    m.add("WordCounter", m.py().get_type::<WordCounter_>())?;
    m.add_function(wrap_pyfunction!(read_counts_header, m)?)?;
    m.add_function(wrap_pyfunction!(check_regex, m)?)?;
    m.add_function(wrap_pyfunction!(train_parity_bpe, m)?)?;
    m.add_function(wrap_pyfunction!(_unigram_seed, m)?)?;
    m.add_function(wrap_pyfunction!(_unigram_e_step, m)?)?;
    m.add_function(wrap_pyfunction!(_unigram_m_step, m)?)?;
    m.add_function(wrap_pyfunction!(_unigram_prune, m)?)?;
    m.add_function(wrap_pyfunction!(bytes_to_unicode, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork, m)?)?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(set_simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(proto_fields, m)?)?;
    m.add_function(wrap_pyfunction!(sentencepiece_schema, m)?)?;
    Ok(())
}

/// `ids` as little-endian u32 bytes into `buf` (`4 * ids.len()` bytes).
#[cfg(not(all(not(Py_LIMITED_API), target_endian = "little")))]
fn put_le(buf: &mut [u8], ids: &[u32]) {
    for (out, id) in buf.chunks_exact_mut(4).zip(ids) {
        out.copy_from_slice(&id.to_le_bytes());
    }
}

/// The ids of an encode (or a batch) as a read-only buffer (Python's
/// buffer protocol) over the encoder's own vector: `numpy.frombuffer` makes an array of it
/// with no copy (a copy into a bytes object writes, and on first touch
/// faults in, a fresh megabyte for each megabyte of text). Little-endian
/// hosts, full ABI only (the limited API has no buffer protocol before
/// Python 3.11); elsewhere `encode_flat` and `encode_batch_flat` return
/// bytes.
#[cfg(all(not(Py_LIMITED_API), target_endian = "little"))]
#[pyclass(frozen, module = "tokensmith._core")]
struct IdBuffer {
    ids: Vec<u32>,
    /// `[len]` and `[4]`: the shape and strides a buffer request may ask for
    shape: [pyo3::ffi::Py_ssize_t; 1],
    strides: [pyo3::ffi::Py_ssize_t; 1],
}

#[cfg(all(not(Py_LIMITED_API), target_endian = "little"))]
impl IdBuffer {
    fn new(mut ids: Vec<u32>) -> Self {
        // (an encode reserves ahead: more than twice the room is given back)
        if ids.capacity() > 2 * ids.len() {
            ids.shrink_to_fit();
        }
        let n = ids.len() as pyo3::ffi::Py_ssize_t;
        IdBuffer {
            ids,
            shape: [n],
            strides: [4],
        }
    }
}

#[cfg(all(not(Py_LIMITED_API), target_endian = "little"))]
#[pymethods]
impl IdBuffer {
    /// # Safety
    /// Called by CPython with a `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        guarded(|| {
            use pyo3::ffi;
            if view.is_null() {
                return Err(pyo3::exceptions::PyBufferError::new_err("no view to fill"));
            }
            if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
                return Err(pyo3::exceptions::PyBufferError::new_err("token ids are read-only"));
            }
            let this = slf.get();
            // SAFETY: `view` is CPython's, valid for writing; the pointers put
            // in it point into `this`, which the view keeps alive through `obj`
            // (a new reference, released by CPython with the view), and is
            // frozen: the vector never changes or moves while it lives.
            unsafe {
                (*view).obj = slf.clone().into_any().into_ptr();
                (*view).buf = this.ids.as_ptr() as *mut std::os::raw::c_void;
                (*view).len = (this.ids.len() * 4) as ffi::Py_ssize_t;
                (*view).readonly = 1;
                (*view).itemsize = 4;
                (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                    c"I".as_ptr() as *mut std::os::raw::c_char
                } else {
                    std::ptr::null_mut()
                };
                (*view).ndim = 1;
                (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                    this.shape.as_ptr() as *mut ffi::Py_ssize_t
                } else {
                    std::ptr::null_mut()
                };
                (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                    this.strides.as_ptr() as *mut ffi::Py_ssize_t
                } else {
                    std::ptr::null_mut()
                };
                (*view).suboffsets = std::ptr::null_mut();
                (*view).internal = std::ptr::null_mut();
            }
            Ok(())
        })
    }
}

/// Ids as a little-endian u32 buffer. On a little-endian machine the bytes
/// object is made uninitialised and the ids copied in (`PyBytes::new_with`
/// would first zero it: a pass over megabytes for a big batch).
#[cfg(not(all(not(Py_LIMITED_API), target_endian = "little")))]
fn ids_bytes<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyBytes>> {
    let total = ids.len() * 4;
    if cfg!(target_endian = "big") {
        return PyBytes::new_with(py, total, |buf| {
            put_le(buf, ids);
            Ok(())
        });
    }
    use pyo3::ffi;
    // SAFETY: `PyBytes_FromStringAndSize(NULL, n)` returns a new bytes
    // object of `n` uninitialised bytes (or NULL with an exception set),
    // which nothing else references yet, so it may be written; exactly
    // `total` bytes are copied in, and the ids are in little-endian order
    // already (checked above).
    unsafe {
        let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), total as ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = Bound::from_owned_ptr(py, obj);
        let dst = ffi::PyBytes_AsString(obj.as_ptr()) as *mut u8;
        std::ptr::copy_nonoverlapping(ids.as_ptr() as *const u8, dst, total);
        Ok(obj.cast_into_unchecked())
    }
}

/// One text's ids as `encode_flat` returns them: an `IdBuffer` over them.
#[cfg(all(not(Py_LIMITED_API), target_endian = "little"))]
fn ids_out(py: Python<'_>, ids: Vec<u32>) -> PyResult<Bound<'_, PyAny>> {
    Ok(Bound::new(py, IdBuffer::new(ids))?.into_any())
}

/// `ids_out` where there is no `IdBuffer`: little-endian bytes.
#[cfg(not(all(not(Py_LIMITED_API), target_endian = "little")))]
fn ids_out(py: Python<'_>, ids: Vec<u32>) -> PyResult<Bound<'_, PyAny>> {
    Ok(ids_bytes(py, &ids)?.into_any())
}

/// Texts shorter than this are encoded holding the GIL: letting it go and
/// taking it back costs more than encoding them.
const UNLOCKED_BYTES: usize = 2048;

/// A `str`'s text as the GIL-free code can read it: the UTF-8 bytes CPython
/// already holds (a pure-ASCII string is its own UTF-8; a string may carry a
/// cached UTF-8 copy), else its code units, converted by `crate::utf8` where
/// the text is used (on the pool, for a batch) instead of by CPython with
/// the GIL held. A stable-ABI build (`abi3` feature) asks CPython for UTF-8.
#[derive(Clone, Copy)]
#[cfg_attr(Py_LIMITED_API, allow(dead_code))]
enum RawText {
    Utf8(*const u8, usize),
    Latin1(*const u8, usize),
    Ucs2(*const u16, usize),
    Ucs4(*const u32, usize),
}

// SAFETY: a `RawText` points into a str object, which never changes after
// it is made; whoever made the `RawText` keeps that object alive while it
// is used (see `RawText::of`), on whatever thread.
unsafe impl Send for RawText {}
// SAFETY: as for `Send`: the object it points into is immutable.
unsafe impl Sync for RawText {}

impl RawText {
    /// # Safety
    /// `s` must stay alive while the result (or text read from it) is used.
    unsafe fn of(s: &Bound<'_, PyString>) -> PyResult<RawText> {
        #[cfg(Py_LIMITED_API)]
        {
            let t = s.to_str()?;
            Ok(RawText::Utf8(t.as_ptr(), t.len()))
        }
        #[cfg(not(Py_LIMITED_API))]
        // SAFETY: `s` is a str (its type says so) and the GIL is held; a
        // compact string's data follows its header and lives as long as it.
        unsafe {
            use pyo3::ffi;
            let op = s.as_ptr();
            if ffi::PyUnicode_IS_COMPACT(op) == 0 {
                // (a legacy string of the old C API, before Python 3.12)
                let t = s.to_str()?;
                return Ok(RawText::Utf8(t.as_ptr(), t.len()));
            }
            let n = ffi::PyUnicode_GET_LENGTH(op) as usize;
            let data = ffi::PyUnicode_DATA(op);
            if ffi::PyUnicode_IS_ASCII(op) != 0 {
                return Ok(RawText::Utf8(data as *const u8, n));
            }
            // (with the GIL disabled another thread may be filling the cache)
            #[cfg(not(Py_GIL_DISABLED))]
            {
                let c = op as *const ffi::PyCompactUnicodeObject;
                if !(*c).utf8.is_null() {
                    return Ok(RawText::Utf8((*c).utf8 as *const u8, (*c).utf8_length as usize));
                }
            }
            Ok(match ffi::PyUnicode_KIND(op) {
                ffi::PyUnicode_1BYTE_KIND => RawText::Latin1(data as *const u8, n),
                ffi::PyUnicode_2BYTE_KIND => RawText::Ucs2(data as *const u16, n),
                _ => RawText::Ucs4(data as *const u32, n),
            })
        }
    }

    /// About how many bytes of UTF-8 the text has (at least its characters).
    fn len(&self) -> usize {
        match *self {
            RawText::Utf8(_, n) | RawText::Latin1(_, n) | RawText::Ucs2(_, n) | RawText::Ucs4(_, n) => n,
        }
    }

    /// Whether the string keeps two or four bytes a character.
    fn wide(&self) -> bool {
        matches!(self, RawText::Ucs2(..) | RawText::Ucs4(..))
    }

    /// The text: borrowed when it is UTF-8 already, else converted into `buf`.
    /// An error for a string UTF-8 cannot hold (a lone surrogate).
    fn utf8<'a>(&'a self, buf: &'a mut String) -> Result<&'a str, crate::utf8::NotEncodable> {
        use crate::utf8::{push_units, Units};
        // SAFETY: the pointers and lengths come from a live str object (see
        // `RawText::of`); UTF-8 that CPython holds is valid UTF-8.
        let units = unsafe {
            match *self {
                RawText::Utf8(p, n) => return Ok(std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, n))),
                RawText::Latin1(p, n) => Units::Latin1(std::slice::from_raw_parts(p, n)),
                RawText::Ucs2(p, n) => Units::Ucs2(std::slice::from_raw_parts(p, n)),
                RawText::Ucs4(p, n) => Units::Ucs4(std::slice::from_raw_parts(p, n)),
            }
        };
        buf.clear();
        push_units(units, buf)?;
        Ok(buf)
    }
}

/// `f()` with the GIL released when the text (`len` bytes) is long enough.
fn unlocked<T: pyo3::marker::Ungil>(py: Python<'_>, len: usize, f: impl FnOnce() -> T + pyo3::marker::Ungil) -> T {
    if len < UNLOCKED_BYTES {
        f()
    } else {
        py.detach(f)
    }
}
