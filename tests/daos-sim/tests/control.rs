// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Process-wide controls (hang, fail, latency, bandwidth, rpc_cost, copy, counters, reset_data), init
//! refcounting and DAOS_SIM_POOLS. These change global state, so every test here holds one
//! lock; this binary is its own process, apart from tests/api.rs.
// These tests drive the simulator's C API as libdaos's callers do: every unsafe block passes
// locals that outlive the call (or the event's completion, which each test waits for), so the
// blocks carry no SAFETY line each.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use std::ptr::{null, null_mut};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;

/// Serialises the tests of this binary, and sets the environment before the simulator reads it.
fn lock() -> MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    static ENV: std::sync::Once = std::sync::Once::new();
    ENV.call_once(|| {
        std::env::set_var("DAOS_SIM_POOLS", "sim:kv,other;pool2:c1");
    });
    let g = L.lock().unwrap_or_else(|e| e.into_inner());
    // Leave the controls as a failed test may have left them: neutral.
    assert_eq!(control("resume"), 0);
    assert_eq!(control("latency 0"), 0);
    assert_eq!(control("bandwidth 0"), 0);
    assert_eq!(control("rpc_cost 0"), 0);
    assert_eq!(control("recx_cost 0"), 0);
    assert_eq!(control("fail 1011 0"), 0);
    assert_eq!(control("copy on"), 0);
    g
}

fn update_async(
    oh: daos_handle_t,
    dk: &mut daos_key_t,
    iod: &mut daos_iod_t,
    sg: &mut d_sg_list_t,
    ev: &mut daos_event_t,
) {
    assert_eq!(unsafe { daos_obj_update(oh, DAOS_TX_NONE, 0, dk, 1, iod, sg, ev) }, 0);
}

#[test]
fn init_refcount() {
    let _g = lock();
    assert_eq!(daos_fini(), -DER_UNINIT);
    let mut poh = DAOS_HDL_INVAL;
    let rc = unsafe { daos_pool_connect2(cs("sim").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()) };
    assert_eq!(rc, -DER_UNINIT);
    assert_eq!(daos_init(), 0);
    assert_eq!(daos_init(), 0);
    assert_eq!(daos_fini(), 0);
    assert_eq!(daos_fini(), 0);
    assert_eq!(daos_fini(), -DER_UNINIT);
}

#[test]
fn pools_from_environment() {
    let _g = lock();
    assert_eq!(daos_init(), 0);
    unsafe {
        for (pool, cont, want) in
            [("pool2", "c1", 0), ("sim", "other", 0), ("sim", "kv", 0), ("pool2", "kv", -DER_NONEXIST)]
        {
            let mut poh = DAOS_HDL_INVAL;
            assert_eq!(daos_pool_connect2(cs(pool).as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()), 0);
            let mut coh = DAOS_HDL_INVAL;
            let rc = daos_cont_open2(poh, cs(cont).as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut());
            assert_eq!(rc, want, "{pool}/{cont}");
            if rc == 0 {
                assert_eq!(daos_cont_close(coh, null_mut()), 0);
            }
            assert_eq!(daos_pool_disconnect(poh, null_mut()), 0);
        }
        let mut poh = DAOS_HDL_INVAL;
        assert_eq!(
            daos_pool_connect2(cs("pool3").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()),
            -DER_NONEXIST
        );
    }
    assert_eq!(daos_fini(), 0);
}

#[test]
fn control_commands_parse() {
    let _g = lock();
    for ok in [
        "hang",
        "resume",
        "fail 1011 1",
        "fail -2001 0",
        "fail DER_NOREPLY 0",
        "latency 0",
        "latency 12.5",
        "bandwidth 0",
        "bandwidth 2.5",
        "rpc_cost 0",
        "rpc_cost 12.5",
        "recx_cost 0",
        "recx_cost 3.5",
        "cost update 30 20 1.2",
        "cost fetch 15 15 1.5",
        "cost fetch 0 0 0",
        "cost fetch 15 15 1.5 120",
        "cost fetch 0 0 0 0",
        "reset_stats",
        "copy off",
        "copy on",
        "  resume  ",
    ] {
        assert_eq!(control(ok), 0, "{ok}");
    }
    assert_eq!(control("latency 0"), 0);
    assert_eq!(control("bandwidth 0"), 0);
    assert_eq!(control("rpc_cost 0"), 0);
    assert_eq!(control("recx_cost 0"), 0);
    assert_eq!(control("cost update 0 0 0"), 0);
    for bad in [
        "",
        "hang now",
        "fail",
        "fail 1011",
        "fail x 1",
        "fail 1011 -1",
        "latency",
        "latency -1",
        "latency abc",
        "bandwidth nan",
        "rpc_cost",
        "rpc_cost -1",
        "rpc_cost inf",
        "rpc_cost 1 2",
        "recx_cost -2",
        "cost",
        "cost update",
        "cost update 1 2",
        "cost update 1 2 3 4 5",
        "cost update 1 2 3 -4",
        "cost punch 1 2 3",
        "cost fetch 1 -2 3",
        "cost fetch 1 2 nan",
        "copy",
        "copy maybe",
        "copy off now",
        "explode",
    ] {
        assert_eq!(control(bad), -DER_INVAL, "{bad:?}");
    }
    assert_eq!(unsafe { daos_sim_control(null()) }, -DER_INVAL);
}

