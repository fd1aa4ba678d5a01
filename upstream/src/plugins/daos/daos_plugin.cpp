// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// Registers the DAOS engine with NIXL through NIXL's plugin creator, as a loadable module
// (nixl_plugin_init) or, with -Dstatic_plugins=DAOS, built into libnixl (createStaticDAOSPlugin).
// The engine itself is rust/src/shim/engine.cpp over the Rust crate in rust/.
#include "backend/backend_plugin.h"
#include "engine.hpp"

namespace {

using daos_plugin_t = nixlBackendPluginCreator<nixl_daos::shim::nixlDaosEngine>;

nixlBackendPlugin *
daosPlugin() {
    return daos_plugin_t::create(NIXL_PLUGIN_API_VERSION,
                                 "DAOS",
                                 nixl_daos::shim::pluginVersion(),
                                 nixl_daos::shim::backendOptions(),
                                 nixl_daos::shim::supportedMems(nullptr));
}

} // namespace

#ifdef STATIC_PLUGIN_DAOS
nixlBackendPlugin *
createStaticDAOSPlugin() {
    return daosPlugin();
}
#else
extern "C" NIXL_PLUGIN_EXPORT nixlBackendPlugin *
nixl_plugin_init() {
    return daosPlugin();
}

extern "C" NIXL_PLUGIN_EXPORT void
nixl_plugin_fini() {}
#endif
