// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The Rust mirrors of the C types have the sizes and offsets of include/daos.h (which
//! c/layout.c checks against the DAOS layouts at build time).

use std::mem::{offset_of, size_of};

use daos_sim::*;

#[test]
fn sizes() {
    assert_eq!(size_of::<daos_handle_t>(), 8);
    assert_eq!(size_of::<daos_obj_id_t>(), 16);
    assert_eq!(size_of::<d_iov_t>(), 24);
    assert_eq!(size_of::<d_sg_list_t>(), 16);
    assert_eq!(size_of::<daos_recx_t>(), 16);
    assert_eq!(size_of::<daos_iod_t>(), 64);
    assert_eq!(size_of::<daos_iom_t>(), 64);
    assert_eq!(size_of::<daos_event_t>(), 176);
    assert_eq!(size_of::<daos_pool_info_t>(), 192);
    assert_eq!(size_of::<daos_cont_info_t>(), 48);
}

#[test]
fn offsets() {
    assert_eq!(offset_of!(daos_obj_id_t, lo), 0);
    assert_eq!(offset_of!(daos_obj_id_t, hi), 8);
    assert_eq!(offset_of!(d_iov_t, iov_buf), 0);
    assert_eq!(offset_of!(d_iov_t, iov_buf_len), 8);
    assert_eq!(offset_of!(d_iov_t, iov_len), 16);
    assert_eq!(offset_of!(d_sg_list_t, sg_nr), 0);
    assert_eq!(offset_of!(d_sg_list_t, sg_nr_out), 4);
    assert_eq!(offset_of!(d_sg_list_t, sg_iovs), 8);
    assert_eq!(offset_of!(daos_recx_t, rx_idx), 0);
    assert_eq!(offset_of!(daos_recx_t, rx_nr), 8);
    assert_eq!(offset_of!(daos_iod_t, iod_name), 0);
    assert_eq!(offset_of!(daos_iod_t, iod_type), 24);
    assert_eq!(offset_of!(daos_iod_t, iod_size), 32);
    assert_eq!(offset_of!(daos_iod_t, iod_flags), 40);
    assert_eq!(offset_of!(daos_iod_t, iod_nr), 48);
    assert_eq!(offset_of!(daos_iod_t, iod_recxs), 56);
    assert_eq!(offset_of!(daos_iom_t, iom_type), 0);
    assert_eq!(offset_of!(daos_iom_t, iom_nr), 4);
    assert_eq!(offset_of!(daos_iom_t, iom_nr_out), 8);
    assert_eq!(offset_of!(daos_iom_t, iom_flags), 12);
    assert_eq!(offset_of!(daos_iom_t, iom_size), 16);
    assert_eq!(offset_of!(daos_iom_t, iom_recx_lo), 24);
    assert_eq!(offset_of!(daos_iom_t, iom_recx_hi), 40);
    assert_eq!(offset_of!(daos_iom_t, iom_recxs), 56);
    assert_eq!(offset_of!(daos_event_t, ev_error), 0);
    assert_eq!(offset_of!(daos_event_t, ev_private), 8);
    assert_eq!(size_of::<daos_event_private_t>(), 160);
    assert_eq!(offset_of!(daos_event_t, ev_debug), 168);
}

#[test]
fn constants() {
    assert_eq!(OC_S1, 0x0100_0001);
    assert_eq!(OC_RP_2G1, (8 << 24) | 1);
    assert_eq!(OC_EC_2P1GX, (0x20 << 24) | 0xFFFF);
    assert_eq!(DAOS_OO_RW, 4);
    assert_eq!(DER_INVAL, 1003);
    assert_eq!(DER_REC2BIG, 2013);
}

/// The C header really is the one we built against: every exported name links.
#[test]
fn exports_link() {
    let fns: &[*const ()] = &[
        daos_init as *const (),
        daos_fini as *const (),
        daos_pool_connect2 as *const (),
        daos_pool_connect as *const (),
        daos_pool_disconnect as *const (),
        daos_cont_open2 as *const (),
        daos_cont_open as *const (),
        daos_cont_close as *const (),
        daos_cont_create_with_label as *const (),
        daos_obj_generate_oid2 as *const (),
        daos_obj_generate_oid as *const (),
        daos_oclass_name2id as *const (),
        daos_obj_open as *const (),
        daos_obj_close as *const (),
        daos_obj_update as *const (),
        daos_obj_fetch as *const (),
        daos_obj_punch as *const (),
        daos_obj_punch_dkeys as *const (),
        daos_obj_punch_akeys as *const (),
        daos_obj_query_key as *const (),
        daos_eq_create as *const (),
        daos_eq_destroy as *const (),
        daos_eq_poll as *const (),
        daos_event_init as *const (),
        daos_event_fini as *const (),
        daos_event_test as *const (),
        daos_event_abort as *const (),
        d_errstr as *const (),
        d_errdesc as *const (),
        daos_sim_control as *const (),
        daos_sim_stats as *const (),
    ];
    assert!(fns.iter().all(|f| !f.is_null()));
}
