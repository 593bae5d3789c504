//! Thread pools for the parallel paths (batches, big documents, training).
//!
//! tokensmith keeps its own rayon pools instead of the global one so that a
//! forked child process (multiprocessing, data loaders) can drop the parent's
//! pool, whose threads do not exist in the child, and start a fresh one.
//! The size comes from the call's `num_threads`, else `TOKENSMITH_NUM_THREADS`,
//! else `RAYON_NUM_THREADS`, else the number of cores.

use rayon::{ThreadPool, ThreadPoolBuilder};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

static POOLS: Mutex<Option<FxHashMap<usize, Arc<ThreadPool>>>> = Mutex::new(None);

/// The default number of threads.
pub fn default_threads() -> usize {
    for var in ["TOKENSMITH_NUM_THREADS", "RAYON_NUM_THREADS"] {
        if let Some(n) = std::env::var(var).ok().and_then(|v| v.trim().parse::<usize>().ok()) {
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The pool for a call's `num_threads` (default: [`default_threads`]), if
/// one can be made.
pub fn pool_for(threads: Option<usize>) -> Option<Arc<ThreadPool>> {
    pool(threads.filter(|&n| n > 0).unwrap_or_else(default_threads))
}

fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    let mut guard = POOLS.lock().ok()?;
    let pools = guard.get_or_insert_with(FxHashMap::default);
    if let Some(p) = pools.get(&threads) {
        return Some(p.clone());
    }
    let p = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("tokensmith-{i}"))
            .build()
            .ok()?,
    );
    pools.insert(threads, p.clone());
    Some(p)
}

/// Run `f` on a pool of `threads` threads (default: [`default_threads`]).
/// One thread is a pool too, so that any parallel iterator inside `f` keeps
/// to it (outside every pool, rayon would start its global pool: more
/// threads than asked for, and one a forked child cannot use). If no pool
/// can be made, `f` runs on the caller's thread.
pub fn install<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    let n = threads.filter(|&n| n > 0).unwrap_or_else(default_threads);
    match pool(n) {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Forget every pool: called in a child process right after `fork()`.
pub fn after_fork() {
    if let Ok(mut guard) = POOLS.lock() {
        if let Some(pools) = guard.take() {
            // the pools' threads do not exist in the child: leak the handles
            // rather than asking dead threads to stop
            std::mem::forget(pools);
        }
    }
}
