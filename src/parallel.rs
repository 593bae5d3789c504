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

/// One thread's state and results in `map_indexed`, with their indices.
type Indexed<S, T, E> = (S, Vec<(usize, Result<T, E>)>);

/// `f(state, i)` for every `i` in `0..n` on `threads` threads (default:
/// [`default_threads`]) of which the calling thread is one, each taking the
/// next index as it finishes one (`init` makes a thread's state): the
/// results in order, each with the index in the states (also returned) of
/// the thread that made it, or the error of the lowest index that failed.
/// (A thread's state can so gather what its results point into: a batch's
/// ids in one vector a thread.)
///
/// The caller works instead of waiting for the pool as `install` has it do:
/// woken while the caller still held its CPU, the pool's threads could all
/// land on one CPU, and for a batch of a few milliseconds the scheduler
/// left them sharing it while the caller's CPU stayed idle (measured: half
/// the runs of a 2-thread batch at the speed of one thread).
#[allow(clippy::type_complexity)]
pub fn map_indexed<S: Send, T: Send, E: Send>(
    threads: Option<usize>,
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
) -> Result<(Vec<(usize, T)>, Vec<S>), E> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let k = threads.filter(|&t| t > 0).unwrap_or_else(default_threads).min(n);
    let pool = if k > 1 { pool(k) } else { None };
    let Some(pool) = pool else {
        let mut state = init();
        let out = (0..n)
            .map(|i| f(&mut state, i).map(|t| (0, t)))
            .collect::<Result<_, E>>()?;
        return Ok((out, vec![state]));
    };
    let next = AtomicUsize::new(0);
    // each thread's state and (index, result) pairs
    let done: Mutex<Vec<Indexed<S, T, E>>> = Mutex::new(Vec::with_capacity(k));
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
        done.lock().unwrap_or_else(|e| e.into_inner()).push((state, got));
    };
    pool.in_place_scope(|scope| {
        for _ in 1..k {
            scope.spawn(|_| work());
        }
        work();
    });
    let mut out: Vec<Option<(usize, T)>> = (0..n).map(|_| None).collect();
    let mut states = Vec::with_capacity(k);
    let mut failed: Option<(usize, E)> = None;
    for (s, (state, got)) in done
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .enumerate()
    {
        states.push(state);
        for (i, r) in got {
            match r {
                Ok(t) => out[i] = Some((s, t)),
                Err(e) => {
                    if failed.as_ref().is_none_or(|&(j, _)| i < j) {
                        failed = Some((i, e));
                    }
                }
            }
        }
    }
    match failed {
        Some((_, e)) => Err(e),
        None => Ok((
            out.into_iter().map(|t| t.expect("every index was taken")).collect(),
            states,
        )),
    }
}

/// A batch's ids in one vector, text after text: text `i`'s are
/// `ids[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Flat {
    pub ids: Vec<u32>,
    pub offsets: Vec<usize>,
}

