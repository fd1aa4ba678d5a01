// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
/*
 * daos-sim control and inspection API: what a real cluster cannot give and tests and
 * benchmarks need. Exported from libdaos_sim.so beside the libdaos API.
 */
#ifndef DAOS_SIM_CONTROL_H
#define DAOS_SIM_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Commands: "hang", "resume", "fail <der> <n>", "latency <us>", "bandwidth <gbps>",
 * "rpc_cost <us>", "reset_stats", "reset_data", "deny connect|open|off" (refuse pool connects
 * or container opens with -DER_NO_PERM). Returns 0, or -DER_INVAL for an unknown or malformed
 * command.
 */
int daos_sim_control(const char *cmd);

/* The ACL container cont of pool pool was created with (else DAOS's default), one entry a line;
 * NULL when there is no such container. Valid until the calling thread's next call. */
const char *daos_sim_cont_acl(const char *pool, const char *cont);

/* JSON object of counters; the string stays valid until the next call from the same thread. */
const char *daos_sim_stats(void);

#ifdef __cplusplus
}
#endif

#endif
