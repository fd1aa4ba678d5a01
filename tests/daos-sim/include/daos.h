// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
/*
 * daos-sim: our own declaration of the part of the libdaos client API (DAOS 2.6+, x86-64)
 * that nixl-daos binds to. Names, types, values and layouts follow the real headers so that
 * code written against this file compiles unchanged against a real DAOS install; the layout
 * tests in tests/daos-sim assert the sizes and offsets.
 */
#ifndef DAOS_SIM_DAOS_H
#define DAOS_SIM_DAOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daos_errno.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef _UUID_UUID_H
typedef unsigned char uuid_t[16];
#endif

typedef uint64_t daos_size_t;
typedef uint64_t daos_off_t;

/* Opaque handle; cookie 0 is the invalid handle. */
typedef struct {
	uint64_t cookie;
} daos_handle_t;

#define DAOS_HDL_INVAL ((daos_handle_t){0})
#define DAOS_TX_NONE   DAOS_HDL_INVAL

typedef struct {
	void  *iov_buf;     /* buffer address */
	size_t iov_buf_len; /* buffer capacity */
	size_t iov_len;     /* bytes of data in the buffer */
} d_iov_t;

typedef d_iov_t daos_key_t;

typedef struct {
	uint32_t sg_nr;     /* number of iovs */
	uint32_t sg_nr_out; /* number of iovs holding data after a fetch */
	d_iov_t *sg_iovs;
} d_sg_list_t;

typedef struct {
	uint64_t lo; /* low 64 bits, owned by the user */
	uint64_t hi; /* high 64 bits; [63:32] carry type, redundancy and group count */
} daos_obj_id_t;

typedef struct {
	uint64_t rx_idx; /* first record */
	uint64_t rx_nr;  /* number of records */
} daos_recx_t;

typedef enum {
	DAOS_IOD_NONE   = 0,
	DAOS_IOD_SINGLE = 1,
	DAOS_IOD_ARRAY  = 2,
} daos_iod_type_t;

#define DAOS_REC_ANY 0

typedef struct {
	daos_key_t      iod_name;  /* akey */
	daos_iod_type_t iod_type;
	daos_size_t     iod_size;  /* record size; written back by fetch */
	uint64_t        iod_flags;
	uint32_t        iod_nr;    /* number of recxs */
	daos_recx_t    *iod_recxs;
} daos_iod_t;

typedef enum {
	DAOS_IOM_NONE = 0,
} daos_iom_type_t;

typedef struct {
	daos_iod_type_t iom_type;
	uint32_t        iom_nr;
	uint32_t        iom_nr_out;
	uint32_t        iom_flags;
	daos_size_t     iom_size;
	daos_recx_t     iom_recx_lo;
	daos_recx_t     iom_recx_hi;
	daos_recx_t    *iom_recxs;
} daos_iom_t;

/* Completion event. ev_private is the library's own state. */
typedef struct daos_event {
	int ev_error;
	struct {
		uint64_t space[20];
	} ev_private;
	uint64_t ev_debug;
} daos_event_t;

/* Pool information, laid out as in DAOS 2.8's daos_pool.h (192 bytes). daos_pool_query fills
 * pi_space when pi_bits has DPI_SPACE; the rebuild status is not modelled. */
#define DAOS_MEDIA_SCM	0
#define DAOS_MEDIA_NVME	1
#define DAOS_MEDIA_MAX	2

struct daos_space {
	uint64_t s_total[DAOS_MEDIA_MAX];
	uint64_t s_free[DAOS_MEDIA_MAX];
};

struct daos_pool_space {
	struct daos_space ps_space;
	uint64_t ps_free_min[DAOS_MEDIA_MAX];
	uint64_t ps_free_max[DAOS_MEDIA_MAX];
	uint64_t ps_free_mean[DAOS_MEDIA_MAX];
	uint32_t ps_ntargets;
	uint32_t ps_padding;
};

#define DPI_SPACE (1ULL << 0)

typedef struct {
	unsigned char pi_uuid[16];
	uint32_t pi_ntargets;
	uint32_t pi_nnodes;
	uint32_t pi_ndisabled;
	uint32_t pi_map_ver;
	uint32_t pi_leader;
	uint64_t pi_bits;
	struct daos_pool_space pi_space;
	uint64_t pi_rebuild_st[7];
} daos_pool_info_t;

typedef struct d_rank_list d_rank_list_t;

typedef struct {
	uint64_t ci_private[6];
} daos_cont_info_t;

/* Properties (daos_prop.h): a container's creation properties. The simulator reads only the
 * ACL (DAOS_PROP_CO_ACL, dpe_val_ptr a struct daos_acl from daos_acl_from_strs) and records it. */
