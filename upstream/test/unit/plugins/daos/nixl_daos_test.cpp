// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// The DAOS plugin through the NIXL agent, as an application uses it: the plugin is found and
// lists its parameters, a bad parameter fails createBackend, KV-cache-shaped transfers (one key
// per block, many layer descriptors per key) are written and read back byte for byte, queryMem
// reports sizes and misses, and a read of a key never written fails instead of returning data.
// Runs on daos-sim unless NIXL_DAOS_LIBDAOS, DAOS_POOL and DAOS_CONT name a real pool.
// Exit status 0 when every check passed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "nixl.h"
#include "daos_test_env.h"

namespace {

int failures = 0;

void
check(bool ok, const std::string &what) {
    std::cout << (ok ? "ok   " : "FAIL ") << what << std::endl;
    if (!ok) {
        ++failures;
    }
}

// Posts a request and waits for its end (30 s at most); returns the final status.
nixl_status_t
runToEnd(nixlAgent &agent, nixlXferReqH *req) {
    nixl_status_t st = agent.postXferReq(req);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (st == NIXL_IN_PROG && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        st = agent.getXferStatus(req);
    }
    return st;
}

nixl_status_t
transfer(nixlAgent &agent,
         const std::string &self,
         nixl_xfer_op_t op,
         const nixl_xfer_dlist_t &local,
         const nixl_xfer_dlist_t &remote,
         nixlBackendH *backend) {
    nixl_opt_args_t args;
    args.backends.push_back(backend);
    nixlXferReqH *req = nullptr;
    nixl_status_t st = agent.createXferReq(op, local, remote, self, req, &args);
    if (st != NIXL_SUCCESS) {
        return st;
    }
    st = runToEnd(agent, req);
    agent.releaseXferReq(req);
    return st;
}

uint8_t
pattern(size_t block, size_t byte) {
    return static_cast<uint8_t>((block * 131 + byte * 7 + 1) & 0xff);
}

} // namespace

