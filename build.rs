// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Build script: the Rust declarations of libdaos, and the C++ shim that presents the engine to
//! NIXL (cc).
//!
//! The declarations are committed (`src/daos/bindings.rs`), so the default build needs no
//! libclang. `--features bindgen` regenerates them with bindgen from `DAOS_PREFIX/include`, else a
//! system install (`/usr/include/daos.h`), else daos-sim's headers; `ci/check-bindings.sh` keeps
//! the committed file equal to what bindgen produces.

use std::env;
use std::path::{Path, PathBuf};

/// The libdaos functions the plugin calls (bindgen's allow-list). Everything is loaded at run time (dlopen), so the
/// plugin loads into NIXL even where DAOS is not installed.
#[cfg(feature = "bindgen")]
const DAOS_FUNCTIONS: &[&str] = &[
    "daos_init",
    "daos_fini",
    "daos_pool_connect2",
    "daos_pool_disconnect",
    "daos_pool_query",
    "daos_cont_open2",
    "daos_cont_close",
    "daos_cont_create_with_label",
    "daos_cont_get_attr",
    "daos_cont_set_attr",
    "daos_prop_alloc",
    "daos_prop_free",
    "daos_acl_from_strs",
    "daos_obj_generate_oid2",
    "daos_oclass_name2id",
    "daos_obj_open",
    "daos_obj_close",
    "daos_obj_update",
    "daos_obj_fetch",
    "daos_obj_punch_dkeys",
    "daos_obj_query_key",
    "daos_tx_open",
    "daos_tx_commit",
    "daos_tx_close",
    "daos_tx_restart",
    "daos_eq_create",
    "daos_eq_destroy",
    "daos_eq_poll",
    "daos_event_init",
    "daos_event_fini",
    "daos_event_test",
    "d_errstr",
];

/// Where bindgen reads the DAOS headers: `DAOS_PREFIX/include`, else a system install, else
/// daos-sim's own headers (which declare the same names and DAOS 2.8 layouts).
#[cfg(feature = "bindgen")]
fn daos_include_dir(manifest: &Path) -> PathBuf {
    if let Ok(prefix) = env::var("DAOS_PREFIX") {
        let dir = Path::new(&prefix).join("include");
        println!("cargo:warning=nixl-daos: bindgen over DAOS headers from DAOS_PREFIX ({})", dir.display());
        return dir;
    }
    if Path::new("/usr/include/daos.h").exists() {
        println!("cargo:warning=nixl-daos: bindgen over the system DAOS headers (/usr/include)");
        return PathBuf::from("/usr/include");
    }
    manifest.join("tests/daos-sim/include")
}

/// `--features bindgen`: regenerate the declarations into OUT_DIR (and, with
/// `NIXL_DAOS_BINDINGS_OUT=<file>`, also to that file, which is how
/// `ci/check-bindings.sh` compares them with the committed `src/daos/bindings.rs`).
#[cfg(feature = "bindgen")]
fn daos_bindings(manifest: &Path, out: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=NIXL_DAOS_BINDINGS_OUT");
    let include = daos_include_dir(manifest);
    if !include.join("daos.h").exists() {
        panic!(
            "nixl-daos: --features bindgen: no daos.h in {} (DAOS_PREFIX must be the prefix that holds include/daos.h)",
            include.display()
        );
    }
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
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => panic!(
            "nixl-daos: bindgen failed on the DAOS headers in {}: {e}. It needs libclang \
             (Debian/Ubuntu: apt-get install libclang-dev; or set LIBCLANG_PATH). The default \
             build needs neither: drop --features bindgen to use src/daos/bindings.rs.",
            include.display()
        ),
    };
    let file = out.join("daos_bindings.rs");
    bindings.write_to_file(&file).expect("writing daos_bindings.rs");
    if let Ok(copy) = env::var("NIXL_DAOS_BINDINGS_OUT") {
        bindings.write_to_file(&copy).expect("writing NIXL_DAOS_BINDINGS_OUT");
    }
    file
}

/// Default build: the committed declarations, so no libclang is needed.
#[cfg(not(feature = "bindgen"))]
fn daos_bindings(manifest: &Path, out: &Path) -> PathBuf {
    if env::var_os("DAOS_PREFIX").is_some() {
        println!(
            "cargo:warning=nixl-daos: DAOS_PREFIX is set but the committed declarations \
             (src/daos/bindings.rs) are used; build with --features bindgen (needs libclang) to \
             generate them from $DAOS_PREFIX/include instead"
        );
    }
    let file = out.join("daos_bindings.rs");
    std::fs::copy(manifest.join("src/daos/bindings.rs"), &file).expect("copying src/daos/bindings.rs");
    file
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());

    println!("cargo:rerun-if-env-changed=DAOS_PREFIX");
    println!("cargo:rerun-if-changed=tests/daos-sim/include");
    println!("cargo:rerun-if-changed=src/daos/bindings.rs");
    daos_bindings(&manifest, &out);

    // The C++ shim between NIXL's plugin ABI and our C ABI (include/nixl_daos.h).
    // NIXL_DAOS_SHIM=external: NIXL's own meson build compiles the shim against its real headers
    // and links this crate as a staticlib (the in-tree build provides that meson.build); the crate then
    // exports only the C ABI, not nixl_plugin_init.
    println!("cargo:rerun-if-env-changed=NIXL_DAOS_SHIM");
    println!("cargo::rustc-check-cfg=cfg(nd_shim)");
    match env::var("NIXL_DAOS_SHIM").as_deref() {
        Ok("external") => return,
        Ok("") | Err(_) => {}
        Ok(other) => panic!(
            "nixl-daos: NIXL_DAOS_SHIM={other:?}: the only accepted value is \"external\" (unset builds the shim)"
        ),
    }
    let shim_dir = manifest.join("src/shim");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&shim_dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    sources.retain(|p| p.extension().is_some_and(|e| e == "cpp"));
    sources.sort();
    println!("cargo:rerun-if-changed=src/shim");
    println!("cargo:rerun-if-changed=include");
    // Without the shim the library has no nixl_plugin_init and NIXL cannot load it: fail here.
    assert!(
        !sources.is_empty(),
        "nixl-daos: no C++ shim sources in {} (the plugin cannot load without them)",
        shim_dir.display()
    );
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
    // The shim's calls into the engine's C entry points (nd_*) bind inside this library: another
    // copy of the plugin in the process (installed under a second backend name, `nixl-daos
    // install --as`, or a build loaded RTLD_GLOBAL) must never capture them.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
}
