// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// The DAOS engine on NIXL's generic engine harness (transfer_handler.h: register, prepare, post,
// poll, read back and verify, DRAM to OBJ), plus what is particular to DAOS: queryMem sizes,
// reads of keys never written, parameter errors at creation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common.h"
#include "daos_test_env.h"
#include "engine.hpp"
#include "plugins_common.h"
#include "transfer_handler.h"

namespace gtest::plugins::daos {

using nixl_daos::shim::nixlDaosEngine;
using nixl_daos_test::daosParams;

const std::string agent_name = "DaosAgent";

nixl_b_params_t fold_params = daosParams({{"fold", "true"}});
nixl_b_params_t nofold_params = daosParams({{"fold", "false"}});

nixlBackendInitParams
initParams(nixl_b_params_t *params) {
    nixlBackendInitParams init;
    init.localAgent = agent_name;
    init.type = "DAOS";
    init.customParams = params;
    init.syncMode = nixl_thread_sync_t::NIXL_THREAD_SYNC_RW;
    return init;
}

// One engine per test, built as NIXL's plugin creator builds it.
class daosEngineFixture : public setupBackendTestFixture {
protected:
    nixl_b_params_t params_;

    daosEngineFixture() {
        params_ = *GetParam().customParams;
        localBackendEngine_ = makeEngine(&params_);
    }

    static std::shared_ptr<nixlBackendEngine>
    makeEngine(nixl_b_params_t *params) {
        const nixlBackendInitParams init = initParams(params);
        return std::make_shared<nixlDaosEngine>(&init);
    }