int
main() {
    const std::string self = "daos-agent-test";
    const std::string tag = std::to_string(getpid());
    nixlAgent agent(self, nixlAgentConfig(true));

    std::vector<nixl_backend_t> plugins;
    agent.getAvailPlugins(plugins);
    check(std::find(plugins.begin(), plugins.end(), "DAOS") != plugins.end(),
          "the DAOS plugin is available");

    nixl_mem_list_t mems;
    nixl_b_params_t defaults;
    check(agent.getPluginParams("DAOS", mems, defaults) == NIXL_SUCCESS, "getPluginParams(DAOS)");
    check(mems == nixl_mem_list_t{DRAM_SEG, OBJ_SEG}, "memory types DRAM and OBJ");
    check(defaults.count("pool") && defaults.count("container") && defaults.count("fold") &&
              defaults.count("timeout_ms"),
          "parameters pool, container, fold, timeout_ms listed");

    nixlBackendH *bad = nullptr;
    check(agent.createBackend("DAOS", nixl_daos_test::daosParams({{"fold", "maybe"}}), bad) !=
              NIXL_SUCCESS,
          "createBackend with fold=maybe fails");

    nixlBackendH *daos = nullptr;
    if (agent.createBackend("DAOS", nixl_daos_test::daosParams(), daos) != NIXL_SUCCESS) {
        check(false,
              "createBackend(DAOS) on " +
                  nixl_daos_test::envOr("NIXL_DAOS_LIBDAOS", NIXL_DAOS_TEST_SIM));
        return 1;
    }
    check(true, "createBackend(DAOS)");
    nixl_opt_args_t with_daos;
    with_daos.backends.push_back(daos);

    // 6 blocks (keys) x 16 layers x 64 KiB: each block is 16 descriptors into one key.
    constexpr size_t blocks = 6, layers = 16, layer_len = 64 << 10;
    constexpr size_t block_len = layers * layer_len;
    std::vector<uint8_t> host(blocks * block_len);

    nixl_reg_dlist_t dram(DRAM_SEG), obj(OBJ_SEG);
    dram.addDesc(nixlBlobDesc(reinterpret_cast<uintptr_t>(host.data()), host.size(), 0, ""));
    for (size_t b = 0; b < blocks; ++b) {
        obj.addDesc(nixlBlobDesc(0, block_len, b, "daos-agent-" + tag + "-" + std::to_string(b)));
    }
    check(agent.registerMem(dram, &with_daos) == NIXL_SUCCESS, "register DRAM");
    check(agent.registerMem(obj, &with_daos) == NIXL_SUCCESS, "register 6 OBJ keys");

    // Layers of a block live in different places of host memory (layer-major) and are
    // contiguous in the key, as in a paged KV cache.
    nixl_xfer_dlist_t local(DRAM_SEG), remote(OBJ_SEG);
    for (size_t b = 0; b < blocks; ++b) {
        for (size_t l = 0; l < layers; ++l) {
            const uintptr_t addr =
                reinterpret_cast<uintptr_t>(host.data()) + (l * blocks + b) * layer_len;
            local.addDesc(nixlBasicDesc(addr, layer_len, 0));
            remote.addDesc(nixlBasicDesc(l * layer_len, layer_len, b));
        }
    }

    for (size_t b = 0; b < blocks; ++b) {
        for (size_t l = 0; l < layers; ++l) {
            for (size_t i = 0; i < layer_len; ++i) {
                host[(l * blocks + b) * layer_len + i] = pattern(b, l * layer_len + i);
            }
        }
    }

    check(transfer(agent, self, NIXL_WRITE, local, remote, daos) == NIXL_SUCCESS,
          "WRITE 6 blocks x 16 layer descriptors");
    std::fill(host.begin(), host.end(), 0);
    check(transfer(agent, self, NIXL_READ, local, remote, daos) == NIXL_SUCCESS, "READ them back");
    size_t bad_bytes = 0;
    for (size_t b = 0; b < blocks; ++b) {
        for (size_t l = 0; l < layers; ++l) {
            for (size_t i = 0; i < layer_len; ++i) {
                bad_bytes +=
                    host[(l * blocks + b) * layer_len + i] != pattern(b, l * layer_len + i);
            }
        }
    }
    check(bad_bytes == 0, "every byte read back equals what was written");

    nixl_reg_dlist_t query(OBJ_SEG);
    query.addDesc(nixlBlobDesc(nixlBasicDesc(), "daos-agent-" + tag + "-0"));
    query.addDesc(nixlBlobDesc(nixlBasicDesc(), "daos-agent-" + tag + "-never"));
    std::vector<nixl_query_resp_t> resp;
    check(agent.queryMem(query, resp, &with_daos) == NIXL_SUCCESS && resp.size() == 2,
          "queryMem answers per key");
    check(resp.size() == 2 && resp[0] && resp[0]->count("size") &&
              resp[0]->at("size") == std::to_string(block_len),
          "queryMem: a written key reports its size");
    check(resp.size() == 2 && !resp[1], "queryMem: a key never written is absent");

    // A key registered but never written: the read fails and leaves the buffer alone.
    nixl_reg_dlist_t missing(OBJ_SEG);
    missing.addDesc(nixlBlobDesc(0, layer_len, blocks, "daos-agent-" + tag + "-missing"));
    check(agent.registerMem(missing, &with_daos) == NIXL_SUCCESS, "register a key never written");
    std::fill(host.begin(), host.begin() + layer_len, 0x5a);
    nixl_xfer_dlist_t l1(DRAM_SEG), r1(OBJ_SEG);
    l1.addDesc(nixlBasicDesc(reinterpret_cast<uintptr_t>(host.data()), layer_len, 0));
    r1.addDesc(nixlBasicDesc(0, layer_len, blocks));
    const nixl_status_t miss = transfer(agent, self, NIXL_READ, l1, r1, daos);
    check(miss != NIXL_SUCCESS && miss != NIXL_IN_PROG, "READ of a key never written fails");
    check(std::all_of(host.begin(), host.begin() + layer_len, [](uint8_t c) { return c == 0x5a; }),
          "and returns no data");

    check(agent.deregisterMem(missing, &with_daos) == NIXL_SUCCESS, "deregister the missing key");
    check(agent.deregisterMem(obj, &with_daos) == NIXL_SUCCESS, "deregister OBJ");
    check(agent.deregisterMem(dram, &with_daos) == NIXL_SUCCESS, "deregister DRAM");

    std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)" :
                             "all checks passed")
              << std::endl;
    return failures ? 1 : 0;
}
