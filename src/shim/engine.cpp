// Translation only: NIXL's C++ calls in, flat C structs out to the Rust engine (nixl_daos.h), its
// statuses and handles back. No decisions about DAOS are made here. Every entry point catches
// all exceptions: nothing may unwind into NIXL or into Rust.
#include "engine.hpp"

#include "nixl_daos.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace nixl_daos::shim {
namespace {

using namespace abi;

// Runs f, turning any exception into NIXL_ERR_BACKEND.
template <class F> Status guarded(const char *where, F &&f) noexcept {
    try {
        return f();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nixl-daos: %s: %s\n", where, e.what());
    } catch (...) {
        std::fprintf(stderr, "nixl-daos: %s: unknown C++ exception\n", where);
    }
    return kErrBackend;
}

Status status(int rust_status) { return static_cast<Status>(rust_status); }

nd_str as_nd_str(const std::string &s) { return nd_str{s.data(), s.size()}; }

// Rust builds slices from (pointer, count); give it a valid pointer even for an empty array.
template <class T> const T *array_ptr(const std::vector<T> &v) {
    static const T empty{};
    return v.empty() ? &empty : v.data();
}
template <class T> T *array_ptr(std::vector<T> &v) {
    static thread_local T empty{};
    return v.empty() ? &empty : v.data();
}

// One OBJ registration: owns the Rust nd_md until deregisterMem. NIXL's prepped descriptor
// lists keep pointers to it beyond deregisterMem, so deregistration frees the Rust side and
// leaves this object behind as a tombstone (md == nullptr, which prepXfer rejects); the engine
// frees tombstones when it is destroyed.
class RegistrationMD final : public BackendMD {
  public:
    explicit RegistrationMD(nd_md *md) : BackendMD(true), md(md) {}
    std::atomic<nd_md *> md;
};

// One prepared transfer: owns the Rust nd_req until a releaseReqH that succeeds.
class TransferReq final : public BackendReqH {
  public:
    explicit TransferReq(nd_req *req) : req(req) {}
    nd_req *const req;
};

// Heap wrapper W around a Rust object; if the allocation throws, gives the object back (undo).
template <class W, class Raw, class Undo> W *wrap(Raw *raw, Undo &&undo) {
    try {
        return new W(raw);
    } catch (...) {
        undo();
        throw;
    }
}

const nd_md *rust_md(const BackendMD *md) {
    return md ? static_cast<const RegistrationMD *>(md)->md.load() : nullptr;
}

std::vector<nd_desc> flatten(const MetaList &list) {
    std::vector<nd_desc> out;
    out.reserve(list.descs.size());
    for (const MetaDesc &d : list.descs)
        out.push_back(nd_desc{d.addr, d.len, d.devId, rust_md(d.metadataP)});
    return out;
}

class DaosEngine final : public EngineBase {
  public:
    explicit DaosEngine(const InitParams &init) : EngineBase(init) {}

    ~DaosEngine() override {
        if (engine_) nd_engine_destroy(engine_);
    }

    // Creates the Rust engine from the custom params; on failure sets initErr.
    void open() {
        std::vector<nd_param> params;
        params.reserve(customParams.size());
        for (const auto &[key, value] : customParams)
            params.push_back(nd_param{key.c_str(), value.c_str()});
        nd_engine *engine = nullptr;
        const int st = nd_engine_create(array_ptr(params), params.size(), &engine);
        if (st != kSuccess || engine == nullptr) {
            if (engine) nd_engine_destroy(engine);
            initErr = true;
            return;
        }
        engine_ = engine;
    }

    bool supportsRemote() const override { return false; }
    bool supportsLocal() const override { return true; }
    bool supportsNotif() const override { return false; }

    MemList getSupportedMems() const override {
        try {
            return supported_mems();
        } catch (...) {
            return {};
        }
    }

    Status registerMem(const BlobDesc &mem, const MemType &mem_type, BackendMD *&out) override {
        out = nullptr;
        return guarded("registerMem", [&] {
            if (!engine_) return kErrBackend;
            nd_md *md = nullptr;
            const Status st = status(nd_register(engine_, mem_type, mem.addr, mem.len, mem.devId,
                                                 as_nd_str(mem.metaInfo), &md));
            if (st != kSuccess || md == nullptr) return st; // DRAM: no metadata
            out = wrap<RegistrationMD>(md, [&] { nd_deregister(engine_, md); });
            return st;
        });
    }

    Status deregisterMem(BackendMD *md) override {
        return guarded("deregisterMem", [&] {
            if (md == nullptr) return kSuccess; // DRAM
            auto *reg = static_cast<RegistrationMD *>(md);
            nd_md *rust = reg->md.exchange(nullptr);
            if (rust == nullptr) return kSuccess; // already a tombstone
            {
                std::lock_guard<std::mutex> g(tombstones_lock_);
                tombstones_.emplace_back(reg);
            }
            return engine_ ? status(nd_deregister(engine_, rust)) : kErrBackend;
        });
    }

    Status connect(const std::string &) override { return kSuccess; }
    Status disconnect(const std::string &) override { return kSuccess; }
    Status unloadMD(BackendMD *) override { return kSuccess; }

