// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// The names the DAOS engine shim (rust/src/shim/engine.cpp) uses, bound to NIXL's real backend
// headers. The standalone build binds the same names to its own ABI declarations
// (rust/src/shim/nixl_abi.hpp); inside NIXL's tree the compiler checks them against NIXL itself.
// meson.build selects this header for the shim with -DNIXL_DAOS_ABI_HEADER="nixl_abi_intree.hpp".
#ifndef NIXL_SRC_PLUGINS_DAOS_NIXL_ABI_INTREE_HPP
#define NIXL_SRC_PLUGINS_DAOS_NIXL_ABI_INTREE_HPP

#include "backend/backend_plugin.h"
#include "common/nixl_log.h"
#include "nixl_daos.h"

#include <string_view>

namespace nixl_daos::abi {

// include/nixl_daos.h numbers memory types, ops and statuses as NIXL does: checked here against
// NIXL's own enums, so a renumbering on either side fails this build.
static_assert(static_cast<int>(DRAM_SEG) == ND_MEM_DRAM && static_cast<int>(VRAM_SEG) == ND_MEM_VRAM &&
                  static_cast<int>(BLK_SEG) == ND_MEM_BLK && static_cast<int>(OBJ_SEG) == ND_MEM_OBJ &&
                  static_cast<int>(FILE_SEG) == ND_MEM_FILE,
              "nixl_daos.h's ND_MEM_* differ from nixl_mem_t");
static_assert(static_cast<int>(NIXL_READ) == ND_OP_READ && static_cast<int>(NIXL_WRITE) == ND_OP_WRITE,
              "nixl_daos.h's ND_OP_* differ from nixl_xfer_op_t");
static_assert(static_cast<int>(NIXL_IN_PROG) == ND_IN_PROG && static_cast<int>(NIXL_SUCCESS) == ND_SUCCESS &&
                  static_cast<int>(NIXL_ERR_NOT_POSTED) == ND_ERR_NOT_POSTED &&
                  static_cast<int>(NIXL_ERR_INVALID_PARAM) == ND_ERR_INVALID_PARAM &&
                  static_cast<int>(NIXL_ERR_BACKEND) == ND_ERR_BACKEND &&
                  static_cast<int>(NIXL_ERR_NOT_ALLOWED) == ND_ERR_NOT_ALLOWED &&
                  static_cast<int>(NIXL_ERR_REPOST_ACTIVE) == ND_ERR_REPOST_ACTIVE &&
                  static_cast<int>(NIXL_ERR_NOT_SUPPORTED) == ND_ERR_NOT_SUPPORTED,
              "nixl_daos.h's ND_* statuses differ from nixl_status_t");

using Status = nixl_status_t;
inline constexpr Status kInProg = NIXL_IN_PROG;
inline constexpr Status kSuccess = NIXL_SUCCESS;
inline constexpr Status kErrInvalidParam = NIXL_ERR_INVALID_PARAM;
inline constexpr Status kErrBackend = NIXL_ERR_BACKEND;
inline constexpr Status kErrNotSupported = NIXL_ERR_NOT_SUPPORTED;

using MemType = nixl_mem_t;
inline constexpr MemType kDram = DRAM_SEG;
inline constexpr MemType kObj = OBJ_SEG;
inline constexpr MemType kVram = VRAM_SEG;
using XferOp = nixl_xfer_op_t;
using CostMethod = nixl_cost_t;

using Params = nixl_b_params_t;
using MemList = nixl_mem_list_t;
using QueryResp = nixl_query_resp_t;
using NotifList = notif_list_t;
using MemView = nixlMemViewH;

using BackendMD = nixlBackendMD;
using BackendReqH = nixlBackendReqH;
using BlobDesc = nixlBlobDesc;
using MetaDesc = nixlMetaDesc;
using MetaList = nixl_meta_dlist_t;
using BlobList = nixl_reg_dlist_t;
using RemoteMetaList = nixl_remote_meta_dlist_t;
using BackendOptArgs = nixl_opt_b_args_t;
using AgentOptArgs = nixl_opt_args_t;
using InitParams = nixlBackendInitParams;
using EngineBase = nixlBackendEngine;

// The Rust engine's log lines, through NIXL's macros (so NIXL's format, sinks and level apply).
extern "C" inline void
forwardEngineLog(int level, const char *msg, size_t len) {
    const std::string_view line(msg, len);
    switch (level) {
    case ND_LOG_ERROR:
        NIXL_ERROR << line;
        break;
    case ND_LOG_WARN:
        NIXL_WARN << line;
        break;
    case ND_LOG_INFO:
        NIXL_INFO << line;
        break;
    case ND_LOG_DEBUG:
        NIXL_DEBUG << line;
        break;
    default:
        NIXL_TRACE << line;
        break;
    }
}

inline void
installLogSink() noexcept {
    nd_set_log_sink(&forwardEngineLog);
}

inline void
logError(const char *where, const char *what) noexcept {
    NIXL_ERROR << "DAOS backend: " << where << ": " << what;
}

} // namespace nixl_daos::abi

#endif
