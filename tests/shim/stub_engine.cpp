// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// TEST ONLY (not part of the plugin; build.rs compiles only src/shim/*.cpp). A stand-in for the
// Rust engine: the C ABI of include/nixl_daos.h over an in-memory key -> bytes store, plus the
// exported nixl_plugin_init/_fini that src/ffi.rs provides in the real plugin. Linked with the shim
// into a standalone libplugin_DAOS.so (build-standalone.sh), it lets the real NIXL agent drive the
// shim end to end without the Rust side.
#include "nixl_daos.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int kOk = ND_SUCCESS, kInProg = ND_IN_PROG, kErrInvalid = ND_ERR_INVALID_PARAM,
              kErrBackend = ND_ERR_BACKEND, kErrNotSupported = ND_ERR_NOT_SUPPORTED;

// The stand-in's copy of NIXL's key rule (the plugin's one implementation is src/key.rs).
std::string
stubKey(nd_str meta, uint64_t dev_id) {
    return meta.len ? std::string(meta.ptr, meta.len) : std::to_string(dev_id);
}

struct Store {
    std::mutex mu;
    std::map<std::string, std::vector<char>> objects;
};

} // namespace

struct nd_engine {
    Store store;
};

struct nd_md {
    std::string key;
};

struct nd_req {
    int op;
    std::vector<nd_desc> local;
    std::vector<std::pair<std::string, nd_desc>> remote; // key copied at prep
    int posted = 0;
};

extern "C" {

const char *
nd_plugin_version(void) {
    return "0.0.0-shim-stub";
}

size_t
nd_plugin_params(nd_param *out, size_t cap) {
    static const nd_param params[] = {{"pool", ""}, {"container", "nixl"}, {"stub_fail", "0"}};
    const size_t n = sizeof params / sizeof params[0];
    for (size_t i = 0; i < n && i < cap; ++i) {
        out[i] = params[i];
    }
    return n;
}

int
nd_engine_create(const nd_param *params, size_t n, nd_engine **out) {
    *out = nullptr;
    for (size_t i = 0; i < n; ++i) {
        if (std::strcmp(params[i].key, "stub_fail") == 0 &&
            std::strcmp(params[i].value, "1") == 0) {
            return kErrBackend;
        }
    }
    *out = new nd_engine;
    return kOk;
}

void
nd_engine_destroy(nd_engine *engine) {
    delete engine;
}

int
nd_register(nd_engine *,
            int mem_type,
            uint64_t,
            uint64_t,
            uint64_t dev_id,
            nd_str meta,
            nd_md **out) {
    *out = nullptr;
    if (mem_type == ND_MEM_DRAM) {
        return kOk;
    }
    if (mem_type != ND_MEM_OBJ) {
        return kErrNotSupported;
    }
    *out = new nd_md{stubKey(meta, dev_id)};
    return kOk;
}

int
nd_deregister(nd_engine *, nd_md *md) {
    delete md;
    return kOk;
}

int
nd_prep_xfer(nd_engine *,
             int op,
             int local_mem,
             const nd_desc *local,
             size_t n_local,
             int remote_mem,
             const nd_desc *remote,
             size_t n_remote,
             nd_req **out) {
    *out = nullptr;
    if (local_mem != ND_MEM_DRAM || remote_mem != ND_MEM_OBJ || n_local != n_remote) {
        return kErrInvalid;
    }
    auto *req = new nd_req{op, std::vector<nd_desc>(local, local + n_local), {}};
    for (size_t i = 0; i < n_remote; ++i) {
        if (!remote[i].md || remote[i].len != local[i].len) {
            delete req;
            return kErrInvalid;
        }
        req->remote.emplace_back(remote[i].md->key, remote[i]);
    }
    *out = req;
    return kOk;
}

int
nd_post_xfer(nd_engine *engine, nd_req *req) {
    std::lock_guard<std::mutex> lock(engine->store.mu);
    for (size_t i = 0; i < req->local.size(); ++i) {
        const nd_desc &l = req->local[i];
        const auto &[key, r] = req->remote[i];
        auto *buf = reinterpret_cast<char *>(l.addr);
        if (req->op == ND_OP_WRITE) {
            auto &obj = engine->store.objects[key];
            if (obj.size() < r.addr + r.len) {
                obj.resize(r.addr + r.len);
            }
            std::memcpy(obj.data() + r.addr, buf, l.len);
        } else {
            auto it = engine->store.objects.find(key);
            if (it == engine->store.objects.end() || it->second.size() < r.addr + r.len) {
                return kErrBackend;
            }
            std::memcpy(buf, it->second.data() + r.addr, l.len);
        }
    }
    req->posted = 1;
    return kInProg; // completes on the first check, to exercise the polling path
}

int
nd_check_xfer(nd_engine *, nd_req *req) {
    return req->posted ? kOk : kErrInvalid;
}

int
nd_release_req(nd_engine *, nd_req *req) {
    delete req;
    return kOk;
}

int
nd_query_mem(nd_engine *engine, const nd_key *keys, size_t n, int64_t *sizes) {
    std::lock_guard<std::mutex> lock(engine->store.mu);
    for (size_t i = 0; i < n; ++i) {
        auto it = engine->store.objects.find(stubKey(keys[i].meta, keys[i].dev_id));
        sizes[i] = it == engine->store.objects.end() ? -1 : int64_t(it->second.size());
    }
    return kOk;
}

int
nd_supports_vram(nd_engine *) {
    return 0; // the stub moves host memory only
}

void *
nd_shim_plugin_init(void);
void
nd_shim_plugin_fini(void);

__attribute__((visibility("default"))) void *
nixl_plugin_init(void) {
    return nd_shim_plugin_init();
}

__attribute__((visibility("default"))) void
nixl_plugin_fini(void) {
    nd_shim_plugin_fini();
}

} // extern "C"
