//! Logging through `tracing`, at NIXL's log level (`NIXL_LOG_LEVEL`: TRACE, DEBUG, INFO, WARN,
//! ERROR or FATAL; NIXL's default is WARN). If the host process already installed a global
//! subscriber (a Rust consumer such as KVBM), our events go to it instead.

use tracing_subscriber::filter::LevelFilter;

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
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stderr)
            .with_target(false)
            .try_init();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nixl_levels() {
        assert_eq!(level_from(Some("debug")), LevelFilter::DEBUG);
        assert_eq!(level_from(Some("INFO")), LevelFilter::INFO);
        assert_eq!(level_from(Some("FATAL")), LevelFilter::ERROR);
        assert_eq!(level_from(None), LevelFilter::WARN);
        assert_eq!(level_from(Some("bogus")), LevelFilter::WARN);
    }
}
