//! Build script: Rust declarations of libdaos from its C headers (bindgen), and the C++ shim
//! that presents the engine to NIXL (cc).
//!
//! Header search order: `DAOS_PREFIX/include`, then a system install (`/usr/include/daos.h`),
//! then daos-sim's own headers. All three declare the same names and layouts.

use std::env;
use std::path::{Path, PathBuf};

/// The libdaos functions the plugin calls. Everything is loaded at run time (dlopen), so the
/// plugin loads into NIXL even where DAOS is not installed.
const DAOS_FUNCTIONS: &[&str] = &[
    "daos_init",
    "daos_fini",
    "daos_pool_connect2",
    "daos_pool_disconnect",
    "daos_cont_open2",
    "daos_cont_close",
    "daos_cont_create_with_label",
    "daos_cont_get_attr",
    "daos_cont_set_attr",
    "daos_obj_generate_oid2",
    "daos_oclass_name2id",
    "daos_obj_open",
    "daos_obj_close",
    "daos_obj_update",
    "daos_obj_fetch",
    "daos_obj_punch_dkeys",
    "daos_obj_query_key",
    "daos_eq_create",
    "daos_eq_destroy",
    "daos_eq_poll",
    "daos_event_init",
    "daos_event_fini",
    "daos_event_test",
    "d_errstr",
];

fn daos_include_dir(manifest: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=DAOS_PREFIX");
    if let Ok(prefix) = env::var("DAOS_PREFIX") {
        let dir = Path::new(&prefix).join("include");
        println!("cargo:warning=nixl-daos: DAOS headers from DAOS_PREFIX ({})", dir.display());
        return dir;
    }
    if Path::new("/usr/include/daos.h").exists() {
        println!("cargo:warning=nixl-daos: DAOS headers from the system install (/usr/include)");
        return PathBuf::from("/usr/include");
    }
    let dir = manifest.join("tests/daos-sim/include");
    println!(
        "cargo:warning=nixl-daos: no DAOS headers found (set DAOS_PREFIX); using daos-sim's ({})",
        dir.display()
    );
    dir
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());

    // libdaos declarations.
    let include = daos_include_dir(&manifest);
    println!("cargo:rerun-if-changed=tests/daos-sim/include");
    let mut builder = bindgen::Builder::default()
        .header_contents("wrapper.h", "#include <daos.h>\n#include <daos_errno.h>\n")
        .clang_arg(format!("-I{}", include.display()))
        .dynamic_library_name("DaosApi")
        .dynamic_link_require_all(true)
        .allowlist_type("daos_.*|d_iov_t|d_sg_list_t")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false);
    for f in DAOS_FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    builder
        .generate()
        .expect("bindgen failed on the DAOS headers")
        .write_to_file(out.join("daos_bindings.rs"))
        .expect("writing daos_bindings.rs");

    // The C++ shim between NIXL's plugin ABI and our C ABI (include/nixl_daos.h).
    let shim_dir = manifest.join("src/shim");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&shim_dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    sources.retain(|p| p.extension().is_some_and(|e| e == "cpp"));
    sources.sort();
    println!("cargo:rerun-if-changed=src/shim");
    println!("cargo:rerun-if-changed=include");
    println!("cargo::rustc-check-cfg=cfg(nd_shim)");
    if !sources.is_empty() {
        println!("cargo:rustc-cfg=nd_shim");
        cc::Build::new()
            .cpp(true)
            .std("c++20")
            .include(manifest.join("include"))
            .include(&shim_dir)
            .flag_if_supported("-fvisibility=hidden")
            .flag_if_supported("-Wno-invalid-offsetof")
            .files(&sources)
            .compile("nixl_daos_shim");
        println!("cargo:rustc-link-lib=stdc++");
    }
}
