//! With the Python extension: pyo3's configuration flags (such as
//! `Py_LIMITED_API` for a stable-ABI build), so that the bindings can tell
//! which of CPython's string internals they may read.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(Py_LIMITED_API)");
    println!("cargo:rustc-check-cfg=cfg(Py_GIL_DISABLED)");
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