struct daos_prop_entry {
	uint32_t dpe_type;
	uint16_t dpe_flags;
	uint16_t dpe_reserv;
	union {
		uint64_t dpe_val;
		char    *dpe_str;
		void    *dpe_val_ptr;
	};
};

typedef struct {
	uint32_t                dpp_nr;
	uint32_t                dpp_reserv;
	struct daos_prop_entry *dpp_entries;
} daos_prop_t;

/* Zeroed properties of entries_nr entries (at most 128), NULL if not; freed with daos_prop_free,
 * which frees an ACL entry's value too. */
daos_prop_t *daos_prop_alloc(uint32_t entries_nr);
void daos_prop_free(daos_prop_t *prop);

/* An access control list (daos_security.h); opaque here. */
struct daos_acl;

/* Builds an ACL from ACE strings such as "A::OWNER@:rw" or "A:G:grp@:r": -DER_INVAL for an entry
 * that does not parse or a principal given twice. */
int daos_acl_from_strs(const char **ace_strs, size_t ace_nr, struct daos_acl **acl);

enum daos_otype_t {
	DAOS_OT_MULTI_HASHED = 0,
	DAOS_OT_OIT          = 1,
	DAOS_OT_DKEY_UINT64  = 2,
	DAOS_OT_AKEY_UINT64  = 3,
	DAOS_OT_MULTI_UINT64 = 4,
	DAOS_OT_DKEY_LEXICAL = 5,
	DAOS_OT_AKEY_LEXICAL = 6,
	DAOS_OT_MULTI_LEXICAL = 7,
	DAOS_OT_KV_HASHED    = 8,
	DAOS_OT_KV_UINT64    = 9,
	DAOS_OT_KV_LEXICAL   = 10,
	DAOS_OT_ARRAY        = 11,
	DAOS_OT_ARRAY_ATTR   = 12,
	DAOS_OT_ARRAY_BYTE   = 13,
	DAOS_OT_MAX          = 14,
};

typedef uint32_t daos_oclass_id_t;
typedef uint16_t daos_oclass_hints_t;

#define OBJ_CLASS_DEF(redun, grp) ((((uint32_t)(redun)) << 24) | (uint32_t)(grp))
enum {
	OC_UNKNOWN   = 0,
	OC_S1        = 0x01000001,
	OC_S2        = 0x01000002,
	OC_SX        = 0x0100FFFF,
	OC_RP_2G1    = 0x08000001,
	OC_RP_2GX    = 0x0800FFFF,
	OC_RP_3G1    = 0x09000001,
	OC_RP_3GX    = 0x0900FFFF,
	OC_EC_2P1G1  = 0x20000001,
	OC_EC_2P1GX  = 0x2000FFFF,
};

/* Pool connect flags, container open flags, object open modes. */
#define DAOS_PC_RO  (1U << 0)
#define DAOS_PC_RW  (1U << 1)
#define DAOS_PC_EX  (1U << 2)
#define DAOS_COO_RO (1U << 0)
#define DAOS_COO_RW (1U << 1)
#define DAOS_COO_EX (1U << 2)
#define DAOS_OO_RO   (1U << 1)
#define DAOS_OO_RW   (1U << 2)
#define DAOS_OO_EXCL (1U << 3)

/* Conditional operation flags for update, fetch and punch. */
enum {
	DAOS_COND_PUNCH       = (1 << 0),
	DAOS_COND_DKEY_INSERT = (1 << 1),
	DAOS_COND_DKEY_UPDATE = (1 << 2),
	DAOS_COND_DKEY_FETCH  = (1 << 3),
	DAOS_COND_AKEY_INSERT = (1 << 4),
	DAOS_COND_AKEY_UPDATE = (1 << 5),
	DAOS_COND_AKEY_FETCH  = (1 << 6),
	DAOS_COND_PER_AKEY    = (1 << 7),
};

/* daos_obj_query_key flags. */
enum {
	DAOS_GET_MAX  = (1 << 0),
	DAOS_GET_MIN  = (1 << 1),
	DAOS_GET_DKEY = (1 << 2),
	DAOS_GET_AKEY = (1 << 3),
	DAOS_GET_RECX = (1 << 4),
};

/* Event queue. Timeouts are in microseconds. */
#define DAOS_EQ_WAIT   (-1)
#define DAOS_EQ_NOWAIT 0
#define DAOS_EQ_DESTROY_FORCE 1

enum daos_ev_state {
	DAOS_EVS_READY     = 0,
	DAOS_EVS_RUNNING   = 1,
	DAOS_EVS_COMPLETED = 2,
	DAOS_EVS_ABORTED   = 3,
};

