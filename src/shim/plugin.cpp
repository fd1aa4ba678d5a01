// The plugin table NIXL gets from nixl_plugin_init. The exported nixl_plugin_init/_fini symbols
// live in Rust (src/ffi.rs: a cdylib exports only Rust symbols) and call the two functions below.
#include "engine.hpp"

#include "nixl_daos.h"

#include <algorithm>
#include <vector>

namespace nixl_daos::shim {
namespace {

using namespace abi;

const char *plugin_name() noexcept { return "DAOS"; }

const char *plugin_version() noexcept {
    const char *v = nd_plugin_version();
    return v ? v : "unknown";
}

// The backend parameters and their defaults, as the Rust engine lists them.
Params backend_options() noexcept {
    try {
        nd_param probe{};
        std::vector<nd_param> params(nd_plugin_params(&probe, 0));
        params.resize(std::min(params.size(), nd_plugin_params(params.data(), params.size())));
        Params out;
        for (const nd_param &p : params)
            if (p.key) out.emplace(p.key, p.value ? p.value : "");
        return out;
    } catch (...) {
        return {};
    }
}

MemList backend_mems() noexcept {
    try {
        return supported_mems();
    } catch (...) {
        return {};
    }
}

PluginTable table = {
    1, // plugin API version NIXL 1.5.x accepts
    create_engine, destroy_engine, plugin_name, plugin_version, backend_options, backend_mems,
};

} // namespace
} // namespace nixl_daos::shim

extern "C" {

void *nd_shim_plugin_init(void) { return &nixl_daos::shim::table; }

void nd_shim_plugin_fini(void) {}

} // extern "C"
