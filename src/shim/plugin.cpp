// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// The plugin table NIXL gets from nixl_plugin_init, for the standalone build only (the in-tree
// build registers through NIXL's own plugin creator instead). The exported nixl_plugin_init/_fini
// symbols live in Rust (src/ffi.rs: a cdylib exports only Rust symbols) and call the two
// functions below.
#include "engine.hpp"

#include "nixl_daos.h"

#include <exception>
#include <memory>

namespace nixl_daos::shim {
namespace {

    using namespace abi;

    const char *
    pluginName() noexcept {
        return "DAOS";
    }

    // Never throws. Returns nullptr only on allocation failure; a failed Rust engine comes back
    // with initErr set (NIXL then reports the error and frees the engine through destroyEngine).
    EngineBase *
    createEngine(const InitParams *init) noexcept {
        if (init == nullptr) {
            return nullptr;
        }
        try {
            return std::make_unique<nixlDaosEngine>(init).release();
        }
        catch (const std::exception &e) {
            logError("createEngine", e.what());
        }
        catch (...) {
            logError("createEngine", "unknown C++ exception");
        }
        return nullptr;
    }

    void
    destroyEngine(EngineBase *engine) noexcept {
        delete engine; // the destructors do not throw
    }

    MemList
    backendMems() noexcept {
        try {
            return supportedMems(nullptr);
        }
        catch (...) {
            return {};
        }
    }

    PluginTable table = {
        1, // plugin API version NIXL 1.5.x accepts
        createEngine,
        destroyEngine,
        pluginName,
        pluginVersion,
        backendOptions,
        backendMems,
    };

} // namespace
} // namespace nixl_daos::shim

extern "C" {

void *
nd_shim_plugin_init(void) {
    return &nixl_daos::shim::table;
}

void
nd_shim_plugin_fini(void) {}

} // extern "C"