/// `f(state, i, out)`, which appends text `i`'s ids to `out` (and leaves it
/// as it was on an error), for every `i` in `0..n` on `threads` threads
/// (default: [`default_threads`]), the caller one of them: all the ids in
/// one vector, text after text, or the error of the lowest index that
/// failed. `guess`: how many ids to make room for.
///
/// The output is the only large buffer: a batch's ids are most of the
/// memory it touches, and memory a process touches for the first time is
/// a page fault a page (in a virtual machine, 1.5 µs for 4 KB). On one
/// thread the texts' ids are appended to it. On two, one thread takes the
/// texts from the first on and writes their ids from the buffer's start,
/// the other from the last back and writes from the buffer's end down
/// (each text into a small vector of the thread's, then copied where it
/// goes): when they meet, the second's ids move down to the first's end.
/// The buffer has room for `guess` ids (and a little more); a text that
/// does not fit between the two ends, where `guess` was short, waits in a
/// vector of its own, and everything is then copied once more in order.
/// On more threads each gathers its texts' ids in a vector of its own,
/// copied into the output in order at the end.
pub fn map_flat<S: Send, E: Send>(
    threads: Option<usize>,
    n: usize,
    guess: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &mut Vec<u32>) -> Result<(), E> + Sync,
) -> Result<Flat, E> {
    let k = threads.filter(|&t| t > 0).unwrap_or_else(default_threads).min(n);
    let pool = if k > 1 { pool(k) } else { None };
    match pool {
        None => {
            let mut state = init();
            let mut ids = room_for(guess);
            let mut offsets = Vec::with_capacity(n + 1);
            offsets.push(0);
            for i in 0..n {
                f(&mut state, i, &mut ids)?;
                offsets.push(ids.len());
            }
            Ok(Flat { ids, offsets })
        }
        Some(pool) if k == 2 => two_ends(&pool, n, guess, init, f),
        Some(pool) => {
            let room = guess / k + 64;
            let (spans, states) = map_indexed(
                Some(k),
                n,
                || (init(), crate::huge_pages::plain(|| Vec::<u32>::with_capacity(room))),
                |(state, arena), i| {
                    let start = arena.len();
                    f(state, i, arena)?;
                    Ok((start, arena.len() - start))
                },
            )?;
            let arenas: Vec<Vec<u32>> = states.into_iter().map(|(_, arena)| arena).collect();
            let mut offsets = Vec::with_capacity(n + 1);
            offsets.push(0);
            let mut total = 0;
            for &(_, (_, len)) in &spans {
                total += len;
                offsets.push(total);
            }
            let mut ids: Vec<u32> = crate::huge_pages::plain(|| Vec::with_capacity(total));
            // copied on the pool in runs of texts of about equal size (the
            // first write to a page of the output is a page fault)
            let runs = k * 4;
            let at = ids.as_mut_ptr() as usize;
            let copy = |texts: std::ops::Range<usize>| {
                for i in texts {
                    let (a, (start, len)) = spans[i];
                    // SAFETY: text `i`'s range of the output, which has room
                    // for all of them, is written by this run alone
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            arenas[a].as_ptr().add(start),
                            (at as *mut u32).add(offsets[i]),
                            len,
                        );
                    }
                }
            };
            pool.install(|| {
                use rayon::prelude::*;
                // (where run `r`'s share of the ids starts)
                let bound = |r: usize| (total as u64 * r as u64 / runs as u64) as usize;
                (0..runs).into_par_iter().for_each(|r| {
                    // the texts whose ids start in this run's share of them
                    let first = offsets.partition_point(|&o| o < bound(r)).min(n);
                    let end = offsets.partition_point(|&o| o < bound(r + 1)).min(n);
                    copy(if r + 1 == runs { first..n } else { first..end });
                })
            });
            // SAFETY: every text's ids were written, `total` in all
            unsafe { ids.set_len(total) };
            Ok(Flat { ids, offsets })
        }
    }
}

/// An empty vector with room for `n` ids (on ordinary pages, see
/// `huge_pages`), or for none if that much memory cannot be had: the ids
/// then go where they fit as they come (a guess is only a guess).
fn room_for(n: usize) -> Vec<u32> {
    let mut v = Vec::new();
    // (`try_reserve_exact` inside the scope: the block is made there)
    let _ = crate::huge_pages::plain(|| v.try_reserve_exact(n));
    v
}

/// Where a text's ids went in `two_ends`: (text, start in the buffer or
/// index in the thread's spilled vectors, length, spilled).
type Placed = (usize, usize, usize, bool);

/// One side's work in `two_ends`: where each of its texts went, the ids
/// that spilled, its lowest failure.
type Side<E> = (Vec<Placed>, Vec<Vec<u32>>, Option<(usize, E)>);

