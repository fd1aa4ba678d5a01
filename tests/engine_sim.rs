// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The engine against daos-sim, through the same dlopen path the plugin uses with real DAOS.
//! Needs target/<profile>/libdaos_sim.so (built by `cargo build --release` at the repo root).

use std::ffi::{c_char, CStr, CString};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use plugin_DAOS::config::Config;
use plugin_DAOS::engine::{Desc, Engine, MemType, Registration, Request, XferOp};
use plugin_DAOS::error::{Error, Status};
use plugin_DAOS::key::{ChunkNames, ObjectKey};

fn sim_path() -> String {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| format!("{manifest}/target"));
    for profile in ["release", "debug"] {
        let p = format!("{target}/{profile}/libdaos_sim.so");
        if std::path::Path::new(&p).exists() {
            return p;
        }
    }
    panic!("libdaos_sim.so not found under {target}: run `cargo build --release` at the repo root first");
}

struct Sim {
    _lib: libloading::Library,
    control: unsafe extern "C" fn(*const c_char) -> i32,
    stats: unsafe extern "C" fn() -> *const c_char,
}

fn sim() -> &'static Sim {
    static SIM: OnceLock<Sim> = OnceLock::new();
    // SAFETY: daos-sim's initialisers are plain Rust; both symbols have these signatures
    // (tests/daos-sim/src/sim.rs), and the library is kept loaded beside them.
    SIM.get_or_init(|| unsafe {
        let lib = libloading::Library::new(sim_path()).unwrap();
        let control = *lib.get::<unsafe extern "C" fn(*const c_char) -> i32>(b"daos_sim_control").unwrap();
        let stats = *lib.get::<unsafe extern "C" fn() -> *const c_char>(b"daos_sim_stats").unwrap();
        Sim { _lib: lib, control, stats }
    })
}

fn control(cmd: &str) {
    let c = CString::new(cmd).unwrap();
    // SAFETY: a NUL-terminated command that outlives the call.
    assert_eq!(unsafe { (sim().control)(c.as_ptr()) }, 0, "daos_sim_control({cmd})");
}

fn stat(name: &str) -> u64 {
    // SAFETY: daos_sim_stats returns a NUL-terminated string that stays valid until this thread calls it again.
    let s = unsafe { CStr::from_ptr((sim().stats)()) }.to_string_lossy().into_owned();
    let at = s.find(&format!("\"{name}\"")).unwrap_or_else(|| panic!("{name} missing in {s}"));
    let rest = &s[at + name.len() + 2..];
    let rest = rest.trim_start_matches([':', ' ']);
    rest.chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
}

/// The simulator's state (hang, latency, counters) and the lane-thread census are process-wide,
/// so the tests of this file run one at a time.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn engine(container: &str, extra: &[(&str, &str)]) -> Engine {
    let mut params = vec![
        ("pool".to_string(), "sim".to_string()),
        ("container".to_string(), container.to_string()),
        ("create_container".to_string(), "true".to_string()),
        ("daos_lib".to_string(), sim_path()),
    ];
    params.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Engine::create(Config::from_params(&params).unwrap()).unwrap()
}

/// Registers `key` over the whole object range, on a devId of its own (the engine refuses
/// another key on a live devId's overlapping range: crate::registry).
fn reg(e: &Engine, key: &str) -> Box<Registration> {
    static DEV_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let dev = DEV_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    e.register(MemType::Obj, dev, 0, u64::MAX >> 1, key.as_bytes()).unwrap().unwrap()
}

/// A write of (buffer, object offset, key) parts.
fn prep_write(e: &Engine, parts: &[(&[u8], u64, &Registration)]) -> Box<Request> {
    let local: Vec<Desc> = parts
        .iter()
        .map(|(b, _, _)| Desc { addr: b.as_ptr() as u64, len: b.len() as u64, dev_id: 0, reg: None })
        .collect();
    prep_parts(e, XferOp::Write, local, parts.iter().map(|(b, off, r)| (b.len(), *off, *r)))
}

/// A read into (buffer, object offset, key) parts. The buffers are `&mut`: DAOS writes into
/// them, and a pointer taken from a shared borrow must not be written through.
fn prep_read(e: &Engine, parts: &mut [(&mut [u8], u64, &Registration)]) -> Box<Request> {
    let local: Vec<Desc> = parts
        .iter_mut()
        .map(|(b, _, _)| Desc { addr: b.as_mut_ptr() as u64, len: b.len() as u64, dev_id: 0, reg: None })
        .collect();
    prep_parts(e, XferOp::Read, local, parts.iter().map(|(b, off, r)| (b.len(), *off, *r)))
}

fn prep_parts<'a>(
    e: &Engine,
    op: XferOp,
    local: Vec<Desc<'a>>,
    remote: impl Iterator<Item = (usize, u64, &'a Registration)>,
) -> Box<Request> {
    let remote: Vec<Desc> =
        remote.map(|(len, off, r)| Desc { addr: off, len: len as u64, dev_id: 0, reg: Some(r) }).collect();
    e.prep(op, MemType::Dram, &local, MemType::Obj, &remote).unwrap()
}

fn run(e: &Engine, req: &Request, limit: Duration) -> Result<(), Error> {
    let start = Instant::now();
    match e.post(req)? {
        Status::Success => return Ok(()),
        Status::InProgress => {}
        s => panic!("post returned {s:?}"),
    }
    loop {
        match e.check(req)? {
            Status::Success => return Ok(()),
            Status::InProgress => {}
            s => panic!("check returned {s:?}"),
        }
        assert!(start.elapsed() < limit, "transfer still in progress after {limit:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Waits (at most 5 s, else fails with `what`) until DAOS holds no operation of `e`.
fn wait_drained(e: &Engine, what: &str) {
    let start = Instant::now();
    while e.inflight() > 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn write_then_read_many_layers_per_key() {
    let _x = exclusive();
    let e = engine("eng-rw", &[]);
    let regs: Vec<_> = (0..3).map(|i| reg(&e, &format!("blk{i}"))).collect();
    let layer = 64 * 1024;
    let src: Vec<Vec<u8>> = (0..3 * 8).map(|i| pattern(layer, i as u8)).collect();
    let parts: Vec<_> =
        src.iter().enumerate().map(|(i, b)| (b.as_slice(), (i % 8 * layer) as u64, &*regs[i / 8])).collect();
    let w = prep_write(&e, &parts);
    assert_eq!(w.fold_count(), 3, "one fold per key");
    run(&e, &w, Duration::from_secs(10)).unwrap();

    let mut dst: Vec<Vec<u8>> = (0..3 * 8).map(|_| vec![0u8; layer]).collect();
    let mut parts: Vec<_> =
        dst.iter_mut().enumerate().map(|(i, b)| (b.as_mut_slice(), (i % 8 * layer) as u64, &*regs[i / 8])).collect();
    let r = prep_read(&e, &mut parts);
    run(&e, &r, Duration::from_secs(10)).unwrap();
    assert_eq!(src, dst);

    // Reposting a finished request reads again.
    let again = run(&e, &r, Duration::from_secs(10));
    assert!(again.is_ok());
    e.release(&r).unwrap();
    e.release(&w).unwrap();
}

#[test]
fn one_rpc_per_key_whatever_its_descriptors() {
    let _x = exclusive();
    let e = engine("eng-fold", &[]);
    let regs = [reg(&e, "fa"), reg(&e, "fb")];
    // 40 layers of 4 KiB per key, apart in memory: staged back to back, one extent per key.
    let mut bufs: Vec<Vec<u8>> = (0..80).map(|i| pattern(4096, i as u8)).collect();
    let parts: Vec<_> =
        bufs.iter().enumerate().map(|(i, b)| (b.as_slice(), (i % 40 * 4096) as u64, &*regs[i / 40])).collect();
    control("reset_stats");
    let w = prep_write(&e, &parts);
    assert_eq!(w.fold_count(), 2);
    run(&e, &w, Duration::from_secs(10)).unwrap();
    assert_eq!(stat("update"), 2);
    // Per key: the bytes (one extent) and the checksums of its 3 blocks (one run).
    assert_eq!(stat("recxs"), 2 * 2);
    drop(parts);
    let want = bufs.clone();
    bufs.iter_mut().for_each(|b| b.fill(0));
    let mut parts: Vec<_> =
        bufs.iter_mut().enumerate().map(|(i, b)| (b.as_mut_slice(), (i % 40 * 4096) as u64, &*regs[i / 40])).collect();
    let r = prep_read(&e, &mut parts);
    run(&e, &r, Duration::from_secs(10)).unwrap();
    assert_eq!(stat("fetch"), 2);
    assert_eq!(stat("recxs"), 2 * 2 * 2);
    drop(parts);
    assert_eq!(bufs, want);
    // Overlapping descriptors of one write: one RPC, the later descriptor's bytes where they
    // overlap; thousands of disjoint ranges (past DAOS's 20 KiB RPC body): one RPC too.
    let k = reg(&e, "overlap");
    let (a, b) = (pattern(8192, 1), pattern(8192, 2));
    control("reset_stats");
    run(&e, &prep_write(&e, &[(&a, 0, &k), (&b, 4096, &k)]), Duration::from_secs(10)).unwrap();
    assert_eq!(stat("update"), 1);
    let mut back = vec![0u8; 12288];
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &k)]), Duration::from_secs(10)).unwrap();
    assert_eq!((&back[..4096], &back[4096..]), (&a[..4096], &b[..]));
    let many = reg(&e, "many");
    let bytes = pattern(3000 * 16, 5);
    let parts: Vec<_> = (0..3000).map(|i| (&bytes[i * 16..i * 16 + 16], (i * 64) as u64, &*many)).collect();
    control("reset_stats");
    run(&e, &prep_write(&e, &parts), Duration::from_secs(10)).unwrap();
    assert_eq!(stat("update"), 1);
}

#[test]
fn missing_key_and_short_read_fail() {
    let _x = exclusive();
    let e = engine("eng-miss", &[]);
    let absent = reg(&e, "never-written");
    let mut buf = vec![7u8; 4096];
    let r = prep_read(&e, &mut [(&mut buf, 0, &absent)]);
    let err = run(&e, &r, Duration::from_secs(10)).unwrap_err();
    assert!(matches!(err, Error::NoSuchKey { .. }), "{err}");
    assert_eq!(err.status(), Status::Backend);
    assert!(buf.iter().all(|&b| b == 7), "nothing unwritten is returned as data");

    let k = reg(&e, "short");
    let data = pattern(1000, 1);
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
    let mut big = vec![0u8; 4096];
    let err = run(&e, &prep_read(&e, &mut [(&mut big, 0, &k)]), Duration::from_secs(10)).unwrap_err();
    match err {
        Error::ShortRead { want, got, .. } => assert_eq!((want, got), (4096, 1000)),
        other => panic!("expected a short read, got {other}"),
    }
}

