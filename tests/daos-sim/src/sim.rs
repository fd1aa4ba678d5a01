// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Process-wide simulator state: configuration from the environment (the cost model itself is
//! in `cost`), fault injection (hang, fail), the copy switch (`copy off` for profiling), counters, and
//! `daos_sim_control` / `daos_sim_stats`.

use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use parking_lot::{Condvar, Mutex};

use crate::cost;
use crate::ffi::*;
use crate::store::Store;

/// Default pool/container layout when DAOS_SIM_POOLS is unset.
pub const DEFAULT_POOLS: &str = "sim:kv";
/// Number of targets the simulated pool pretends to have (for `*X` object classes).
pub const SIM_TARGETS: u32 = 8;
/// Engines the simulated pool pretends to have (`pi_nnodes`; fault domains at rank level).
pub const SIM_ENGINES: u32 = 4;

/// Targets the pool map shows excluded (control `excluded <n>`): what a real pool reports after
/// DAOS excluded a dead engine. Only the pool query and object id generation look at it.
static EXCLUDED: AtomicU64 = AtomicU64::new(0);

pub fn excluded_targets() -> u32 {
    EXCLUDED.load(Relaxed) as u32
}

pub struct Global {
    pub store: Store,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

/// The process-wide state, created on first use from the environment.
pub fn global() -> &'static Global {
    GLOBAL.get_or_init(|| {
        init_logging();
        let rf = std::env::var("DAOS_SIM_RF").ok().and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(0).min(2);
        let spec = std::env::var("DAOS_SIM_POOLS").unwrap_or_else(|_| DEFAULT_POOLS.to_string());
        let store = Store::from_spec(&spec, rf);
        if let Some(us) = env_f64("DAOS_SIM_LATENCY_US") {
            cost::set_latency_us(us);
        }
        if let Some(bw) = env_f64("DAOS_SIM_BANDWIDTH_GBPS") {
            cost::set_bandwidth_gbps(bw);
        }
        if let Some(us) = env_f64("DAOS_SIM_RPC_COST_US") {
            cost::set_rpc_cost_us(us);
        }
        if let Some(us) = env_f64("DAOS_SIM_RECX_COST_US") {
            cost::set_recx_cost_us(us);
        }
        for (name, op) in [("DAOS_SIM_COST_UPDATE", cost::Op::Update), ("DAOS_SIM_COST_FETCH", cost::Op::Fetch)] {
            if let Ok(v) = std::env::var(name) {
                match parse_op_cost(&v.split_whitespace().collect::<Vec<_>>()) {
                    Some((rpc, recx, bw, bulk)) => cost::set_op_cost(op, rpc, recx, bw, bulk),
                    None => tracing::warn!("{name}={v:?} is not \"<rpc_us> <recx_us> <gbps> [<bulk_us>]\"; ignored"),
                }
            }
        }
        if let Some(b) = env_f64("DAOS_SIM_POOL_BYTES") {
            crate::space::set_capacity(b as u64);
        }
        if let Some(ms) = env_f64("DAOS_SIM_RECLAIM_MS") {
            crate::space::set_reclaim_ms(ms as u64);
        }
        tracing::info!(pools = %spec, rf, cost = %cost::describe(), space = %crate::space::describe(), "daos-sim initialised");
        Global { store }
    })
}

fn env_f64(name: &str) -> Option<f64> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
        _ => {
            tracing::warn!("{name}={v:?} is not a non-negative number; ignored");
            None
        }
    }
}

/// Installs a stderr `tracing` subscriber when DAOS_SIM_LOG is set and none is installed.
pub fn init_logging() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Ok(filter) = std::env::var("DAOS_SIM_LOG") {
            let filter = tracing_subscriber::EnvFilter::try_new(&filter)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("debug"));
            let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Counters

pub struct Stats {
    pub fetch: AtomicU64,
    pub update: AtomicU64,
    pub punch: AtomicU64,
    pub query: AtomicU64,
    pub iods: AtomicU64,
    pub recxs: AtomicU64,
    pub bytes_read: AtomicU64,
    /// Array (data) bytes written; single values are counted apart, in `single_bytes_written`
    /// (a client's small metadata, such as nixl-daos's write ids, would blur the payload count).
    pub bytes_written: AtomicU64,
    pub single_bytes_written: AtomicU64,
    pub inflight: AtomicI64,
}