    // Posts a prepared request and polls it to the end (or 30 s).
    nixl_status_t
    runToEnd(nixl_xfer_op_t op, nixl_meta_dlist_t &local, nixl_meta_dlist_t &remote) {
        nixlBackendReqH *handle = nullptr;
        nixl_status_t st =
            localBackendEngine_->prepXfer(op, local, remote, agent_name, handle, nullptr);
        if (st != NIXL_SUCCESS) {
            return st;
        }
        st = localBackendEngine_->postXfer(op, local, remote, agent_name, handle, nullptr);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (st == NIXL_IN_PROG && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            st = localBackendEngine_->checkXfer(handle);
        }
        EXPECT_EQ(localBackendEngine_->releaseReqH(handle), NIXL_SUCCESS);
        return st;
    }
};

TEST_P(daosEngineFixture, LocalOnlyDramAndObj) {
    EXPECT_TRUE(localBackendEngine_->supportsLocal());
    EXPECT_FALSE(localBackendEngine_->supportsRemote());
    EXPECT_FALSE(localBackendEngine_->supportsNotif());
    EXPECT_EQ(localBackendEngine_->getSupportedMems(), (nixl_mem_list_t{DRAM_SEG, OBJ_SEG}));
}

TEST_P(daosEngineFixture, XferTest) {
    transferHandler<DRAM_SEG, OBJ_SEG> transfer(
        localBackendEngine_, localBackendEngine_, agent_name, agent_name, false, 1);
    transfer.setLocalMem();
    transfer.testTransfer(NIXL_WRITE);
    transfer.resetLocalMem();
    transfer.testTransfer(NIXL_READ);
    transfer.checkLocalMem();
}

TEST_P(daosEngineFixture, XferMultiBufsTest) {
    transferHandler<DRAM_SEG, OBJ_SEG> transfer(
        localBackendEngine_, localBackendEngine_, agent_name, agent_name, false, 3);
    transfer.setLocalMem();
    transfer.testTransfer(NIXL_WRITE);
    transfer.resetLocalMem();
    transfer.testTransfer(NIXL_READ);
    transfer.checkLocalMem();
}

TEST_P(daosEngineFixture, XferLargeBufsTest) {
    // 3 x 8 MiB: several DAOS extents per key, more than one event queue busy.
    transferHandler<DRAM_SEG, OBJ_SEG> transfer(
        localBackendEngine_, localBackendEngine_, agent_name, agent_name, false, 3, 8 << 20);
    transfer.setLocalMem();
    transfer.testTransfer(NIXL_WRITE);
    transfer.resetLocalMem();
    transfer.testTransfer(NIXL_READ);
    transfer.checkLocalMem();
}

TEST_P(daosEngineFixture, QueryMemReportsSizes) {
    // A key's size is the end of its highest written byte, and the harness's keys are shared by
    // the whole suite (and kept by a real pool between runs): this test writes the longest
    // extent of all, so the size it reads back is exactly its own.
    constexpr size_t len = 12 << 20;
    transferHandler<DRAM_SEG, OBJ_SEG> transfer(
        localBackendEngine_, localBackendEngine_, agent_name, agent_name, false, 2, len);
    transfer.setLocalMem();
    transfer.testTransfer(NIXL_WRITE);

    nixl_reg_dlist_t descs(OBJ_SEG);
    descs.addDesc(nixlBlobDesc(nixlBasicDesc(), "test-obj-key-0"));
    descs.addDesc(nixlBlobDesc(nixlBasicDesc(), "test-obj-key-1"));
    descs.addDesc(nixlBlobDesc(nixlBasicDesc(), "daos-gtest-never-written"));
    std::vector<nixl_query_resp_t> resp;
    ASSERT_EQ(localBackendEngine_->queryMem(descs, resp), NIXL_SUCCESS);
    ASSERT_EQ(resp.size(), 3u);
    ASSERT_TRUE(resp[0].has_value());
    ASSERT_TRUE(resp[1].has_value());
    EXPECT_EQ(resp[0]->at("size"), std::to_string(len));
    EXPECT_EQ(resp[1]->at("size"), std::to_string(len));
    EXPECT_FALSE(resp[2].has_value());
}

TEST_P(daosEngineFixture, ReadOfMissingKeyFails) {
    std::vector<char> buf(4096, 0x5a);
    nixlBackendMD *dram_md = nullptr, *obj_md = nullptr;
    nixlBlobDesc dram(reinterpret_cast<uintptr_t>(buf.data()), buf.size(), 0);
    nixlBlobDesc obj(nixlBasicDesc(0, buf.size(), 0),
                     "daos-gtest-missing-" + std::to_string(getpid()));
    ASSERT_EQ(localBackendEngine_->registerMem(dram, DRAM_SEG, dram_md), NIXL_SUCCESS);
    ASSERT_EQ(localBackendEngine_->registerMem(obj, OBJ_SEG, obj_md), NIXL_SUCCESS);

    nixl_meta_dlist_t local(DRAM_SEG), remote(OBJ_SEG);
    nixlMetaDesc l, r;
    l.addr = dram.addr;
    l.len = buf.size();
    l.devId = 0;
    l.metadataP = dram_md;
    r.addr = 0;
    r.len = buf.size();
    r.devId = 0;
    r.metadataP = obj_md;
    local.addDesc(l);
    remote.addDesc(r);

    const gtest::LogIgnoreGuard missing_logged("does not exist in DAOS");
    EXPECT_EQ(runToEnd(NIXL_READ, local, remote), NIXL_ERR_BACKEND);
    EXPECT_GE(missing_logged.getIgnoredCount(), 1u); // and the log names the key
    // Nothing unwritten came back as data.
    EXPECT_EQ(std::vector<char>(buf.size(), 0x5a), buf);

    EXPECT_EQ(localBackendEngine_->deregisterMem(obj_md), NIXL_SUCCESS);
    EXPECT_EQ(localBackendEngine_->deregisterMem(dram_md), NIXL_SUCCESS);
}

TEST_P(daosEngineFixture, BadParameterFailsCreation) {
    // Each failure is logged through NIXL's logger, naming the value and what would fix it.
    const gtest::LogIgnoreGuard bad_logged("fold=\"maybe\" is invalid");
    nixl_b_params_t bad = daosParams({{"fold", "maybe"}});
    EXPECT_TRUE(makeEngine(&bad)->getInitErr());
    EXPECT_EQ(bad_logged.getIgnoredCount(), 1u);

    const gtest::LogIgnoreGuard no_lib_logged(
        "cannot load libdaos from \"/nonexistent/libdaos.so.2\"");
    nixl_b_params_t no_lib = daosParams({{"daos_lib", "/nonexistent/libdaos.so.2"}});
    EXPECT_TRUE(makeEngine(&no_lib)->getInitErr());
    EXPECT_EQ(no_lib_logged.getIgnoredCount(), 1u);
}

TEST_P(daosEngineFixture, VramIsRefused) {
    const gtest::LogIgnoreGuard vram_logged("does not register VRAM");
    nixlBlobDesc vram(0x1000, 4096, 0);
    nixlBackendMD *md = nullptr;
    EXPECT_NE(localBackendEngine_->registerMem(vram, VRAM_SEG, md), NIXL_SUCCESS);
    EXPECT_EQ(md, nullptr);
}

// Folding on (the default) and off: the same transfers, the same bytes.
INSTANTIATE_TEST_SUITE_P(DaosFolding,
                         daosEngineFixture,
                         testing::Values(initParams(&fold_params), initParams(&nofold_params)),
                         [](const testing::TestParamInfo<nixlBackendInitParams> &info) {
                             return info.param.customParams->at("fold") == "true" ?
                                 std::string("fold") :
                                 std::string("nofold");
                         });

} // namespace gtest::plugins::daos
