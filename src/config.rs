// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Backend parameters: their defaults (shown by NIXL's `get_plugin_params("DAOS")`) and parsing
//! with errors that name the parameter, the value and what is accepted.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::error::{Error, Result};

pub const DEFAULT_LIBDAOS: &str = "libdaos.so.2";
pub const DEFAULT_SYSTEM: &str = "daos_server";
/// Deadline of a write, a size query and `create_backend` (docs/operations.md, "When an engine fails").
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Deadline of a read: a read that cannot be served in time is a cache miss the consumer
/// recomputes. It ends at its deadline even while DAOS still holds its RPCs, since DAOS only
/// ever writes the plugin's staging buffers (`crate::stage`).
pub const DEFAULT_READ_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_MAX_INFLIGHT: usize = 1024;
/// Bytes of staging buffers an engine holds at most (`stage_bytes`, `crate::stage`): every
/// transfer goes through them. 64 MiB keeps 16 RPCs of 4 MiB chunks in flight, past the
/// bandwidth-delay product of a 25 GB/s link at 2 ms. More costs at first touch: a fresh
/// process's first 60 reads of 8 MiB on the real engine here ran at 0.16 GB/s with 1 GiB
/// (every buffer new memory), 1.07 with 256 MiB, 1.40 with 128 MiB and 1.89 with 64 MiB, and
/// once the buffers were reused all at 1.8-2.2.
pub const DEFAULT_STAGE_BYTES: u64 = 64 << 20;
/// Smallest `stage_bytes`: one 4 MiB chunk (a larger RPC still goes, alone).
pub const MIN_STAGE_BYTES: u64 = 4 << 20;
/// Chunk size of a container this plugin lays out first (`chunk_bytes`): a key's bytes past
/// it go to dkeys of their own, which DAOS places on other targets. Measured on the real
/// engine here (docs/design.md, "Chunks"; bench/ceiling `dkeysN`): one request alone ran 1.13-1.32x
/// faster in 4 MiB chunks than in one dkey, and with every key in flight 0.96-1.08x.
pub const DEFAULT_CHUNK_BYTES: u64 = 4 << 20;
/// Bounds of `chunk_bytes` (besides 0, off): a chunk is a power of two, so a chunk boundary is
/// where a checksum chunk (32 KiB by default) ends, and at least 64 KiB.
pub const MIN_CHUNK_BYTES: u64 = 64 << 10;
pub const MAX_CHUNK_BYTES: u64 = 1 << 30;
/// Share of the pool eviction keeps free, in percent (docs/operations.md, "When the pool fills up").
pub const DEFAULT_EVICT_KEEP_FREE_PCT: u64 = 10;
/// How long bytes the plugin punched count as free, in ms: DAOS gives them back when it
/// aggregates, all at once, 27-31 s after the punch on a DAOS 2.8 engine here, and
/// `daos_pool_query` shows it up to 2 s later (bench/RECLAIM_FINDINGS.md); 40 s covers both.
pub const DEFAULT_EVICT_RECLAIM_MS: u64 = 40_000;

/// Eviction (`evict`, `evict_keep_free`, `evict_reclaim_ms`): see `crate::evict`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eviction {
    pub enabled: bool,
    /// Share of the pool kept free, 0-1.
    pub keep_free: f64,
    pub reclaim_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub pool: String,
    pub container: String,
    pub system: String,
    pub daos_lib: String,
    pub create_container: bool,
    /// ACL entries a container the plugin creates is given beside its owner's
    /// (`crate::daos::acl`); empty: the owner alone.
    pub cont_acl: Vec<String>,
    /// Object class name ("SX", "RP_3GX", ...); None lets DAOS choose from the container's
    /// redundancy factor.
    pub oclass: Option<String>,
    /// Chunk size for a container without a recorded layout (0: one dkey per key); a
    /// container's recorded layout wins (`crate::engine`).
    pub chunk_bytes: u64,
    /// Whether a new chunked container places each key's chunks on the object's redundancy
    /// groups in turn (`crate::key::ChunkNames::Spread`) rather than where their hash falls;
    /// recorded with its layout like `chunk_bytes`.
    pub spread_chunks: bool,
    pub num_queues: usize,
    pub max_inflight: usize,
    pub timeout_ms: u64,
    pub read_timeout_ms: u64,
    /// Bound of the staging buffers (`stage_bytes`).
    pub stage_bytes: u64,
    pub evict: Eviction,
}