#[test]
fn hang_and_resume() {
    let _g = lock();
    let c = setup("ctl-hang");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    let data = *b"0123456789";
    let mut dk = key(b"d");
    let mut rx = [recx(0, 10)];
    let mut iod = array_iod(b"a", 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(&data)];
    let mut sg = sgl(&mut iov);
    // In flight before the hang: held too.
    update_async(oh, &mut dk, &mut iod, &mut sg, &mut ev);
    assert_eq!(control("hang"), 0);
    assert!(poll1(eqh, 50_000).is_null(), "no completion while hung");
    let mut flag = true;
    assert_eq!(unsafe { daos_event_test(&mut *ev, 10_000, &mut flag) }, 0);
    assert!(!flag);
    // Pool and container calls still work while hung.
    unsafe {
        let mut coh = DAOS_HDL_INVAL;
        assert_eq!(daos_cont_open2(c.poh, cs("ctl-hang").as_ptr(), DAOS_COO_RO, &mut coh, null_mut(), null_mut()), 0);
        assert_eq!(daos_cont_close(coh, null_mut()), 0);
    }
    // A blocking fetch in another thread waits too.
    let oh_raw = oh.cookie;
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 10];
        let g = get(daos_handle_t { cookie: oh_raw }, b"d", b"a", 0, &mut buf);
        (g.rc, buf)
    });
    // A poller blocked with WAIT wakes on resume.
    let poller = std::thread::spawn(move || poll1(eqh, -1) as usize);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!reader.is_finished());
    assert!(!poller.is_finished());
    assert_eq!(control("resume"), 0);
    assert_eq!(poller.join().unwrap(), &mut *ev as *mut daos_event_t as usize);
    assert_eq!(ev.ev_error, 0);
    let (rc, buf) = reader.join().unwrap();
    assert_eq!(rc, 0);
    // The reader was queued behind the update or ahead of it; either way it completed.
    assert!(buf == data || buf == [0; 10]);
    unsafe {
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn fail_injection() {
    let _g = lock();
    let c = setup("ctl-fail");
    let oh = c.obj(1);
    assert_eq!(control("fail 1011 2"), 0);
    assert_eq!(put(oh, b"d", b"a", 0, b"x"), -DER_TIMEDOUT);
    // The second one, asynchronously.
    let eqh = eq_create();
    let mut ev = event(eqh);
    let data = *b"y";
    let mut dk = key(b"d");
    let mut rx = [recx(0, 1)];
    let mut iod = array_iod(b"a", 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(&data)];
    let mut sg = sgl(&mut iov);
    update_async(oh, &mut dk, &mut iod, &mut sg, &mut ev);
    assert!(!poll1(eqh, -1).is_null());
    assert_eq!(ev.ev_error, -DER_TIMEDOUT);
    // Nothing was stored by the failed RPCs; the third succeeds.
    let mut buf = [0u8; 1];
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).iod_size, 0);
    assert_eq!(put(oh, b"d", b"a", 0, b"z"), 0);
    // Validation errors are not RPCs: they do not consume injected failures.
    assert_eq!(control("fail DER_IO 1"), 0);
    assert_eq!(put(oh, b"", b"a", 0, b"x"), -DER_INVAL);
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, -DER_IO);
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, 0);
    assert_eq!(&buf, b"z");
    unsafe {
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn latency_model() {
    let _g = lock();
    let c = setup("ctl-latency");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    assert_eq!(control("latency 40000"), 0); // 40 ms
    let data = *b"abc";
    let mut dk = key(b"d");
    let mut rx = [recx(0, 3)];
    let mut iod = array_iod(b"a", 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(&data)];
    let mut sg = sgl(&mut iov);
    let t = Instant::now();
    update_async(oh, &mut dk, &mut iod, &mut sg, &mut ev);
    assert!(poll1(eqh, 0).is_null(), "not ready yet");
    let mut flag = true;
    assert_eq!(unsafe { daos_event_test(&mut *ev, 0, &mut flag) }, 0);
    assert!(!flag);
    assert!(!poll1(eqh, -1).is_null());
    assert!(t.elapsed() >= Duration::from_millis(40), "{:?}", t.elapsed());
    // Blocking calls pay it too.
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"a", 0, b"q"), 0);
    assert!(t.elapsed() >= Duration::from_millis(40));
    // Validation errors do not.
    let t = Instant::now();
    assert_eq!(put(oh, b"", b"a", 0, b"q"), -DER_INVAL);
    assert!(t.elapsed() < Duration::from_millis(40));
    assert_eq!(control("latency 0"), 0);
    unsafe {
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn bandwidth_model_shares_one_link() {
    let _g = lock();
    let c = setup("ctl-bw");
    let oh = c.obj(1);
    let eqh = eq_create();
    const N: usize = 4;
    const LEN: usize = 4 << 20; // 4 MiB each, 16.8 MB at 1 GB/s = 16.8 ms
    let data = vec![1u8; LEN];
    let mut evs: Vec<Box<daos_event_t>> = (0..N).map(|_| event(eqh)).collect();
    let mut dks: Vec<Vec<u8>> = (0..N).map(|i| vec![b'd', i as u8]).collect();
    let mut dkeys: Vec<daos_key_t> = dks.iter_mut().map(|d| key(d)).collect();
    let mut rxs: Vec<[daos_recx_t; 1]> = (0..N).map(|_| [recx(0, LEN as u64)]).collect();
    let mut iods: Vec<daos_iod_t> = rxs.iter_mut().map(|r| array_iod(b"a", 1, r)).collect();
    let mut iovs: Vec<[d_iov_t; 1]> = (0..N).map(|_| [d_iov_t::from_slice(&data)]).collect();
    let mut sgls: Vec<d_sg_list_t> = iovs.iter_mut().map(|i| sgl(i)).collect();
    assert_eq!(control("bandwidth 1"), 0);
    let t = Instant::now();
    for i in 0..N {
        update_async(oh, &mut dkeys[i], &mut iods[i], &mut sgls[i], &mut evs[i]);
    }
    let mut got = 0;
    let mut first = None;
    while got < N {
        if !poll1(eqh, -1).is_null() {
            got += 1;
            first.get_or_insert(t.elapsed());
        }
    }
    let total = t.elapsed();
    assert_eq!(control("bandwidth 0"), 0);
    let first = first.unwrap();
    assert!(first >= Duration::from_micros(4100), "first {first:?}");
    assert!(total >= Duration::from_micros(16700), "total {total:?}");
    unsafe {
        for e in &mut evs {
            assert_eq!(daos_event_fini(&mut **e), 0);
        }
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

/// Submits `n` updates of `len` bytes at once on one EQ and polls them all; returns each
/// completion's time since just before the first submission, in completion order.
fn burst(oh: daos_handle_t, n: usize, len: usize) -> Vec<Duration> {
    let eqh = eq_create();
    let data = vec![5u8; len];
    let mut evs: Vec<Box<daos_event_t>> = (0..n).map(|_| event(eqh)).collect();
    let mut dk = key(b"d");
    let mut rxs: Vec<[daos_recx_t; 1]> = (0..n).map(|i| [recx((i * len) as u64, len as u64)]).collect();
    let mut iods: Vec<daos_iod_t> = rxs.iter_mut().map(|r| array_iod(b"a", 1, r)).collect();
    let mut iovs: Vec<[d_iov_t; 1]> = (0..n).map(|_| [d_iov_t::from_slice(&data)]).collect();
    let mut sgls: Vec<d_sg_list_t> = iovs.iter_mut().map(|i| sgl(i)).collect();
    let t = Instant::now();
    for i in 0..n {
        update_async(oh, &mut dk, &mut iods[i], &mut sgls[i], &mut evs[i]);
    }
    let mut done = Vec::new();
    while done.len() < n {
        let ev = poll1(eqh, -1);
        assert!(!ev.is_null());
        assert_eq!(unsafe { (*ev).ev_error }, 0);
        done.push(t.elapsed());
    }
    unsafe {
        for e in &mut evs {
            assert_eq!(daos_event_fini(&mut **e), 0);
        }
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    done
}

#[test]
fn recx_cost_and_per_operation_costs() {
    let _g = lock();
    let c = setup("ctl-recx-cost");
    let oh = c.obj(1);
    let ms = Duration::from_millis;
    // One update of 10 extents holds the link for 10 extent costs.
    assert_eq!(control("recx_cost 1000"), 0);
    let data = [7u8; 10];
    let mut dk = key(b"d");
    let mut rx: Vec<daos_recx_t> = (0..10).map(|i| recx(2 * i, 1)).collect();
    let mut iod = array_iod(b"a", 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(&data)];
    let mut sg = sgl(&mut iov);
    let t = Instant::now();
    let rc = unsafe { daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()) };
    assert_eq!(rc, 0);
    assert!(t.elapsed() >= ms(10), "{:?}", t.elapsed());
    assert_eq!(control("recx_cost 0"), 0);
    // A fetch's figures do not slow an update, and the other way round.
    assert_eq!(control("cost fetch 30000 0 0"), 0);
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"b", 0, b"x"), 0);
    assert!(t.elapsed() < ms(30), "{:?}", t.elapsed());
    let mut buf = [0u8; 1];
    let t = Instant::now();
    get(oh, b"d", b"b", 0, &mut buf);
    assert!(t.elapsed() >= ms(30), "{:?}", t.elapsed());
    assert_eq!(buf, *b"x");
    assert_eq!(control("cost fetch 0 0 0"), 0);
    // An update's bandwidth: 2 MB at 1 GB/s holds the link 2 ms.
    assert_eq!(control("cost update 0 0 1"), 0);
    let big = vec![1u8; 2_000_000];
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"c", 0, &big), 0);
    assert!(t.elapsed() >= ms(2), "{:?}", t.elapsed());
    assert_eq!(control("cost update 0 0 0"), 0);
    // bulk_cost: only an RPC whose data goes by bulk (above DAOS_BULK_LIMIT) pays it.
    assert_eq!(control("cost update 0 0 0 30000"), 0);
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"e", 0, &big[..4096]), 0);
    assert!(t.elapsed() < ms(30), "inline: {:?}", t.elapsed());
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"e", 0, &big[..32 * 1024]), 0);
    assert!(t.elapsed() >= ms(30), "bulk: {:?}", t.elapsed());
    assert_eq!(control("cost update 0 0 0 0"), 0);
    // (That every figure at 0 reads no clock is checked in cost.rs's unit test.)
}