pub static STATS: Stats = Stats {
    fetch: AtomicU64::new(0),
    update: AtomicU64::new(0),
    punch: AtomicU64::new(0),
    query: AtomicU64::new(0),
    iods: AtomicU64::new(0),
    recxs: AtomicU64::new(0),
    bytes_read: AtomicU64::new(0),
    bytes_written: AtomicU64::new(0),
    single_bytes_written: AtomicU64::new(0),
    inflight: AtomicI64::new(0),
};

impl Stats {
    fn reset(&self) {
        for c in [
            &self.fetch,
            &self.update,
            &self.punch,
            &self.query,
            &self.iods,
            &self.recxs,
            &self.bytes_read,
            &self.bytes_written,
            &self.single_bytes_written,
        ] {
            c.store(0, Relaxed);
        }
    }

    pub fn json(&self) -> String {
        format!(
            "{{\"fetch\":{},\"update\":{},\"punch\":{},\"query\":{},\"iods\":{},\"recxs\":{},\
             \"bytes_read\":{},\"bytes_written\":{},\"single_bytes_written\":{},\"inflight\":{}}}",
            self.fetch.load(Relaxed),
            self.update.load(Relaxed),
            self.punch.load(Relaxed),
            self.query.load(Relaxed),
            self.iods.load(Relaxed),
            self.recxs.load(Relaxed),
            self.bytes_read.load(Relaxed),
            self.bytes_written.load(Relaxed),
            self.single_bytes_written.load(Relaxed),
            self.inflight.load(Relaxed).max(0),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Faults

/// "connect_delay <ms>": every pool connect takes this long (0: none), as one against a dead
/// pool-service replica waits for CaRT's RPC timeout.
pub static CONNECT_DELAY_MS: AtomicU64 = AtomicU64::new(0);
/// Threads inside `daos_pool_connect2` now (see `unloaded_under_a_connect`).
pub static CONNECTS_INSIDE: AtomicU64 = AtomicU64::new(0);

/// Runs with the library's ELF destructors, at `exit()`. The real client crashes when a thread is
/// still inside a pool connect then: libna's destructor unloads its transport plugin, whose
/// code that thread is running (SIGSEGV in `libna_plugin_ofi.so`, seen on DAOS 2.8 after a
/// refused `create_backend`). daos-sim cannot unload code, so it reports the hazard and aborts.
extern "C" fn unloaded_under_a_connect() {
    let n = CONNECTS_INSIDE.load(Relaxed);
    if n > 0 {
        let msg = format!(
            "daos-sim: library destructors ran while {n} thread(s) were inside daos_pool_connect2 \
             (the real libdaos crashes here: libna unloads its plugin under them); aborting\n"
        );
        // SAFETY: writes a buffer of its own length to stderr; abort never returns.
        unsafe {
            libc_write(2, msg.as_ptr(), msg.len());
            libc_abort();
        }
    }
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, n: usize) -> isize;
    #[link_name = "abort"]
    fn libc_abort() -> !;
}

#[used]
#[link_section = ".fini_array"]
static UNLOAD_CHECK: extern "C" fn() = unloaded_under_a_connect;

/// "hang": no object RPC completes until "resume".
pub static HUNG: AtomicBool = AtomicBool::new(false);
static HANG_MU: Mutex<()> = Mutex::new(());
static HANG_CV: Condvar = Condvar::new();

pub fn is_hung() -> bool {
    HUNG.load(Relaxed)
}

/// Blocks the calling thread while the simulator is hung.
pub fn wait_while_hung() {
    if !is_hung() {
        return;
    }
    let mut g = HANG_MU.lock();
    while is_hung() {
        HANG_CV.wait(&mut g);
    }
}

fn set_hung(h: bool) {
    HUNG.store(h, Relaxed);
    if !h {
        {
            let _g = HANG_MU.lock();
            HANG_CV.notify_all();
        }
        crate::event::wake_all_eqs();
    }
}

static FAIL_LEFT: AtomicU64 = AtomicU64::new(0);
static FAIL_DER: AtomicI64 = AtomicI64::new(0);

/// Called once per object RPC sent: `Some(-der)` if this RPC is to fail by injection.
pub fn take_injected_failure() -> Option<c_int> {
    if FAIL_LEFT.load(Relaxed) == 0 {
        return None;
    }
    let mut cur = FAIL_LEFT.load(Relaxed);
    while cur > 0 {
        match FAIL_LEFT.compare_exchange_weak(cur, cur - 1, Relaxed, Relaxed) {
            Ok(_) => return Some(-(FAIL_DER.load(Relaxed) as c_int)),
            Err(v) => cur = v,
        }
    }
    None
}

/// A non-negative finite number.
fn non_negative(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// `<rpc_us> <recx_us> <gbps> [<bulk_us>]`, as `cost <op>` and DAOS_SIM_COST_<OP> take them.
fn parse_op_cost(words: &[&str]) -> Option<(f64, f64, f64, f64)> {
    match words {
        [rpc, recx, bw] => Some((non_negative(rpc)?, non_negative(recx)?, non_negative(bw)?, 0.0)),
        [rpc, recx, bw, bulk] => {
            Some((non_negative(rpc)?, non_negative(recx)?, non_negative(bw)?, non_negative(bulk)?))
        }
        _ => None,
    }
}

fn parse_der(s: &str) -> Option<c_int> {
    if let Ok(n) = s.parse::<i64>() {
        let n = n.unsigned_abs();
        return (n > 0 && n <= i32::MAX as u64).then_some(n as c_int);
    }
    let name = if s.starts_with("DER_") { s.to_string() } else { format!("DER_{s}") };
    crate::errstr::code_of(&name).filter(|&c| c != 0)
}

/// `deny connect`: every pool connect is refused with -DER_NO_PERM, as by a pool whose ACL does
/// not name the caller; `deny open` the same for container opens; `deny write` refuses
/// read-write container opens only (an ACL entry with `r` alone), `deny pool_write` read-write
/// pool connects only; `deny off` ends them all.
pub static DENY_CONNECT: AtomicBool = AtomicBool::new(false);
/// What `daos_version_get` reports: `DAOS_SIM_VERSION` when set (read at the first call, which
/// needs no `daos_init`, so that a process that only asks, as `nixl-daos doctor` does, can be
/// shown another release), else 2.8.0; the control `version M.m.f` sets it.
pub static VERSION: std::sync::LazyLock<parking_lot::Mutex<[c_int; 3]>> = std::sync::LazyLock::new(|| {
    let v = std::env::var("DAOS_SIM_VERSION").ok().and_then(|v| {
        let parsed = parse_version(&v);
        if parsed.is_none() {
            eprintln!("daos-sim: DAOS_SIM_VERSION={v:?} is not M.m.f; reporting 2.8.0");
        }
        parsed
    });
    parking_lot::Mutex::new(v.unwrap_or([2, 8, 0]))
});

fn parse_version(v: &str) -> Option<[c_int; 3]> {
    let parts: Vec<Option<c_int>> = v.trim().split('.').map(|p| p.parse().ok()).collect();
    match parts.as_slice() {
        [Some(a), Some(b), Some(c)] => Some([*a, *b, *c]),
        _ => None,
    }
}
pub static DENY_OPEN: AtomicBool = AtomicBool::new(false);
pub static DENY_WRITE: AtomicBool = AtomicBool::new(false);
pub static DENY_POOL_WRITE: AtomicBool = AtomicBool::new(false);

/// Applies one control command; 0 or -DER_INVAL.
pub fn control(cmd: &str) -> c_int {
    global();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let ok = match words.as_slice() {
        ["hang"] => {
            set_hung(true);
            true
        }
        ["resume"] => {
            set_hung(false);
            true
        }
        ["fail", der, n] => match (parse_der(der), n.parse::<u64>()) {
            (Some(d), Ok(n)) => {
                FAIL_DER.store(d as i64, Relaxed);
                FAIL_LEFT.store(n, Relaxed);
                true
            }
            _ => false,
        },
        ["connect_delay", ms] => match ms.parse::<u64>() {
            Ok(ms) => {
                CONNECT_DELAY_MS.store(ms, Relaxed);
                true
            }
            Err(_) => false,
        },
        ["latency", us] => non_negative(us).map(cost::set_latency_us).is_some(),
        ["bandwidth", g] => non_negative(g).map(cost::set_bandwidth_gbps).is_some(),
        ["rpc_cost", us] => non_negative(us).map(cost::set_rpc_cost_us).is_some(),
        ["recx_cost", us] => non_negative(us).map(cost::set_recx_cost_us).is_some(),
        ["cost", op, rest @ ..] => {
            let op = match *op {
                "update" => Some(cost::Op::Update),
                "fetch" => Some(cost::Op::Fetch),
                _ => None,
            };
            match (op, parse_op_cost(rest)) {
                (Some(op), Some((rpc, recx, bw, bulk))) => {
                    cost::set_op_cost(op, rpc, recx, bw, bulk);
                    true
                }
                _ => false,
            }
        }
        ["capacity", b] => b.parse::<u64>().map(crate::space::set_capacity).is_ok(),
        ["reclaim_ms", ms] => ms.parse::<u64>().map(crate::space::set_reclaim_ms).is_ok(),
        ["excluded", n] => match n.parse::<u32>() {
            Ok(n) if n < SIM_TARGETS => {
                EXCLUDED.store(n as u64, Relaxed);
                true
            }
            _ => false,
        },
        ["copy", "on"] => {
            crate::copy::set_copying(true);
            true
        }
        ["copy", "off"] => {
            crate::copy::set_copying(false);
            true
        }
        ["reset_stats"] => {
            STATS.reset();
            true
        }
        ["version", v] => match parse_version(v) {
            Some(version) => {
                *VERSION.lock() = version;
                true
            }
            None => false,
        },
        ["reset_data"] => {
            global().store.reset_data();
            true
        }
        ["flip", dkey, offset] => match offset.parse::<u64>() {
            Ok(off) => global().store.flip(dkey.as_bytes(), b"data", off) > 0,
            Err(_) => false,
        },
        ["deny", what] => match *what {
            "connect" => Some(&DENY_CONNECT),
            "open" => Some(&DENY_OPEN),
            "write" => Some(&DENY_WRITE),
            "pool_write" => Some(&DENY_POOL_WRITE),
            "off" => {
                for flag in [&DENY_CONNECT, &DENY_OPEN, &DENY_WRITE, &DENY_POOL_WRITE] {
                    flag.store(false, Relaxed);
                }
                None
            }
            _ => return -DER_INVAL,
        }
        .is_none_or(|flag| {
            flag.store(true, Relaxed);
            true
        }),
        ["drop_akey", akey] => {
            global().store.drop_akey(akey.as_bytes());
            true
        }
        _ => false,
    };
    if ok {
        tracing::info!(cmd, "daos_sim_control");
        0
    } else {
        tracing::warn!(cmd, "daos_sim_control: unknown or malformed command");
        -DER_INVAL
    }
}

/// # Safety
/// `cmd` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn daos_sim_control(cmd: *const c_char) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if cmd.is_null() {
            return -DER_INVAL;
        }
        match CStr::from_ptr(cmd).to_str() {
            Ok(s) => control(s),
            Err(_) => -DER_INVAL,
        }
    }
}

#[no_mangle]
pub extern "C" fn daos_sim_stats() -> *const c_char {
    thread_local! {
        static BUF: RefCell<CString> = RefCell::new(CString::default());
    }
    hand_out(&BUF, STATS.json())
}

/// `s` as a C string kept in `buf` (a thread-local of the inspection call returning it), valid
/// until the calling thread's next call of that function.
pub(crate) fn hand_out(buf: &'static std::thread::LocalKey<RefCell<CString>>, s: String) -> *const c_char {
    let s = CString::new(s).unwrap_or_default();
    buf.with(|b| {
        *b.borrow_mut() = s;
        b.borrow().as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_names() {
        assert_eq!(parse_der("1011"), Some(DER_TIMEDOUT));
        assert_eq!(parse_der("-2001"), Some(DER_IO));
        assert_eq!(parse_der("DER_NOREPLY"), Some(DER_NOREPLY));
        assert_eq!(parse_der("TIMEDOUT"), Some(DER_TIMEDOUT));
        assert_eq!(parse_der("bogus"), None);
        assert_eq!(parse_der("0"), None);
    }
}