#[test]
fn query_sizes_present_and_absent() {
    let _x = exclusive();
    let e = engine("eng-query", &[]);
    let k = reg(&e, "sized");
    let data = pattern(12345, 3);
    run(&e, &prep_write(&e, &[(&data, 100, &k)]), Duration::from_secs(10)).unwrap();
    let keys = [ObjectKey::from_registration(b"sized", 0), ObjectKey::from_registration(b"nope", 0)];
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![Some(12445), None]);
}

/// The keys' object is spread over every target the pool has (daos-sim: 8, RF0), not one
/// redundancy group: the engine asks DAOS for the pool-wide sharding hint. A second engine
/// reuses the recorded id.
#[test]
fn object_spans_all_targets() {
    let _x = exclusive();
    let e = engine("eng-groups", &[]);
    assert_eq!(e.object_id().groups(), 8, "object {:?}", e.object_id());
    let again = engine("eng-groups", &[]);
    assert_eq!(again.object_id(), e.object_id());
}

#[test]
fn deregistering_while_in_flight_is_safe() {
    let _x = exclusive();
    let e = engine("eng-dereg", &[]);
    let k = reg(&e, "dereg");
    let data = pattern(1 << 20, 9);
    control("latency 100000");
    let w = prep_write(&e, &[(&data, 0, &k)]);
    assert_eq!(e.post(&w).unwrap(), Status::InProgress);
    drop(k); // what KVBM does right after posting
    let start = Instant::now();
    while e.check(&w).unwrap() == Status::InProgress {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(1));
    }
    control("latency 0");
    let k2 = reg(&e, "dereg");
    let mut back = vec![0u8; 1 << 20];
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &k2)]), Duration::from_secs(10)).unwrap();
    assert!(back == data);
}

fn lane_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with("nixl-daos-lane"))
        .count()
}

#[test]
fn hung_server_gives_bounded_errors_and_teardown() {
    let _x = exclusive();
    let e = engine("eng-hang", &[("timeout_ms", "300"), ("read_timeout_ms", "300"), ("num_queues", "2")]);
    let k = reg(&e, "hang");
    let data = pattern(8192, 5);
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();

    control("hang");
    let mut bufs: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; 8192]).collect();
    let reqs: Vec<_> = bufs.iter_mut().map(|b| prep_read(&e, &mut [(b.as_mut_slice(), 0, &k)])).collect();
    let start = Instant::now();
    for r in &reqs {
        assert_eq!(e.post(r).unwrap(), Status::InProgress);
    }
    for r in &reqs {
        loop {
            match e.check(r) {
                Ok(Status::InProgress) => std::thread::sleep(Duration::from_millis(5)),
                Err(Error::Timeout { .. }) => break,
                other => panic!("expected a timeout, got {other:?}"),
            }
        }
    }
    let waited = start.elapsed();
    // A read DAOS holds fails at its deadline: DAOS answers into the plugin's buffer, never the
    // caller's, so there is nothing to wait for.
    assert!(waited < Duration::from_millis(300 + 500), "deadline overshot: {waited:?}");
    assert!(waited >= Duration::from_millis(300), "a read was reported before its deadline: {waited:?}");
    let q = e.query_sizes(&[ObjectKey::from_registration(b"hang", 0)]);
    assert!(matches!(q, Err(Error::Timeout { .. })), "{q:?}");

    // Tear down while DAOS still holds the reads: bounded, and no lane thread survives.
    drop(reqs);
    let before = lane_threads();
    assert!(before >= 2);
    let t = Instant::now();
    drop(e);
    assert!(t.elapsed() < Duration::from_secs(3), "teardown took {:?}", t.elapsed());
    control("resume");

    // A new engine works after resume.
    let e = engine("eng-hang", &[("timeout_ms", "2000")]);
    let k = reg(&e, "hang");
    let mut back = vec![0u8; 8192];
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &k)]), Duration::from_secs(10)).unwrap();
    assert_eq!(back, data);
    drop(e);
    assert_eq!(lane_threads(), 0, "lane threads outlived their engine");
}

#[test]
fn bad_requests_are_refused_at_prep() {
    let _x = exclusive();
    let e = engine("eng-bad", &[]);
    let k = reg(&e, "x");
    let buf = [0u8; 16];
    let l = [Desc { addr: buf.as_ptr() as u64, len: 16, dev_id: 0, reg: None }];
    let r = [Desc { addr: 0, len: 8, dev_id: 0, reg: Some(&k) }];
    let err = e.prep(XferOp::Write, MemType::Dram, &l, MemType::Obj, &r).err().unwrap();
    assert_eq!(err.status(), Status::InvalidParam);
    let err = e.prep(XferOp::Write, MemType::Vram, &l, MemType::Obj, &r).err().unwrap();
    assert_eq!(err.status(), Status::NotSupported);
    let unregistered = [Desc { addr: 0, len: 16, dev_id: 3, reg: None }];
    assert!(e.prep(XferOp::Write, MemType::Dram, &l, MemType::Obj, &unregistered).is_err());
    assert_eq!(e.register(MemType::Vram, 0, 0, 0, b"").unwrap_err().status(), Status::NotSupported);
    assert!(e.register(MemType::Dram, 0, 0, 0, b"").unwrap().is_none());
}

#[test]
fn unknown_pool_and_missing_library_fail_with_reasons() {
    let _x = exclusive();
    let params = |pool: &str, lib: &str| {
        vec![
            ("pool".to_string(), pool.to_string()),
            ("container".to_string(), "kv".to_string()),
            ("daos_lib".to_string(), lib.to_string()),
        ]
    };
    let err = Engine::create(Config::from_params(&params("no-such-pool", &sim_path())).unwrap()).err().unwrap();
    assert!(err.to_string().contains("no-such-pool") && err.to_string().contains("DER_NONEXIST"), "{err}");
    let err = Engine::create(Config::from_params(&params("sim", "/nonexistent/libdaos.so")).unwrap()).err().unwrap();
    assert!(
        err.to_string().contains("/nonexistent/libdaos.so") && err.to_string().contains("NIXL_DAOS_LIBDAOS"),
        "{err}"
    );
}