#[test]
fn rpc_cost_serializes_rpcs() {
    let _g = lock();
    let c = setup("ctl-rpc-cost");
    let oh = c.obj(1);
    let ms = Duration::from_millis;
    // 5 RPCs sent at once, 2 ms of service each: one after another on the link.
    assert_eq!(control("rpc_cost 2000"), 0);
    let done = burst(oh, 5, 8);
    for (k, d) in done.iter().enumerate() {
        assert!(*d >= ms(2 * (k as u64 + 1)), "completion {k} after {d:?}: {done:?}");
    }
    assert!(done[4] >= ms(10), "{done:?}");
    // With bandwidth: each holds the link for rpc_cost + bytes / bandwidth (1 ms + 1 ms).
    assert_eq!(control("rpc_cost 1000"), 0);
    assert_eq!(control("bandwidth 1"), 0);
    let done = burst(oh, 3, 1_000_000);
    assert!(done[2] >= ms(6), "{done:?}");
    assert_eq!(control("bandwidth 0"), 0);
    // Blocking calls pay it too; validation errors do not.
    assert_eq!(control("rpc_cost 20000"), 0);
    let t = Instant::now();
    assert_eq!(put(oh, b"d", b"a", 0, b"q"), 0);
    assert!(t.elapsed() >= ms(20));
    let t = Instant::now();
    assert_eq!(put(oh, b"", b"a", 0, b"q"), -DER_INVAL);
    assert!(t.elapsed() < ms(20));
    assert_eq!(control("rpc_cost 0"), 0);
    // Latency alone overlaps: 5 RPCs sent at once are all ready 2 ms later.
    assert_eq!(control("latency 2000"), 0);
    let done = burst(oh, 5, 8);
    assert!(done[0] >= ms(2), "{done:?}");
    let eqh = eq_create();
    let data = [1u8; 8];
    let mut evs: Vec<Box<daos_event_t>> = (0..5).map(|_| event(eqh)).collect();
    let mut dk = key(b"d");
    let mut rx = [recx(0, 8)];
    let mut iod = array_iod(b"a", 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(&data)];
    let mut sg = sgl(&mut iov);
    for ev in &mut evs {
        update_async(oh, &mut dk, &mut iod, &mut sg, ev);
    }
    std::thread::sleep(ms(3));
    let mut out = [null_mut::<daos_event_t>(); 5];
    assert_eq!(unsafe { daos_eq_poll(eqh, 0, 0, 5, out.as_mut_ptr()) }, 5, "all 5 ready together");
    assert_eq!(control("latency 0"), 0);
    unsafe {
        for e in &mut evs {
            assert_eq!(daos_event_fini(&mut **e), 0);
        }
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn stats_count_rpcs_iods_recxs_bytes() {
    let _g = lock();
    let c = setup("ctl-stats");
    let oh = c.obj(1);
    assert_eq!(control("reset_stats"), 0);
    let data = [3u8; 60];
    unsafe {
        // One update: 3 iods, 5 recxs, 60 bytes: ONE RPC.
        let mut dk = key(b"d");
        let mut r1 = [recx(0, 10), recx(20, 10)];
        let mut r2 = [recx(0, 10), recx(50, 10), recx(100, 10)];
        let mut iods = [array_iod(b"a", 1, &mut r1), array_iod(b"b", 1, &mut r2), single_iod(b"s", 10)];
        let mut i1 = [d_iov_t::from_slice(&data[..20])];
        let mut i2 = [d_iov_t::from_slice(&data[20..50])];
        let mut i3 = [d_iov_t::from_slice(&data[50..])];
        let mut sgls = [sgl(&mut i1), sgl(&mut i2), sgl(&mut i3)];
        assert_eq!(
            daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 3, iods.as_mut_ptr(), sgls.as_mut_ptr(), null_mut()),
            0
        );
        // The single value's 10 bytes are counted apart from the arrays' 50.
        assert_eq!((stat("update"), stat("iods"), stat("recxs"), stat("bytes_written")), (1, 3, 5, 50));
        assert_eq!(stat("single_bytes_written"), 10);
        // One fetch of a half-written range: bytes_read counts data, not holes.
        let mut buf = [0u8; 30];
        let mut rx = [recx(0, 30)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_mut(&mut buf)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()), 0);
        assert_eq!((stat("fetch"), stat("bytes_read")), (1, 20));
        let mut ak = key(b"a");
        let mut out = daos_recx_t::default();
        assert_eq!(
            daos_obj_query_key(oh, DAOS_TX_NONE, DAOS_GET_MAX | DAOS_GET_RECX, &mut dk, &mut ak, &mut out, null_mut()),
            0
        );
        assert_eq!(daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!((stat("query"), stat("punch")), (1, 1));
        // Validation failures are not RPCs.
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 0, &mut iod, &mut sg, null_mut(), null_mut()),
            -DER_INVAL
        );
        assert_eq!(stat("fetch"), 1);
        // inflight: launched and not reaped.
        let eqh = eq_create();
        let mut e1 = event(eqh);
        let mut e2 = event(eqh);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), &mut *e1), 0);
        assert_eq!(
            daos_obj_query_key(oh, DAOS_TX_NONE, DAOS_GET_MAX | DAOS_GET_RECX, &mut dk, &mut ak, &mut out, &mut *e2),
            0
        );
        assert_eq!(stat("inflight"), 2);
        let mut evs = [null_mut::<daos_event_t>(); 2];
        let mut n = 0;
        while n < 2 {
            n += daos_eq_poll(eqh, 1, -1, 2, evs.as_mut_ptr());
        }
        assert_eq!(stat("inflight"), 0);
        // The dkey was punched: absent, which DAOS reports as success with an empty recx.
        assert_eq!((e2.ev_error, out.rx_nr), (0, 0), "dkey was punched");
        assert_eq!(daos_event_fini(&mut *e1), 0);
        assert_eq!(daos_event_fini(&mut *e2), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    let json = unsafe { std::ffi::CStr::from_ptr(daos_sim_stats()) }.to_str().unwrap().to_string();
    assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
    for k in ["fetch", "update", "punch", "query", "iods", "recxs", "bytes_read", "bytes_written", "inflight"] {
        assert!(json.contains(&format!("\"{k}\":")), "{k} in {json}");
    }
    assert_eq!(control("reset_stats"), 0);
    assert_eq!((stat("fetch"), stat("update"), stat("bytes_read")), (0, 0, 0));
    c.close(&[oh]);
}

