// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// Translation only: NIXL's C++ calls in, flat C structs out to the Rust engine (nixl_daos.h), its
// statuses and handles back. No decisions about DAOS are made here. Every entry point catches
// all exceptions: nothing may unwind into NIXL or into Rust. Compiled both standalone and in
// NIXL's tree (see engine.hpp), so it only uses names both abi headers give.
#include "engine.hpp"

#include "nixl_daos.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace nixl_daos::shim {

using namespace abi;

namespace {

    // Runs f, turning any exception into NIXL_ERR_BACKEND.
    template<class F>
    Status
    guarded(const char *where, F &&f) noexcept {
        try {
            return f();
        }
        catch (const std::exception &e) {
            logError(where, e.what());
        }
        catch (...) {
            logError(where, "unknown C++ exception");
        }
        return kErrBackend;
    }

    Status
    status(int rust_status) {
        return static_cast<Status>(rust_status);
    }

    nd_str
    asNdStr(const std::string &s) {
        return nd_str{s.data(), s.size()};
    }

    // Rust builds slices from (pointer, count); give it a valid pointer even for an empty array.
    template<class T>
    const T *
    arrayPtr(const std::vector<T> &v) {
        static const T empty{};
        return v.empty() ? &empty : v.data();
    }

    template<class T>
    T *
    arrayPtr(std::vector<T> &v) {
        static thread_local T empty{};
        return v.empty() ? &empty : v.data();
    }

    // One OBJ registration: owns the Rust nd_md until deregisterMem. NIXL's prepped descriptor
    // lists keep pointers to it beyond deregisterMem, so deregistration frees the Rust side and
    // leaves this object behind as a tombstone (md == nullptr, which prepXfer rejects); the
    // engine frees tombstones when it is destroyed.
    class daosRegistration final : public BackendMD {
    public:
        explicit daosRegistration(nd_md *md) : BackendMD(true), md(md) {}

        std::atomic<nd_md *> md;
    };

    // One prepared transfer: owns the Rust nd_req until a releaseReqH that succeeds.
    class daosTransferReq final : public BackendReqH {
    public:
        explicit daosTransferReq(nd_req *req) : req(req) {}

        nd_req *const req;
    };

    // Heap wrapper W around a Rust object; if the allocation throws, gives the object back (undo).
    template<class W, class Raw, class Undo>
    W *
    wrap(Raw *raw, Undo &&undo) {
        try {
            return new W(raw);
        }
        catch (...) {
            undo();
            throw;
        }
    }

    const nd_md *
    rustMd(const BackendMD *md) {
        return md ? static_cast<const daosRegistration *>(md)->md.load() : nullptr;
    }

    std::vector<nd_desc>
    flatten(const MetaList &list) {
        const int n = list.descCount();
        std::vector<nd_desc> out;
        out.reserve(static_cast<size_t>(std::max(n, 0)));
        for (int i = 0; i < n; ++i) {
            const MetaDesc &d = list[static_cast<size_t>(i)];
            out.push_back(nd_desc{d.addr, d.len, d.devId, rustMd(d.metadataP)});
        }
        return out;
    }

} // namespace

nixlDaosEngine::nixlDaosEngine(const InitParams *init) : EngineBase(init) {
    // Creates the Rust engine from the custom params; on failure sets initErr (the reason is
    // logged by the Rust side).
    installLogSink(); // before the first engine: the Rust side picks its log sink then
    std::vector<nd_param> params;
    params.reserve(getCustomParams().size());
    for (const auto &[key, value] : getCustomParams()) {
        params.push_back(nd_param{key.c_str(), value.c_str()});
    }
    nd_engine *engine = nullptr;
    const int st = nd_engine_create(arrayPtr(params), params.size(), &engine);
    if (st != kSuccess || engine == nullptr) {
        if (engine) {
            nd_engine_destroy(engine);
        }
        initErr = true;
        return;
    }
    engine_ = engine;
}

nixlDaosEngine::~nixlDaosEngine() {
    if (engine_) {
        nd_engine_destroy(engine_);
    }
}

