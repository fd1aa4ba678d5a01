// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// Our own declarations of the part of NIXL's backend-plugin ABI (nixl-cu12 1.5.x) that the shim
// touches. Nothing here is NIXL's text: the names are ours, and only the things that cross the
// boundary are meant to match NIXL's: the object layouts (sizes and offsets, asserted below), the
// order of the virtual functions (dispatch is by slot, not by name) and the std:: types passed by
// reference or returned by value. Facts: shared/reference/NIXL_FACTS.md sections 1 and 2.
//
// Assumes x86-64 and libstdc++ with the C++11 string ABI, like the wheel. NIXL's descriptor lists
// are never constructed here (that would need libnixl's out-of-line members); they are only read
// through const references.
#ifndef NIXL_DAOS_SHIM_NIXL_ABI_HPP
#define NIXL_DAOS_SHIM_NIXL_ABI_HPP

#include "nixl_daos.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nixl_daos::abi {

// nixl_status_t: an int-sized enum. Only the values the shim itself produces; Rust's statuses pass
// through as they are. The numbers come from include/nixl_daos.h (the one source).
enum Status : int {
    kInProg = ND_IN_PROG,
    kSuccess = ND_SUCCESS,
    kErrInvalidParam = ND_ERR_INVALID_PARAM,
    kErrBackend = ND_ERR_BACKEND,
    kErrNotSupported = ND_ERR_NOT_SUPPORTED,
};

// nixl_mem_t and nixl_xfer_op_t: int-sized enums, numbered by include/nixl_daos.h.
enum MemType : int {
    kDram = ND_MEM_DRAM,
    kVram = ND_MEM_VRAM,
    kBlk = ND_MEM_BLK,
    kObj = ND_MEM_OBJ,
    kFile = ND_MEM_FILE,
};

enum XferOp : int { kRead = ND_OP_READ, kWrite = ND_OP_WRITE };
enum class CostMethod : int {}; // nixl_cost_t: only ever passed by reference

using Params = std::unordered_map<std::string, std::string>; // nixl_b_params_t
using MemList = std::vector<MemType>; // nixl_mem_list_t
using QueryResp = std::optional<Params>; // nixl_query_resp_t
using NotifList = std::vector<std::pair<std::string, std::string>>;
using MemView = void *; // nixlMemViewH

// Backend-private metadata of one registration: vptr + a flag.
class BackendMD {
public:
    explicit BackendMD(bool is_private) : isPrivate_(is_private) {}

    virtual ~BackendMD() = default;
    BackendMD(const BackendMD &) = delete;
    BackendMD &
    operator=(const BackendMD &) = delete;

protected:
    bool isPrivate_;
};

// Backend-private request handle: vptr only.
class BackendReqH {
public:
    BackendReqH() = default;
    virtual ~BackendReqH() = default;
    BackendReqH(const BackendReqH &) = delete;
    BackendReqH &
    operator=(const BackendReqH &) = delete;
};

// Descriptors (no vptr).
struct BasicDesc {
    uintptr_t addr;
    size_t len;
    uint64_t devId;
};

struct BlobDesc : BasicDesc {
    std::string metaInfo;
};

struct MetaDesc : BasicDesc {
    BackendMD *metadataP;
};

struct RemoteMetaDesc : MetaDesc {
    std::string remoteAgent;
};

// A descriptor list as NIXL lays it out. Read-only view: never built, copied or destroyed here.
template<class Desc> struct DescList {
    const void *opaqueVptr_; // NIXL's vtable; never used
    MemType type;
    std::vector<Desc> descs;

    // The accessors NIXL's descriptor list has (same names), so engine.cpp reads both the same way.
    MemType
    getType() const {
        return type;
    }

    int
    descCount() const {
        return static_cast<int>(descs.size());
    }

    const Desc &
    operator[](size_t i) const {
        return descs[i];
    }

    DescList() = delete;
    DescList(const DescList &) = delete;
    DescList &
    operator=(const DescList &) = delete;
    ~DescList() = delete;
};

using MetaList = DescList<MetaDesc>;
using BlobList = DescList<BlobDesc>;
using RemoteMetaList = DescList<RemoteMetaDesc>;

// nixl_opt_b_args_t
struct BackendOptArgs {
    std::string notifMsg;
    bool hasNotif;
    std::string customParam;
};

struct AgentOptArgs; // nixl_opt_args_t: only ever passed by pointer

