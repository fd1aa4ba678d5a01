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
//! read is resent after 5 s and usually lands on the live replica (docs/operations.md, "When an engine
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
//!
//! That file is `$TMPDIR/nixl-daos.<euid>/libdaos.log`: in a directory of this user's alone
//! (mode 0700), made and checked by `crate::private_file`, because libdaos opens its log by path,
//! creating it and following links, and the plugin often runs as root. A name directly in the
//! shared temp dir could be created first by another user, as a link to a file of root's that
//! libdaos would then append to. The plugin makes the file itself (0600) and checks it before
//! handing its name to libdaos; if the directory or the file is not safe it says why and
//! libdaos logs to `/dev/null`.

use std::path::{Path, PathBuf};

use crate::private_file;

/// The variable libdaos reads for its log file.
pub const D_LOG_FILE: &str = "D_LOG_FILE";

/// CaRT's RPC timeout, in seconds.
pub const CRT_TIMEOUT: &str = "CRT_TIMEOUT";
/// What the plugin sets it to when the user has not (see the module's comment).
pub const DEFAULT_CRT_TIMEOUT_S: u32 = 5;

/// The directory of the default log: one per user in the temp dir, private to that user.
pub fn default_log_dir(temp_dir: &Path, uid: u32) -> PathBuf {
    temp_dir.join(format!("nixl-daos.{uid}"))
}

/// The default log's name in `default_log_dir`.
pub const DEFAULT_LOG_NAME: &str = "libdaos.log";

/// Where libdaos logs when the user set nothing: one file per user, appended to by every process
/// (DAOS opens it `O_APPEND`), so that DAOS's own diagnostics stay available. Makes the directory
/// and the file and checks both (`crate::private_file`); `uid` is this process's effective uid.
pub fn default_log_file(temp_dir: &Path, uid: u32) -> Result<PathBuf, private_file::Error> {
    let dir = default_log_dir(temp_dir, uid);
    private_file::private_dir(&dir)?;
    let path = dir.join(DEFAULT_LOG_NAME);
    private_file::open_append(&path)?;
    Ok(path)
}

/// What to set `D_LOG_FILE` to, given its current value: None to keep the user's choice;
/// otherwise the default file if `make_default` could make it, else `/dev/null` (if DAOS cannot
/// open its log file, `daos_init` fails).
pub fn choose(current: Option<&str>, make_default: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    if current.is_some_and(|v| !v.is_empty()) {
        return None;
    }
    Some(make_default().unwrap_or_else(|| PathBuf::from("/dev/null")))
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
        let make_default = || {
            default_log_file(&std::env::temp_dir(), private_file::euid())
                .map_err(|e| {
                    tracing::warn!(
                        "libdaos's log: {e}. libdaos logs to /dev/null instead (set D_LOG_FILE to choose its file)"
                    )
                })
                .ok()
        };
        match choose(current.as_deref(), make_default) {
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
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn user_choice_is_kept_and_unset_or_empty_gets_a_file() {
        let def = PathBuf::from("/tmp/nixl-daos.1000/libdaos.log");
        assert_eq!(default_log_dir(Path::new("/tmp"), 1000), PathBuf::from("/tmp/nixl-daos.1000"));
        assert_eq!(choose(Some("/var/log/daos.log"), || panic!("not made when the user chose")), None);
        assert_eq!(choose(None, || Some(def.clone())), Some(def.clone()));
        assert_eq!(choose(Some(""), || Some(def.clone())), Some(def.clone()));
        assert_eq!(choose(None, || None), Some(PathBuf::from("/dev/null")));
    }

    #[test]
    fn default_log_is_made_private_and_refused_when_planted() {
        let tmp = std::env::temp_dir().join(format!("nixl-daos-logroute-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let uid = private_file::euid();
        let path = default_log_file(&tmp, uid).unwrap();
        assert_eq!(path, tmp.join(format!("nixl-daos.{uid}")).join(DEFAULT_LOG_NAME));
        let (d, f) = (std::fs::symlink_metadata(path.parent().unwrap()).unwrap(), std::fs::metadata(&path).unwrap());
        assert_eq!((d.mode() & 0o7777, f.mode() & 0o7777, f.uid()), (0o700, 0o600, uid));
        // Another user's link at the directory's name: refused, nothing made through it.
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        let elsewhere = tmp.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, default_log_dir(&tmp, uid)).unwrap();
        let e = default_log_file(&tmp, uid).unwrap_err().to_string();
        assert!(e.contains("symbolic link") && e.contains(&format!("nixl-daos.{uid}")), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // No temp dir: an error, not a panic (prepare falls back to /dev/null).
        assert!(default_log_file(&tmp.join("missing"), uid).is_err());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
