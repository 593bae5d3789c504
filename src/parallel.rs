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

/// One thread's results in `map_indexed`, with their indices.
type Indexed<T, E> = Vec<(usize, Result<T, E>)>;

/// `f(state, i)` for every `i` in `0..n` on `threads` threads (default:
/// [`default_threads`]) of which the calling thread is one, each taking the
/// next index as it finishes one (`init` makes a thread's state): the
/// results in order, or the error of the lowest index that failed.
///
/// The caller works instead of waiting for the pool as `install` has it do:
/// woken while the caller still held its CPU, the pool's threads could all
/// land on one CPU, and for a batch of a few milliseconds the scheduler
/// left them sharing it while the caller's CPU stayed idle (measured: half
/// the runs of a 2-thread batch at the speed of one thread).
pub fn map_indexed<S, T: Send, E: Send>(
    threads: Option<usize>,
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let k = threads.filter(|&t| t > 0).unwrap_or_else(default_threads).min(n);
    let pool = if k > 1 { pool(k) } else { None };
    let Some(pool) = pool else {
        let mut state = init();
        return (0..n).map(|i| f(&mut state, i)).collect();
    };
    let next = AtomicUsize::new(0);
    // each thread's (index, result) pairs
    let done: Mutex<Vec<Indexed<T, E>>> = Mutex::new(Vec::with_capacity(k));
    let work = || {
        let mut state = init();
        let mut got = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            got.push((i, f(&mut state, i)));
        }
        done.lock().unwrap_or_else(|e| e.into_inner()).push(got);
    };
    pool.in_place_scope(|scope| {
        for _ in 1..k {
            scope.spawn(|_| work());
        }
        work();
    });
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    let mut failed: Option<(usize, E)> = None;
    for (i, r) in done
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
    {
        match r {
            Ok(t) => out[i] = Some(t),
            Err(e) => {
                if failed.as_ref().is_none_or(|&(j, _)| i < j) {
                    failed = Some((i, e));
                }
            }
        }
    }
    match failed {
        Some((_, e)) => Err(e),
        None => Ok(out.into_iter().map(|t| t.expect("every index was taken")).collect()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn map_indexed_keeps_order_uses_the_caller_and_reports_the_first_error() {
        let me = std::thread::current().id();
        for threads in [Some(1), Some(2), Some(3), None] {
            for n in [0usize, 1, 2, 7, 1000] {
                let seen = Mutex::new(HashSet::new());
                let caller_worked = AtomicBool::new(false);
                let got = map_indexed(
                    threads,
                    n,
                    || 0usize,
                    |calls, i| {
                        *calls += 1;
                        let id = std::thread::current().id();
                        seen.lock().unwrap().insert(id);
                        if id == me {
                            caller_worked.store(true, Ordering::SeqCst);
                        } else {
                            // A pool thread waits for the caller to take an
                            // index (so that, however the threads are
                            // scheduled, the pool cannot take them all
                            // first): it never does if the caller only waits.
                            let start = Instant::now();
                            while !caller_worked.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(10) {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                        }
                        Ok::<_, ()>(i * 3)
                    },
                )
                .unwrap();
                assert_eq!(got, (0..n).map(|i| i * 3).collect::<Vec<_>>(), "{threads:?} {n}");
                let seen = seen.into_inner().unwrap();
                if n > 0 {
                    // the calling thread works (alone, or with the pool)
                    assert!(seen.contains(&me), "{threads:?} {n}");
                }
                if threads == Some(1) {
                    assert!(seen.len() <= 1);
                }
            }
        }
        // of several failures, the lowest index's, whatever thread met it
        for _ in 0..20 {
            let r = map_indexed(Some(2), 500, || (), |_, i| if i % 97 == 13 { Err(i) } else { Ok(i) });
            assert_eq!(r, Err(13));
        }
    }
}