/// Where the defaults read the environment (the process's, or a test's).
pub type Env<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// One backend parameter: its name, its default (resolved against the environment) and a
/// one-line description.
pub struct Param {
    pub name: &'static str,
    pub default: fn(&Env) -> String,
    pub description: &'static str,
}

/// Every parameter this backend reads: the one list. `defaults()` (what NIXL shows) and
/// `Config::parse` come from it, and a test holds docs/configuration.md's parameter table to it.
pub const PARAMS: &[Param] = &[
    Param {
        name: "pool",
        default: |env| env("DAOS_POOL").unwrap_or_default(),
        description: "DAOS pool label or UUID (default: $DAOS_POOL)",
    },
    Param {
        name: "container",
        default: |env| env("DAOS_CONT").unwrap_or_default(),
        description: "DAOS container label or UUID (default: $DAOS_CONT)",
    },
    Param { name: "system", default: |_| DEFAULT_SYSTEM.into(), description: "DAOS system name" },
    Param {
        name: "daos_lib",
        default: |env| env("NIXL_DAOS_LIBDAOS").unwrap_or_else(|| DEFAULT_LIBDAOS.into()),
        description: "path of libdaos to load (default: $NIXL_DAOS_LIBDAOS, else libdaos.so.2)",
    },
    Param {
        name: "create_container",
        // Listed empty (false, or true for a bucket's container): a consumer that passes the
        // listed defaults back with its own parameters on top (Dynamo's KVBM does) must not
        // turn a bucket's container creation off.
        default: |_| String::new(),
        description: "create the container when it does not exist (true/false; empty: false, or true for the S3 bucket's container)",
    },
    Param {
        name: "cont_acl",
        default: |_| String::new(),
        description: "DAOS ACL entries a container this plugin creates admits beside its owner, comma-separated, such as A::alice@:rw,A:G:svc@:r (empty: the owner alone)",
    },
    Param {
        name: "oclass",
        default: |_| String::new(),
        description: "object class name such as SX or RP_3GX; empty lets DAOS choose",
    },
    Param {
        name: "chunk_bytes",
        default: |_| DEFAULT_CHUNK_BYTES.to_string(),
        description: "a new container's chunk: a key's bytes past each multiple of it go to a dkey of their own, on another target (a power of two from 65536 to 1073741824, or 0: one dkey per key); a container keeps the chunk it was first used with",
    },
    Param {
        name: "spread_chunks",
        default: |_| "true".to_string(),
        description: "a new chunked container names each key's chunks so that DAOS places them on its object's redundancy groups in turn, and a value of two chunks never sits on one target (false: where the hash falls); a container keeps the naming it was first used with",
    },
    Param {
        name: "num_queues",
        default: |_| default_queues().to_string(),
        description: "DAOS event queues, each with one progress thread",
    },
    Param {
        name: "max_inflight",
        default: |_| DEFAULT_MAX_INFLIGHT.to_string(),
        description: "DAOS RPCs in flight per engine; more wait in a queue",
    },
    Param {
        name: "timeout_ms",
        default: |_| DEFAULT_TIMEOUT_MS.to_string(),
        description: "deadline of a write, a queryMem and create_backend, in milliseconds",
    },
    Param {
        name: "read_timeout_ms",
        default: |_| DEFAULT_READ_TIMEOUT_MS.to_string(),
        description: "deadline of a read, in milliseconds (default 5000, or timeout_ms if smaller): a read not served by then is a miss",
    },
    Param {
        name: "stage_bytes",
        default: |_| DEFAULT_STAGE_BYTES.to_string(),
        description: "most bytes of staging buffers the engine holds (every transfer goes through them; more wait for room), at least 4194304",
    },
    Param {
        name: "evict",
        default: |_| "true".into(),
        description: "evict the oldest-written keys of this plugin's object when the pool runs short of space (true/false)",
    },
    Param {
        name: "evict_keep_free",
        default: |_| DEFAULT_EVICT_KEEP_FREE_PCT.to_string(),
        description: "percent of the pool eviction keeps free (0-90; 0 evicts only after a write was refused for space)",
    },
    Param {
        name: "evict_reclaim_ms",
        default: |_| DEFAULT_EVICT_RECLAIM_MS.to_string(),
        description: "how long evicted bytes count as free before DAOS has reclaimed them, in milliseconds",
    },
];

fn default_queues() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 8)
}

/// Defaults as NIXL lists them, resolved against the environment `env`.
pub fn defaults(env: &Env) -> Vec<(&'static str, String)> {
    PARAMS.iter().map(|p| (p.name, (p.default)(env))).collect()
}

pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn parse_bool(name: &'static str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(Error::Param { name, value: v.into(), expected: "true or false".into() }),
    }
}

fn parse_chunk(v: &str) -> Result<u64> {
    match parse_int("chunk_bytes", v, 0, MAX_CHUNK_BYTES)? {
        0 => Ok(0),
        c if c.is_power_of_two() && c >= MIN_CHUNK_BYTES => Ok(c),
        c => Err(Error::Param {
            name: "chunk_bytes",
            value: v.to_string(),
            expected: format!(
                "0 (one dkey per key) or a power of two from {MIN_CHUNK_BYTES} to {MAX_CHUNK_BYTES}, such as {}",
                c.next_power_of_two().clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES)
            ),
        }),
    }
}

fn parse_int(name: &'static str, v: &str, min: u64, max: u64) -> Result<u64> {
    match v.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Error::Param { name, value: v.into(), expected: format!("an integer from {min} to {max}") }),
    }
}

fn label(name: &'static str, v: &str, env_name: &str) -> Result<String> {
    let v = v.trim();
    if v.is_empty() {
        return Err(Error::Param {
            name,
            value: v.into(),
            expected: format!("a DAOS {name} label or UUID; set the parameter or {env_name}"),
        });
    }
    if v.len() > 127 || v.contains('\0') {
        return Err(Error::Param { name, value: v.into(), expected: "a label of 1-127 characters or a UUID".into() });
    }
    Ok(v.to_string())
}

/// S3 parameter that names the container when `container` is not given: vLLM's and KVBM's object
/// tiers hard-code the backend "OBJ" and pass only S3 parameters, so the plugin installed as OBJ
/// takes their bucket as its container (created when missing).
pub const BUCKET_ALIAS: &str = "bucket";

/// Warns once per process about the parameters this backend does not read (LMCache and KVBM pass
/// S3 parameters such as `endpoint_override` to whatever backend they are given): one line for
/// each new set of names, not one per name or per engine.
fn warn_unknown(names: &[&str]) {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut seen = SEEN.get_or_init(Default::default).lock();
    // Sorted: NIXL hands the parameters over in a hash map's order.
    let mut new: Vec<&str> = names.iter().copied().filter(|n| seen.insert(n.to_string())).collect();
    new.sort_unstable();
    if !new.is_empty() {
        tracing::warn!(
            "DAOS backend: ignoring unknown parameter{} {}; known: {}, and {BUCKET_ALIAS} (the container when `container` is not given)",
            if new.len() > 1 { "s" } else { "" },
            new.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
            known_names()
        );
    }
}

/// Parameters the S3-speaking consumers (LMCache, KVBM, vLLM's object tier) pass to whatever
/// backend they are given: ignored, never taken for a typo of one of ours.
const S3_NAMES: [&str; 12] = [
    "endpoint_override",
    "region",
    "scheme",
    "access_key",
    "secret_key",
    "session_token",
    "ca_bundle",
    "use_virtual_addressing",
    "req_checksum",
    "num_threads",
    "crt_min_limit",
    "object_class",
];

/// Parameters of NIXL's libdfs DAOS backend (proposed for NIXL's own tree under the same backend
/// name, DAOS) that S3 consumers never pass, each with what this plugin has instead. A caller
/// giving one followed that backend's documentation and got this plugin: refused with an error
/// saying so, rather than ignored. (`object_class`, which it shares with the S3 backend, stays
/// ignored: consumers pass it to whatever backend they are given.)
const LIBDFS_NAMES: [(&str, &str); 3] = [
    ("num_event_queues", "num_queues"),
    ("max_inflight_per_queue", "max_inflight (for all queues together)"),
    ("progress_poll_timeout_us", "nothing: its queues are polled without a timeout to tune"),
];

/// The parameter of ours `name` is a likely typo of (case aside, at most 2 edits away, or 1
/// for names of 5 characters or fewer, where 2 edits reach unrelated words: `port` from `pool`),
/// unless it is a name consumers pass to every backend.
fn nearest(name: &str) -> Option<&'static str> {
    if S3_NAMES.contains(&name) || name.len() < 4 {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let most = if lower.len() <= 5 { 1 } else { 2 };
    PARAMS
        .iter()
        .map(|p| (strsim::levenshtein(&lower, p.name), p.name))
        .filter(|&(d, _)| d <= most)
        .min()
        .map(|(_, n)| n)
}

