// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// The DAOS engine as NIXL sees it: a nixlBackendEngine whose every call is forwarded to the Rust
// engine through include/nixl_daos.h.
//
// The same sources build against either of two declarations of NIXL's ABI, both giving the same
// names in nixl_daos::abi, so nothing below knows which one it got:
//  - by default (build.rs, for the wheels), our own declarations in nixl_abi.hpp, beside this file;
//  - a build that compiles against NIXL's real headers (NIXL's own meson build, in its tree)
//    defines NIXL_DAOS_ABI_HEADER to the header, on its own include path, that binds these names
//    to NIXL's types. This directory knows nothing of that build: it only reads the macro.
#ifndef NIXL_DAOS_SHIM_ENGINE_HPP
#define NIXL_DAOS_SHIM_ENGINE_HPP

#ifdef NIXL_DAOS_ABI_HEADER
#include NIXL_DAOS_ABI_HEADER
#else
#include "nixl_abi.hpp"
#endif

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct nd_engine;

namespace nixl_daos::shim {

// One DAOS backend instance. Constructed the way NIXL's plugin creator constructs engines (from
// the init params); a Rust engine that fails to open leaves initErr set, and NIXL then reports
// the error and destroys the engine.
class nixlDaosEngine final : public abi::EngineBase {
public:
    explicit nixlDaosEngine(const abi::InitParams *init);
    ~nixlDaosEngine() override;

    bool
    supportsRemote() const override {
        return false;
    }

    bool
    supportsLocal() const override {
        return true;
    }

    bool
    supportsNotif() const override {
        return false;
    }

    abi::MemList
    getSupportedMems() const override;

    abi::Status
    registerMem(const abi::BlobDesc &mem,
                const abi::MemType &mem_type,
                abi::BackendMD *&out) override;
    abi::Status
    deregisterMem(abi::BackendMD *md) override;
    abi::Status
    connect(const std::string &) override;
    abi::Status
    disconnect(const std::string &) override;
    abi::Status
    unloadMD(abi::BackendMD *) override;

    abi::Status
    prepXfer(const abi::XferOp &op,
             const abi::MetaList &local,
             const abi::MetaList &remote,
             const std::string &remote_agent,
             abi::BackendReqH *&handle,
             const abi::BackendOptArgs *opt_args) const override;
    abi::Status
    postXfer(const abi::XferOp &op,
             const abi::MetaList &local,
             const abi::MetaList &remote,
             const std::string &remote_agent,
             abi::BackendReqH *&handle,
             const abi::BackendOptArgs *opt_args) const override;
    abi::Status
    checkXfer(abi::BackendReqH *handle) const override;
    abi::Status
    releaseReqH(abi::BackendReqH *handle) const override;

    abi::Status
    prepMemView(const abi::RemoteMetaList &,
                abi::MemView &,
                const abi::BackendOptArgs *) const override;
    abi::Status
    prepMemView(const abi::MetaList &, abi::MemView &, const abi::BackendOptArgs *) const override;
    void releaseMemView(abi::MemView) const override;

    abi::Status
    getPublicData(const abi::BackendMD *, std::string &) const override;
    abi::Status
    getConnInfo(std::string &) const override;
    abi::Status
    loadRemoteConnInfo(const std::string &, const std::string &) override;
    abi::Status
    loadRemoteMD(const abi::BlobDesc &,
                 const abi::MemType &,
                 const std::string &,
                 abi::BackendMD *&out) override;
    abi::Status
    loadLocalMD(abi::BackendMD *in, abi::BackendMD *&out) override;
    abi::Status
    getNotifs(abi::NotifList &) override;
    abi::Status
    genNotif(const std::string &, const std::string &) const override;

    abi::Status
    queryMem(const abi::BlobList &descs, std::vector<abi::QueryResp> &resp) const override;

    abi::Status
    estimateXferCost(const abi::XferOp &,
                     const abi::MetaList &,
                     const abi::MetaList &,
                     const std::string &,
                     abi::BackendReqH *const &,
                     std::chrono::microseconds &,
                     std::chrono::microseconds &,
                     abi::CostMethod &,
                     const abi::AgentOptArgs *) const override;

private:
    nd_engine *engine_ = nullptr;
    // Deregistered OBJ registrations that NIXL's prepped lists may still point to.
    mutable std::mutex tombstonesLock_;
    std::vector<std::unique_ptr<abi::BackendMD>> tombstones_;
};

// The memory types the engine (NULL: any engine of this plugin) registers and transfers:
// VRAM too where a usable CUDA driver was found.
abi::MemList
supportedMems(nd_engine *engine);

// The backend parameters and their defaults, as the Rust engine lists them.
abi::Params
backendOptions() noexcept;

// The plugin version (the Rust crate's).
const char *
pluginVersion() noexcept;

} // namespace nixl_daos::shim

#endif