#define DAOS_SYS_NAME_MAX 15

int daos_init(void);
int daos_fini(void);

int daos_pool_connect2(const char *pool, const char *sys, unsigned int flags, daos_handle_t *poh,
		       daos_pool_info_t *info, daos_event_t *ev);
int daos_pool_disconnect(daos_handle_t poh, daos_event_t *ev);
/* ranks must be NULL here (the simulator has no ranks); pool_prop is ignored. */
int daos_pool_query(daos_handle_t poh, d_rank_list_t **ranks, daos_pool_info_t *info, daos_prop_t *pool_prop,
		    daos_event_t *ev);

/* Transactions: daos-sim models a fetch and dkey punches inside one (see src/tx.rs); an update
 * with a transaction handle returns -DER_NOTSUPPORTED. */
int daos_tx_open(daos_handle_t coh, daos_handle_t *th, uint64_t flags, daos_event_t *ev);
int daos_tx_commit(daos_handle_t th, daos_event_t *ev);
int daos_tx_abort(daos_handle_t th, daos_event_t *ev);
int daos_tx_close(daos_handle_t th, daos_event_t *ev);
int daos_tx_restart(daos_handle_t th, daos_event_t *ev);

int daos_cont_open2(daos_handle_t poh, const char *cont, unsigned int flags, daos_handle_t *coh,
		    daos_cont_info_t *info, daos_event_t *ev);
int daos_cont_close(daos_handle_t coh, daos_event_t *ev);
int daos_cont_create_with_label(daos_handle_t poh, const char *label, daos_prop_t *cont_prop,
				uuid_t *uuid, daos_event_t *ev);

/* User-defined container attributes. get_attr: sizes[] in = buffer sizes, out = value sizes;
 * an attribute that does not exist gives -DER_NONEXIST. */
int daos_cont_set_attr(daos_handle_t coh, int n, char const *const names[],
		       void const *const values[], size_t const sizes[], daos_event_t *ev);
int daos_cont_get_attr(daos_handle_t coh, int n, char const *const names[],
		       void *const buffers[], size_t sizes[], daos_event_t *ev);

int daos_obj_generate_oid2(daos_handle_t coh, daos_obj_id_t *oid, enum daos_otype_t type,
			   daos_oclass_id_t cid, daos_oclass_hints_t hints, uint32_t args);
int daos_oclass_name2id(const char *name);

int daos_obj_open(daos_handle_t coh, daos_obj_id_t oid, unsigned int mode, daos_handle_t *oh,
		  daos_event_t *ev);
int daos_obj_close(daos_handle_t oh, daos_event_t *ev);
int daos_obj_update(daos_handle_t oh, daos_handle_t th, uint64_t flags, daos_key_t *dkey,
		    unsigned int nr, daos_iod_t *iods, d_sg_list_t *sgls, daos_event_t *ev);
int daos_obj_fetch(daos_handle_t oh, daos_handle_t th, uint64_t flags, daos_key_t *dkey,
		   unsigned int nr, daos_iod_t *iods, d_sg_list_t *sgls, daos_iom_t *ioms,
		   daos_event_t *ev);
int daos_obj_punch(daos_handle_t oh, daos_handle_t th, uint64_t flags, daos_event_t *ev);
int daos_obj_punch_dkeys(daos_handle_t oh, daos_handle_t th, uint64_t flags, unsigned int nr,
			 daos_key_t *dkeys, daos_event_t *ev);
int daos_obj_punch_akeys(daos_handle_t oh, daos_handle_t th, uint64_t flags, daos_key_t *dkey,
			 unsigned int nr, daos_key_t *akeys, daos_event_t *ev);
int daos_obj_query_key(daos_handle_t oh, daos_handle_t th, uint64_t flags, daos_key_t *dkey,
		       daos_key_t *akey, daos_recx_t *recx, daos_event_t *ev);

int daos_eq_create(daos_handle_t *eqh);
int daos_eq_destroy(daos_handle_t eqh, int flags);
int daos_eq_poll(daos_handle_t eqh, int wait_running, int64_t timeout, unsigned int nevents,
		 daos_event_t **events);
int daos_event_init(daos_event_t *ev, daos_handle_t eqh, daos_event_t *parent);
int daos_event_fini(daos_event_t *ev);
int daos_event_test(daos_event_t *ev, int64_t timeout, bool *flag);
int daos_event_abort(daos_event_t *ev);

/* Legacy names: real headers map them to the *2 calls; the simulator also exports them. */
#define daos_pool_connect     daos_pool_connect2
#define daos_cont_open        daos_cont_open2
#define daos_obj_generate_oid daos_obj_generate_oid2

#ifdef __cplusplus
}
#endif

#endif
