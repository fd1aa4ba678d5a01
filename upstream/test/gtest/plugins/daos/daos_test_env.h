// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// Where the DAOS tests find their DAOS: NIXL_DAOS_LIBDAOS, DAOS_POOL and DAOS_CONT when the caller
// set them (a real pool), else daos-sim as meson built it, with its default pool "sim" and
// container "kv".
#ifndef NIXL_TEST_PLUGINS_DAOS_TEST_ENV_H
#define NIXL_TEST_PLUGINS_DAOS_TEST_ENV_H

#include <cstdlib>
#include <string>

#include "nixl_types.h"

namespace nixl_daos_test {

inline std::string
envOr(const char *name, const std::string &fallback) {
    const char *v = std::getenv(name);
    return (v && v[0] != '\0') ? std::string(v) : fallback;
}

// The backend parameters of one test engine; extra entries override the defaults.
inline nixl_b_params_t
daosParams(const nixl_b_params_t &extra = {}) {
    nixl_b_params_t p = {
        {"daos_lib", envOr("NIXL_DAOS_LIBDAOS", NIXL_DAOS_TEST_SIM)},
        {"pool", envOr("DAOS_POOL", "sim")},
        {"container", envOr("DAOS_CONT", "kv")},
        {"timeout_ms", "20000"},
    };
    for (const auto &[k, v] : extra) {
        p[k] = v;
    }
    return p;
}

} // namespace nixl_daos_test

#endif
