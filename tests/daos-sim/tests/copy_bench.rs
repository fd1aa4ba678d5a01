// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Copy-speed benchmarks (ignored by default; they take a few seconds and want a quiet machine):
//!
//! ```sh
//! cargo test -p daos-sim --release --test copy_bench -- --ignored --nocapture --test-threads=1
//! ```
//!
//! `store_vs_memcpy`: 2 threads, each moving 256 MiB in 1 MiB records into the store (blocking
//! `daos_obj_update`) and out of it (`daos_obj_fetch`), against 2 threads each doing one big
//! `memcpy` of the same bytes, with the streaming copy on and off (`copy::set_threshold`).
//! `threshold_sweep`: 2 threads copying pieces of 32 KiB-1 MiB, plain `memcpy` vs streaming,
//! bare and with the destination read right after each piece: the data behind
//! `copy::NT_THRESHOLD` (see README.md, "Copies").
//! `small_fold`: one thread, the benchmark's small-block workload (256 keys x 64 recxs x 4 KiB,
//! one folded RPC per key, iovs 1 MiB apart), overwritten and read back through
//! `daos_obj_update` / `daos_obj_fetch` + `daos_eq_poll`: the store's per-extent cost. Set
//! `DAOS_SIM_SMALL_REPS` (default 20) for fewer passes, e.g. under
//! `valgrind --tool=callgrind` (see README.md, "Copies").
// These tests drive the simulator's C API as libdaos's callers do: every unsafe block passes
// locals that outlive the call (or the event's completion, which each test waits for), so the
// blocks carry no SAFETY line each.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::*;
use daos_sim::copy;

const THREADS: usize = 2;
const PER_THREAD: usize = 256 << 20;
const PIECE: usize = 1 << 20;
const REPEAT: usize = 3;

/// Runs `f(thread)` in THREADS threads started together; returns the wall time of all of them.
fn timed<F: Fn(usize) + Sync>(f: F) -> Duration {
    let start = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (f, start) = (&f, &start);
                s.spawn(move || {
                    start.wait();
                    f(t)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        for h in hs {
            h.join().unwrap();
        }
        t0.elapsed()
    })
}

fn gbps(d: Duration) -> f64 {
    (THREADS * PER_THREAD) as f64 / d.as_secs_f64() / 1e9
}

/// Measures `f` REPEAT times; prints every figure and returns the best.
fn measure<F: Fn(usize) + Sync>(name: &str, f: F) -> f64 {
    let runs: Vec<f64> = (0..REPEAT).map(|_| gbps(timed(&f))).collect();
    let best = runs.iter().cloned().fold(0.0, f64::max);
    let list: Vec<String> = runs.iter().map(|g| format!("{g:5.1}")).collect();
    println!("{name:<34} {} GB/s  (best {best:.1})", list.join(" "));
    best
}

struct Bufs(Vec<Vec<u8>>);

impl Bufs {
    /// One pre-faulted buffer per thread.
    fn new(fill: u8) -> Bufs {
        Bufs((0..THREADS).map(|t| vec![fill.wrapping_add(t as u8); PER_THREAD]).collect())
    }
    fn ptr(&self, t: usize) -> usize {
        self.0[t].as_ptr() as usize
    }
}

fn update_all(oh: daos_handle_t, t: usize, src: usize) {
    let dkey = [b'd', t as u8];
    for i in 0..PER_THREAD / PIECE {
        let data = unsafe { std::slice::from_raw_parts((src + i * PIECE) as *const u8, PIECE) };
        assert_eq!(put(oh, &dkey, b"a", (i * PIECE) as u64, data), 0);
    }
}

fn fetch_all(oh: daos_handle_t, t: usize, dst: usize) {
    let dkey = [b'd', t as u8];
    for i in 0..PER_THREAD / PIECE {
        let buf = unsafe { std::slice::from_raw_parts_mut((dst + i * PIECE) as *mut u8, PIECE) };
        assert_eq!(get(oh, &dkey, b"a", (i * PIECE) as u64, buf).rc, 0);
    }
}