    Status prepXfer(const XferOp &op, const MetaList &local, const MetaList &remote,
                    const std::string &, BackendReqH *&handle,
                    const BackendOptArgs *opt_args) const override {
        handle = nullptr;
        if (opt_args && opt_args->hasNotif) return kErrNotSupported;
        return guarded("prepXfer", [&] {
            if (!engine_) return kErrBackend;
            const std::vector<nd_desc> l = flatten(local), r = flatten(remote);
            nd_req *req = nullptr;
            const Status st =
                status(nd_prep_xfer(engine_, op, local.type, array_ptr(l), l.size(), remote.type,
                                    array_ptr(r), r.size(), &req));
            if (st != kSuccess) {
                if (req) nd_release_req(engine_, req);
                return st;
            }
            if (req == nullptr) return kErrBackend;
            handle = wrap<TransferReq>(req, [&] { nd_release_req(engine_, req); });
            return st;
        });
    }

    Status postXfer(const XferOp &, const MetaList &, const MetaList &, const std::string &,
                    BackendReqH *&handle, const BackendOptArgs *opt_args) const override {
        if (opt_args && opt_args->hasNotif) return kErrNotSupported;
        return guarded("postXfer", [&] {
            if (!engine_ || !handle) return kErrInvalidParam;
            return status(nd_post_xfer(engine_, static_cast<TransferReq *>(handle)->req));
        });
    }

    Status checkXfer(BackendReqH *handle) const override {
        return guarded("checkXfer", [&] {
            if (!engine_ || !handle) return kErrInvalidParam;
            return status(nd_check_xfer(engine_, static_cast<TransferReq *>(handle)->req));
        });
    }

    Status releaseReqH(BackendReqH *handle) const override {
        return guarded("releaseReqH", [&] {
            if (handle == nullptr) return kSuccess;
            std::unique_ptr<TransferReq> req(static_cast<TransferReq *>(handle));
            if (!engine_) return kErrBackend;
            const Status st = status(nd_release_req(engine_, req->req));
            // An error means DAOS still uses the request's buffers: the request stays alive,
            // and NIXL keeps the handle (releaseXferReq reports NIXL_ERR_REPOST_ACTIVE).
            if (st != kSuccess) req.release();
            return st;
        });
    }

    Status prepMemView(const RemoteMetaList &, void *&, const BackendOptArgs *) const override {
        return kErrNotSupported;
    }
    Status prepMemView(const MetaList &, void *&, const BackendOptArgs *) const override {
        return kErrNotSupported;
    }
    void releaseMemView(void *) const override {}

    // Local-only, no notifications: NIXL calls none of these while supportsRemote() and
    // supportsNotif() are false (createBackend calls getConnInfo only for remote backends).
    Status getPublicData(const BackendMD *, std::string &) const override {
        return kErrNotSupported;
    }
    Status getConnInfo(std::string &) const override { return kErrNotSupported; }
    Status loadRemoteConnInfo(const std::string &, const std::string &) override {
        return kErrNotSupported;
    }
    Status loadRemoteMD(const BlobDesc &, const MemType &, const std::string &,
                        BackendMD *&out) override {
        out = nullptr;
        return kErrNotSupported;
    }
    Status loadLocalMD(BackendMD *in, BackendMD *&out) override {
        out = in;
        return kSuccess;
    }
    Status getNotifs(NotifList &) override { return kErrNotSupported; }
    Status genNotif(const std::string &, const std::string &) const override {
        return kErrNotSupported;
    }

    // Keys are metaInfo, or the decimal devId when metaInfo is empty. Answers: {"size": bytes}
    // for a key that exists, nullopt for one that does not.
    Status queryMem(const BlobList &descs, std::vector<QueryResp> &resp) const override {
        return guarded("queryMem", [&] {
            if (!engine_) return kErrBackend;
            const size_t n = descs.descs.size();
            std::vector<std::string> devid_keys(n); // sized once: the nd_str pointers stay valid
            std::vector<nd_str> keys(n);
            for (size_t i = 0; i < n; ++i) {
                const BlobDesc &d = descs.descs[i];
                if (d.metaInfo.empty()) {
                    devid_keys[i] = std::to_string(d.devId);
                    keys[i] = as_nd_str(devid_keys[i]);
                } else {
                    keys[i] = as_nd_str(d.metaInfo);
                }
            }
            std::vector<int64_t> sizes(n, -1);
            const Status st =
                status(nd_query_mem(engine_, array_ptr(keys), n, array_ptr(sizes)));
            resp.assign(n, std::nullopt);
            if (st != kSuccess) return st;
            for (size_t i = 0; i < n; ++i)
                if (sizes[i] >= 0) resp[i] = Params{{"size", std::to_string(sizes[i])}};
            return st;
        });
    }

    Status estimateXferCost(const XferOp &, const MetaList &, const MetaList &,
                            const std::string &, BackendReqH *const &, std::chrono::microseconds &,
                            std::chrono::microseconds &, CostMethod &,
                            const AgentOptArgs *) const override {
        return kErrNotSupported;
    }

  private:
    nd_engine *engine_ = nullptr;
    // Deregistered OBJ registrations that NIXL's prepped lists may still point to.
    mutable std::mutex tombstones_lock_;
    std::vector<std::unique_ptr<RegistrationMD>> tombstones_;
};

} // namespace

MemList supported_mems() { return MemList{kDram, kObj}; }

EngineBase *create_engine(const InitParams *init) noexcept {
    if (init == nullptr) return nullptr;
    try {
        auto engine = std::make_unique<DaosEngine>(*init);
        engine->open();
        return engine.release();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nixl-daos: create_engine: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "nixl-daos: create_engine: unknown C++ exception\n");
    }
    return nullptr;
}

void destroy_engine(EngineBase *engine) noexcept {
    delete engine; // the destructors do not throw
}

} // namespace nixl_daos::shim