fn known_names() -> String {
    PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

impl Config {
    pub fn from_params(params: &[(String, String)]) -> Result<Config> {
        Config::parse(params, &process_env)
    }

    pub fn parse(params: &[(String, String)], env: &Env) -> Result<Config> {
        let mut given: Vec<(&'static str, &str)> = Vec::new();
        let mut unknown: Vec<&str> = Vec::new();
        let mut bucket: Option<&str> = None;
        for (k, v) in params {
            match PARAMS.iter().find(|p| p.name == k) {
                Some(p) => given.push((p.name, v.as_str())),
                None if k == BUCKET_ALIAS && !v.trim().is_empty() => bucket = Some(v.as_str()),
                None => unknown.push(k.as_str()),
            }
        }
        if let Some((name, ours)) = LIBDFS_NAMES.iter().find(|(n, _)| unknown.contains(n)) {
            return Err(Error::InvalidArg(format!(
                "backend parameter {name:?} belongs to NIXL's libdfs DAOS backend, but the DAOS plugin loaded \
                 is nixl-daos (the DAOS object API; its keys are not files of a DFS container): its counterpart \
                 here is {ours}. Both are named DAOS; `nixl-daos doctor` says which one a process loads"
            )));
        }
        if let Some((typo, near)) = unknown.iter().find_map(|k| nearest(k).map(|n| (*k, n))) {
            return Err(Error::InvalidArg(format!(
                "backend parameter {typo:?} is not one of this backend's: did you mean {near:?}? (known: {}; \
                 the S3 parameters consumers pass, such as endpoint_override, are ignored)",
                known_names()
            )));
        }
        if !unknown.is_empty() {
            warn_unknown(&unknown);
        }
        let is_given =
            |given: &[(&str, &str)], name: &str| given.iter().any(|(n, v)| *n == name && !v.trim().is_empty());
        // An S3 consumer's bucket is the container unless `container` itself is given; such a
        // consumer cannot create containers, so the bucket's is created when missing. A consumer
        // that passes get_plugin_params's defaults back with S3 parameters on top (Dynamo main's
        // KVBM) means its bucket: a `container` equal to its listed default ($DAOS_CONT) does
        // not count when `create_container` came as listed too (empty), the mark of defaults
        // passed back; given without that mark, it names the container as usual.
        let listed_container = env("DAOS_CONT").unwrap_or_default();
        let defaults_passed_back = given.iter().any(|(n, v)| *n == "create_container" && v.trim().is_empty());
        let names_container = given.iter().any(|(n, v)| {
            *n == "container" && !v.trim().is_empty() && !(defaults_passed_back && v.trim() == listed_container.trim())
        });
        let from_bucket = bucket.filter(|_| !names_container);
        if let Some(b) = from_bucket {
            given.push(("container", b));
            if !is_given(&given, "create_container") {
                given.push(("create_container", "true"));
            }
            tracing::info!("DAOS backend: container {b:?} from the S3 parameter {BUCKET_ALIAS} (created when missing)");
        }
        // Each name read here must be in PARAMS (the tests parse every default, so a name that is
        // not fails them).
        let get = |name: &str| -> String {
            given.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()).unwrap_or_else(|| {
                let p = PARAMS.iter().find(|p| p.name == name);
                (p.unwrap_or_else(|| panic!("parameter {name:?} is not in config::PARAMS")).default)(env)
            })
        };
        let system = get("system").trim().to_string();
        if system.is_empty() || system.len() > 15 || system.chars().any(|c| c.is_control()) {
            return Err(Error::Param {
                name: "system",
                value: system,
                expected: "a DAOS system name of 1-15 characters".into(),
            });
        }
        let daos_lib = get("daos_lib");
        if daos_lib.trim().is_empty() {
            return Err(Error::Param {
                name: "daos_lib",
                value: daos_lib,
                expected: "a path or file name of libdaos".into(),
            });
        }
        let oclass = get("oclass");
        let oclass = oclass.trim();
        let oclass = if oclass.is_empty() || oclass.eq_ignore_ascii_case("auto") {
            None
        } else {
            Some(oclass.trim_start_matches("OC_").to_string())
        };
        Ok(Config {
            pool: label("pool", &get("pool"), "DAOS_POOL")?,
            container: label("container", &get("container"), "DAOS_CONT")?,
            system,
            daos_lib,
            create_container: match get("create_container") {
                v if v.trim().is_empty() => false,
                v => parse_bool("create_container", &v)?,
            },
            cont_acl: crate::daos::acl::parse_cont_acl(&get("cont_acl"))?,
            oclass,
            chunk_bytes: parse_chunk(&get("chunk_bytes"))?,
            spread_chunks: parse_bool("spread_chunks", &get("spread_chunks"))?,
            num_queues: parse_int("num_queues", &get("num_queues"), 1, 64)? as usize,
            max_inflight: parse_int("max_inflight", &get("max_inflight"), 1, 1 << 20)? as usize,
            timeout_ms: parse_int("timeout_ms", &get("timeout_ms"), 1, 3_600_000)?,
            // Not given: 5 s, or timeout_ms when that is shorter (a caller who shortened the
            // one deadline there was means reads too).
            read_timeout_ms: match is_given(&given, "read_timeout_ms") {
                true => parse_int("read_timeout_ms", &get("read_timeout_ms"), 1, 3_600_000)?,
                false => parse_int("timeout_ms", &get("timeout_ms"), 1, 3_600_000)?.min(DEFAULT_READ_TIMEOUT_MS),
            },
            stage_bytes: parse_int("stage_bytes", &get("stage_bytes"), MIN_STAGE_BYTES, 1 << 40)?,
            evict: Eviction {
                enabled: parse_bool("evict", &get("evict"))?,
                keep_free: parse_int("evict_keep_free", &get("evict_keep_free"), 0, 90)? as f64 / 100.0,
                reclaim_ms: parse_int("evict_reclaim_ms", &get("evict_reclaim_ms"), 0, 3_600_000)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }
    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_and_overrides() {
        let c = Config::parse(&p(&[("pool", "sim"), ("container", "kv")]), &no_env).unwrap();
        assert_eq!(c.system, "daos_server");
        assert_eq!(c.daos_lib, "libdaos.so.2");
        assert!(!c.create_container && c.oclass.is_none());
        assert_eq!(c.timeout_ms, 10_000);
        assert_eq!(c.read_timeout_ms, 5_000);
        assert_eq!(c.stage_bytes, 64 << 20);
        let small = Config::parse(&p(&[("pool", "p"), ("container", "c"), ("stage_bytes", "8388608")]), &no_env);
        assert_eq!(small.unwrap().stage_bytes, 8 << 20);
        let e = Config::parse(&p(&[("pool", "p"), ("container", "c"), ("stage_bytes", "4096")]), &no_env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stage_bytes") && e.contains("4096"), "{e}");
        assert_eq!(c.evict, Eviction { enabled: true, keep_free: 0.10, reclaim_ms: DEFAULT_EVICT_RECLAIM_MS });
        let off = Config::parse(
            &p(&[("pool", "p"), ("container", "c"), ("evict", "false"), ("evict_keep_free", "25")]),
            &no_env,
        )
        .unwrap();
        assert_eq!(off.evict, Eviction { enabled: false, keep_free: 0.25, reclaim_ms: DEFAULT_EVICT_RECLAIM_MS });
        for (k, v) in [("evict", "sometimes"), ("evict_keep_free", "91"), ("evict_reclaim_ms", "-1")] {
            let e = Config::parse(&p(&[("pool", "p"), ("container", "c"), (k, v)]), &no_env).unwrap_err().to_string();
            assert!(e.contains(k) && e.contains(v), "{e}");
        }
        let c = Config::parse(
            &p(&[
                ("pool", "p"),
                ("container", "c"),
                ("timeout_ms", "250"),
                ("read_timeout_ms", "75"),
                ("oclass", "OC_RP_3GX"),
                ("num_queues", "3"),
            ]),
            &no_env,
        )
        .unwrap();
        assert_eq!(c.timeout_ms, 250);
        assert_eq!(c.read_timeout_ms, 75);
        let short = Config::parse(&p(&[("pool", "p"), ("container", "c"), ("timeout_ms", "300")]), &no_env).unwrap();
        assert_eq!(short.read_timeout_ms, 300, "a shorter timeout_ms shortens reads too");
        let long = Config::parse(&p(&[("pool", "p"), ("container", "c"), ("timeout_ms", "60000")]), &no_env).unwrap();
        assert_eq!(long.read_timeout_ms, DEFAULT_READ_TIMEOUT_MS);
        assert_eq!(c.oclass.as_deref(), Some("RP_3GX"));
        assert_eq!(c.num_queues, 3);
    }

    #[test]
    fn environment_fallbacks() {
        let env = |n: &str| match n {
            "DAOS_POOL" => Some("envpool".to_string()),
            "DAOS_CONT" => Some("envcont".to_string()),
            "NIXL_DAOS_LIBDAOS" => Some("/x/libdaos_sim.so".to_string()),
            _ => None,
        };
        let c = Config::parse(&[], &env).unwrap();
        assert_eq!(
            (c.pool.as_str(), c.container.as_str(), c.daos_lib.as_str()),
            ("envpool", "envcont", "/x/libdaos_sim.so")
        );
        let c = Config::parse(&p(&[("pool", "given")]), &env).unwrap();
        assert_eq!(c.pool, "given");
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let base = [("pool", "p"), ("container", "c")];
        for (k, v) in [
            ("timeout_ms", "abc"),
            ("timeout_ms", "0"),
            ("read_timeout_ms", "0"),
            ("stage_bytes", "1k"),
            ("chunk_bytes", "3000"),
            ("num_queues", "0"),
            ("system", "a-very-long-system-name"),
        ] {
            let mut ps = p(&base);
            ps.push((k.to_string(), v.to_string()));
            let e = Config::parse(&ps, &no_env).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(k) && msg.contains(v), "{msg}");
            assert_eq!(e.status(), crate::error::Status::InvalidParam);
        }
        let e = Config::parse(&p(&[("container", "c")]), &no_env).unwrap_err();
        assert!(e.to_string().contains("DAOS_POOL"), "{e}");
        // A typo of one of ours is refused with the name meant; S3 names are not typos.
        for (typo, meant) in
            [("timout_ms", "timeout_ms"), ("Stage_Bytes", "stage_bytes"), ("chunkbytes", "chunk_bytes")]
        {
            let e = Config::parse(&p(&[("pool", "p"), ("container", "c"), (typo, "1")]), &no_env).unwrap_err();
            assert_eq!(e.status(), crate::error::Status::InvalidParam);
            assert!(e.to_string().contains(&format!("did you mean {meant:?}")), "{e}");
        }
        for unrelated in ["port", "root", "evicts_all"] {
            assert!(nearest(unrelated).is_none(), "{unrelated} taken for a typo");
        }
        assert_eq!(nearest("pol"), None);
        assert_eq!(nearest("pools"), Some("pool"));
        for (name, ours) in LIBDFS_NAMES {
            let e = Config::parse(&p(&[("pool", "p"), ("container", "c"), (name, "4")]), &no_env).unwrap_err();
            assert_eq!(e.status(), crate::error::Status::InvalidParam);
            assert!(e.to_string().contains("libdfs") && e.to_string().contains(ours), "{e}");
        }
        for s3 in S3_NAMES {
            assert!(Config::parse(&p(&[("pool", "p"), ("container", "c"), (s3, "x")]), &no_env).is_ok(), "{s3}");
        }
        // Spaces around a name are the caller's typing, as for the labels.
        let c = Config::parse(&p(&[("pool", "p"), ("container", "c"), ("system", " daos_server\n")]), &no_env).unwrap();
        assert_eq!(c.system, "daos_server");
        assert!(Config::parse(&p(&[("pool", "p"), ("container", "c"), ("system", "da\x01os")]), &no_env).is_err());
    }

    #[test]
    fn unknown_parameters_are_ignored() {
        let c = Config::parse(
            &p(&[("pool", "p"), ("container", "c"), ("region", "b"), ("endpoint_override", "x")]),
            &no_env,
        );
        assert!(c.is_ok());
    }

    #[test]
    fn bucket_names_the_container_unless_container_is_given() {
        let env = |n: &str| (n == "DAOS_POOL").then(|| "envpool".to_string());
        // KVBM / vLLM object tier: only S3 parameters.
        let s3 = [("bucket", "kvbm"), ("endpoint_override", "http://x"), ("region", "r")];
        let c = Config::parse(&p(&s3), &env).unwrap();
        assert_eq!((c.pool.as_str(), c.container.as_str(), c.create_container), ("envpool", "kvbm", true));
        // An explicit container wins, and create_container keeps its own value.
        let c = Config::parse(&p(&[("bucket", "kvbm"), ("container", "mine")]), &env).unwrap();
        assert_eq!((c.container.as_str(), c.create_container), ("mine", false));
        let c = Config::parse(&p(&[("bucket", "kvbm"), ("create_container", "false")]), &env).unwrap();
        assert_eq!((c.container.as_str(), c.create_container), ("kvbm", false));
        // The bucket also wins over $DAOS_CONT: the consumer named it for this engine.
        let env2 = |n: &str| match n {
            "DAOS_POOL" => Some("envpool".to_string()),
            "DAOS_CONT" => Some("envcont".to_string()),
            _ => None,
        };
        assert_eq!(Config::parse(&p(&[("bucket", "kvbm")]), &env2).unwrap().container, "kvbm");
        // An empty bucket is no bucket.
        assert_eq!(Config::parse(&p(&[("bucket", " ")]), &env2).unwrap().container, "envcont");
    }

    /// Dynamo main's KVBM passes get_plugin_params's listed defaults back with its S3
    /// parameters on top: that is still "only a bucket" (its container, created when missing).
    #[test]
    fn listed_defaults_with_a_bucket_on_top_mean_the_bucket() {
        let env = |n: &str| match n {
            "DAOS_POOL" => Some("envpool".to_string()),
            "DAOS_CONT" => Some("envcont".to_string()),
            _ => None,
        };
        let mut layered: Vec<(String, String)> = defaults(&env).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        layered.push(("bucket".into(), "kvbm".into()));
        let c = Config::parse(&layered, &env).unwrap();
        assert_eq!((c.container.as_str(), c.create_container), ("kvbm", true));
        // Without a bucket the listed defaults are just the defaults.
        layered.pop();
        let c = Config::parse(&layered, &env).unwrap();
        assert_eq!((c.container.as_str(), c.create_container), ("envcont", false));
        // A container other than the listed one still wins over the bucket.
        let c = Config::parse(&p(&[("container", "mine"), ("bucket", "kvbm")]), &env).unwrap();
        assert_eq!(c.container, "mine");
        // So does the listed one when given on its own (not with the listed, empty
        // create_container that marks defaults passed back).
        let c = Config::parse(&p(&[("container", "envcont"), ("bucket", "kvbm")]), &env).unwrap();
        assert_eq!((c.container.as_str(), c.create_container), ("envcont", false));
    }

    /// docs/configuration.md's parameter table lists exactly PARAMS, in order, with the defaults
    /// `defaults()` gives: a literal in backticks, `empty`, `$VAR` (from the environment) with an
    /// optional ", else `literal`", or (num_queues only) a sentence checked here by hand.
    #[test]
    fn readme_table_matches_params() {
        let readme = include_str!("../docs/configuration.md");
        let start =
            readme.find("| parameter | default | meaning").expect("docs/configuration.md has the parameter table");
        let rows: Vec<(String, String)> = readme[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells[1].trim_matches('`').to_string(), cells[2].to_string())
            })
            .collect();
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, PARAMS.iter().map(|p| p.name).collect::<Vec<_>>(), "docs/configuration.md's parameter table");
        let marker = |_: &str| Some("from-env".to_string());
        for ((name, shown), p) in rows.iter().zip(PARAMS) {
            let plain = (p.default)(&no_env);
            let with_env = (p.default)(&marker);
            if let Some(rest) = shown.strip_prefix("`$") {
                let (var, rest) = rest.split_once('`').unwrap();
                assert_eq!((p.default)(&|n: &str| (n == var).then(|| "from-env".to_string())), "from-env", "{name}");
                let fallback = rest.strip_prefix(", else `").map(|r| r.trim_end_matches('`')).unwrap_or("");
                assert_eq!(plain, fallback, "{name}: docs/configuration.md says {shown}");
            } else if shown == "empty" {
                assert_eq!((plain.as_str(), with_env.as_str()), ("", ""), "{name}");
            } else if name == "num_queues" {
                assert_eq!(shown, "cores, at most 8");
                assert_eq!(plain, default_queues().to_string());
                assert!((1..=8).contains(&default_queues()));
            } else {
                assert!(shown.starts_with('`') && shown.ends_with('`'), "{name}: default cell {shown:?}");
                assert_eq!(plain, shown.trim_matches('`'), "{name}");
                assert_eq!(with_env, plain, "{name}: docs/configuration.md shows no environment variable");
            }
        }
    }
}

/// The parameter table has one source, docs/configuration.md: the README meant for NIXL's tree
/// carries it unchanged, and the README's short table names only parameters that exist.
#[cfg(test)]
mod doc_tables {
    use super::PARAMS;

    fn table(text: &str, header: &str) -> Vec<String> {
        let start = text.find(header).unwrap_or_else(|| panic!("no table headed {header:?}"));
        text[start..].lines().take_while(|l| l.starts_with('|')).map(str::to_string).collect()
    }

    #[test]
    fn the_upstream_readme_carries_the_documentation_table() {
        let header = "| parameter | default | meaning";
        let docs = table(include_str!("../docs/configuration.md"), header);
        let upstream = table(include_str!("../upstream/src/plugins/daos/README.md"), header);
        assert_eq!(upstream, docs, "upstream/src/plugins/daos/README.md's table differs from docs/configuration.md's");
    }

    #[test]
    fn the_readme_names_only_real_parameters() {
        let rows = table(include_str!("../README.md"), "| parameter | default |");
        assert!(rows.len() > 3, "README.md has its parameter table");
        for row in &rows[2..] {
            let first = row.split('|').nth(1).unwrap();
            for name in first.split('`').skip(1).step_by(2) {
                assert!(PARAMS.iter().any(|p| p.name == name), "README.md names {name:?}, not a parameter");
            }
        }
    }
}

/// Backend parameters as NIXL hands them over: any names, any strings (the shim reads C
/// strings, so no NUL; `Config::parse` is checked with NULs too). Never a panic; a value is
/// refused with an error that names the parameter and is NIXL's NIXL_ERR_INVALID_PARAM, or
/// taken as its plain reading.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[ +-]?[0-9]{0,25}[ ]?",
            Just(String::new()),
            Just("-1".to_string()),
            Just("1e99".to_string()),
            Just("99999999999999999999999".to_string()),
            Just("\u{ff}\u{0}x".to_string()),
            Just(" 12 ".to_string()),
            Just("0x10".to_string()),
            Just("NaN".to_string()),
            Just("TRUE".to_string()),
            Just("a".repeat(200)),
        ]
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    proptest! {
        #![proptest_config(crate::fuzz(512))]

        #[test]
        fn any_value_of_any_parameter_is_taken_or_refused_by_name(i in 0..PARAMS.len(), v in value()) {
            let name = PARAMS[i].name;
            let params = vec![
                ("pool".to_string(), "p".to_string()),
                ("container".to_string(), "c".to_string()),
                (name.to_string(), v.clone()),
            ];
            match Config::parse(&params, &no_env) {
                Err(e) => {
                    prop_assert_eq!(e.status(), crate::error::Status::InvalidParam);
                    prop_assert!(e.to_string().contains(name), "{}", e);
                }
                Ok(c) => {
                    let int = v.trim().parse::<u64>().ok();
                    match name {
                        "num_queues" => prop_assert_eq!(Some(c.num_queues as u64), int),
                        "max_inflight" => prop_assert_eq!(Some(c.max_inflight as u64), int),
                        "timeout_ms" => prop_assert_eq!(Some(c.timeout_ms), int),
                        // Blank: not given (5 s, or timeout_ms when shorter).
                        "read_timeout_ms" if v.trim().is_empty() => prop_assert_eq!(c.read_timeout_ms, DEFAULT_READ_TIMEOUT_MS),
                        "read_timeout_ms" => prop_assert_eq!(Some(c.read_timeout_ms), int),
                        "stage_bytes" => prop_assert_eq!(Some(c.stage_bytes), int),
                        "chunk_bytes" => prop_assert_eq!(Some(c.chunk_bytes), int),
                        "evict_reclaim_ms" => prop_assert_eq!(Some(c.evict.reclaim_ms), int),
                        "evict_keep_free" => prop_assert_eq!(Some((c.evict.keep_free * 100.0).round() as u64), int),
                        "pool" => prop_assert_eq!(c.pool.as_str(), v.trim()),
                        "container" => prop_assert_eq!(c.container.as_str(), v.trim()),
                        _ => {}
                    }
                    prop_assert!(c.pool.len() <= 127 && !c.pool.contains('\0'));
                    prop_assert!(c.container.len() <= 127 && !c.container.contains('\0'));
                    prop_assert!((1..=64).contains(&c.num_queues) && c.stage_bytes >= MIN_STAGE_BYTES);
                }
            }
        }

        #[test]
        fn any_parameter_list_parses_without_panic(
            params in proptest::collection::vec((prop_oneof![
                (0..PARAMS.len()).prop_map(|i| PARAMS[i].name.to_string()),
                Just(BUCKET_ALIAS.to_string()),
                any::<String>(),
            ], value()), 0..6),
        ) {
            let env = |n: &str| (n == "DAOS_POOL").then(|| "envpool".to_string());
            if let Err(e) = Config::parse(&params, &env) {
                prop_assert_eq!(e.status(), crate::error::Status::InvalidParam);
            }
        }
    }
}
