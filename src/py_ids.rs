//! Ids in and text out at the Python boundary without a Python object or an
//! extraction call per item: decoding a megabyte of text reads a quarter of a
//! million ids, and pyo3's general sequence extraction costs more per id than
//! the copy of the token's bytes.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

/// The ids in `obj` when it is exactly a list of exact ints, each in `u32`
/// range; `None` for anything else (a tuple, a bool, a negative int, numpy
/// scalars): the caller then extracts the general way, which raises the
/// error such an item deserves.
pub fn ids_of_list(obj: &Bound<'_, PyAny>) -> Option<Vec<u32>> {
    let list = obj.cast_exact::<PyList>().ok()?;
    let n = list.len();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let item = list_item(list, i);
        // SAFETY: `item` is a live object borrowed from `list` (GIL held, no
        // Python code runs in this loop, so the list does not change).
        let value = unsafe {
            if ffi::PyLong_CheckExact(item) == 0 {
                return None;
            }
            ffi::PyLong_AsUnsignedLong(item)
        };
        if value == std::ffi::c_ulong::MAX && PyErr::take(obj.py()).is_some() {
            return None; // negative or wider than an unsigned long
        }
        ids.push(u32::try_from(value).ok()?);
    }
    Some(ids)
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
