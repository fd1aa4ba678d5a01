// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
/*
 * The C ABI between the C++ shim (src/shim/) and the Rust engine (src/ffi.rs).
 *
 * The shim owns everything NIXL-shaped (vtables, std:: containers); Rust owns everything
 * DAOS-shaped. Every function returns a NIXL status value (nixl_status_t: 0 success,
 * 1 in progress, negative errors) unless noted, and never unwinds.
 */
#ifndef NIXL_DAOS_ABI_H
#define NIXL_DAOS_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nd_engine nd_engine; /* one DAOS backend instance */
typedef struct nd_md nd_md;         /* one OBJ registration (the key, copied) */
typedef struct nd_req nd_req;       /* one prepared transfer */

typedef struct {
	const char *key;   /* NUL-terminated */
	const char *value; /* NUL-terminated */
} nd_param;

typedef struct {
	const char *ptr; /* not NUL-terminated */
	size_t len;
} nd_str;

typedef struct {
	uint64_t addr;    /* DRAM: address; OBJ: byte offset inside the object */
	uint64_t len;
	uint64_t dev_id;
	const nd_md *md;  /* OBJ: the covering registration; DRAM: NULL */
} nd_desc;

/* Memory types, transfer ops and statuses use NIXL's numbering (nixl_mem_t, nixl_xfer_op_t,
 * nixl_status_t). This header is the one source of these numbers for this project: the Rust
 * side checks its enums against it (src/ffi.rs, test abi_header), the shim's standalone ABI takes
 * its values from it (src/shim/nixl_abi.hpp), and the in-tree build checks it against NIXL's
 * own enums at compile time (in the ABI header that build provides). */
enum { ND_MEM_DRAM = 0, ND_MEM_VRAM = 1, ND_MEM_BLK = 2, ND_MEM_OBJ = 3, ND_MEM_FILE = 4 };
enum { ND_OP_READ = 0, ND_OP_WRITE = 1 };
/* The statuses that cross this ABI (a subset of nixl_status_t). */
enum {
	ND_IN_PROG = 1,
	ND_SUCCESS = 0,
	ND_ERR_NOT_POSTED = -1,
	ND_ERR_INVALID_PARAM = -2,
	ND_ERR_BACKEND = -3,
	ND_ERR_NOT_ALLOWED = -6,
	ND_ERR_REPOST_ACTIVE = -7,
	ND_ERR_NOT_SUPPORTED = -9
};

/* Log lines go to stderr unless the host installs a sink first (before any nd_engine_create):
 * one call per line, level 0 trace, 1 debug, 2 info, 3 warn, 4 error; msg is not NUL-terminated.
 * The sink must be callable from any thread for the life of the process. The first one stays. */
enum { ND_LOG_TRACE = 0, ND_LOG_DEBUG = 1, ND_LOG_INFO = 2, ND_LOG_WARN = 3, ND_LOG_ERROR = 4 };
typedef void (*nd_log_sink)(int level, const char *msg, size_t len);
int nd_set_log_sink(nd_log_sink sink);

/* Plugin level: version string and the backend parameters with their defaults. */
const char *nd_plugin_version(void);
/* Writes up to cap entries (static strings) into out; returns how many exist. */
size_t nd_plugin_params(nd_param *out, size_t cap);

/* On failure *out is NULL and the reason has been logged. */
int nd_engine_create(const nd_param *params, size_t n, nd_engine **out);
/* Bounded in time; afterwards no thread of the engine runs. */
void nd_engine_destroy(nd_engine *engine);

/* DRAM needs no DAOS call (*out = NULL); OBJ copies the key (meta, or decimal dev_id). */
int nd_register(nd_engine *engine, int mem_type, uint64_t addr, uint64_t len, uint64_t dev_id,
		nd_str meta, nd_md **out);
/* Frees the registration; the shim keeps a tombstone for NIXL's prepped lists (see engine.cpp). */
int nd_deregister(nd_engine *engine, nd_md *md);

/* Validates and plans (folds) a transfer; copies keys so the registrations may go. */
int nd_prep_xfer(nd_engine *engine, int op, int local_mem, const nd_desc *local, size_t n_local,
		 int remote_mem, const nd_desc *remote, size_t n_remote, nd_req **out);
/* Submits without waiting; returns 1 (in progress), 0 (done) or an error. */
int nd_post_xfer(nd_engine *engine, nd_req *req);
/* Never blocks. */
int nd_check_xfer(nd_engine *engine, nd_req *req);
/* Frees the request once DAOS holds none of its folds: queued folds are dropped, launched
 * ones are waited for, at most until the request's deadline. Past it, while DAOS still holds
 * some, returns an error and the request stays allocated (the caller keeps it, and the buffers). */
int nd_release_req(nd_engine *engine, nd_req *req);

/* An OBJ key as NIXL gives it. The engine applies the one key rule (as nd_register does): meta,
 * or the decimal dev_id when meta is empty. */
typedef struct {
	nd_str meta;
	uint64_t dev_id;
} nd_key;

/* One answer per key: sizes[i] = object size in bytes, or -1 when the key does not exist. */
int nd_query_mem(nd_engine *engine, const nd_key *keys, size_t n, int64_t *sizes);

/* Removes the keys' values (every chunk). Not called by NIXL (its API has no removal): for tools
 * that load the plugin themselves, such as `nixl-daos doctor`. A key without a value is skipped. */
int nd_remove_keys(nd_engine *engine, const nd_key *keys, size_t n);

/* 1 when VRAM is supported (a usable CUDA driver was found), else 0. engine NULL: the plugin's
 * answer (loads the driver and calls cuInit, which makes no context). */
int nd_supports_vram(nd_engine *engine);

#ifdef __cplusplus
}
#endif

#endif
