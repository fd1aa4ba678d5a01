// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
/* Compile-time checks that include/daos.h has the layouts of DAOS 2.6+ on x86-64. */
#include <stddef.h>
#include "daos.h"
#include "daos_sim.h"

_Static_assert(sizeof(daos_handle_t) == 8, "daos_handle_t");
_Static_assert(sizeof(daos_obj_id_t) == 16, "daos_obj_id_t");
_Static_assert(offsetof(daos_obj_id_t, lo) == 0, "daos_obj_id_t.lo");
_Static_assert(offsetof(daos_obj_id_t, hi) == 8, "daos_obj_id_t.hi");
_Static_assert(sizeof(d_iov_t) == 24, "d_iov_t");
_Static_assert(offsetof(d_iov_t, iov_buf_len) == 8, "d_iov_t.iov_buf_len");
_Static_assert(offsetof(d_iov_t, iov_len) == 16, "d_iov_t.iov_len");
_Static_assert(sizeof(d_sg_list_t) == 16, "d_sg_list_t");
_Static_assert(offsetof(d_sg_list_t, sg_nr_out) == 4, "d_sg_list_t.sg_nr_out");
_Static_assert(offsetof(d_sg_list_t, sg_iovs) == 8, "d_sg_list_t.sg_iovs");
_Static_assert(sizeof(daos_recx_t) == 16, "daos_recx_t");
_Static_assert(sizeof(daos_iod_t) == 64, "daos_iod_t");
_Static_assert(offsetof(daos_iod_t, iod_type) == 24, "daos_iod_t.iod_type");
_Static_assert(offsetof(daos_iod_t, iod_size) == 32, "daos_iod_t.iod_size");
_Static_assert(offsetof(daos_iod_t, iod_flags) == 40, "daos_iod_t.iod_flags");
_Static_assert(offsetof(daos_iod_t, iod_nr) == 48, "daos_iod_t.iod_nr");
_Static_assert(offsetof(daos_iod_t, iod_recxs) == 56, "daos_iod_t.iod_recxs");
_Static_assert(sizeof(daos_iom_t) == 64, "daos_iom_t");
_Static_assert(offsetof(daos_iom_t, iom_size) == 16, "daos_iom_t.iom_size");
_Static_assert(offsetof(daos_iom_t, iom_recx_lo) == 24, "daos_iom_t.iom_recx_lo");
_Static_assert(offsetof(daos_iom_t, iom_recx_hi) == 40, "daos_iom_t.iom_recx_hi");
_Static_assert(offsetof(daos_iom_t, iom_recxs) == 56, "daos_iom_t.iom_recxs");
_Static_assert(sizeof(daos_event_t) == 176, "daos_event_t");
_Static_assert(offsetof(daos_event_t, ev_private) == 8, "daos_event_t.ev_private");
_Static_assert(sizeof(((daos_event_t *)0)->ev_private) == 160, "daos_event_t.ev_private size");
_Static_assert(offsetof(daos_event_t, ev_debug) == 168, "daos_event_t.ev_debug");
_Static_assert(sizeof(daos_pool_info_t) == 192, "daos_pool_info_t");
_Static_assert(offsetof(daos_pool_info_t, pi_bits) == 40, "daos_pool_info_t.pi_bits");
_Static_assert(offsetof(daos_pool_info_t, pi_space) == 48, "daos_pool_info_t.pi_space");
_Static_assert(offsetof(daos_pool_info_t, pi_space.ps_space.s_free) == 64, "daos_pool_info_t.s_free");
_Static_assert(offsetof(daos_pool_info_t, pi_space.ps_ntargets) == 128, "daos_pool_info_t.ps_ntargets");
_Static_assert(sizeof(daos_cont_info_t) == 48, "daos_cont_info_t");
_Static_assert(sizeof(struct daos_prop_entry) == 16, "daos_prop_entry");
_Static_assert(offsetof(struct daos_prop_entry, dpe_val_ptr) == 8, "daos_prop_entry.dpe_val_ptr");
_Static_assert(sizeof(daos_prop_t) == 16, "daos_prop_t");
_Static_assert(offsetof(daos_prop_t, dpp_entries) == 8, "daos_prop_t.dpp_entries");
_Static_assert(OC_SX == OBJ_CLASS_DEF(1, 0xFFFF), "OC_SX");
_Static_assert(DAOS_OO_RW == 4, "DAOS_OO_RW");

/* A symbol so the archive is not empty. */
int daos_sim_layout_checked(void) { return 1; }