#[test]
#[ignore]
fn store_vs_memcpy() {
    let src = Bufs::new(1);
    let dst = Bufs::new(100);
    let c = setup("copy-bench");
    let objs: Vec<daos_handle_t> = (0..THREADS).map(|t| c.obj(t as u64 + 1)).collect();
    // Allocate the store's chunks once, untimed.
    timed(|t| update_all(objs[t], t, src.ptr(t)));
    println!("{THREADS} threads x {} MiB, {} KiB records; GB/s of {REPEAT} runs", PER_THREAD >> 20, PIECE >> 10);
    let big = measure("memcpy, one big copy per thread", |t| unsafe {
        std::ptr::copy_nonoverlapping(src.ptr(t) as *const u8, dst.ptr(t) as *mut u8, PER_THREAD)
    });
    let pieces = measure("memcpy, 1 MiB pieces", |t| {
        for i in (0..PER_THREAD).step_by(PIECE) {
            unsafe { std::ptr::copy_nonoverlapping((src.ptr(t) + i) as *const u8, (dst.ptr(t) + i) as *mut u8, PIECE) }
        }
    });
    let nt = measure("copy::copy_raw, 1 MiB pieces", |t| {
        for i in (0..PER_THREAD).step_by(PIECE) {
            unsafe { copy::copy_raw((dst.ptr(t) + i) as *mut u8, (src.ptr(t) + i) as *const u8, PIECE) }
        }
    });
    let prev = copy::set_threshold(usize::MAX);
    let up_plain = measure("store update, plain memcpy", |t| update_all(objs[t], t, src.ptr(t)));
    let fe_plain = measure("store fetch, plain memcpy", |t| fetch_all(objs[t], t, dst.ptr(t)));
    copy::set_threshold(prev);
    let up = measure("store update, streaming", |t| update_all(objs[t], t, src.ptr(t)));
    let fe = measure("store fetch, streaming", |t| fetch_all(objs[t], t, dst.ptr(t)));
    for t in 0..THREADS {
        assert!(dst.0[t] == src.0[t], "fetched bytes differ (thread {t})");
    }
    println!(
        "vs one big memcpy: pieces {:.0}%, copy_raw {:.0}%, update {:.0}% (plain {:.0}%), fetch {:.0}% (plain {:.0}%)",
        100.0 * pieces / big,
        100.0 * nt / big,
        100.0 * up / big,
        100.0 * up_plain / big,
        100.0 * fe / big,
        100.0 * fe_plain / big
    );
    assert_eq!(control("reset_data"), 0);
    c.close(&objs);
}

#[test]
#[ignore]
fn threshold_sweep() {
    let src = Bufs::new(1);
    let dst = Bufs::new(100);
    println!("{THREADS} threads x {} MiB; GB/s of {REPEAT} runs", PER_THREAD >> 20);
    let (src, dst) = (&src, &dst);
    let run = |piece: usize| {
        move |t: usize| {
            for i in (0..PER_THREAD).step_by(piece) {
                unsafe { copy::copy_raw((dst.ptr(t) + i) as *mut u8, (src.ptr(t) + i) as *const u8, piece) }
            }
        }
    };
    // The same, with the destination read right after each piece (a consumer of a fetch):
    // a cached copy then reads from cache, a streamed one from memory.
    let run_read = |piece: usize| {
        move |t: usize| {
            let mut x = 0u64;
            for i in (0..PER_THREAD).step_by(piece) {
                unsafe { copy::copy_raw((dst.ptr(t) + i) as *mut u8, (src.ptr(t) + i) as *const u8, piece) };
                let words = unsafe { std::slice::from_raw_parts((dst.ptr(t) + i) as *const u64, piece / 8) };
                x = words.iter().fold(x, |a, &w| a.wrapping_add(w));
            }
            std::hint::black_box(x);
        }
    };
    for piece in [32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20] {
        let prev = copy::set_threshold(usize::MAX);
        let plain = measure(&format!("{:>4} KiB pieces, memcpy", piece >> 10), run(piece));
        let plain_r = measure(&format!("{:>4} KiB pieces, memcpy + read", piece >> 10), run_read(piece));
        copy::set_threshold(0);
        let nt = measure(&format!("{:>4} KiB pieces, streaming", piece >> 10), run(piece));
        let nt_r = measure(&format!("{:>4} KiB pieces, streaming + read", piece >> 10), run_read(piece));
        copy::set_threshold(prev);
        println!("  streaming/memcpy = {:.2}, with the read {:.2}", nt / plain, nt_r / plain_r);
    }
}

const SMALL_KEYS: usize = 256;
const SMALL_LAYERS: usize = 64;
const SMALL_BLOCK: usize = 4096;

