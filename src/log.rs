// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Logging through `tracing`, at NIXL's log level (`NIXL_LOG_LEVEL`: TRACE, DEBUG, INFO, WARN,
//! ERROR or FATAL; NIXL's default is WARN). Lines go to stderr, or, when a sink was installed
//! first (NIXL's in-tree build does: its shim calls `nd_set_log_sink`), to the
//! host's logger, so they come out through NIXL's log macros with NIXL's format.
//!
//! The plugin's `tracing` is private to it: `libplugin_DAOS.so` links its own copy of `tracing`
//! and exports only its C entry points, so a Rust host (such as KVBM) that installed its own
//! global subscriber never sees these events, and `init` below always installs ours. A user
//! gets the plugin's logs by setting `NIXL_LOG_LEVEL` (stderr), or through NIXL's logger in the
//! in-tree build. (Only where this crate is linked as an rlib, as in its own Rust tests, does an
//! already-installed subscriber win: `try_init` then leaves it in place.)

use std::ffi::c_char;
use std::io;
use std::sync::OnceLock;

use tracing::{Level, Metadata};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The host's logger: one call per line, `level` as in include/nixl_daos.h (0 trace .. 4 error),
/// `msg` not NUL-terminated.
pub type Sink = unsafe extern "C" fn(level: i32, msg: *const c_char, len: usize);

static SINK: OnceLock<Sink> = OnceLock::new();

/// Routes our log lines to `sink` from the first `init` on. Returns false when a sink was already
/// set (the first one stays: the subscriber may already be using it).
pub fn set_sink(sink: Sink) -> bool {
    SINK.set(sink).is_ok()
}

pub fn level_from(value: Option<&str>) -> LevelFilter {
    match value.map(|v| v.trim().to_ascii_uppercase()).as_deref() {
        Some("TRACE") => LevelFilter::TRACE,
        Some("DEBUG") => LevelFilter::DEBUG,
        Some("INFO") => LevelFilter::INFO,
        Some("ERROR") | Some("FATAL") => LevelFilter::ERROR,
        _ => LevelFilter::WARN,
    }
}

pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let level = level_from(std::env::var("NIXL_LOG_LEVEL").ok().as_deref());
        let builder = tracing_subscriber::fmt().with_max_level(level).with_target(false);
        let _ = match SINK.get() {
            // The host's logger stamps time and level itself.
            Some(&sink) => {
                builder.without_time().with_level(false).with_ansi(false).with_writer(SinkWriter(sink)).try_init()
            }
            None => builder.with_writer(io::stderr).try_init(),
        };
    });
}

/// Hands each formatted event to the sink as one line, with the event's level.
struct SinkWriter(Sink);

impl<'a> MakeWriter<'a> for SinkWriter {
    type Writer = SinkLine;

    fn make_writer(&'a self) -> SinkLine {
        SinkLine { sink: self.0, level: Level::INFO, buf: Vec::new() }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> SinkLine {
        SinkLine { sink: self.0, level: *meta.level(), buf: Vec::new() }
    }
}

/// One event being formatted; sent to the sink when the formatter drops it.
struct SinkLine {
    sink: Sink,
    level: Level,
    buf: Vec<u8>,
}

impl io::Write for SinkLine {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The sink's number for a level (`ND_LOG_*` in include/nixl_daos.h, checked by ffi's tests).
pub(crate) fn sink_level(level: Level) -> i32 {
    match level {
        Level::TRACE => 0,
        Level::DEBUG => 1,
        Level::INFO => 2,
        Level::WARN => 3,
        Level::ERROR => 4,
    }
}

impl Drop for SinkLine {
    fn drop(&mut self) {
        let line = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        if line.is_empty() {
            return;
        }
        let level = sink_level(self.level);
        // SAFETY: the sink was given by the shim through nd_set_log_sink, whose contract is a
        // function callable from any thread for the life of the process; the pointer and length
        // describe `line`, alive for the duration of the call.
        unsafe { (self.sink)(level, line.as_ptr().cast(), line.len()) };
    }
}

/// A log line from inside the process's exit (the C exit handler, see crate::host), where
/// `tracing` cannot be used: glibc runs the exiting thread's thread-local destructors before
/// the exit handlers, and the formatter's thread-local buffer is gone by then (using it there
/// panicked, and the panic aborted the process). Same level filter as `init`'s; the line goes to
/// the host's sink if one was installed, else straight to stderr (one `write`, no buffering).
pub fn exit_line(level: Level, msg: &str) {
    if level > LevelFilter::current() {
        return;
    }
    if let Some(&sink) = SINK.get() {
        // SAFETY: as in SinkLine's drop: a sink callable from any thread for the process's life.
        unsafe { sink(sink_level(level), msg.as_ptr().cast(), msg.len()) };
        return;
    }
    let line = format!("{level:>5} nixl-daos (exit): {msg}\n");
    // SAFETY: writes `line`'s bytes, alive for the call, to stderr.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn nixl_levels() {
        assert_eq!(level_from(Some("debug")), LevelFilter::DEBUG);
        assert_eq!(level_from(Some("INFO")), LevelFilter::INFO);
        assert_eq!(level_from(Some("FATAL")), LevelFilter::ERROR);
        assert_eq!(level_from(None), LevelFilter::WARN);
        assert_eq!(level_from(Some("bogus")), LevelFilter::WARN);
    }

    static LINES: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn collect(level: i32, msg: *const c_char, len: usize) {
        // SAFETY: SinkLine passes a pointer and length of a live byte slice.
        let bytes = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
        LINES.lock().push((level, String::from_utf8_lossy(bytes).into_owned()));
    }

    #[test]
    fn a_sink_gets_one_line_per_event_with_its_level() {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(LevelFilter::INFO)
            .without_time()
            .with_level(false)
            .with_target(false)
            .with_ansi(false)
            .with_writer(SinkWriter(collect))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("pool {} is gone", "tank");
            tracing::warn!(key = "k1", "slow");
            tracing::debug!("filtered out");
        });
        let lines = LINES.lock().clone();
        assert_eq!(lines, vec![(4, "pool tank is gone".to_string()), (3, "slow key=\"k1\"".to_string())]);
    }
}