MemList
nixlDaosEngine::getSupportedMems() const {
    try {
        return supportedMems(engine_);
    }
    catch (...) {
        return {};
    }
}

Status
nixlDaosEngine::registerMem(const BlobDesc &mem, const MemType &mem_type, BackendMD *&out) {
    out = nullptr;
    return guarded("registerMem", [&] {
        if (!engine_) {
            return kErrBackend;
        }
        nd_md *md = nullptr;
        const Status st = status(nd_register(
            engine_, mem_type, mem.addr, mem.len, mem.devId, asNdStr(mem.metaInfo), &md));
        if (st != kSuccess || md == nullptr) {
            return st; // DRAM: no metadata
        }
        out = wrap<daosRegistration>(md, [&] { nd_deregister(engine_, md); });
        return st;
    });
}

Status
nixlDaosEngine::deregisterMem(BackendMD *md) {
    return guarded("deregisterMem", [&] {
        if (md == nullptr) {
            return kSuccess; // DRAM
        }
        auto *reg = static_cast<daosRegistration *>(md);
        nd_md *rust = reg->md.exchange(nullptr);
        if (rust == nullptr) {
            return kSuccess; // already a tombstone
        }
        {
            std::lock_guard<std::mutex> g(tombstonesLock_);
            tombstones_.emplace_back(reg);
        }
        return engine_ ? status(nd_deregister(engine_, rust)) : kErrBackend;
    });
}

Status
nixlDaosEngine::connect(const std::string &) {
    return kSuccess;
}

Status
nixlDaosEngine::disconnect(const std::string &) {
    return kSuccess;
}

Status
nixlDaosEngine::unloadMD(BackendMD *) {
    return kSuccess;
}

Status
nixlDaosEngine::prepXfer(const XferOp &op,
                         const MetaList &local,
                         const MetaList &remote,
                         const std::string &,
                         BackendReqH *&handle,
                         const BackendOptArgs *opt_args) const {
    handle = nullptr;
    if (opt_args && opt_args->hasNotif) {
        return kErrNotSupported;
    }
    return guarded("prepXfer", [&] {
        if (!engine_) {
            return kErrBackend;
        }
        const std::vector<nd_desc> l = flatten(local), r = flatten(remote);
        nd_req *req = nullptr;
        const Status st = status(nd_prep_xfer(engine_,
                                              op,
                                              local.getType(),
                                              arrayPtr(l),
                                              l.size(),
                                              remote.getType(),
                                              arrayPtr(r),
                                              r.size(),
                                              &req));
        if (st != kSuccess) {
            if (req) {
                nd_release_req(engine_, req);
            }
            return st;
        }
        if (req == nullptr) {
            return kErrBackend;
        }
        handle = wrap<daosTransferReq>(req, [&] { nd_release_req(engine_, req); });
        return st;
    });
}

Status
nixlDaosEngine::postXfer(const XferOp &,
                         const MetaList &,
                         const MetaList &,
                         const std::string &,
                         BackendReqH *&handle,
                         const BackendOptArgs *opt_args) const {
    if (opt_args && opt_args->hasNotif) {
        return kErrNotSupported;
    }
    return guarded("postXfer", [&] {
        if (!engine_ || !handle) {
            return kErrInvalidParam;
        }
        return status(nd_post_xfer(engine_, static_cast<daosTransferReq *>(handle)->req));
    });
}

Status
nixlDaosEngine::checkXfer(BackendReqH *handle) const {
    return guarded("checkXfer", [&] {
        if (!engine_ || !handle) {
            return kErrInvalidParam;
        }
        return status(nd_check_xfer(engine_, static_cast<daosTransferReq *>(handle)->req));
    });
}

Status
nixlDaosEngine::releaseReqH(BackendReqH *handle) const {
    return guarded("releaseReqH", [&] {
        if (handle == nullptr) {
            return kSuccess;
        }
        std::unique_ptr<daosTransferReq> req(static_cast<daosTransferReq *>(handle));
        if (!engine_) {
            return kErrBackend;
        }
        const Status st = status(nd_release_req(engine_, req->req));
        // An error means DAOS still uses the request's buffers: the request stays alive, and
        // NIXL keeps the handle (releaseXferReq reports NIXL_ERR_REPOST_ACTIVE).
        if (st != kSuccess) {
            req.release();
        }
        return st;
    });
}