/// One key's folded RPC (update or fetch): its dkey, 64 contiguous recxs (4 KiB each) and 64 iovs, layer-major in
/// the user buffer (`(layer * keys + key) * block`), so a key's iovs lie 1 MiB apart.
struct SmallKey {
    dkey: [u8; 8],
    recxs: Vec<daos_recx_t>,
    iovs: Vec<d_iov_t>,
}

impl SmallKey {
    fn new(k: usize, base: *mut u8) -> SmallKey {
        let recxs = (0..SMALL_LAYERS).map(|l| recx((l * SMALL_BLOCK) as u64, SMALL_BLOCK as u64)).collect();
        let iovs = (0..SMALL_LAYERS)
            .map(|l| {
                let p = unsafe { base.add((l * SMALL_KEYS + k) * SMALL_BLOCK) };
                let buf = unsafe { std::slice::from_raw_parts_mut(p, SMALL_BLOCK) };
                // An update sends iov_len bytes; a fetch fills up to iov_buf_len.
                d_iov_t::from_slice(buf)
            })
            .collect();
        SmallKey { dkey: (k as u64).to_le_bytes(), recxs, iovs }
    }

    /// One update or fetch with an event, reaped with daos_eq_poll.
    fn rpc(&mut self, oh: daos_handle_t, eqh: daos_handle_t, ev: &mut daos_event_t, update: bool) {
        let mut dk = key(&self.dkey);
        let mut iod = array_iod(b"data", 1, &mut self.recxs);
        let mut sg = sgl(&mut self.iovs);
        let rc = unsafe {
            if update {
                daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, ev)
            } else {
                daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, std::ptr::null_mut(), ev)
            }
        };
        assert_eq!(rc, 0);
        assert_eq!(poll1(eqh, -1), ev as *mut _);
        assert_eq!(ev.ev_error, 0);
    }
}

#[test]
#[ignore]
fn small_fold() {
    let reps: usize = std::env::var("DAOS_SIM_SMALL_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let total = SMALL_KEYS * SMALL_LAYERS * SMALL_BLOCK;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut src: Vec<u8> = (0..total / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    let mut dst = vec![0u8; total];
    let mut wkeys: Vec<SmallKey> = (0..SMALL_KEYS).map(|k| SmallKey::new(k, src.as_mut_ptr())).collect();
    let mut rkeys: Vec<SmallKey> = (0..SMALL_KEYS).map(|k| SmallKey::new(k, dst.as_mut_ptr())).collect();
    let c = setup("small-fold-bench");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    let mut pass = |keys: &mut [SmallKey], update: bool| {
        let t0 = Instant::now();
        for k in keys.iter_mut() {
            k.rpc(oh, eqh, &mut ev, update);
        }
        t0.elapsed()
    };
    pass(&mut wkeys, true); // first write: allocates the store's chunks, untimed
                            // Reference: the same 4 KiB pieces memcpy'd into a key-major buffer, as the store keeps them.
    let mut packed = vec![0u8; total];
    let (mut up, mut fe, mut mc) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        up.push(pass(&mut wkeys, true));
        fe.push(pass(&mut rkeys, false));
        let t0 = Instant::now();
        for (k, key) in wkeys.iter().enumerate() {
            for (l, iov) in key.iovs.iter().enumerate() {
                let at = (k * SMALL_LAYERS + l) * SMALL_BLOCK;
                unsafe {
                    std::ptr::copy_nonoverlapping(iov.iov_buf as *const u8, packed.as_mut_ptr().add(at), SMALL_BLOCK)
                };
            }
        }
        mc.push(t0.elapsed());
        std::hint::black_box(&packed);
    }
    assert!(dst == src, "fetched bytes differ");
    let show = |name: &str, v: &[Duration]| {
        let mut g: Vec<f64> = v.iter().map(|d| total as f64 / d.as_secs_f64() / 1e9).collect();
        g.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if !g.is_empty() {
            println!("{name}: median {:.2} GB/s, best {:.2} GB/s", g[g.len() / 2], g[g.len() - 1]);
        }
    };
    println!("1 thread, {SMALL_KEYS} keys x {SMALL_LAYERS} recxs x {} KiB, {reps} passes", SMALL_BLOCK >> 10);
    show("small overwrite (update)", &up);
    show("small read (fetch)", &fe);
    show("memcpy of the same 4 KiB pieces", &mc);
    unsafe {
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    assert_eq!(control("reset_data"), 0);
    c.close(&[oh]);
}