/// Polls `req` until it is no longer in progress, returning the outcome and how many DAOS
/// operations of the engine were still in flight at that moment.
fn settle(e: &Engine, req: &Request, limit: Duration) -> (Result<Status, Error>, usize) {
    let start = Instant::now();
    loop {
        let r = e.check(req);
        if !matches!(r, Ok(Status::InProgress)) {
            return (r, e.inflight());
        }
        assert!(start.elapsed() < limit, "still in progress after {limit:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn a_failed_fold_is_reported_only_after_its_siblings_finish() {
    let _x = exclusive();
    // A container of 4 MiB chunks: a chunk is a dkey of its own, so each RPC carries one
    // 4 MiB chunk.
    const RPC: usize = 4 << 20;
    let e = engine(
        "eng-siblings",
        &[
            ("num_queues", "2"),
            ("chunk_bytes", "4194304"),
            ("evict", "false"), // no eviction thread: daos-sim's fetch count is this request's
        ],
    );
    let present = reg(&e, "sibling-present");
    let absent = reg(&e, "sibling-absent");
    let data = pattern(32 << 20, 4);
    run(&e, &prep_write(&e, &[(&data, 0, &present)]), Duration::from_secs(20)).unwrap();
    // 1 GB/s on the modeled link: the missing key's fetch (first in line) answers at once, the
    // 32 MiB fetch some 30 ms later.
    control("bandwidth 1");
    let mut small = vec![0u8; 16];
    let mut big = vec![0u8; 32 << 20];
    let req = prep_read(&e, &mut [(&mut small, 0, &absent), (&mut big, 0, &present)]);
    assert_eq!(req.fold_count(), 1 + 8, "the per-RPC check below assumes 4 MiB RPCs");
    let fetches_before = stat("fetch");
    e.post(&req).unwrap();
    let (outcome, inflight) = settle(&e, &req, Duration::from_secs(20));
    let launched = stat("fetch") - fetches_before;
    control("bandwidth 0");
    // Room for a fold launched after the report, if any, to reach DAOS and land.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(stat("fetch") - fetches_before, launched, "a fold of the failed request reached DAOS after its report");
    assert!(matches!(outcome, Err(Error::NoSuchKey { .. })), "{outcome:?}");
    assert_eq!(inflight, 0, "reported while a sibling fetch could still write the caller's buffer");
    // The sibling's 32 MiB go out as eight 4 MiB RPCs: each either was launched before the
    // failure and completed before it was reported (delivered only if it completed before the
    // failure was known), or was dropped unlaunched because its request had already failed.
    let mut whole = 0;
    for (i, (got, want)) in big.chunks(RPC).zip(data.chunks(RPC)).enumerate() {
        assert!(
            got == want || got.iter().all(|&b| b == 0),
            "RPC {i} of the sibling was cut short or ran after the report"
        );
        whole += usize::from(got == want);
    }
    // No sibling delivered that was not launched by the report.
    assert!(launched >= 1, "the missing key's fetch was never sent");
    assert!((whole as u64) < launched, "{whole} siblings delivered, {} launched by the report", launched - 1);
    assert_eq!(e.check(&req).unwrap(), Status::Backend, "the same status on every later check");
}

#[test]
fn a_queued_fold_of_a_timed_out_request_never_reaches_daos() {
    let _x = exclusive();
    let e = engine(
        "eng-stale",
        &[("num_queues", "1"), ("max_inflight", "1"), ("timeout_ms", "300"), ("read_timeout_ms", "300")],
    );
    let k = reg(&e, "stale");
    let data = vec![0xabu8; 4096];
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();

    control("hang");
    let mut first = vec![0u8; 4096];
    let a = prep_read(&e, &mut [(&mut first, 0, &k)]);
    e.post(&a).unwrap(); // takes the only slot
    let mut second = vec![0u8; 4096];
    let b = prep_read(&e, &mut [(&mut second, 0, &k)]);
    e.post(&b).unwrap(); // waits behind it
    let (outcome, _) = settle(&e, &b, Duration::from_secs(5));
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
    e.release(&b).unwrap(); // its one fold never reached DAOS
    second.fill(0x11); // the caller reuses its buffer
    control("resume");
    // The first request is past its deadline too, but may have completed since resume: either
    // a timeout or a success is a truthful answer.
    let (outcome, _) = settle(&e, &a, Duration::from_secs(5));
    assert!(matches!(outcome, Ok(Status::Success) | Err(Error::Timeout { .. })), "{outcome:?}");
    wait_drained(&e, "DAOS still holds operations after 5 s");
    std::thread::sleep(Duration::from_millis(50)); // room for a stale launch to land, if any
    assert!(second.iter().all(|&b| b == 0x11), "a released request's queued fetch wrote the buffer");
    let want = if outcome.is_ok() { 0xab } else { 0 };
    assert!(first.iter().all(|&b| b == want), "{outcome:?}, yet the buffer holds {:#x}", first[0]);
}

#[test]
fn repost_is_refused_while_the_previous_transfer_runs() {
    let _x = exclusive();
    let e = engine("eng-repost", &[]);
    let k = reg(&e, "repost");
    let data = pattern(4096, 8);
    control("latency 100000");
    let w = prep_write(&e, &[(&data, 0, &k)]);
    assert_eq!(e.post(&w).unwrap(), Status::InProgress);
    let again = e.post(&w);
    control("latency 0");
    assert!(matches!(again, Err(Error::RepostActive)), "{again:?}");
    assert_eq!(settle(&e, &w, Duration::from_secs(5)).0.unwrap(), Status::Success);
    assert_eq!(e.post(&w).unwrap(), Status::InProgress, "a finished request may be reposted");
    assert_eq!(settle(&e, &w, Duration::from_secs(5)).0.unwrap(), Status::Success);
}

#[test]
fn engines_on_a_container_share_the_recorded_object_whatever_their_class() {
    let _x = exclusive();
    // The first engine records its object's id; a later one asking for another class (as after
    // a pool extension changes what DAOS would generate) still finds the first one's keys.
    let first = engine("eng-oid", &[("oclass", "SX")]);
    let k = reg(&first, "shared-oid");
    let data = pattern(4096, 6);
    run(&first, &prep_write(&first, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
    drop(first);
    let second = engine("eng-oid", &[("oclass", "S1")]);
    let k = reg(&second, "shared-oid");
    let mut back = vec![0u8; 4096];
    run(&second, &prep_read(&second, &mut [(&mut back, 0, &k)]), Duration::from_secs(10)).unwrap();
    assert_eq!(back, data);
}

/// A read of a range past the value's end fails whatever the order of its descriptors (DAOS
/// trims only a fetch's tail holes; the record's length decides here).
#[test]
fn a_read_past_the_end_fails_in_any_order() {
    let _x = exclusive();
    let e = engine("eng-unsorted", &[]);
    let k = reg(&e, "unsorted");
    let data = pattern(64 * 1024, 4);
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
    for past in [64 * 1024, 60 * 1024, 200 * 1024] {
        let (mut a, mut b) = (vec![0xEEu8; 8192], vec![0xEEu8; 8192]);
        let r = prep_read(&e, &mut [(&mut a, past, &k), (&mut b, 0, &k)]);
        let res = run(&e, &r, Duration::from_secs(10));
        assert!(matches!(res, Err(Error::ShortRead { .. })), "read of [{past}, +8K) then [0, 8K): {res:?}");
        e.release(&r).unwrap();
    }
}

/// Sets daos-sim's pool capacity (and reclaim delay) for one test, and lifts it again however
/// the test ends: the setting is process-wide.
struct Capacity;

impl Capacity {
    fn set(bytes: u64, reclaim_ms: u64) -> Capacity {
        // The pool is shared by every test's container: start from an empty one.
        control("reset_data");
        control(&format!("capacity {bytes}"));
        control(&format!("reclaim_ms {reclaim_ms}"));
        Capacity
    }
}

impl Drop for Capacity {
    fn drop(&mut self) {
        control("capacity 0");
        control("reclaim_ms 0");
    }
}

/// Writes `n` new keys of `size` bytes into a pool of `cap` bytes (three times over) with the
/// eviction defaults, then checks what a cache must: writes keep succeeding, recent keys read
/// back right, evicted keys are misses (read fails, size query None), never wrong bytes.
#[test]
fn eviction_keeps_a_full_pool_writable_and_never_returns_wrong_bytes() {
    let _x = exclusive();
    const SIZE: usize = 1 << 20;
    const CAP: u64 = 48 << 20;
    let n = 3 * (CAP as usize / SIZE);
    let _cap = Capacity::set(CAP, 100);
    let e = engine("evict_fill", &[("evict_reclaim_ms", "300"), ("timeout_ms", "20000")]);
    let mut ok = vec![false; n];
    for (i, ok) in ok.iter_mut().enumerate() {
        let buf = pattern(SIZE, i as u8);
        let r = reg(&e, &format!("fill/{i}"));
        let req = prep_write(&e, &[(&buf, 0, &r)]);
        *ok = run(&e, &req, Duration::from_secs(30)).is_ok();
    }
    let last_third = &ok[2 * n / 3..];
    let good = last_third.iter().filter(|&&b| b).count();
    let stats = e.eviction().unwrap();
    assert!(good * 100 >= last_third.len() * 95, "{good} of {} writes in the last third; {stats:?}", last_third.len());
    assert!(stats.evicted_keys > 0 && stats.refused_for_space > 0, "{stats:?}");
    let (mut present, mut missing) = (0, 0);
    let keys: Vec<ObjectKey> =
        (0..n).map(|i| ObjectKey::from_registration(format!("fill/{i}").as_bytes(), 0)).collect();
    // Eviction may still run while this reads: a miss is asked about after its read (once
    // gone, a key stays gone, since nothing rewrites it).
    for (i, key) in keys.iter().enumerate() {
        let r = reg(&e, &format!("fill/{i}"));
        let mut buf = vec![0u8; SIZE];
        let req = prep_read(&e, &mut [(&mut buf, 0, &r)]);
        match run(&e, &req, Duration::from_secs(30)) {
            Ok(()) => {
                assert_eq!(buf, pattern(SIZE, i as u8), "key {i} read back wrong bytes");
                present += 1;
            }
            Err(err) => {
                assert!(matches!(err, Error::NoSuchKey { .. }), "key {i}: {err}");
                let size = e.query_sizes(std::slice::from_ref(key)).unwrap()[0];
                assert_eq!(size, None, "key {i} is a miss but its size query says {size:?}");
                missing += 1;
            }
        }
    }
    let sizes = e.query_sizes(&keys).unwrap();
    assert!(missing > 0 && present > 0, "present {present}, missing {missing}");
    // The newest tenth was written last: eviction goes oldest first, so it is all there.
    for (i, s) in sizes.iter().enumerate().skip(n - n / 10) {
        assert_eq!(*s, Some(SIZE as u64), "recent key {i} was evicted; {stats:?}");
    }
    eprintln!(
        "eviction fill: {n} writes, last third {good}/{}, present {present}, missing {missing}, {stats:?}",
        last_third.len()
    );
}

/// A key rewritten after its first write was recorded is kept when the old record is evicted:
/// eviction punches a key only while it still holds the write its record names.
#[test]
fn eviction_keeps_a_key_rewritten_since() {
    let _x = exclusive();
    const SIZE: usize = 1 << 20;
    let _cap = Capacity::set(24 << 20, 0);
    let e = engine("evict_rewrite", &[("evict_reclaim_ms", "0")]);
    let hot = reg(&e, "hot");
    let first = pattern(SIZE, 1);
    run(&e, &prep_write(&e, &[(&first, 0, &hot)]), Duration::from_secs(10)).unwrap();
    // Let the first write's record reach the index (flushed every 200 ms) before the rewrite.
    std::thread::sleep(Duration::from_millis(500));
    let second = pattern(SIZE, 2);
    run(&e, &prep_write(&e, &[(&second, 0, &hot)]), Duration::from_secs(10)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..60 {
        let buf = pattern(SIZE, 100 + i as u8);
        let r = reg(&e, &format!("cold/{i}"));
        run(&e, &prep_write(&e, &[(&buf, 0, &r)]), Duration::from_secs(20)).unwrap();
    }
    let stats = e.eviction().unwrap();
    assert!(stats.kept_rewritten >= 1, "the old record of the rewritten key was not seen: {stats:?}");
    let mut buf = vec![0u8; SIZE];
    match run(&e, &prep_read(&e, &mut [(&mut buf, 0, &hot)]), Duration::from_secs(10)) {
        // The rewrite's own (newer) record may have been evicted by now too: then it is a miss.
        Ok(()) => assert_eq!(buf, second, "the rewritten key holds the wrong bytes"),
        Err(err) => assert!(matches!(err, Error::NoSuchKey { .. }), "{err}"),
    }
}

/// With `evict=false` nothing is recorded or evicted, and a full pool refuses writes with a
/// clean error (the behaviour before eviction existed).
#[test]
fn eviction_off_leaves_a_full_pool_full() {
    let _x = exclusive();
    const SIZE: usize = 1 << 20;
    let _cap = Capacity::set(8 << 20, 0);
    let e = engine("evict_off", &[("evict", "false")]);
    assert!(e.eviction().is_none());
    let mut failed = 0;
    for i in 0..16 {
        let buf = pattern(SIZE, i as u8);
        let r = reg(&e, &format!("off/{i}"));
        if let Err(err) = run(&e, &prep_write(&e, &[(&buf, 0, &r)]), Duration::from_secs(10)) {
            assert!(err.to_string().contains("DER_NOSPACE"), "{err}");
            failed += 1;
        }
    }
    assert!(failed >= 8, "{failed} of 16 writes into an 8 MiB pool failed");
}

/// A key written in two RPCs whose first is refused for space (and sent again later) must not
/// be recorded for eviction before both landed: punched in between, it would keep only the
/// second RPC's range, and a read of the whole key would succeed over a hole. (A reviewer's
/// reproduction of exactly that, 10 of 10 before the fix.)
#[test]
fn eviction_never_leaves_a_key_with_only_some_of_its_rpcs() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    for it in 0..10 {
        let _cap = Capacity::set(64 << 20, 100);
        let cont = format!("torn{it}");
        let e1 = engine(&cont, &[("chunk_bytes", "1048576"), ("num_queues", "1")]);
        let k = reg(&e1, "K");
        let data = pattern(2 * MIB, 77);
        let (lo, hi) = data.split_at(MIB);
        let req = prep_write(&e1, &[(hi, MIB as u64, &k), (lo, 0, &k)]);
        control("fail DER_NOSPACE 1");
        let res = run(&e1, &req, Duration::from_secs(30));
        control("fail DER_IO 0");
        res.unwrap_or_else(|err| panic!("iteration {it}: the write failed: {err}"));
        // Let eviction run (the refusal woke it) before reading through another engine.
        std::thread::sleep(Duration::from_millis(300));
        let e2 = engine(&cont, &[("evict", "false")]);
        let k2 = reg(&e2, "K");
        let mut out = vec![0u8; 2 * MIB];
        match run(&e2, &prep_read(&e2, &mut [(&mut out, 0, &k2)]), Duration::from_secs(10)) {
            Ok(()) => assert!(out == data, "iteration {it}: a successful read returned bytes never written"),
            Err(err) => {
                assert!(matches!(err, Error::NoSuchKey { .. } | Error::Unverified { .. }), "iteration {it}: {err}")
            }
        }
    }
}

/// A key written as many descriptors is recorded once with all its bytes, so eviction punches
/// about what it meant to (a reviewer found one RPC per descriptor evicting 49 of 60 keys for
/// a goal of 3).
#[test]
fn eviction_evicts_what_it_counts() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    for fold in ["4194304"] {
        let _cap = Capacity::set(64 << 20, 0);
        let e = engine(&format!("over_{fold}"), &[("chunk_bytes", fold), ("evict_reclaim_ms", "0")]);
        let keys = 60;
        for i in 0..keys {
            let r = reg(&e, &format!("k/{i}"));
            let bufs: Vec<Vec<u8>> = (0..16).map(|j| pattern(64 * KIB, (i * 16 + j) as u8)).collect();
            let parts: Vec<_> =
                bufs.iter().enumerate().map(|(j, b)| (b.as_slice(), (j * 64 * KIB) as u64, &*r)).collect();
            run(&e, &prep_write(&e, &parts), Duration::from_secs(30)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2500));
        let ks: Vec<ObjectKey> =
            (0..keys).map(|i| ObjectKey::from_registration(format!("k/{i}").as_bytes(), 0)).collect();
        let missing = e.query_sizes(&ks).unwrap().iter().filter(|s| s.is_none()).count();
        let stats = e.eviction().unwrap();
        // 60 MiB in 64 MiB, keep 10%: about 3 MiB to evict (2.4 MiB short, plus 1%).
        assert!((1..=8).contains(&missing), "chunk_bytes={fold}: {missing} of {keys} keys evicted; {stats:?}");
        assert_eq!(stats.evicted_keys as usize, missing, "chunk_bytes={fold}: {stats:?}");
        assert_eq!(stats.evicted_bytes, missing as u64 * 1024 * KIB as u64, "chunk_bytes={fold}: {stats:?}");
    }
}

/// Hostile: keys of two chunks (two dkeys, two RPCs) rewritten over and over, while eviction
/// runs on a full pool and another engine reads them whole. A read racing a rewrite may be a
/// miss, never halves of two versions nor one beside a hole: every chunk's record names its
/// write, and a read is DONE only when both chunks name the same one and verify. At rest,
/// every hot key reads back as one whole version or is a clean miss.
#[test]
fn eviction_racing_rewrites_never_tears_a_key() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    let _cap = Capacity::set(24 << 20, 20);
    // Every RPC takes a while, so that rewrites land inside the evictor's check-then-punch.
    control("latency 300");
    let w = engine("evict_race", &[("chunk_bytes", "1048576"), ("evict_reclaim_ms", "50")]);
    let r = engine("evict_race", &[("evict", "false")]);
    let hot = 6;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut racing, mut good, mut misses, mut mixed) = (0usize, 0usize, 0usize, 0usize);
    // Whether a successful read of 2 MiB is one whole version (Some(true)), halves of two
    // (Some(false)), or holds bytes nobody wrote (None). pattern(n, seed) starts with `seed`,
    // and so does its second MiB: each half names the version it claims to be.
    let judge = |out: &[u8]| {
        let half = |h: usize| {
            let part = &out[h * MIB..(h + 1) * MIB];
            part == &pattern(2 * MIB, part[0])[h * MIB..(h + 1) * MIB]
        };
        (half(0) && half(1)).then_some(out[0] == out[MIB])
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut v = 0u8;
            let mut cold = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for k in 0..hot {
                    v = v.wrapping_add(1);
                    let data = pattern(2 * MIB, v);
                    let (lo, hi) = data.split_at(MIB);
                    let reg_k = reg(&w, &format!("hot/{k}"));
                    // The second half first: a punch between the two leaves a leading hole.
                    let _ =
                        run(&w, &prep_write(&w, &[(hi, MIB as u64, &reg_k), (lo, 0, &reg_k)]), Duration::from_secs(20));
                }
                // Cold keys keep the pool full, so that eviction keeps running.
                let filler = pattern(2 * MIB, 0);
                let reg_c = reg(&w, &format!("cold/{cold}"));
                cold += 1;
                let _ = run(&w, &prep_write(&w, &[(&filler, 0, &reg_c)]), Duration::from_secs(20));
            }
        });
        let until = Instant::now() + Duration::from_secs(6);
        while Instant::now() < until {
            for k in 0..hot {
                let reg_k = reg(&r, &format!("hot/{k}"));
                let mut out = vec![0xEEu8; 2 * MIB];
                match run(&r, &prep_read(&r, &mut [(&mut out, 0, &reg_k)]), Duration::from_secs(20)) {
                    Ok(()) => match judge(&out) {
                        Some(true) => good += 1,
                        Some(false) => mixed += 1,
                        None => racing += 1,
                    },
                    Err(_) => misses += 1,
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    control("latency 0");
    // At rest: every write has completed (the writer thread ended with its last run).
    let mut torn = 0;
    for k in 0..hot {
        let reg_k = reg(&r, &format!("hot/{k}"));
        let mut out = vec![0xEEu8; 2 * MIB];
        if run(&r, &prep_read(&r, &mut [(&mut out, 0, &reg_k)]), Duration::from_secs(20)).is_ok() {
            torn += usize::from(judge(&out) != Some(true));
        }
    }
    let stats = w.eviction().unwrap();
    eprintln!(
        "race: {good} whole reads, {mixed} of two versions and {racing} with a hole while racing a rewrite, \
         {misses} misses; at rest {torn} of {hot} torn; {stats:?}"
    );
    assert_eq!(torn, 0, "{torn} keys left torn at rest; {stats:?}");
    assert_eq!((mixed, racing), (0, 0), "reads DONE with two versions or a hole; {stats:?}");
    assert!(stats.evicted_keys > 0, "eviction did not run: {stats:?}");
    assert!(good > 0, "no read succeeded: {good} good, {misses} misses");
}

/// Case 1 of a hostile caller: a read reported failed at its deadline, its buffer reused at
/// once for another key's read; DAOS's late answer to the first must never reach it.
#[test]
fn a_failed_reads_late_answer_never_reaches_a_reused_buffer() {
    let _x = exclusive();
    let e = engine("eng-late-read", &[("read_timeout_ms", "300"), ("num_queues", "1")]);
    let (ka, kb) = (reg(&e, "late-a"), reg(&e, "late-b"));
    let (a, b) = (pattern(64 << 10, 1), pattern(64 << 10, 2));
    run(&e, &prep_write(&e, &[(&a, 0, &ka)]), Duration::from_secs(10)).unwrap();
    run(&e, &prep_write(&e, &[(&b, 0, &kb)]), Duration::from_secs(10)).unwrap();
    control("hang");
    let mut x = vec![0u8; 64 << 10];
    let first = prep_read(&e, &mut [(&mut x, 0, &ka)]);
    let t0 = Instant::now();
    e.post(&first).unwrap();
    let (outcome, inflight) = settle(&e, &first, Duration::from_secs(5));
    let took = t0.elapsed();
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
    assert!(took < Duration::from_millis(300 + 200), "a read ends at its deadline, not later: {took:?}");
    assert_eq!(inflight, 1, "DAOS still holds the first read");
    // The caller puts X back in its pool and reads key B into it; DAOS answers both.
    control("resume");
    run(&e, &prep_read(&e, &mut [(&mut x, 0, &kb)]), Duration::from_secs(5)).unwrap();
    assert!(x == b, "the second read is DONE with B's bytes");
    wait_drained(&e, "DAOS still holds operations after 5 s");
    std::thread::sleep(Duration::from_millis(20));
    assert!(x == b, "the first read's late answer reached the reused buffer");
    // Reposting the request that timed out is allowed (DAOS answered into the plugin's buffer).
    assert_eq!(e.post(&first).unwrap(), Status::InProgress);
    assert_eq!(settle(&e, &first, Duration::from_secs(5)).0.unwrap(), Status::Success);
    assert!(x == a);
}

/// Case 2: a shorter overwrite replaces the whole value; the first write's tail is never read,
/// in one dkey or across chunks.
#[test]
fn a_shorter_overwrite_never_reads_the_old_tail() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    for chunk in ["4194304", "0"] {
        let e = engine(&format!("eng-shorter-{chunk}"), &[("chunk_bytes", chunk)]);
        let k = reg(&e, "shrink");
        let long = pattern(8 * MIB, 1);
        let short = pattern(3 * MIB, 2);
        run(&e, &prep_write(&e, &[(&long, 0, &k)]), Duration::from_secs(10)).unwrap();
        run(&e, &prep_write(&e, &[(&short, 0, &k)]), Duration::from_secs(10)).unwrap();
        let key = ObjectKey::from_registration(b"shrink", 0);
        assert_eq!(e.query_sizes(&[key]).unwrap(), vec![Some(3 * MIB as u64)], "chunk_bytes={chunk}");
        let mut all = vec![0u8; 8 * MIB];
        let res = run(&e, &prep_read(&e, &mut [(&mut all, 0, &k)]), Duration::from_secs(10));
        assert!(matches!(res, Err(Error::ShortRead { .. })), "chunk_bytes={chunk}: {res:?}");
        // The old tail alone (in a chunk of its own when chunked): a miss too.
        let mut tail = vec![0u8; 4 * MIB];
        let res = run(&e, &prep_read(&e, &mut [(&mut tail, 4 * MIB as u64, &k)]), Duration::from_secs(10));
        assert!(res.is_err(), "chunk_bytes={chunk}: the first write's tail read back: {res:?}");
        let mut back = vec![0u8; 3 * MIB];
        run(&e, &prep_read(&e, &mut [(&mut back, 0, &k)]), Duration::from_secs(10)).unwrap();
        assert!(back == short, "chunk_bytes={chunk}");
    }
}

/// A WRITE request sets the key's value to exactly what it writes: another request's part of
/// the key is not part of it, and bytes no request wrote (a gap) are never read.
#[test]
fn a_write_request_sets_the_whole_value() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    let e = engine("eng-values", &[("chunk_bytes", "65536")]);
    let k = reg(&e, "parts");
    let (lo, hi) = (pattern(64 * KIB, 1), pattern(64 * KIB, 2));
    run(&e, &prep_write(&e, &[(&lo, 0, &k)]), Duration::from_secs(10)).unwrap();
    run(&e, &prep_write(&e, &[(&hi, 64 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap();
    assert_eq!(e.query_sizes(&[ObjectKey::from_registration(b"parts", 0)]).unwrap(), vec![Some(128 * KIB as u64)]);
    let mut both = vec![0u8; 128 * KIB];
    let res = run(&e, &prep_read(&e, &mut [(&mut both, 0, &k)]), Duration::from_secs(10));
    assert!(matches!(res, Err(Error::Unverified { .. })), "two requests' parts read as one value: {res:?}");
    let mut first = vec![0u8; 64 * KIB];
    let res = run(&e, &prep_read(&e, &mut [(&mut first, 0, &k)]), Duration::from_secs(10));
    assert!(res.is_err(), "the earlier request's part outlived the later request: {res:?}");
    let mut second = vec![0u8; 64 * KIB];
    run(&e, &prep_read(&e, &mut [(&mut second, 64 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap();
    assert!(second == hi);
    // One request with a gap: what it wrote reads back, the gap never does.
    let g = reg(&e, "gap");
    let unchunked = engine("eng-values-flat", &[("chunk_bytes", "0")]);
    let gu = reg(&unchunked, "gap");
    for (eng, key) in [(&e, &g), (&unchunked, &gu)] {
        run(eng, &prep_write(eng, &[(&lo, 0, key), (&hi, 128 * KIB as u64, key)]), Duration::from_secs(10)).unwrap();
        let mut a = vec![0u8; 64 * KIB];
        run(eng, &prep_read(eng, &mut [(&mut a, 0, key)]), Duration::from_secs(10)).unwrap();
        assert!(a == lo);
        let mut b = vec![0u8; 64 * KIB];
        run(eng, &prep_read(eng, &mut [(&mut b, 128 * KIB as u64, key)]), Duration::from_secs(10)).unwrap();
        assert!(b == hi);
        let mut hole = vec![0u8; 64 * KIB];
        let res = run(eng, &prep_read(eng, &mut [(&mut hole, 64 * KIB as u64, key)]), Duration::from_secs(10));
        assert!(res.is_err(), "the gap read back: {res:?}");
        let mut all = vec![0u8; 192 * KIB];
        assert!(run(eng, &prep_read(eng, &mut [(&mut all, 0, key)]), Duration::from_secs(10)).is_err());
    }
}

/// Case 4: a write past its deadline that DAOS still holds, its buffer refilled by the caller:
/// the key then holds exactly what the caller had at post, or nothing, never the refill; seen
/// from another engine too. Also a chunked write whose second chunk lands past the deadline.
#[test]
fn a_late_write_stores_what_the_caller_had_at_post_never_the_refill() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    let e = engine("eng-late", &[("timeout_ms", "200"), ("read_timeout_ms", "200"), ("num_queues", "2")]);
    let other = engine("eng-late", &[("evict", "false")]);
    let k = reg(&e, "late-write");
    let ko = reg(&other, "late-write");
    let v1 = pattern(16 * KIB, 1);
    run(&e, &prep_write(&e, &[(&v1, 0, &k)]), Duration::from_secs(10)).unwrap();
    control("hang");
    let mut v2 = pattern(16 * KIB, 2);
    let posted = v2.clone();
    let w = prep_write(&e, &[(&v2, 0, &k)]);
    e.post(&w).unwrap();
    let (outcome, _) = settle(&e, &w, Duration::from_secs(5));
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "a write is reported at its deadline: {outcome:?}");
    v2.fill(0xee); // the caller refills its buffer, as LMCache and vLLM do after a failed store
    control("resume");
    wait_drained(&e, "the late write never finished");
    for (eng, key) in [(&e, &k), (&other, &ko)] {
        let mut back = vec![0u8; 16 * KIB];
        match run(eng, &prep_read(eng, &mut [(&mut back, 0, key)]), Duration::from_secs(5)) {
            Ok(()) => assert!(back == posted || back == v1, "the key holds bytes no caller posted: {:#x}", back[0]),
            Err(err) => panic!("{err}"),
        }
        assert!(back == posted, "the late write landed: its bytes are those at post");
    }
    // Chunked: chunk 0 lands in time, chunk 1 past the deadline (one RPC at a time, 200 ms
    // each); the caller refills meanwhile.
    let c = engine("eng-late-chunks", &[("chunk_bytes", "65536"), ("timeout_ms", "300"), ("max_inflight", "1")]);
    let kc = reg(&c, "L");
    let old = pattern(128 * KIB, 1);
    run(&c, &prep_write(&c, &[(&old, 0, &kc)]), Duration::from_secs(10)).unwrap();
    control("latency 200000");
    let mut new = pattern(128 * KIB, 2);
    let posted = new.clone();
    let w = prep_write(&c, &[(&new, 0, &kc)]);
    assert_eq!(w.fold_count(), 2);
    c.post(&w).unwrap();
    let (outcome, _) = settle(&c, &w, Duration::from_secs(5));
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
    new.fill(0xee);
    wait_drained(&c, "the late chunk never finished");
    control("latency 0");
    let mut back = vec![0u8; 128 * KIB];
    match run(&c, &prep_read(&c, &mut [(&mut back, 0, &kc)]), Duration::from_secs(5)) {
        Ok(()) => assert!(back == posted || back == old, "a read of the late write mixed or refilled"),
        Err(err) => assert!(matches!(err, Error::NoSuchKey { .. } | Error::Unverified { .. }), "{err}"),
    }
}

/// A stored byte flipped behind the plugin (a disk, a wire): the read is a clean miss, never
/// DONE with the bad byte; the other keys are untouched.
#[test]
fn a_corrupted_value_is_a_miss() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    for chunk in ["65536", "0"] {
        let e = engine(&format!("eng-corrupt-{chunk}"), &[("chunk_bytes", chunk)]);
        let (k, fine) = (reg(&e, &format!("rot-{chunk}")), reg(&e, &format!("fine-{chunk}")));
        let data = pattern(100 * KIB, 3);
        run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
        run(&e, &prep_write(&e, &[(&data, 0, &fine)]), Duration::from_secs(10)).unwrap();
        control(&format!("flip rot-{chunk} 1234"));
        let mut back = vec![0u8; 100 * KIB];
        let res = run(&e, &prep_read(&e, &mut [(&mut back, 0, &k)]), Duration::from_secs(10));
        assert!(matches!(res, Err(Error::Unverified { .. })), "chunk_bytes={chunk}: {res:?}");
        // Also a read of a few bytes far from the flipped one, in the same block.
        let mut few = vec![0u8; 16];
        let res = run(&e, &prep_read(&e, &mut [(&mut few, 60000, &k)]), Duration::from_secs(10));
        assert!(res.is_err(), "chunk_bytes={chunk}: {res:?}");
        // A read of another block of the same key verifies on its own.
        let mut later = vec![0u8; 16 * KIB];
        run(&e, &prep_read(&e, &mut [(&mut later, 70 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap();
        assert!(later[..] == data[70 * KIB..86 * KIB]);
        run(&e, &prep_read(&e, &mut [(&mut back, 0, &fine)]), Duration::from_secs(10)).unwrap();
        assert!(back == data);
    }
}

/// Values written by a version of the plugin without records (bytes alone): a clean miss.
#[test]
fn a_value_without_a_record_is_a_miss() {
    let _x = exclusive();
    let e = engine("eng-norecord", &[("evict", "false")]);
    let k = reg(&e, "old-version");
    let data = pattern(10000, 4);
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
    control("drop_akey rec");
    let mut back = vec![0u8; 10000];
    let res = run(&e, &prep_read(&e, &mut [(&mut back, 0, &k)]), Duration::from_secs(10));
    assert!(matches!(res, Err(Error::NoSuchKey { .. })), "{res:?}");
    assert!(back.iter().all(|&b| b == 0), "a miss left bytes in the buffer");
    assert_eq!(e.query_sizes(&[ObjectKey::from_registration(b"old-version", 0)]).unwrap(), vec![None]);
}

/// The staging buffers stay within `stage_bytes` whatever is in flight, and a transfer larger
/// than the bound still goes (alone).
#[test]
fn staging_memory_is_bounded_and_requests_wait_for_room() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    let e = engine("eng-stage", &[("stage_bytes", "8388608"), ("chunk_bytes", "1048576")]);
    let keys: Vec<_> = (0..16).map(|i| reg(&e, &format!("st/{i}"))).collect();
    let data: Vec<Vec<u8>> = (0..16).map(|i| pattern(4 * MIB, i as u8)).collect();
    control("latency 20000");
    let reqs: Vec<_> = keys.iter().zip(&data).map(|(k, d)| prep_write(&e, &[(d, 0, k)])).collect();
    for r in &reqs {
        e.post(r).unwrap();
    }
    let mut peak = 0;
    for r in &reqs {
        loop {
            peak = peak.max(e.staging_in_use());
            match e.check(r).unwrap() {
                Status::InProgress => std::thread::sleep(Duration::from_micros(500)),
                Status::Success => break,
                s => panic!("{s:?}"),
            }
        }
    }
    control("latency 0");
    assert!(peak <= 8 * MIB, "staging held {peak} bytes");
    assert!(peak >= 4 * MIB, "the test did not fill the staging pool: peak {peak}");
    for (k, d) in keys.iter().zip(&data) {
        let mut back = vec![0u8; 4 * MIB];
        run(&e, &prep_read(&e, &mut [(&mut back, 0, k)]), Duration::from_secs(10)).unwrap();
        assert!(&back == d);
    }
    let flat = engine("eng-stage-flat", &[("stage_bytes", "4194304"), ("chunk_bytes", "0")]);
    let big = reg(&flat, "big");
    let v = pattern(16 * MIB, 7);
    run(&flat, &prep_write(&flat, &[(&v, 0, &big)]), Duration::from_secs(10)).unwrap();
    let mut back = vec![0u8; 16 * MIB];
    run(&flat, &prep_read(&flat, &mut [(&mut back, 0, &big)]), Duration::from_secs(10)).unwrap();
    assert!(back == v);
    assert_eq!(e.staging_in_use(), 0);
}

#[test]
fn requests_reported_timed_out_give_their_in_flight_slots_back() {
    let _x = exclusive();
    let e = engine("eng-budget", &[("timeout_ms", "200"), ("max_inflight", "2"), ("num_queues", "1")]);
    let keys: Vec<_> = (0..3).map(|i| reg(&e, &format!("budget-{i}"))).collect();
    let data = pattern(4096, 3);
    control("hang");
    let stuck: Vec<_> = keys[..2].iter().map(|k| prep_write(&e, &[(&data, 0, k)])).collect();
    for w in &stuck {
        e.post(w).unwrap();
    }
    for w in &stuck {
        assert!(matches!(settle(&e, w, Duration::from_secs(5)).0, Err(Error::Timeout { .. })));
    }
    assert_eq!(e.inflight(), 2, "DAOS still holds both writes");
    // Their slots went back with their timeouts: a third write reaches DAOS at once.
    let third = prep_write(&e, &[(&data, 0, &keys[2])]);
    e.post(&third).unwrap();
    let start = Instant::now();
    while e.inflight() < 3 {
        assert!(start.elapsed() < Duration::from_secs(2), "the budget stayed full of timed-out writes");
        std::thread::sleep(Duration::from_millis(1));
    }
    control("resume");
    assert_eq!(settle(&e, &third, Duration::from_secs(5)).0.unwrap(), Status::Success);
    wait_drained(&e, "DAOS still holds operations after 5 s");
    // Given back once, not twice: two writes at once still fit, and both succeed.
    let again: Vec<_> = keys[..2].iter().map(|k| prep_write(&e, &[(&data, 0, k)])).collect();
    for w in &again {
        e.post(w).unwrap();
    }
    for w in &again {
        assert_eq!(settle(&e, w, Duration::from_secs(5)).0.unwrap(), Status::Success);
    }
}

#[test]
fn requests_released_past_their_deadline_give_their_slots_back_too() {
    let _x = exclusive();
    let e = engine("eng-budget-rel", &[("timeout_ms", "200"), ("max_inflight", "2"), ("num_queues", "1")]);
    let keys: Vec<_> = (0..3).map(|i| reg(&e, &format!("budget-rel-{i}"))).collect();
    let data = pattern(4096, 3);
    control("hang");
    let stuck: Vec<_> = keys[..2].iter().map(|k| prep_write(&e, &[(&data, 0, k)])).collect();
    for w in &stuck {
        e.post(w).unwrap();
    }
    // Released without a check (a consumer's own timeout): release returns at once.
    for w in &stuck {
        let t = Instant::now();
        e.release(w).unwrap();
        assert!(t.elapsed() < Duration::from_millis(50), "release waited for DAOS");
    }
    let third = prep_write(&e, &[(&data, 0, &keys[2])]);
    e.post(&third).unwrap();
    let start = Instant::now();
    while e.inflight() < 3 {
        assert!(start.elapsed() < Duration::from_secs(2), "released requests kept the budget full");
        std::thread::sleep(Duration::from_millis(1));
    }
    control("resume");
    assert_eq!(settle(&e, &third, Duration::from_secs(5)).0.unwrap(), Status::Success);
    wait_drained(&e, "DAOS still holds operations after 5 s");
}

#[test]
fn a_degraded_pool_never_regenerates_a_recorded_object_nor_records_a_narrow_one() {
    let _x = exclusive();
    // Recorded while healthy: an engine on the degraded pool reuses it without generating one
    // (daos-sim fails a generate that real libdaos would abort on, with 2 of 8 targets up).
    let healthy = engine("eng-degraded-old", &[]);
    let recorded = healthy.object_id();
    assert!(recorded.groups() > 1);
    drop(healthy);
    control("excluded 6");
    let created = std::panic::catch_unwind(|| engine("eng-degraded-old", &[]).object_id());
    let fresh = std::panic::catch_unwind(|| engine("eng-degraded-new", &[]).object_id());
    control("excluded 0");
    assert_eq!(created.expect("create_backend on a degraded pool"), recorded);
    // No record yet: a provisional one-group object, not recorded; the first engine on the
    // healthy pool records the spread one.
    assert_eq!(fresh.expect("create_backend of a new container on a degraded pool").groups(), 1);
    let later = engine("eng-degraded-new", &[]);
    assert!(later.object_id().groups() > 1, "the degraded pool's object was recorded");
    let again = engine("eng-degraded-new", &[]);
    assert_eq!(again.object_id(), later.object_id());
}

/// A chunked container (`chunk_bytes`): a value past the chunk goes out as one RPC per chunk,
/// comes back byte for byte through any range (across a chunk boundary too), and reports the
/// size an unchunked container reports.
#[test]
fn chunked_values_round_trip_across_chunks_and_report_their_size() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    let e = engine("eng-chunks", &[("chunk_bytes", "65536")]);
    assert_eq!(e.layout().chunk, 65536);
    let k = reg(&e, "big");
    // 300 KiB as three descriptors of 100 KiB: chunks [0,64K) .. [256K,300K), one RPC each.
    let data = pattern(300 * KIB, 9);
    let parts: Vec<_> = data.chunks(100 * KIB).enumerate().map(|(i, b)| (b, (i * 100 * KIB) as u64, &*k)).collect();
    control("reset_stats");
    let w = prep_write(&e, &parts);
    assert_eq!(w.fold_count(), 5, "one RPC per chunk");
    run(&e, &w, Duration::from_secs(10)).unwrap();
    assert_eq!(stat("update"), 5);
    let mut out = vec![0u8; 300 * KIB];
    run(&e, &prep_read(&e, &mut [(&mut out, 0, &k)]), Duration::from_secs(10)).unwrap();
    assert!(out == data, "a chunked value read whole came back different");
    // A range across the boundary at 128 KiB, read as one descriptor.
    let mut mid = vec![0u8; 10 * KIB];
    run(&e, &prep_read(&e, &mut [(&mut mid, 123 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap();
    assert!(mid[..] == data[123 * KIB..133 * KIB]);
    // Past the written end, in the last chunk: a short read, not stale bytes.
    let mut over = vec![0u8; 8 * KIB];
    let err = run(&e, &prep_read(&e, &mut [(&mut over, 296 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap_err();
    assert!(matches!(err, Error::ShortRead { .. }), "{err}");
    // Past the written end in a chunk never written: the key's chunk is missing.
    let mut far = vec![0u8; 4 * KIB];
    let err = run(&e, &prep_read(&e, &mut [(&mut far, 400 * KIB as u64, &k)]), Duration::from_secs(10)).unwrap_err();
    assert!(matches!(err, Error::NoSuchKey { .. }), "{err}");
    // Sizes, from each key's record: the whole value; a value of exactly one chunk; one within
    // the first chunk; a value of 11 full chunks.
    let long = reg(&e, "long");
    let eleven = pattern(11 * 64 * KIB, 8);
    run(&e, &prep_write(&e, &[(&eleven, 0, &long)]), Duration::from_secs(10)).unwrap();
    assert_eq!(e.query_sizes(&[ObjectKey::from_registration(b"long", 0)]).unwrap(), vec![Some(11 * 64 * KIB as u64)]);
    let one = reg(&e, "one");
    let exact = pattern(64 * KIB, 3);
    run(&e, &prep_write(&e, &[(&exact, 0, &one)]), Duration::from_secs(10)).unwrap();
    let small = reg(&e, "small");
    run(&e, &prep_write(&e, &[(&exact[..1000], 0, &small)]), Duration::from_secs(10)).unwrap();
    let keys = ["big", "one", "small", "none"].map(|k| ObjectKey::from_registration(k.as_bytes(), 0));
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![Some(300 * KIB as u64), Some(64 * KIB as u64), Some(1000), None]);
}

/// The layout is the container's, recorded at its first use: an engine of another
/// `chunk_bytes` keeps it, so a container written before chunks (0) reads as it was, and a
/// chunked one stays chunked.
#[test]
fn a_container_keeps_the_layout_it_was_first_used_with() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    let data = pattern(3 * MIB, 5);
    let plain = ChunkNames::Plain;
    let spread = ChunkNames::Spread { groups: 8 };
    for ((first, first_spread, names), later, later_spread) in [
        (("0", "true", plain), "65536", "true"),
        (("65536", "true", spread), "0", "false"),
        (("65536", "true", spread), "1048576", "false"),
        // A container chunked before spread names (a 24-byte record) keeps its plain names.
        (("65536", "false", plain), "65536", "true"),
    ] {
        let cont = format!("eng-layout-{first}-{first_spread}-{later}");
        let a = engine(&cont, &[("chunk_bytes", first), ("spread_chunks", first_spread)]);
        assert_eq!(a.layout().names, names, "first {first} spread {first_spread}");
        let ka = reg(&a, "v");
        run(&a, &prep_write(&a, &[(&data, 0, &ka)]), Duration::from_secs(10)).unwrap();
        let b = engine(&cont, &[("chunk_bytes", later), ("spread_chunks", later_spread)]);
        assert_eq!(b.layout(), a.layout(), "first {first}, later {later}");
        assert_eq!(b.layout().chunk, first.parse::<u64>().unwrap());
        let kb = reg(&b, "v");
        let mut out = vec![0u8; 3 * MIB];
        run(&b, &prep_read(&b, &mut [(&mut out, 0, &kb)]), Duration::from_secs(10)).unwrap();
        assert!(out == data, "first {first}, later {later}: the value came back different");
        assert_eq!(b.query_sizes(&[ObjectKey::from_registration(b"v", 0)]).unwrap(), vec![Some(3 * MIB as u64)]);
    }
    // Layouts keep their keys in different objects: an engine of one layout never reads the
    // other's bytes as its own (two engines that recorded at once would miss, not mix).
    let unchunked = engine("eng-layout-a", &[("chunk_bytes", "0")]);
    let chunked = engine("eng-layout-b", &[("chunk_bytes", "65536")]);
    let hashed = engine("eng-layout-c", &[("chunk_bytes", "65536"), ("spread_chunks", "false")]);
    let los = [unchunked.object_id().lo, chunked.object_id().lo, hashed.object_id().lo];
    assert!(los[0] != los[1] && los[1] != los[2] && los[0] != los[2], "{los:x?}");
    assert_eq!(unchunked.object_id().groups(), chunked.object_id().groups());
}

/// A key inside the dkeys kept for chunks is refused: registered, it could read or overwrite
/// another key's chunk.
#[test]
fn a_key_naming_a_chunk_is_refused() {
    let _x = exclusive();
    let e = engine("eng-chunk-names", &[("chunk_bytes", "65536")]);
    let err = e.register(MemType::Obj, 77, 0, 1 << 20, b"big\0nixl-daos.chunk.1").unwrap_err();
    assert!(matches!(err, Error::InvalidArg(_)) && err.to_string().contains("nixl-daos"), "{err}");
    // queryMem answers such a key as absent (no caller's key is there), even where the chunk
    // exists, and the call's other keys as usual.
    let k = reg(&e, "big");
    let data = pattern(100 << 10, 4);
    run(&e, &prep_write(&e, &[(&data, 0, &k)]), Duration::from_secs(10)).unwrap();
    let keys = [b"big\0nixl-daos.chunk.1".as_slice(), b"big"].map(|b| ObjectKey::from_registration(b, 0));
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![None, Some(100 << 10)]);
}

/// A chunked write of which one RPC failed and another landed never leaves a value that reads
/// back as success with bytes of two writes: eviction punches the chunks the failed write
/// landed in, so the key reads as missing, or whole as one of the two values.
#[test]
fn a_chunked_write_failed_in_part_never_reads_back_mixed() {
    let _x = exclusive();
    const KIB: usize = 1 << 10;
    let old = pattern(128 * KIB, 1);
    let new = pattern(128 * KIB, 2);
    let (mut missing, mut torn) = (0, 0);
    for it in 0..8 {
        let cont = format!("eng-chunk-torn{it}");
        let e = engine(&cont, &[("chunk_bytes", "65536"), ("num_queues", "1")]);
        let k = reg(&e, "K");
        run(&e, &prep_write(&e, &[(&old, 0, &k)]), Duration::from_secs(10)).unwrap();
        let w = prep_write(&e, &[(&new, 0, &k)]);
        assert_eq!(w.fold_count(), 2);
        // Each RPC takes 20 ms, so both are sent before the failed one is answered (a fold not
        // yet sent when a sibling failed is dropped, and nothing is torn).
        control("latency 20000");
        control("fail DER_IO 1");
        let res = run(&e, &w, Duration::from_secs(10));
        control("fail DER_IO 0");
        control("latency 0");
        assert!(res.is_err(), "iteration {it}: a write with a failed RPC succeeded");
        // The torn key is punched at eviction's next wake-up.
        wait_drained(&e, "the write's RPCs");
        std::thread::sleep(Duration::from_millis(300));
        torn += e.eviction().unwrap().torn;
        let r = engine(&cont, &[("evict", "false")]);
        let kr = reg(&r, "K");
        let mut out = vec![0u8; 128 * KIB];
        // queryMem agrees with the read: present (whole) exactly when the read succeeds.
        let size = r.query_sizes(&[ObjectKey::from_registration(b"K", 0)]).unwrap()[0];
        match run(&r, &prep_read(&r, &mut [(&mut out, 0, &kr)]), Duration::from_secs(10)) {
            Ok(()) => {
                assert!(out == old || out == new, "iteration {it}: a successful read mixed two writes");
                assert_eq!(size, Some(128 * KIB as u64), "iteration {it}");
            }
            Err(err) => {
                assert!(matches!(err, Error::NoSuchKey { .. } | Error::Unverified { .. }), "iteration {it}: {err}");
                assert_eq!(size, None, "iteration {it}: queryMem reports a key whose read is a miss");
                missing += 1;
            }
        }
    }
    assert!(
        torn > 0 && missing > 0,
        "no write was torn ({torn}) or left its key missing ({missing}): the test tested nothing"
    );
}

/// The ACL daos-sim recorded for container `cont` of pool "sim" (its creation's, else DAOS's
/// default), one entry per element; None when there is no such container.
fn cont_acl(cont: &str) -> Option<Vec<String>> {
    type AclFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *const c_char;
    // SAFETY: the symbol has this signature (tests/daos-sim/src/acl.rs); the library stays loaded.
    let f = unsafe { *sim()._lib.get::<AclFn>(b"daos_sim_cont_acl").unwrap() };
    let (p, c) = (CString::new("sim").unwrap(), CString::new(cont).unwrap());
    // SAFETY: NUL-terminated strings; the result stays valid until this thread calls again.
    let s = unsafe { f(p.as_ptr(), c.as_ptr()) };
    // SAFETY: NULL or a NUL-terminated string (above).
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().lines().map(str::to_string).collect())
}

fn create_err(container: &str, extra: &[(&str, &str)]) -> Error {
    let mut params = vec![
        ("pool".to_string(), "sim".to_string()),
        ("container".to_string(), container.to_string()),
        ("daos_lib".to_string(), sim_path()),
    ];
    params.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    match Engine::create(Config::from_params(&params).unwrap()) {
        Ok(_) => panic!("create_backend of {container} succeeded"),
        Err(e) => e,
    }
}

#[test]
fn a_created_container_admits_its_owner_alone_unless_cont_acl_says_more() {
    let _g = exclusive();
    // DAOS's default, which the plugin no longer asks for: the owner's group may read and write.
    assert_eq!(cont_acl("kv").unwrap(), ["A::OWNER@:rwdtTaAo", "A:G:GROUP@:rwtT"]);
    drop(engine("acl-default", &[]));
    assert_eq!(cont_acl("acl-default").unwrap(), ["A::OWNER@:rwdtTaAo"]);
    drop(engine("acl-shared", &[("cont_acl", "A:G:svc@:r, A::alice@:rw")]));
    // As DAOS orders an ACL: owner, users, groups.
    assert_eq!(cont_acl("acl-shared").unwrap(), ["A::OWNER@:rwdtTaAo", "A::alice@:rw", "A:G:svc@:r"]);
    drop(engine("acl-owner", &[("cont_acl", "A::OWNER@:rw,A::EVERYONE@:r")]));
    assert_eq!(cont_acl("acl-owner").unwrap(), ["A::OWNER@:rw", "A::EVERYONE@:r"]);
    // An existing container keeps its ACL: cont_acl applies at creation only.
    drop(engine("acl-shared", &[("cont_acl", "A::bob@:rw")]));
    assert_eq!(cont_acl("acl-shared").unwrap(), ["A::OWNER@:rwdtTaAo", "A::alice@:rw", "A:G:svc@:r"]);
    // A bad entry is refused before anything is created, naming the entry and the form.
    let params = [("pool", "sim"), ("container", "acl-bad"), ("cont_acl", "A::alice@:rw,A::bob:rw")];
    let params: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let e = Config::from_params(&params).unwrap_err();
    assert_eq!(e.status(), Status::InvalidParam);
    let msg = e.to_string();
    assert!(msg.contains("entry \"A::bob:rw\"") && msg.contains("A:G:svc@:r"), "{msg}");
    assert!(cont_acl("acl-bad").is_none());
}

#[test]
fn a_refusal_for_rights_names_the_user_and_the_fix() {
    let _g = exclusive();
    let user = acl_user();
    control("deny connect");
    let e = create_err("kv", &[]);
    control("deny off");
    let msg = e.to_string();
    assert!(msg.contains("DER_NO_PERM") && msg.contains(&format!("user {user} (uid")), "{msg}");
    assert!(msg.contains(&format!("`dmg pool update-acl -e A::{user}@:rw sim`")), "{msg}");
    assert_eq!(e.status(), Status::Backend);
    control("deny open");
    let e = create_err("kv", &[]);
    control("deny off");
    let msg = e.to_string();
    assert!(msg.contains(&format!("`daos cont update-acl sim kv --entry A::{user}@:rw`")), "{msg}");
    assert!(msg.contains("cont_acl"), "{msg}");
}

/// A user whose container (or pool) ACL lets it read only gets a backend that reads: its
/// writes are refused before DAOS with NOT_ALLOWED and a message naming the missing right and
/// the command that grants it, and it evicts nothing even where a writer would (a pool under
/// its keep-free share), so it never tries to punch another user's keys.
#[test]
fn a_read_only_user_reads_and_neither_writes_nor_evicts() {
    let _g = exclusive();
    const SIZE: usize = 256 << 10;
    // 90% kept free of a 8 MiB pool: 1 MiB of keys puts any writer's evictor to work.
    let _cap = Capacity::set(8 << 20, 0);
    let user = acl_user();
    let keep_free = [("evict_keep_free", "90"), ("evict_reclaim_ms", "0")];
    let writer = engine("readonly", &[]);
    let written: Vec<Vec<u8>> = (0..4).map(|i| pattern(SIZE, 40 + i as u8)).collect();
    for (i, buf) in written.iter().enumerate() {
        let r = reg(&writer, &format!("ro/{i}"));
        run(&writer, &prep_write(&writer, &[(buf, 0, &r)]), Duration::from_secs(10)).unwrap();
    }
    drop(writer);
    for (deny, fix) in [
        ("write", format!("`daos cont update-acl sim readonly --entry A::{user}@:rw`")),
        ("pool_write", format!("`dmg pool update-acl -e A::{user}@:rw sim`")),
    ] {
        control(&format!("deny {deny}"));
        let (updates, punches) = (stat("update"), stat("punch"));
        let reader = engine("readonly", &keep_free);
        assert!(reader.eviction().is_none(), "deny {deny}: a read-only backend runs an evictor");
        for (i, want) in written.iter().enumerate() {
            let r = reg(&reader, &format!("ro/{i}"));
            let mut buf = vec![0u8; SIZE];
            run(&reader, &prep_read(&reader, &mut [(&mut buf, 0, &r)]), Duration::from_secs(10)).unwrap();
            assert_eq!(&buf, want, "deny {deny}: key {i} read back wrong");
        }
        let keys: Vec<ObjectKey> =
            (0..4).map(|i| ObjectKey::from_registration(format!("ro/{i}").as_bytes(), 0)).collect();
        assert!(reader.query_sizes(&keys).unwrap().iter().all(|s| *s == Some(SIZE as u64)));
        let r = reg(&reader, "ro/new");
        let buf = pattern(SIZE, 9);
        let local = [Desc { addr: buf.as_ptr() as u64, len: SIZE as u64, dev_id: 0, reg: None }];
        let remote = [Desc { addr: 0, len: SIZE as u64, dev_id: 0, reg: Some(&r) }];
        let Err(err) = reader.prep(XferOp::Write, MemType::Dram, &local, MemType::Obj, &remote) else {
            panic!("deny {deny}: a read-only backend prepared a write")
        };
        assert_eq!(err.status(), Status::NotAllowed, "deny {deny}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&fix) && msg.contains("(w)") && msg.contains(&format!("user {user} (uid")), "{msg}");
        // Long enough for a writer's evictor to have checked the pool (every second).
        std::thread::sleep(Duration::from_millis(1500));
        drop(reader);
        control("deny off");
        assert_eq!((stat("update"), stat("punch")), (updates, punches), "deny {deny}: the read-only backend wrote");
    }
    // The control: a writer on the same pool evicts (so the reader's silence above is its own).
    let punches = stat("punch");
    let writer = engine("readonly", &keep_free);
    let start = Instant::now();
    while stat("punch") == punches && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stat("punch") > punches, "a writer under keep-free evicted nothing: {:?}", writer.eviction());
}

/// The name DAOS checks ACLs for: this process's effective user.
fn acl_user() -> String {
    // SAFETY: plain calls; the name is copied out before any other passwd lookup.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        assert!(!pw.is_null());
        CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned()
    }
}

/// An engine that closes leaves no share of the eviction behind: another engine on the
/// container evicts at once, not once the closed writer's ledger entry has gone stale (its
/// reclaim window and more, 25 s here).
#[test]
fn a_closed_writer_leaves_eviction_to_the_engines_left() {
    let _g = exclusive();
    const SIZE: usize = 256 << 10;
    let _cap = Capacity::set(8 << 20, 0);
    let settings = [("evict_keep_free", "90"), ("evict_reclaim_ms", "20000")];
    let writer = engine("closed-writer", &[("evict_reclaim_ms", "20000")]);
    for i in 0..4 {
        let r = reg(&writer, &format!("cw/{i}"));
        run(&writer, &prep_write(&writer, &[(&pattern(SIZE, i), 0, &r)]), Duration::from_secs(10)).unwrap();
    }
    // Past its next check (every second), which publishes what it wrote as its demand.
    std::thread::sleep(Duration::from_millis(1500));
    drop(writer);
    let punches = stat("punch");
    let evictor = engine("closed-writer", &settings);
    let start = Instant::now();
    while stat("punch") == punches && start.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stat("punch") > punches, "nothing evicted within 4 s: {:?}", evictor.eviction());
}

/// `remove_keys` (nixl-daos doctor's test key): a value of several chunks is gone for reads and
/// `queryMem`, its neighbour untouched, a key written afresh reads whole (no chunk of the removed
/// value left to meet), and a read-only backend refuses.
#[test]
fn remove_keys_removes_every_chunk_and_nothing_else() {
    let _x = exclusive();
    let e = engine("eng-remove", &[("chunk_bytes", "65536")]);
    let (gone, kept) = (reg(&e, "rm-gone"), reg(&e, "rm-kept"));
    let big = pattern(3 * 65536 + 100, 7);
    let other = pattern(5000, 8);
    run(&e, &prep_write(&e, &[(&big, 0, &gone), (&other, 0, &kept)]), Duration::from_secs(10)).unwrap();
    let keys = [ObjectKey::from_registration(b"rm-gone", 0), ObjectKey::from_registration(b"rm-kept", 0)];
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![Some(big.len() as u64), Some(5000)]);
    let punches = stat("punch");
    e.remove_keys(&keys[..1]).unwrap();
    assert_eq!(stat("punch") - punches, 4, "one punch per chunk of the value (4 chunks)");
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![None, Some(5000)]);
    // Every part of the removed value misses, the first chunk's range and the later ones'.
    for (off, len) in [(0u64, 100usize), (2 * 65536, 100), (0, big.len())] {
        let mut back = vec![0u8; len];
        let r = run(&e, &prep_read(&e, &mut [(&mut back, off, &gone)]), Duration::from_secs(10));
        assert!(r.is_err(), "a read of {len} at {off} of a removed key succeeded");
    }
    let mut back = vec![0u8; other.len()];
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &kept)]), Duration::from_secs(10)).unwrap();
    assert_eq!(back, other);
    // Written afresh with two chunks' worth: it reads back whole, and is as long as written.
    let fresh = pattern(65536 + 10, 9);
    run(&e, &prep_write(&e, &[(&fresh, 0, &gone)]), Duration::from_secs(10)).unwrap();
    let mut back = vec![0u8; fresh.len()];
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &gone)]), Duration::from_secs(10)).unwrap();
    assert_eq!(back, fresh);
    assert_eq!(e.query_sizes(&keys[..1]).unwrap(), vec![Some(fresh.len() as u64)]);
    // Removing twice, or a key never written, is no error.
    e.remove_keys(&keys[..1]).unwrap();
    e.remove_keys(&keys[..1]).unwrap();
    assert_eq!(e.query_sizes(&keys).unwrap(), vec![None, Some(5000)]);
    e.remove_keys(&[ObjectKey::from_registration(b"rm-never", 0)]).unwrap();
    drop(e);

    control("deny write");
    let ro = engine("eng-remove", &[]);
    let e = ro.remove_keys(&keys[1..]).unwrap_err();
    control("deny off");
    assert_eq!(e.status(), Status::NotAllowed, "{e}");
    let rw = engine("eng-remove", &[]);
    assert_eq!(rw.query_sizes(&keys[1..]).unwrap(), vec![Some(5000)], "the read-only backend removed the key");
}

