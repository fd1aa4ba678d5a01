// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The environment libdaos reads at the process's first `daos_init`, set before the plugin
//! loads it when the user has not: where libdaos logs, and CaRT's RPC timeout.
//!
//! **The RPC timeout.** `CRT_TIMEOUT` (seconds; CaRT's default 60, or the servers'
//! `crt_timeout`) is how long libdaos waits for an RPC before it refreshes its pool map and sends
//! the RPC again. Against a dead engine that wait is what every request pays before DAOS
//! excludes it, and a pool connect pays it once per pool-service replica it tries. The plugin's
//! deadlines (5 s for reads, 10 s for writes) end a request long before 60 s, but DAOS keeps the
//! RPC, its buffers and its in-flight slot until its own wait is over: with 60 s, measured here
//! on a three-engine DAOS 2.8, nothing succeeded for 90 s after a kill; with `CRT_TIMEOUT=5`, a
//! read is resent after 5 s and usually lands on the live replica (README, "When an engine
//! fails"). 5 s is far above a healthy RPC here (an 8 MiB RPC takes 5-10 ms on loopback TCP),
//! so it does not resend healthy ones. It is process-wide and read once: a host that called
//! `daos_init` before loading the plugin keeps its own.
//!
//! **The log.** DAOS (gurt's `d_log_init`, run by `daos_init`) prints its log
//! lines on the process's **stdout** when `D_LOG_FILE` is unset or empty: an ERR line on every
//! process start in some environments and one per failing RPC (hundreds for one request to a
//! dead server). A serving process's stdout is not ours to fill, so before libdaos is loaded the
//! plugin points `D_LOG_FILE` at a file of its own when the user has not chosen one. Everything
//! else (`D_LOG_MASK`, `D_LOG_SIZE`, `DD_SUBSYS`, ...) is left to the user and DAOS's defaults.

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The variable libdaos reads for its log file.
pub const D_LOG_FILE: &str = "D_LOG_FILE";

/// CaRT's RPC timeout, in seconds.
pub const CRT_TIMEOUT: &str = "CRT_TIMEOUT";
/// What the plugin sets it to when the user has not (see the module's comment).
pub const DEFAULT_CRT_TIMEOUT_S: u32 = 5;

/// Where libdaos logs when the user set nothing: one file per user in the temp dir, appended to
/// by every process (DAOS opens it `O_APPEND`), so that DAOS's own diagnostics stay available.
pub fn default_log_file(temp_dir: &Path, uid: u32) -> PathBuf {
    temp_dir.join(format!("nixl-daos-libdaos.{uid}.log"))
}

/// What to set `D_LOG_FILE` to, given its current value: None to keep the user's choice;
/// otherwise the default file if `writable` says it can be opened, else `/dev/null` (if DAOS
/// cannot open its log file, `daos_init` fails).
pub fn choose(current: Option<&str>, default: &Path, writable: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    if current.is_some_and(|v| !v.is_empty()) {
        return None;
    }
    Some(if writable(default) { default.to_path_buf() } else { PathBuf::from("/dev/null") })
}

fn can_append(p: &Path) -> bool {
    OpenOptions::new().append(true).create(true).mode(0o600).open(p).is_ok()
}

/// Sets `D_LOG_FILE` and `CRT_TIMEOUT` for libdaos unless the user did. Runs once, before the
/// first dlopen of libdaos (their values only matter at the first `daos_init` of the process).
pub fn prepare() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        match std::env::var(CRT_TIMEOUT).ok().filter(|v| !v.trim().is_empty()) {
            Some(v) => tracing::debug!("libdaos RPC timeout: CRT_TIMEOUT={v} (the user's)"),
            None => {
                tracing::debug!("CRT_TIMEOUT unset: libdaos RPCs time out after {DEFAULT_CRT_TIMEOUT_S} s");
                // As for D_LOG_FILE below: once, before libdaos is loaded.
                std::env::set_var(CRT_TIMEOUT, DEFAULT_CRT_TIMEOUT_S.to_string());
            }
        }
        let current = std::env::var(D_LOG_FILE).ok();
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
        let default = default_log_file(&std::env::temp_dir(), uid);
        match choose(current.as_deref(), &default, can_append) {
            None => tracing::debug!("libdaos logs to {:?} (D_LOG_FILE)", current.unwrap_or_default()),
            Some(path) => {
                tracing::debug!("D_LOG_FILE unset: libdaos logs to {} instead of stdout", path.display());
                // set_var is not synchronised with C getenv in other threads; it runs once,
                // before libdaos is loaded, and libdaos reads the variable only in daos_init.
                std::env::set_var(D_LOG_FILE, path);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_choice_is_kept_and_unset_or_empty_gets_a_file() {
        let def = default_log_file(Path::new("/tmp"), 1000);
        assert_eq!(def, PathBuf::from("/tmp/nixl-daos-libdaos.1000.log"));
        assert_eq!(choose(Some("/var/log/daos.log"), &def, |_| true), None);
        assert_eq!(choose(None, &def, |_| true), Some(def.clone()));
        assert_eq!(choose(Some(""), &def, |_| true), Some(def.clone()));
        assert_eq!(choose(None, &def, |_| false), Some(PathBuf::from("/dev/null")));
    }

    #[test]
    fn can_append_tells_writable_from_not() {
        let dir = std::env::temp_dir().join(format!("nixl-daos-logroute-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(can_append(&dir.join("x.log")));
        assert!(!can_append(&dir.join("missing-dir/x.log")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
