// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Compiles c/layout.c, whose `_Static_assert`s fail the build if include/daos.h drifts from
//! the DAOS layouts (the Rust mirrors are checked in tests/layout.rs).

fn main() {
    println!("cargo:rerun-if-changed=c/layout.c");
    println!("cargo:rerun-if-changed=include/daos.h");
    println!("cargo:rerun-if-changed=include/daos_errno.h");
    println!("cargo:rerun-if-changed=include/daos_sim.h");
    cc::Build::new()
        .file("c/layout.c")
        .include("include")
        .flag_if_supported("-std=c11")
        .warnings(true)
        .compile("daos_sim_layout");
}