/// `map_flat` on two threads, see there.
///
/// Two threads are a case of their own (the machines this is tuned for
/// have two cores): each takes texts from its end of the batch and writes
/// into one shared buffer from that end, so nothing is copied to join them;
/// with more threads `map_flat` gathers per thread and copies in order.
/// Long because both sides, the spill when the buffer is short and the
/// join are one protocol over that buffer.
fn two_ends<S, E: Send>(
    pool: &ThreadPool,
    n: usize,
    guess: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &mut Vec<u32>) -> Result<(), E> + Sync,
) -> Result<Flat, E> {
    let mut buf = room_for(guess.saturating_add(1024));
    // (all of it: the back writes from the end of the capacity down)
    let cap = buf.capacity();
    // (the address as an integer: both threads write to their own ranges)
    let base = buf.as_mut_ptr() as usize;
    /// Texts not taken yet, `front..back`; the buffer's free range,
    /// `low..high`.
    struct Ends {
        front: usize,
        back: usize,
        low: usize,
        high: usize,
    }
    let ends = Mutex::new(Ends {
        front: 0,
        back: n,
        low: 0,
        high: cap,
    });
    // one side's texts: where each went, what spilled, its first error
    let side = |from_front: bool| -> Side<E> {
        let mut state = init();
        let (mut placed, mut spilled, mut failed) = (Vec::new(), Vec::new(), None::<(usize, E)>);
        let mut ids: Vec<u32> = Vec::new();
        // the text whose ids are in `ids`, to be placed
        let mut done: Option<usize> = None;
        loop {
            let next = {
                let mut e = ends.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(i) = done.take() {
                    let len = ids.len();
                    let at = if e.high - e.low < len {
                        None
                    } else if from_front {
                        e.low += len;
                        Some(e.low - len)
                    } else {
                        e.high -= len;
                        Some(e.high)
                    };
                    match at {
                        Some(at) => {
                            // SAFETY: `at..at + len` is inside the buffer's
                            // capacity and now this thread's alone (the
                            // other writes only outside `low..high`)
                            unsafe {
                                std::ptr::copy_nonoverlapping(ids.as_ptr(), (base as *mut u32).add(at), len);
                            }
                            placed.push((i, at, len, false));
                        }
                        None => {
                            placed.push((i, spilled.len(), len, true));
                            spilled.push(std::mem::take(&mut ids));
                        }
                    }
                }
                if e.front == e.back {
                    break;
                }
                if from_front {
                    e.front += 1;
                    e.front - 1
                } else {
                    e.back -= 1;
                    e.back
                }
            };
            ids.clear();
            match f(&mut state, next, &mut ids) {
                Ok(()) => done = Some(next),
                Err(e) => {
                    if failed.as_ref().is_none_or(|&(j, _)| next < j) {
                        failed = Some((next, e));
                    }
                }
            }
        }
        (placed, spilled, failed)
    };
    let mut back = None;
    let front = pool.in_place_scope(|scope| {
        scope.spawn(|_| back = Some(side(false)));
        // (the caller takes the front: see `map_indexed` on why it works)
        side(true)
    });
    let back = back.expect("the pool ran the back");
    let ((fp, fs, ff), (bp, bs, bf)) = (front, back);
    let failed = match (ff, bf) {
        (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
        (a, b) => a.or(b),
    };
    if let Some((_, e)) = failed {
        return Err(e);
    }
    let mut offsets = vec![0usize; n + 1];
    for &(i, _, len, _) in fp.iter().chain(&bp) {
        offsets[i + 1] = len;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let total = offsets[n];
    let e = ends.into_inner().unwrap_or_else(|e| e.into_inner());
    let at = base as *mut u32;
    if fs.is_empty() && bs.is_empty() {
        // the front's texts fill `..low` in order, the back's `high..` (each
        // placed below the one after it): the back's move down to `low`
        // SAFETY: both ranges were written by the threads, now done; the
        // copy may overlap (`copy`, not `copy_nonoverlapping`)
        unsafe {
            std::ptr::copy(at.add(e.high), at.add(e.low), cap - e.high);
            buf.set_len(e.low + cap - e.high);
        }
        debug_assert_eq!(buf.len(), total);
        return Ok(Flat { ids: buf, offsets });
    }
    // Some texts spilled: every text's ids copied once more, in order.
    let mut from: Vec<(usize, usize, bool)> = vec![(0, 0, false); n];
    for (s, placed) in [&fp, &bp].into_iter().enumerate() {
        for &(i, start, _, spilled) in placed {
            from[i] = (s, start, spilled);
        }
    }
    let spills = [&fs, &bs];
    let mut ids: Vec<u32> = crate::huge_pages::plain(|| Vec::with_capacity(total));
    for (i, &(s, start, spilled)) in from.iter().enumerate() {
        if spilled {
            ids.extend_from_slice(&spills[s][start]);
        } else {
            // SAFETY: a range the threads wrote, inside the buffer
            ids.extend_from_slice(unsafe { std::slice::from_raw_parts(at.add(start), offsets[i + 1] - offsets[i]) });
        }
    }
    Ok(Flat { ids, offsets })
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

    /// Text `i`'s ids in `map_flat_is_every_text_in_order`: a length from
    /// 0 to 60, values that name the text and the place.
    fn text_ids(i: usize) -> Vec<u32> {
        let len = (i.wrapping_mul(2654435761) >> 7) % 61;
        (0..len).map(|j| (i * 1000 + j) as u32).collect()
    }

    #[test]
    fn map_flat_is_every_text_in_order() {
        for threads in [Some(1), Some(2), Some(3), Some(4), None] {
            for n in [0usize, 1, 2, 3, 7, 100, 2000] {
                let want: Vec<Vec<u32>> = (0..n).map(text_ids).collect();
                let total: usize = want.iter().map(Vec::len).sum();
                // room for none, for a few, for half, for all, for more
                for guess in [0, 10, total / 2, total, 3 * total + 5000] {
                    let flat = map_flat(
                        threads,
                        n,
                        guess,
                        || 0usize,
                        |calls, i, out| {
                            *calls += 1;
                            out.extend(text_ids(i));
                            Ok::<_, ()>(())
                        },
                    )
                    .unwrap();
                    assert_eq!(flat.offsets.len(), n + 1, "{threads:?} {n} {guess}");
                    assert_eq!(flat.ids.len(), total, "{threads:?} {n} {guess}");
                    for (i, w) in want.iter().enumerate() {
                        assert_eq!(
                            &flat.ids[flat.offsets[i]..flat.offsets[i + 1]],
                            w.as_slice(),
                            "{threads:?} {n} {guess}: text {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn map_flat_reports_the_lowest_failure() {
        for threads in [Some(1), Some(2), Some(3)] {
            for guess in [0, 100_000] {
                // texts 13, 110, 207, ... fail
                let got = map_flat(
                    threads,
                    500,
                    guess,
                    || (),
                    |_, i, out| {
                        if i % 97 == 13 {
                            return Err(i);
                        }
                        out.extend(text_ids(i));
                        Ok(())
                    },
                );
                assert_eq!(got, Err(13), "{threads:?} {guess}");
            }
        }
        // a failure of the last text only (taken first by the back)
        let got = map_flat(
            Some(2),
            50,
            10,
            || (),
            |_, i, out| {
                if i == 49 {
                    return Err(i);
                }
                out.extend(text_ids(i));
                Ok(())
            },
        );
        assert_eq!(got, Err(49));
    }
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
                let (got, states) = map_indexed(
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
                assert_eq!(
                    got.iter().map(|&(_, t)| t).collect::<Vec<_>>(),
                    (0..n).map(|i| i * 3).collect::<Vec<_>>(),
                    "{threads:?} {n}"
                );
                // each state counted the calls it made, and each result
                // names the state that made it
                let mut calls = vec![0usize; states.len()];
                for &(s, _) in &got {
                    calls[s] += 1;
                }
                assert_eq!(calls, states, "{threads:?} {n}");
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
            assert_eq!(r.map(|(got, _)| got.len()), Err(13));
        }
    }
}