/// Reads that timed out while DAOS still holds them keep their staging buffers until DAOS
/// answers; those buffers leave the cap, so the requests that follow (DAOS answering them at
/// once) are not refused room for as long as a slow or dead engine owes the answers.
#[test]
fn buffers_daos_owes_for_ended_requests_do_not_starve_later_ones() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    let e = engine("eng-owed-room", &[("stage_bytes", "8388608"), ("read_timeout_ms", "300"), ("num_queues", "2")]);
    let keys: Vec<_> = (0..5).map(|i| reg(&e, &format!("owed-{i}"))).collect();
    let values: Vec<Vec<u8>> = (0..5).map(|i| pattern(2 * MIB, i as u8 + 1)).collect();
    for (k, v) in keys.iter().zip(&values) {
        run(&e, &prep_write(&e, &[(v, 0, k)]), Duration::from_secs(10)).unwrap();
    }
    control("latency 3000000"); // 3 s per RPC: slower than any deadline here
    let mut bufs: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; 2 * MIB]).collect();
    let slow: Vec<_> = bufs.iter_mut().zip(&keys).map(|(b, k)| prep_read(&e, &mut [(b, 0, k)])).collect();
    for r in &slow {
        e.post(r).unwrap();
    }
    for r in &slow {
        let (outcome, _) = settle(&e, r, Duration::from_secs(5));
        assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
    }
    assert_eq!(e.staging_in_use(), 8 * MIB, "DAOS holds the whole cap's buffers");
    control("latency 0");
    let mut back = vec![0u8; 2 * MIB];
    let t = Instant::now();
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &keys[4])]), Duration::from_secs(5)).unwrap();
    assert!(back == values[4]);
    assert!(t.elapsed() < Duration::from_millis(300), "the read waited {:?} for room", t.elapsed());
    wait_drained(&e, "DAOS still holds the slow reads after 5 s");
    assert_eq!(e.staging_in_use(), 0, "every owed buffer came back");
    assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0)), "a late answer reached a caller's buffer");
}