// nixlBackendInitParams
struct InitParams {
    std::string localAgent;
    std::string type;
    Params *customParams;
    bool enableProgTh;
    uint64_t pthrDelay;
    int syncMode;
    bool enableTelemetry;
};

// One element of the engine's telemetry queue (never filled by us; 16 B like 1.5.x's).
struct TelemetryEvent {
    uint32_t kind;
    uint64_t value;
};

// nixlBackendEngine. The data members are those the base class has, in its order, because NIXL
// reads some of them inline (initErr, the type, the custom params, the telemetry queue under its
// mutex). The virtual functions are declared in NIXL's slot order; keep it so.
class EngineBase {
public:
    // What NIXL's inline base constructor does: copy type, custom params, local agent name and
    // the telemetry flag. Takes a pointer, as NIXL's does.
    explicit EngineBase(const InitParams *init)
        : backendType(init->type),
          customParams(init->customParams ? *init->customParams : Params{}),
          localAgent(init->localAgent),
          enableTelemetry(init->enableTelemetry) {}

    EngineBase(const EngineBase &) = delete;
    EngineBase &
    operator=(const EngineBase &) = delete;

    virtual ~EngineBase() = default; // slots 0 (complete) and 1 (deleting)

    // Non-virtual accessors with NIXL's names (no slot, no layout change).
    bool
    getInitErr() const noexcept {
        return initErr;
    }

    const Params &
    getCustomParams() const noexcept {
        return customParams;
    }

    virtual bool
    supportsRemote() const = 0; // 2
    virtual bool
    supportsLocal() const = 0; // 3
    virtual bool
    supportsNotif() const = 0; // 4
    virtual MemList
    getSupportedMems() const = 0; // 5
    virtual Status
    registerMem(const BlobDesc &mem,
                const MemType &mem_type,
                BackendMD *&out) = 0; // 6
    virtual Status
    deregisterMem(BackendMD *md) = 0; // 7
    virtual Status
    connect(const std::string &remote_agent) = 0; // 8
    virtual Status
    disconnect(const std::string &remote_agent) = 0; // 9
    virtual Status
    unloadMD(BackendMD *md) = 0; // 10
    virtual Status
    prepXfer(const XferOp &op,
             const MetaList &local,
             const MetaList &remote,
             const std::string &remote_agent,
             BackendReqH *&handle,
             const BackendOptArgs *opt_args) const = 0; // 11
    virtual Status
    postXfer(const XferOp &op,
             const MetaList &local,
             const MetaList &remote,
             const std::string &remote_agent,
             BackendReqH *&handle,
             const BackendOptArgs *opt_args) const = 0; // 12
    virtual Status
    checkXfer(BackendReqH *handle) const = 0; // 13
    virtual Status
    releaseReqH(BackendReqH *handle) const = 0; // 14
    virtual Status
    prepMemView(const RemoteMetaList &descs,
                MemView &view,
                const BackendOptArgs *opt_args) const = 0; // 15
    virtual Status
    prepMemView(const MetaList &descs,
                MemView &view,
                const BackendOptArgs *opt_args) const = 0; // 16
    virtual void
    releaseMemView(MemView view) const = 0; // 17
    virtual Status
    getPublicData(const BackendMD *md, std::string &out) const = 0; // 18
    virtual Status
    getConnInfo(std::string &out) const = 0; // 19
    virtual Status
    loadRemoteConnInfo(const std::string &remote_agent,
                       const std::string &conn_info) = 0; // 20
    virtual Status
    loadRemoteMD(const BlobDesc &in,
                 const MemType &mem_type,
                 const std::string &remote_agent,
                 BackendMD *&out) = 0; // 21
    virtual Status
    loadLocalMD(BackendMD *in, BackendMD *&out) = 0; // 22
    virtual Status
    getNotifs(NotifList &notifs) = 0; // 23
    virtual Status
    genNotif(const std::string &remote_agent, const std::string &msg) const = 0; // 24
    virtual Status
    queryMem(const BlobList &descs, std::vector<QueryResp> &resp) const = 0; // 25
    virtual Status
    estimateXferCost(const XferOp &op,
                     const MetaList &local,
                     const MetaList &remote,
                     const std::string &remote_agent,
                     BackendReqH *const &handle,
                     std::chrono::microseconds &duration,
                     std::chrono::microseconds &err_margin,
                     CostMethod &method,
                     const AgentOptArgs *opt_args) const = 0; // 26

