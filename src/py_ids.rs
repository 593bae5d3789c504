//! Ids in and text out at the Python boundary without a Python object or an
//! extraction call per item: decoding a megabyte of text reads a quarter of a
//! million ids, and pyo3's general sequence extraction costs more per id than
//! the copy of the token's bytes.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

/// The ids of a list of ints, read one by one as a consumer asks for them
/// (a decode copies each token as its id is read: one pass). Stops early,
/// with `failed` set, at an item that is not an exact int in `u32` range;
/// the caller then throws away what it made and extracts the general way,
/// which raises the error such an item deserves.
pub struct ListIds<'a, 'py> {
    list: &'a Bound<'py, PyList>,
    next: usize,
    len: usize,
    pub failed: bool,
}

impl<'a, 'py> ListIds<'a, 'py> {
    /// `None` unless `obj` is exactly a list.
    pub fn new(obj: &'a Bound<'py, PyAny>) -> Option<Self> {
        let list = obj.cast_exact::<PyList>().ok()?;
        Some(ListIds {
            list,
            next: 0,
            len: list.len(),
            failed: false,
        })
    }
}

impl Iterator for ListIds<'_, '_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.next >= self.len || self.failed {
            return None;
        }
        let item = list_item(self.list, self.next);
        self.next += 1;
        // SAFETY: `item` is a live object borrowed from the list (GIL held;
        // the consumer runs no Python code, so the list does not change).
        let value = unsafe {
            if ffi::PyLong_CheckExact(item) == 0 {
                self.failed = true;
                return None;
            }
            ffi::PyLong_AsUnsignedLong(item)
        };
        if value == std::ffi::c_ulong::MAX && PyErr::take(self.list.py()).is_some() {
            self.failed = true; // negative or wider than an unsigned long
            return None;
        }
        let id = u32::try_from(value).ok();
        self.failed = id.is_none();
        id
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ListIds<'_, '_> {}

/// The ids in `obj` when it is exactly a list of exact ints, each in `u32`
/// range; `None` for anything else (see [`ListIds`]).
pub fn ids_of_list(obj: &Bound<'_, PyAny>) -> Option<Vec<u32>> {
    let mut it = ListIds::new(obj)?;
    let ids: Vec<u32> = it.by_ref().collect();
    (!it.failed).then_some(ids)
}

/// Item `i` (< the list's length) of `list`, borrowed.
#[inline]
fn list_item(list: &Bound<'_, PyList>, i: usize) -> *mut ffi::PyObject {
    // SAFETY: `i` is below the list's length (the caller's loop bound; the
    // list cannot change while the GIL is held and no Python code runs), so
    // the slot holds a live object; the reference is borrowed, not owned.
    unsafe {
        #[cfg(not(Py_LIMITED_API))]
        let item = ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t);
        #[cfg(Py_LIMITED_API)]
        let item = ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t);
        item
    }
}

/// `bytes.decode("utf-8", "replace")`: CPython's own decoder (an ASCII fast
/// path, one pass) instead of a lossy conversion in Rust and a second
/// validation when the string is handed over. Both replace each maximal
/// ill-formed subsequence with one U+FFFD, as the Unicode standard
/// recommends, so the text is the same.
pub fn str_from_utf8_lossy<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the pointer and length describe `bytes`, alive for the call;
    // the error handler name is a NUL-terminated static string; a null
    // result means a Python error is set, which `fetch` takes.
    unsafe {
        let s = ffi::PyUnicode_DecodeUTF8(
            bytes.as_ptr().cast(),
            bytes.len() as ffi::Py_ssize_t,
            c"replace".as_ptr(),
        );
        if s.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, s).cast_into_unchecked())
    }
}