#[test]
fn reset_data_drops_everything() {
    let _g = lock();
    let c = setup("ctl-reset");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 0, &[1; 1000]), 0);
    assert_eq!(control("reset_data"), 0);
    let mut buf = [0u8; 10];
    let g = get(oh, b"d", b"a", 0, &mut buf);
    assert_eq!((g.rc, g.iod_size), (0, 0));
    // Containers and open handles survive; new writes work.
    assert_eq!(put(oh, b"d", b"a", 0, b"again"), 0);
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf[..5]).iod_size, 1);
    c.close(&[oh]);
}

/// `copy off` (profiling only): updates and fetches do all their work but move no byte. A fetch
/// leaves the caller's buffer as it was, and reports and counts the bytes as usual; an update
/// keeps the stored bytes (an overwrite) or stores zeros (new records, never uninitialised
/// memory); `copy on` restores normal service.
#[test]
fn copy_off_moves_no_bytes() {
    let _g = lock();
    let c = setup("ctl-copy");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 0, &[1; 3000]), 0);
    assert_eq!(control("copy off"), 0);
    let read0 = stat("bytes_read");
    let mut buf = [9u8; 3000];
    let g = get(oh, b"d", b"a", 0, &mut buf);
    assert_eq!((g.rc, g.iod_size, g.iov_len), (0, 1, 3000));
    assert!(buf.iter().all(|&b| b == 9), "a fetch with copies off wrote into the caller's buffer");
    assert_eq!(stat("bytes_read") - read0, 3000, "bytes_read counts what the fetch would have moved");
    // An overwrite keeps the old bytes; a write past the end (a new chunk tail) stores zeros.
    assert_eq!(put(oh, b"d", b"a", 0, &[2; 3000]), 0);
    assert_eq!(put(oh, b"d", b"a", 3000, &[3; 1000]), 0);
    assert_eq!(put(oh, b"d", b"a", (1 << 20) + 7, &[4; 100]), 0);
    assert_eq!(control("copy on"), 0);
    let mut buf = [9u8; 4000];
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, 0);
    assert!(buf[..3000].iter().all(|&b| b == 1), "an overwrite with copies off changed the stored bytes");
    assert!(buf[3000..].iter().all(|&b| b == 0), "new bytes written with copies off are not zeros");
    let mut buf = [9u8; 100];
    assert_eq!(get(oh, b"d", b"a", (1 << 20) + 7, &mut buf).rc, 0);
    assert!(buf.iter().all(|&b| b == 0));
    // Copies back on: an overwrite lands.
    assert_eq!(put(oh, b"d", b"a", 0, &[6; 3000]), 0);
    let mut buf = [9u8; 3000];
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, 0);
    assert!(buf.iter().all(|&b| b == 6));
    c.close(&[oh]);
}

/// Resident memory of this process, MiB.
fn rss_mib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    (pages * 4096) >> 20
}

/// The benchmark runs contenders one after another in one process and relies on reset_data
/// handing the store's memory back: check it over rounds, with chunks allocated in two threads.
#[cfg(target_os = "linux")]
#[test]
fn reset_data_returns_memory() {
    let _g = lock();
    let c = setup("ctl-reset-mem");
    let oh = c.obj(1);
    let block = vec![7u8; 1 << 20];
    const MIB_PER_THREAD: u64 = 128;
    for round in 0..3 {
        let before = rss_mib();
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let block = &block;
                s.spawn(move || {
                    for i in 0..MIB_PER_THREAD {
                        assert_eq!(put(oh, &[b'd', t], b"a", i << 20, block), 0);
                    }
                });
            }
        });
        let full = rss_mib();
        assert_eq!(control("reset_data"), 0);
        let after = rss_mib();
        let msg = format!("round {round}: before {before} MiB, written {full} MiB, after reset_data {after} MiB");
        assert!(full >= before + MIB_PER_THREAD * 2 * 9 / 10, "{msg}");
        assert!(after <= before + 32, "{msg}");
    }
    c.close(&[oh]);
}