    // Layout mirror; public only so the layout can be asserted.
    std::string backendType;
    Params customParams;
    std::vector<TelemetryEvent> telemetryEvents;
    std::mutex telemetryMutex;
    bool initErr = false;
    const std::string localAgent;
    const bool enableTelemetry;
};

// nixlBackendPlugin: the table nixl_plugin_init returns.
struct PluginTable {
    int api_version;
    EngineBase *(*create_engine)(const InitParams *init);
    void (*destroy_engine)(EngineBase *engine);
    const char *(*get_plugin_name)();
    const char *(*get_plugin_version)();
    Params (*get_backend_options)();
    MemList (*get_backend_mems)();
};

// The standalone plugin leaves the Rust engine's log lines on stderr (the wheels' NIXL logs there
// too); the in-tree build routes them through NIXL's logger instead.
inline void
installLogSink() noexcept {}

// Where the shim's own errors go (the in-tree build logs through NIXL's macros instead).
inline void
logError(const char *where, const char *what) noexcept {
    std::fprintf(stderr, "nixl-daos: %s: %s\n", where, what);
}

// ---- Layout checks against NIXL 1.5.x (NIXL_FACTS.md section 2) ----
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(sizeof(void *) == 8, "x86-64 / LP64 only");
static_assert(sizeof(std::string) == 32, "needs libstdc++'s C++11 string ABI");
static_assert(sizeof(Params) == 56 && sizeof(std::mutex) == 40);
static_assert(sizeof(MemType) == 4 && sizeof(XferOp) == 4 && sizeof(Status) == 4);

static_assert(sizeof(EngineBase) == 0xd0);
static_assert(offsetof(EngineBase, backendType) == 0x08);
static_assert(offsetof(EngineBase, customParams) == 0x28);
static_assert(offsetof(EngineBase, telemetryEvents) == 0x60);
static_assert(sizeof(TelemetryEvent) == 16);
static_assert(offsetof(EngineBase, telemetryMutex) == 0x78);
static_assert(offsetof(EngineBase, initErr) == 0xa0);
static_assert(offsetof(EngineBase, localAgent) == 0xa8);
static_assert(offsetof(EngineBase, enableTelemetry) == 0xc8);

static_assert(sizeof(InitParams) == 0x60);
static_assert(offsetof(InitParams, localAgent) == 0x00);
static_assert(offsetof(InitParams, type) == 0x20);
static_assert(offsetof(InitParams, customParams) == 0x40);
static_assert(offsetof(InitParams, enableProgTh) == 0x48);
static_assert(offsetof(InitParams, pthrDelay) == 0x50);
static_assert(offsetof(InitParams, syncMode) == 0x58);
static_assert(offsetof(InitParams, enableTelemetry) == 0x5c);

static_assert(sizeof(BasicDesc) == 24);
static_assert(offsetof(BasicDesc, addr) == 0 && offsetof(BasicDesc, len) == 8 &&
              offsetof(BasicDesc, devId) == 16);
static_assert(sizeof(BlobDesc) == 56 && offsetof(BlobDesc, metaInfo) == 24);
static_assert(sizeof(MetaDesc) == 32 && offsetof(MetaDesc, metadataP) == 24);
static_assert(sizeof(RemoteMetaDesc) == 64 && offsetof(RemoteMetaDesc, remoteAgent) == 32);

static_assert(sizeof(MetaList) == 40 && sizeof(BlobList) == 40);
static_assert(offsetof(MetaList, type) == 8 && offsetof(MetaList, descs) == 0x10);
static_assert(offsetof(BlobList, type) == 8 && offsetof(BlobList, descs) == 0x10);

static_assert(sizeof(BackendOptArgs) == 72);
static_assert(offsetof(BackendOptArgs, hasNotif) == 0x20);
static_assert(offsetof(BackendOptArgs, customParam) == 0x28);

static_assert(sizeof(BackendMD) == 16 && sizeof(BackendReqH) == 8);

static_assert(sizeof(PluginTable) == 56);
static_assert(offsetof(PluginTable, create_engine) == 0x08);
static_assert(offsetof(PluginTable, destroy_engine) == 0x10);
static_assert(offsetof(PluginTable, get_plugin_name) == 0x18);
static_assert(offsetof(PluginTable, get_plugin_version) == 0x20);
static_assert(offsetof(PluginTable, get_backend_options) == 0x28);
static_assert(offsetof(PluginTable, get_backend_mems) == 0x30);
#pragma GCC diagnostic pop

} // namespace nixl_daos::abi

#endif