Status
nixlDaosEngine::prepMemView(const RemoteMetaList &, MemView &, const BackendOptArgs *) const {
    return kErrNotSupported;
}

Status
nixlDaosEngine::prepMemView(const MetaList &, MemView &, const BackendOptArgs *) const {
    return kErrNotSupported;
}

void
nixlDaosEngine::releaseMemView(MemView) const {}

// Local-only, no notifications: NIXL calls none of these while supportsRemote() and
// supportsNotif() are false (createBackend calls getConnInfo only for remote backends).
Status
nixlDaosEngine::getPublicData(const BackendMD *, std::string &) const {
    return kErrNotSupported;
}

Status
nixlDaosEngine::getConnInfo(std::string &) const {
    return kErrNotSupported;
}

Status
nixlDaosEngine::loadRemoteConnInfo(const std::string &, const std::string &) {
    return kErrNotSupported;
}

Status
nixlDaosEngine::loadRemoteMD(const BlobDesc &,
                             const MemType &,
                             const std::string &,
                             BackendMD *&out) {
    out = nullptr;
    return kErrNotSupported;
}

Status
nixlDaosEngine::loadLocalMD(BackendMD *in, BackendMD *&out) {
    out = in;
    return kSuccess;
}

Status
nixlDaosEngine::getNotifs(NotifList &) {
    return kErrNotSupported;
}

Status
nixlDaosEngine::genNotif(const std::string &, const std::string &) const {
    return kErrNotSupported;
}

// Each descriptor's metaInfo and devId go to the engine, which applies the key rule (as for
// registerMem). Answers: {"size": bytes} for a key that exists, nullopt for one that does not.
Status
nixlDaosEngine::queryMem(const BlobList &descs, std::vector<QueryResp> &resp) const {
    return guarded("queryMem", [&] {
        if (!engine_) {
            return kErrBackend;
        }
        const size_t n = static_cast<size_t>(std::max(descs.descCount(), 0));
        std::vector<nd_key> keys(n);
        for (size_t i = 0; i < n; ++i) {
            const BlobDesc &d = descs[i];
            keys[i] = nd_key{asNdStr(d.metaInfo), d.devId};
        }
        std::vector<int64_t> sizes(n, -1);
        const Status st = status(nd_query_mem(engine_, arrayPtr(keys), n, arrayPtr(sizes)));
        resp.assign(n, std::nullopt);
        if (st != kSuccess) {
            return st;
        }
        for (size_t i = 0; i < n; ++i) {
            if (sizes[i] >= 0) {
                resp[i] = Params{{"size", std::to_string(sizes[i])}};
            }
        }
        return st;
    });
}

Status
nixlDaosEngine::estimateXferCost(const XferOp &,
                                 const MetaList &,
                                 const MetaList &,
                                 const std::string &,
                                 BackendReqH *const &,
                                 std::chrono::microseconds &,
                                 std::chrono::microseconds &,
                                 CostMethod &,
                                 const AgentOptArgs *) const {
    return kErrNotSupported;
}

MemList
supportedMems(nd_engine *engine) {
    MemList mems{kDram, kObj};
    if (nd_supports_vram(engine)) {
        mems.push_back(kVram);
    }
    return mems;
}

Params
backendOptions() noexcept {
    try {
        nd_param probe{};
        std::vector<nd_param> params(nd_plugin_params(&probe, 0));
        params.resize(std::min(params.size(), nd_plugin_params(params.data(), params.size())));
        Params out;
        for (const nd_param &p : params) {
            if (p.key) {
                out.emplace(p.key, p.value ? p.value : "");
            }
        }
        return out;
    }
    catch (...) {
        return {};
    }
}

const char *
pluginVersion() noexcept {
    const char *v = nd_plugin_version();
    return v ? v : "unknown";
}

} // namespace nixl_daos::shim