/// Writes refused for space wait to be sent again without their staging buffers, so a read
/// queued meanwhile gets the room at once rather than waiting behind them until its deadline.
#[test]
fn writes_waiting_for_space_leave_the_staging_room_to_others() {
    let _x = exclusive();
    const MIB: usize = 1 << 20;
    let e = engine(
        "eng-retry-room",
        &[
            ("stage_bytes", "4194304"),
            ("chunk_bytes", "1048576"),
            ("num_queues", "1"),
            ("read_timeout_ms", "3000"),
            ("timeout_ms", "20000"),
        ],
    );
    let other = reg(&e, "retry-room/other");
    let small = pattern(MIB, 3);
    run(&e, &prep_write(&e, &[(&small, 0, &other)]), Duration::from_secs(10)).unwrap();
    // A 4 MiB write in 4 chunks, the whole cap of staging; every RPC refused for space.
    let k = reg(&e, "retry-room/w");
    let data = pattern(4 * MIB, 9);
    let w = prep_write(&e, &[(&data, 0, &k)]);
    control("fail DER_NOSPACE 1000");
    assert_eq!(e.post(&w).unwrap(), Status::InProgress);
    std::thread::sleep(Duration::from_millis(20)); // refused, waiting to be sent again
    control("fail DER_IO 0");
    assert_eq!(e.staging_in_use(), 0, "writes waiting for space hold no staging");
    let mut back = vec![0u8; MIB];
    let t = Instant::now();
    run(&e, &prep_read(&e, &mut [(&mut back, 0, &other)]), Duration::from_secs(10)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(1), "the read waited {:?} for room", t.elapsed());
    assert!(back == small);
    // The write, copied in again when sent again, lands whole.
    let start = Instant::now();
    while e.check(&w).unwrap() == Status::InProgress {
        assert!(start.elapsed() < Duration::from_secs(20), "the write is still in progress");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(e.check(&w).unwrap(), Status::Success);
    let mut whole = vec![0u8; 4 * MIB];
    run(&e, &prep_read(&e, &mut [(&mut whole, 0, &k)]), Duration::from_secs(10)).unwrap();
    assert!(whole == data);
}
