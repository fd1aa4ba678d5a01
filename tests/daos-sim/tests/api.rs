// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Behaviour of the libdaos API as daos-sim implements it (DAOS_FACTS §1, §3, §4).
//! Tests here run in parallel threads: each uses its own container, and none touches the
//! process-wide controls (those live in tests/control.rs).
// These tests drive the simulator's C API as libdaos's callers do: every unsafe block passes
// locals that outlive the call (or the event's completion, which each test waits for), so the
// blocks carry no SAFETY line each.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use std::ffi::CStr;
use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use common::*;

fn s(p: *const std::os::raw::c_char) -> String {
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

#[test]
fn errstr_and_errdesc() {
    assert_eq!(s(d_errstr(-DER_INVAL)), "DER_INVAL");
    assert_eq!(s(d_errstr(-DER_REC2BIG)), "DER_REC2BIG");
    assert_eq!(s(d_errstr(0)), "DER_SUCCESS");
    assert_eq!(s(d_errstr(DER_INVAL)), "DER_UNKNOWN");
    assert_eq!(s(d_errstr(-123456)), "DER_UNKNOWN");
    assert_eq!(s(d_errdesc(-DER_NONEXIST)), "The specified entity does not exist");
    assert!(!s(d_errdesc(-424242)).is_empty());
}

#[test]
fn oclass_names() {
    let cases = [
        ("S1", OC_S1),
        ("S2", OC_S2),
        ("SX", OC_SX),
        ("RP_2G1", OC_RP_2G1),
        ("RP_2GX", OC_RP_2GX),
        ("RP_3G1", OC_RP_3G1),
        ("RP_3GX", OC_RP_3GX),
        ("EC_2P1G1", OC_EC_2P1G1),
        ("EC_2P1GX", OC_EC_2P1GX),
    ];
    for (n, id) in cases {
        assert_eq!(unsafe { daos_oclass_name2id(cs(n).as_ptr()) }, id as i32, "{n}");
    }
    assert_eq!(unsafe { daos_oclass_name2id(cs("S3000").as_ptr()) }, 0);
    assert_eq!(unsafe { daos_oclass_name2id(null()) }, 0);
}

#[test]
fn pool_and_container_errors() {
    assert_eq!(daos_init(), 0);
    unsafe {
        let mut poh = DAOS_HDL_INVAL;
        let c = |p: &str| cs(p);
        assert_eq!(
            daos_pool_connect2(c("nosuchpool").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()),
            -DER_NONEXIST
        );
        let uuid = "6f1b1d4e-8a8c-4c52-a3f1-1c0d2e3f4a5b";
        assert_eq!(
            daos_pool_connect2(c(uuid).as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()),
            -DER_NONEXIST
        );
        assert_eq!(
            daos_pool_connect2(c("bad name!").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()),
            -DER_INVAL
        );
        assert_eq!(daos_pool_connect2(null(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut()), -DER_INVAL);
        assert_eq!(
            daos_pool_connect2(c("sim").as_ptr(), null(), DAOS_PC_RW | DAOS_PC_RO, &mut poh, null_mut(), null_mut()),
            -DER_INVAL
        );
        assert_eq!(daos_pool_connect2(c("sim").as_ptr(), null(), 0, &mut poh, null_mut(), null_mut()), -DER_INVAL);
        assert_eq!(
            daos_pool_connect2(
                c("sim").as_ptr(),
                c("a_very_long_system_name").as_ptr(),
                DAOS_PC_RW,
                &mut poh,
                null_mut(),
                null_mut()
            ),
            -DER_INVAL
        );
        // Legacy name, explicit system name, pool info filled.
        let mut info = daos_pool_info_t { pi_private: [7; 24] };
        assert_eq!(
            daos_pool_connect(
                c("sim").as_ptr(),
                c("daos_server").as_ptr(),
                DAOS_PC_RW,
                &mut poh,
                &mut info,
                null_mut()
            ),
            0
        );
        assert_ne!(poh.cookie, 0);
        assert_eq!(info.pi_private, [0; 24]);

        let mut coh = DAOS_HDL_INVAL;
        assert_eq!(
            daos_cont_open2(poh, c("nosuchcont").as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut()),
            -DER_NONEXIST
        );
        assert_eq!(
            daos_cont_open2(poh, c(uuid).as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut()),
            -DER_NONEXIST
        );
        assert_eq!(daos_cont_open2(poh, c("kv").as_ptr(), 0, &mut coh, null_mut(), null_mut()), -DER_INVAL);
        assert_eq!(
            daos_cont_open2(DAOS_HDL_INVAL, c("kv").as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut()),
            -DER_NO_HDL
        );
        // The default container exists.
        assert_eq!(daos_cont_open(poh, c("kv").as_ptr(), DAOS_COO_RO, &mut coh, null_mut(), null_mut()), 0);
        assert_eq!(daos_cont_close(coh, null_mut()), 0);
        assert_eq!(daos_cont_close(coh, null_mut()), -DER_NO_HDL);

        // Labels: create, duplicate, invalid; open by the returned UUID.
        let mut uuid_out: uuid_t = [0; 16];
        assert_eq!(
            daos_cont_create_with_label(poh, c("api-labels").as_ptr(), null_mut(), &mut uuid_out, null_mut()),
            0
        );
        assert_ne!(uuid_out, [0; 16]);
        assert_eq!(
            daos_cont_create_with_label(poh, c("api-labels").as_ptr(), null_mut(), null_mut(), null_mut()),
            -DER_EXIST
        );
        for bad in ["", "has space", uuid, &"x".repeat(128)] {
            assert_eq!(
                daos_cont_create_with_label(poh, c(bad).as_ptr(), null_mut(), null_mut(), null_mut()),
                -DER_INVAL,
                "{bad:?}"
            );
        }
        assert_eq!(
            daos_cont_create_with_label(DAOS_HDL_INVAL, c("x").as_ptr(), null_mut(), null_mut(), null_mut()),
            -DER_NO_HDL
        );
        let u = uuid_out;
        let us = format!(
            "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
            u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]
        );
        assert_eq!(daos_cont_open2(poh, c(&us).as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut()), 0);
        assert_eq!(daos_cont_close(coh, null_mut()), 0);

        // Read-only pool handle: no RW container open, no create.
        let mut ro = DAOS_HDL_INVAL;
        assert_eq!(daos_pool_connect2(c("sim").as_ptr(), null(), DAOS_PC_RO, &mut ro, null_mut(), null_mut()), 0);
        assert_eq!(daos_cont_open2(ro, c("kv").as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut()), -DER_NO_PERM);
        assert_eq!(
            daos_cont_create_with_label(ro, c("api-ro").as_ptr(), null_mut(), null_mut(), null_mut()),
            -DER_NO_PERM
        );
        assert_eq!(daos_pool_disconnect(ro, null_mut()), 0);

        assert_eq!(daos_pool_disconnect(poh, null_mut()), 0);
        assert_eq!(daos_pool_disconnect(poh, null_mut()), -DER_NO_HDL);
    }
    assert_eq!(daos_fini(), 0);
}

#[test]
fn busy_on_close_with_children() {
    let c = setup("api-busy");
    let oh = c.obj(1);
    unsafe {
        assert_eq!(daos_pool_disconnect(c.poh, null_mut()), -DER_BUSY);
        assert_eq!(daos_obj_close(oh, null_mut()), 0);
        assert_eq!(daos_obj_close(oh, null_mut()), -DER_NO_HDL);
        assert_eq!(daos_pool_disconnect(c.poh, null_mut()), -DER_BUSY);
    }
    c.close(&[]);
}

/// As a real DAOS 2.8 engine answers: closing a container with an object still open succeeds
/// (no BUSY), and closing the object afterwards still succeeds.
#[test]
fn cont_close_with_an_object_open_succeeds() {
    let c = setup("api-close-open-obj");
    let oh = c.obj(1);
    unsafe {
        assert_eq!(daos_cont_close(c.coh, null_mut()), 0);
        assert_eq!(daos_cont_close(c.coh, null_mut()), -DER_NO_HDL);
        assert_eq!(daos_obj_close(oh, null_mut()), 0);
        assert_eq!(daos_pool_disconnect(c.poh, null_mut()), 0);
    }
}

/// Group count DAOS 2.8 gives an `OC_UNKNOWN` object by type and sharding hint (dc_set_oclass),
/// on the simulated 8-target pool at RF0: a MULTI_HASHED object without a hint gets one group,
/// with `SHD_MAX` all 8 (what a real 4-target engine showed: 1 and 4).
#[test]
fn oid_groups_follow_the_sharding_hint() {
    let c = setup("api-oid-hint");
    let groups = |otype: u32, hints: u16| unsafe {
        let mut oid = daos_obj_id_t { lo: 9, hi: 0 };
        let rc = daos_obj_generate_oid2(c.coh, &mut oid, otype, OC_UNKNOWN, hints, 0);
        (rc == 0).then_some(((oid.hi >> 32) & 0xFFFF) as u32).ok_or(rc)
    };
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, 0), Ok(1));
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, DAOS_OCH_SHD_DEF), Ok(1));
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, DAOS_OCH_SHD_MAX), Ok(8));
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, DAOS_OCH_SHD_REG), Ok(8));
    assert_eq!(groups(DAOS_OT_ARRAY_BYTE, 0), Ok(8));
    assert_eq!(groups(DAOS_OT_KV_HASHED, DAOS_OCH_SHD_DEF), Ok(8));
    assert_eq!(groups(DAOS_OT_ARRAY, DAOS_OCH_SHD_TINY), Ok(1));
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, DAOS_OCH_SHD_MAX | DAOS_OCH_SHD_TINY), Err(-DER_INVAL));
    // Redundancy hints are ignored; an explicit class ignores the sharding hint.
    assert_eq!(groups(DAOS_OT_MULTI_HASHED, DAOS_OCH_SHD_MAX | 1), Ok(8));
    unsafe {
        let mut oid = daos_obj_id_t { lo: 9, hi: 0 };
        assert_eq!(daos_obj_generate_oid2(c.coh, &mut oid, DAOS_OT_MULTI_HASHED, OC_S1, DAOS_OCH_SHD_MAX, 0), 0);
        assert_eq!((oid.hi >> 32) & 0xFFFF, 1);
    }
    c.close(&[]);
}

#[test]
fn oid_generation_and_open() {
    let c = setup("api-oid");
    unsafe {
        let mut oid = daos_obj_id_t { lo: 0x1234, hi: 0xdead_beef_0000_0042 };
        assert_eq!(daos_obj_generate_oid2(c.coh, &mut oid, DAOS_OT_ARRAY_BYTE, OC_RP_2G1, 0, 0), 0);
        assert_eq!(oid.lo, 0x1234);
        assert_eq!(oid.hi & 0xFFFF_FFFF, 0x42, "user bits kept");
        assert_eq!(oid.hi >> 56, DAOS_OT_ARRAY_BYTE as u64);
        assert_eq!((oid.hi >> 32) & 0xFFFF, 1);
        let mut sx = daos_obj_id_t { lo: 1, hi: 0 };
        assert_eq!(daos_obj_generate_oid(c.coh, &mut sx, DAOS_OT_MULTI_HASHED, OC_SX, 0, 0), 0);
        assert!((sx.hi >> 32) & 0xFFFF >= 1);
        let mut dflt = daos_obj_id_t { lo: 2, hi: 0 };
        assert_eq!(daos_obj_generate_oid2(c.coh, &mut dflt, DAOS_OT_MULTI_HASHED, OC_UNKNOWN, 0, 0), 0);
        assert_eq!(daos_obj_generate_oid2(c.coh, &mut oid, DAOS_OT_MAX, OC_S1, 0, 0), -DER_INVAL);
        assert_eq!(daos_obj_generate_oid2(c.coh, &mut oid, DAOS_OT_ARRAY, 0x4200_0001, 0, 0), -DER_INVAL);
        assert_eq!(daos_obj_generate_oid2(c.coh, null_mut(), DAOS_OT_ARRAY, OC_S1, 0, 0), -DER_INVAL);
        assert_eq!(daos_obj_generate_oid2(DAOS_HDL_INVAL, &mut oid, DAOS_OT_ARRAY, OC_S1, 0, 0), -DER_NO_HDL);

        let mut oh = DAOS_HDL_INVAL;
        assert_eq!(daos_obj_open(c.coh, oid, DAOS_OO_RW, &mut oh, null_mut()), 0);
        assert_ne!(oh.cookie, 0);
        assert_eq!(daos_obj_close(oh, null_mut()), 0);
        // Never-generated oid (no class bits), bad mode, bad container handle.
        assert_eq!(daos_obj_open(c.coh, daos_obj_id_t { lo: 5, hi: 0 }, DAOS_OO_RW, &mut oh, null_mut()), -DER_INVAL);
        assert_eq!(daos_obj_open(c.coh, oid, 0, &mut oh, null_mut()), -DER_INVAL);
        assert_eq!(daos_obj_open(DAOS_HDL_INVAL, oid, DAOS_OO_RW, &mut oh, null_mut()), -DER_NO_HDL);
    }
    c.close(&[]);
}

#[test]
fn array_roundtrip_multi_iod_multi_recx_is_one_rpc() {
    let c = setup("api-rt");
    let oh = c.obj(1);
    let a: Vec<u8> = (0..100u8).collect();
    let b: Vec<u8> = (100..200u8).collect();
    unsafe {
        // akey "a": two recxs from one 2-iov sgl; akey "b": one recx.
        let mut dk = key(b"dkey");
        let mut rxa = [recx(0, 40), recx(1000, 60)];
        let mut rxb = [recx(7, 100)];
        let mut iods = [array_iod(b"a", 1, &mut rxa), array_iod(b"b", 1, &mut rxb)];
        let mut iova = [d_iov_t::from_slice(&a[..30]), d_iov_t::from_slice(&a[30..])];
        let mut iovb = [d_iov_t::from_slice(&b)];
        let mut sgls = [sgl(&mut iova), sgl(&mut iovb)];
        assert_eq!(
            daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 2, iods.as_mut_ptr(), sgls.as_mut_ptr(), null_mut()),
            0
        );

        let mut outa = vec![0u8; 100];
        let mut outb = vec![0u8; 100];
        let (oa1, oa2) = outa.split_at_mut(55);
        let mut iova = [d_iov_t::from_mut(oa1), d_iov_t::from_mut(oa2)];
        let mut iovb = [d_iov_t::from_mut(&mut outb)];
        let mut sgls = [sgl(&mut iova), sgl(&mut iovb)];
        let mut iods = [array_iod(b"a", 1, &mut rxa), array_iod(b"b", 1, &mut rxb)];
        assert_eq!(
            daos_obj_fetch(
                oh,
                DAOS_TX_NONE,
                0,
                &mut dk,
                2,
                iods.as_mut_ptr(),
                sgls.as_mut_ptr(),
                null_mut(),
                null_mut()
            ),
            0
        );
        assert_eq!(outa, a);
        assert_eq!(outb, b);
        assert_eq!(iods[0].iod_size, 1);
        assert_eq!(sgls[0].sg_nr_out, 2);
        assert_eq!((iova[0].iov_len, iova[1].iov_len), (55, 45));
        assert_eq!(sgls[1].sg_nr_out, 1);
        assert_eq!(iovb[0].iov_len, 100);
    }
    c.close(&[oh]);
}

#[test]
fn single_value_replaced_whole() {
    let c = setup("api-sv");
    let oh = c.obj(1);
    unsafe {
        let mut dk = key(b"d");
        for v in [&b"a long first value"[..], b"short"] {
            let mut iod = single_iod(b"sv", v.len() as u64);
            let mut iov = [d_iov_t::from_slice(v)];
            let mut sg = sgl(&mut iov);
            assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), 0);
        }
        // Size query with sgls NULL.
        let mut iod = single_iod(b"sv", DAOS_REC_ANY);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 5);
        // Fetch into a big buffer: whole value, iov_len trimmed.
        let mut buf = [b'#'; 32];
        let mut iod = single_iod(b"sv", DAOS_REC_ANY);
        let mut iov = [d_iov_t::from_mut(&mut buf)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 5);
        assert_eq!(sg.sg_nr_out, 1);
        assert_eq!(iov[0].iov_len, 5);
        assert_eq!(&buf[..6], b"short#");
        // Too small a buffer: REC2BIG with iod_size set.
        let mut small = [0u8; 3];
        let mut iod = single_iod(b"sv", DAOS_REC_ANY);
        let mut iov = [d_iov_t::from_mut(&mut small)];
        let mut sg = sgl(&mut iov);
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()),
            -DER_REC2BIG
        );
        assert_eq!(iod.iod_size, 5);
        // iod_size 0 update punches the value.
        let mut iod = single_iod(b"sv", 0);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut()), 0);
        let mut iod = single_iod(b"sv", DAOS_REC_ANY);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 0);
    }
    c.close(&[oh]);
}

#[test]
fn missing_keys_read_as_empty() {
    let c = setup("api-missing");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 0, b"xyz"), 0);
    let mut buf = [9u8; 8];
    for (dk, ak) in [(&b"nodkey"[..], &b"a"[..]), (b"d", b"noakey")] {
        let g = get(oh, dk, ak, 0, &mut buf);
        assert_eq!((g.rc, g.iod_size, g.sg_nr_out, g.iov_len), (0, 0, 0, 0));
        assert_eq!(buf, [9; 8], "untouched");
    }
    // A never-written object too.
    let oh2 = c.obj(2);
    let g = get(oh2, b"d", b"a", 0, &mut buf);
    assert_eq!((g.rc, g.iod_size, g.sg_nr_out), (0, 0, 0));
    c.close(&[oh, oh2]);
}

/// Many recxs per iod, adjacent ones (which the store handles as one run) mixed with gaps and
/// out-of-order ones, record sizes 1 and 3, iovs split at random places, overwrites and
/// punches: every fetch must match a per-record model (bytes, holes left untouched, iod_size,
/// sg_nr_out and each iov_len).
#[test]
fn recx_runs_match_a_record_model() {
    let c = setup("api-runs");
    let oh = c.obj(1);
    const N: u64 = 400;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    // Non-overlapping recxs: mostly adjacent, some gaps, sometimes shuffled.
    let recxs = |rnd: &mut dyn FnMut(u64) -> u64| {
        let mut v = Vec::new();
        let mut at = rnd(40);
        while at < N && v.len() < 30 {
            let nr = 1 + rnd(20).min(N - at - 1);
            v.push(recx(at, nr));
            at += nr + if rnd(3) == 0 { rnd(15) } else { 0 };
        }
        if rnd(4) == 0 {
            for i in (1..v.len()).rev() {
                v.swap(i, rnd(i as u64 + 1) as usize);
            }
        }
        v
    };
    // Splits `len` bytes into 1-8 iov lengths.
    let split = |rnd: &mut dyn FnMut(u64) -> u64, len: usize| {
        let mut cuts: Vec<usize> = (0..rnd(8)).map(|_| rnd(len as u64 + 1) as usize).collect();
        cuts.extend([0, len]);
        cuts.sort_unstable();
        cuts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
    };
    for (akey, rs) in [(&b"r1"[..], 1u64), (&b"r3"[..], 3)] {
        let mut model: Vec<Option<u8>> = vec![None; (N * rs) as usize];
        for round in 0..150 {
            let mut rx = recxs(&mut rnd);
            let total: usize = rx.iter().map(|r| (r.rx_nr * rs) as usize).sum();
            let mut dk = key(b"d");
            match rnd(5) {
                0 => unsafe {
                    // Punch the recxs.
                    let mut iod = array_iod(akey, 0, &mut rx);
                    assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut()), 0);
                    for r in &rx {
                        model[(r.rx_idx * rs) as usize..((r.rx_idx + r.rx_nr) * rs) as usize].fill(None);
                    }
                },
                1 | 2 => unsafe {
                    let data: Vec<u8> = (0..total).map(|_| rnd(256) as u8).collect();
                    let mut iovs = Vec::new();
                    let mut at = 0;
                    for l in split(&mut rnd, total) {
                        iovs.push(d_iov_t::from_slice(&data[at..at + l]));
                        at += l;
                    }
                    let mut iod = array_iod(akey, rs, &mut rx);
                    let mut sg = sgl(&mut iovs);
                    assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), 0);
                    let mut at = 0;
                    for r in &rx {
                        let range = (r.rx_idx * rs) as usize..((r.rx_idx + r.rx_nr) * rs) as usize;
                        for (m, &d) in model[range.clone()].iter_mut().zip(&data[at..]) {
                            *m = Some(d);
                        }
                        at += range.len();
                    }
                },
                _ => unsafe {
                    let sentinel = 0xa5u8 ^ round as u8;
                    let mut buf = vec![sentinel; total];
                    let lens = split(&mut rnd, total);
                    let mut iovs = Vec::new();
                    let mut rest = &mut buf[..];
                    for &l in &lens {
                        let (a, b) = rest.split_at_mut(l);
                        iovs.push(d_iov_t::from_mut(a));
                        rest = b;
                    }
                    let mut iod = array_iod(akey, rs, &mut rx);
                    let mut sg = sgl(&mut iovs);
                    let rc = daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut());
                    assert_eq!(rc, 0);
                    let mut want = Vec::with_capacity(total);
                    for r in &rx {
                        want.extend(model[(r.rx_idx * rs) as usize..((r.rx_idx + r.rx_nr) * rs) as usize].iter());
                    }
                    let any = want.iter().any(Option::is_some);
                    assert_eq!(iod.iod_size, if any { rs } else { 0 }, "round {round}");
                    let last_end = if any { want.iter().rposition(Option::is_some).unwrap() + 1 } else { 0 };
                    let want_bytes: Vec<u8> = want.iter().map(|b| b.unwrap_or(sentinel)).collect();
                    assert!(buf == want_bytes, "round {round}: fetched bytes differ");
                    let mut left = last_end;
                    let mut nr_out = 0;
                    for (i, (iov, &l)) in iovs.iter().zip(&lens).enumerate() {
                        let want_len = l.min(left);
                        left -= want_len;
                        if want_len > 0 {
                            nr_out = i as u32 + 1;
                        }
                        assert_eq!(iov.iov_len, want_len, "round {round}: iov {i}");
                    }
                    assert_eq!(sg.sg_nr_out, nr_out, "round {round}");
                },
            }
        }
    }
    c.close(&[oh]);
}

#[test]
fn holes_untouched_and_tail_trimmed() {
    let c = setup("api-holes");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 2, b"AB"), 0);
    assert_eq!(put(oh, b"d", b"a", 6, b"CD"), 0);
    let mut buf = [b'.'; 12];
    let g = get(oh, b"d", b"a", 0, &mut buf);
    assert_eq!(g.rc, 0);
    assert_eq!(g.iod_size, 1);
    assert_eq!(&buf, b"..AB..CD....");
    assert_eq!(g.sg_nr_out, 1);
    assert_eq!(g.iov_len, 8, "tail hole trimmed");
    // Tail hole spanning whole iovs: sg_nr_out stops at the last iov with data.
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 12)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut b = [b'.'; 12];
        let (x, rest) = b.split_at_mut(4);
        let (y, z) = rest.split_at_mut(4);
        let mut iov = [d_iov_t::from_mut(x), d_iov_t::from_mut(y), d_iov_t::from_mut(z)];
        iov[2].iov_len = 3; // stale value: must be reset
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()), 0);
        assert_eq!(sg.sg_nr_out, 2);
        assert_eq!((iov[0].iov_len, iov[1].iov_len, iov[2].iov_len), (4, 4, 0));
        assert_eq!(&b, b"..AB..CD....");
    }
    // All holes: iod_size 0, nothing out.
    let mut buf = [b'.'; 2];
    let g = get(oh, b"d", b"a", 0, &mut buf);
    assert_eq!((g.rc, g.iod_size, g.sg_nr_out, g.iov_len), (0, 0, 0, 0));
    c.close(&[oh]);
}

#[test]
fn newest_write_wins_and_range_punch() {
    let c = setup("api-overwrite");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 0, b"aaaaaaaaaa"), 0);
    assert_eq!(put(oh, b"d", b"a", 3, b"BBB"), 0);
    assert_eq!(put(oh, b"d", b"a", 8, b"CCCC"), 0);
    let mut buf = [0u8; 12];
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, 0);
    assert_eq!(&buf, b"aaaBBBaaCCCC");
    // iod_size 0 punches records 4..6.
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(4, 2)];
        let mut iod = array_iod(b"a", 0, &mut rx);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut()), 0);
    }
    let mut buf = [b'-'; 12];
    assert_eq!(get(oh, b"d", b"a", 0, &mut buf).rc, 0);
    assert_eq!(&buf, b"aaaB--aaCCCC");
    c.close(&[oh]);
}

#[test]
fn rec_any_on_arrays() {
    let c = setup("api-recany");
    let oh = c.obj(1);
    unsafe {
        // Records of 4 bytes.
        let data: Vec<u8> = (0..16).collect();
        let mut dk = key(b"d");
        let mut rx = [recx(0, 4)];
        let mut iod = array_iod(b"a", 4, &mut rx);
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), 0);
        // Size query, sgls NULL.
        let mut iod = array_iod(b"a", DAOS_REC_ANY, &mut rx);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 4);
        // REC_ANY with a big enough buffer reads the data.
        let mut out = [0u8; 16];
        let mut iod = array_iod(b"a", DAOS_REC_ANY, &mut rx);
        let mut iov = [d_iov_t::from_mut(&mut out)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 4);
        assert_eq!(&out[..], &data[..]);
        // Too small: REC2BIG, iod_size set.
        let mut out = [0u8; 10];
        let mut iod = array_iod(b"a", DAOS_REC_ANY, &mut rx);
        let mut iov = [d_iov_t::from_mut(&mut out)];
        let mut sg = sgl(&mut iov);
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()),
            -DER_REC2BIG
        );
        assert_eq!(iod.iod_size, 4);
        // Absent akey: size 0.
        let mut iod = array_iod(b"zz", DAOS_REC_ANY, &mut rx);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 0);
        // Mixed record sizes in one fetched range: INVAL.
        let two = [1u8, 2];
        let mut rx2 = [recx(4, 1)];
        let mut iod = array_iod(b"a", 2, &mut rx2);
        let mut iov = [d_iov_t::from_slice(&two)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), 0);
        let mut rx = [recx(0, 5)];
        let mut iod = array_iod(b"a", DAOS_REC_ANY, &mut rx);
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()),
            -DER_INVAL
        );
        // ...but a range of one size is fine.
        let mut iod = array_iod(b"a", DAOS_REC_ANY, &mut rx2);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(iod.iod_size, 2);
    }
    c.close(&[oh]);
}

#[test]
fn validation_inval() {
    let c = setup("api-inval");
    let oh = c.obj(1);
    let data = [1u8; 16];
    unsafe {
        let upd = |dkey: *mut daos_key_t, nr: u32, iod: *mut daos_iod_t, sg: *mut d_sg_list_t| {
            daos_obj_update(oh, DAOS_TX_NONE, 0, dkey, nr, iod, sg, null_mut())
        };
        let mut dk = key(b"d");
        let mut rx = [recx(0, 16)];
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        let mut good = array_iod(b"a", 1, &mut rx);

        // dkey: NULL, NULL buffer, zero length; nr == 0; iods NULL.
        assert_eq!(upd(null_mut(), 1, &mut good, &mut sg), -DER_INVAL);
        let mut nullbuf = d_iov_t { iov_len: 4, ..Default::default() };
        assert_eq!(upd(&mut nullbuf, 1, &mut good, &mut sg), -DER_INVAL);
        let mut empty = key(b"");
        assert_eq!(upd(&mut empty, 1, &mut good, &mut sg), -DER_INVAL);
        assert_eq!(upd(&mut dk, 0, &mut good, &mut sg), -DER_INVAL);
        assert_eq!(upd(&mut dk, 1, null_mut(), &mut sg), -DER_INVAL);

        // akey NULL; unknown iod type; SINGLE with iod_nr 2.
        let mut iod = good;
        iod.iod_name = d_iov_t::default();
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL);
        let mut iod = good;
        iod.iod_type = DAOS_IOD_NONE;
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL);
        let mut iod = single_iod(b"s", 16);
        iod.iod_nr = 2;
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL);

        // recxs: NULL with iod_nr > 0; iod_nr 0 with an sgl; rx_nr 0; bit 63; overlap.
        let mut iod = good;
        iod.iod_recxs = null_mut();
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL);
        let mut iod = good;
        iod.iod_nr = 0;
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL);
        for bad in [
            [recx(0, 0), recx(1, 1)],
            [recx(1 << 63, 1), recx(0, 1)],
            [recx(0, 8), recx(7, 8)],
            [recx(8, 8), recx(0, 9)],
        ] {
            let mut rxs = bad;
            let mut iod = array_iod(b"a", 1, &mut rxs);
            assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), -DER_INVAL, "{bad:?}");
        }
        // Unordered but disjoint recxs are fine.
        let mut rxs = [recx(8, 8), recx(0, 8)];
        let mut iod = array_iod(b"a", 1, &mut rxs);
        assert_eq!(upd(&mut dk, 1, &mut iod, &mut sg), 0);

        // sgls: NULL for an update with data; sg_iovs NULL; NULL buffer with length;
        // iov_len > iov_buf_len; only zero-length iovs.
        assert_eq!(upd(&mut dk, 1, &mut good, null_mut()), -DER_INVAL);
        let mut s2 = d_sg_list_t { sg_nr: 1, sg_nr_out: 0, sg_iovs: null_mut() };
        assert_eq!(upd(&mut dk, 1, &mut good, &mut s2), -DER_INVAL);
        let mut iov2 = [d_iov_t { iov_buf: null_mut(), iov_buf_len: 16, iov_len: 16 }];
        let mut s2 = sgl(&mut iov2);
        assert_eq!(upd(&mut dk, 1, &mut good, &mut s2), -DER_INVAL);
        let mut iov2 = [d_iov_t::from_slice(&data)];
        iov2[0].iov_len = 17;
        let mut s2 = sgl(&mut iov2);
        assert_eq!(upd(&mut dk, 1, &mut good, &mut s2), -DER_INVAL);
        let mut iov2 = [d_iov_t::from_slice(&data[..0])];
        let mut s2 = sgl(&mut iov2);
        assert_eq!(upd(&mut dk, 1, &mut good, &mut s2), -DER_INVAL);

        // A fetch of an array with a size but no sgls.
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut good, null_mut(), null_mut(), null_mut()),
            -DER_INVAL
        );

        // Illegal conditional flags.
        assert_eq!(
            daos_obj_update(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, &mut dk, 1, &mut good, &mut sg, null_mut()),
            -DER_INVAL
        );
        assert_eq!(
            daos_obj_update(oh, DAOS_TX_NONE, DAOS_COND_DKEY_FETCH, &mut dk, 1, &mut good, &mut sg, null_mut()),
            -DER_INVAL
        );
        let mut out = [0u8; 16];
        let mut oiov = [d_iov_t::from_mut(&mut out)];
        let mut osg = sgl(&mut oiov);
        for f in
            [DAOS_COND_DKEY_INSERT, DAOS_COND_AKEY_UPDATE, DAOS_COND_PUNCH, DAOS_COND_PER_AKEY | DAOS_COND_AKEY_FETCH]
        {
            assert_eq!(
                daos_obj_fetch(oh, DAOS_TX_NONE, f, &mut dk, 1, &mut good, &mut osg, null_mut(), null_mut()),
                -DER_INVAL,
                "{f}"
            );
        }
        // A transaction handle other than DAOS_TX_NONE.
        assert_eq!(
            daos_obj_update(oh, daos_handle_t { cookie: 77 }, 0, &mut dk, 1, &mut good, &mut sg, null_mut()),
            -DER_NO_HDL
        );
        // Bad object handle.
        assert_eq!(
            daos_obj_update(DAOS_HDL_INVAL, DAOS_TX_NONE, 0, &mut dk, 1, &mut good, &mut sg, null_mut()),
            -DER_NO_HDL
        );
        assert_eq!(
            daos_obj_fetch(
                daos_handle_t { cookie: 12345 },
                DAOS_TX_NONE,
                0,
                &mut dk,
                1,
                &mut good,
                &mut osg,
                null_mut(),
                null_mut()
            ),
            -DER_NO_HDL
        );
    }
    // uint64 dkeys must be 8 bytes.
    let oh64 = c.open(c.oid(9, DAOS_OT_DKEY_UINT64, OC_S1), DAOS_OO_RW);
    assert_eq!(put(oh64, b"short", b"a", 0, b"x"), -DER_INVAL);
    assert_eq!(put(oh64, &7u64.to_ne_bytes(), b"a", 0, b"x"), 0);
    c.close(&[oh, oh64]);
}

#[test]
fn rec2big_before_io() {
    let c = setup("api-rec2big");
    let oh = c.obj(1);
    let data = [5u8; 8];
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 4)];
        // 4 records of 4 bytes need 16 bytes; the sgl has 8.
        let mut iod = array_iod(b"a", 4, &mut rx);
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), -DER_REC2BIG);
        // Nothing was written.
        let mut probe = array_iod(b"a", DAOS_REC_ANY, &mut rx);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut probe, null_mut(), null_mut(), null_mut()), 0);
        assert_eq!(probe.iod_size, 0);
        // Fetch: same rule on iov_buf_len.
        let mut out = [0u8; 8];
        let mut oiov = [d_iov_t::from_mut(&mut out)];
        let mut osg = sgl(&mut oiov);
        assert_eq!(
            daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut osg, null_mut(), null_mut()),
            -DER_REC2BIG
        );
        // Single value larger than its buffer.
        let mut sv = single_iod(b"s", 9);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut sv, &mut sg, null_mut()), -DER_REC2BIG);
    }
    c.close(&[oh]);
}

#[test]
fn no_perm_through_read_only_handles() {
    let c = setup("api-noperm");
    let oid = c.oid(1, DAOS_OT_MULTI_HASHED, OC_S1);
    let ro = c.open(oid, DAOS_OO_RO);
    assert_eq!(put(ro, b"d", b"a", 0, b"x"), -DER_NO_PERM);
    unsafe {
        assert_eq!(daos_obj_punch(ro, DAOS_TX_NONE, 0, null_mut()), -DER_NO_PERM);
        let mut dk = key(b"d");
        assert_eq!(daos_obj_punch_dkeys(ro, DAOS_TX_NONE, 0, 1, &mut dk, null_mut()), -DER_NO_PERM);
    }
    let mut buf = [0u8; 1];
    assert_eq!(get(ro, b"d", b"a", 0, &mut buf).rc, 0, "reads are allowed");
    // A read-only container handle refuses RW object opens.
    unsafe {
        let mut coh = DAOS_HDL_INVAL;
        assert_eq!(daos_cont_open2(c.poh, cs("api-noperm").as_ptr(), DAOS_COO_RO, &mut coh, null_mut(), null_mut()), 0);
        let mut oh = DAOS_HDL_INVAL;
        assert_eq!(daos_obj_open(coh, oid, DAOS_OO_RW, &mut oh, null_mut()), -DER_NO_PERM);
        assert_eq!(daos_cont_close(coh, null_mut()), 0);
    }
    c.close(&[ro]);
}

#[test]
fn punch_variants() {
    let c = setup("api-punch");
    let oh = c.obj(1);
    let mut buf = [0u8; 2];
    unsafe {
        // Absent targets: success, unless DAOS_COND_PUNCH.
        let mut dk = key(b"nope");
        assert_eq!(daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!(daos_obj_punch_dkeys(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, 1, &mut dk, null_mut()), -DER_NONEXIST);
        let mut ak = [key(b"a")];
        assert_eq!(daos_obj_punch_akeys(oh, DAOS_TX_NONE, 0, &mut dk, 1, ak.as_mut_ptr(), null_mut()), 0);
        assert_eq!(
            daos_obj_punch_akeys(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, &mut dk, 1, ak.as_mut_ptr(), null_mut()),
            -DER_NONEXIST
        );
        assert_eq!(daos_obj_punch(oh, DAOS_TX_NONE, 0, null_mut()), 0);
        // Only one dkey per call, refused at once even with an event.
        let mut two = [key(b"x"), key(b"y")];
        let mut ev = daos_event_t::default();
        assert_eq!(daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 2, two.as_mut_ptr(), &mut ev), -DER_INVAL);
        assert_eq!(daos_obj_punch_akeys(oh, DAOS_TX_NONE, 0, &mut dk, 0, ak.as_mut_ptr(), null_mut()), -DER_INVAL);

        assert_eq!(put(oh, b"d1", b"a", 0, b"11"), 0);
        assert_eq!(put(oh, b"d1", b"b", 0, b"22"), 0);
        assert_eq!(put(oh, b"d2", b"a", 0, b"33"), 0);
        let mut dk1 = key(b"d1");
        let mut akb = [key(b"b")];
        assert_eq!(
            daos_obj_punch_akeys(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, &mut dk1, 1, akb.as_mut_ptr(), null_mut()),
            0
        );
        assert_eq!(get(oh, b"d1", b"b", 0, &mut buf).iod_size, 0);
        assert_eq!(get(oh, b"d1", b"a", 0, &mut buf).iod_size, 1);
        assert_eq!(daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 1, &mut dk1, null_mut()), 0);
        assert_eq!(get(oh, b"d1", b"a", 0, &mut buf).iod_size, 0);
        assert_eq!(get(oh, b"d2", b"a", 0, &mut buf).iod_size, 1);
        assert_eq!(daos_obj_punch(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, null_mut()), 0);
        assert_eq!(get(oh, b"d2", b"a", 0, &mut buf).iod_size, 0);
        assert_eq!(daos_obj_punch(oh, DAOS_TX_NONE, DAOS_COND_PUNCH, null_mut()), -DER_NONEXIST);
        // A punched dkey can be written again.
        assert_eq!(put(oh, b"d1", b"a", 0, b"44"), 0);
        assert_eq!(get(oh, b"d1", b"a", 0, &mut buf).rc, 0);
        assert_eq!(&buf, b"44");
    }
    c.close(&[oh]);
}

#[test]
fn conditional_update_and_fetch() {
    let c = setup("api-cond");
    let oh = c.obj(1);
    unsafe {
        let data = *b"abcd";
        let mut dk = key(b"d");
        let mut rx = [recx(0, 4)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        let upd = |f: u64, iod: &mut daos_iod_t, sg: &mut d_sg_list_t, dk: &mut daos_key_t| {
            daos_obj_update(oh, DAOS_TX_NONE, f, dk, 1, iod, sg, null_mut())
        };
        assert_eq!(upd(DAOS_COND_DKEY_UPDATE, &mut iod, &mut sg, &mut dk), -DER_NONEXIST);
        assert_eq!(upd(DAOS_COND_DKEY_INSERT, &mut iod, &mut sg, &mut dk), 0);
        assert_eq!(upd(DAOS_COND_DKEY_INSERT, &mut iod, &mut sg, &mut dk), -DER_EXIST);
        assert_eq!(upd(DAOS_COND_AKEY_INSERT, &mut iod, &mut sg, &mut dk), -DER_EXIST);
        assert_eq!(upd(DAOS_COND_AKEY_UPDATE, &mut iod, &mut sg, &mut dk), 0);
        iod.iod_flags = DAOS_COND_AKEY_INSERT;
        assert_eq!(upd(DAOS_COND_PER_AKEY, &mut iod, &mut sg, &mut dk), -DER_EXIST);
        iod.iod_flags = 0;

        let mut out = [0u8; 4];
        let mut oiov = [d_iov_t::from_mut(&mut out)];
        let mut osg = sgl(&mut oiov);
        let mut nodk = key(b"zz");
        assert_eq!(
            daos_obj_fetch(
                oh,
                DAOS_TX_NONE,
                DAOS_COND_DKEY_FETCH,
                &mut nodk,
                1,
                &mut iod,
                &mut osg,
                null_mut(),
                null_mut()
            ),
            -DER_NONEXIST
        );
        let mut noak = array_iod(b"zz", 1, &mut rx);
        assert_eq!(
            daos_obj_fetch(
                oh,
                DAOS_TX_NONE,
                DAOS_COND_AKEY_FETCH,
                &mut dk,
                1,
                &mut noak,
                &mut osg,
                null_mut(),
                null_mut()
            ),
            -DER_NONEXIST
        );
        assert_eq!(
            daos_obj_fetch(
                oh,
                DAOS_TX_NONE,
                DAOS_COND_DKEY_FETCH | DAOS_COND_AKEY_FETCH,
                &mut dk,
                1,
                &mut iod,
                &mut osg,
                null_mut(),
                null_mut()
            ),
            0
        );
        assert_eq!(&out, b"abcd");

        // SV over an array akey: INVAL (type fixed by the first update).
        let mut sv = single_iod(b"a", 4);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut sv, &mut sg, null_mut()), -DER_INVAL);
    }
    c.close(&[oh]);
}

#[test]
fn query_key_max_recx() {
    let c = setup("api-query");
    let oh = c.obj(1);
    assert_eq!(put(oh, b"d", b"a", 0, &[1; 100]), 0);
    assert_eq!(put(oh, b"d", b"a", 4096, &[2; 1000]), 0);
    assert_eq!(put(oh, b"d", b"a", 200, &[3; 10]), 0);
    unsafe {
        let mut dk = key(b"d");
        let mut ak = key(b"a");
        let mut rx = daos_recx_t::default();
        let f = DAOS_GET_MAX | DAOS_GET_RECX;
        assert_eq!(daos_obj_query_key(oh, DAOS_TX_NONE, f, &mut dk, &mut ak, &mut rx, null_mut()), 0);
        assert_eq!(rx.rx_idx + rx.rx_nr, 5096);
        assert_eq!(
            daos_obj_query_key(oh, DAOS_TX_NONE, DAOS_GET_MIN | DAOS_GET_RECX, &mut dk, &mut ak, &mut rx, null_mut()),
            0
        );
        assert_eq!((rx.rx_idx, rx.rx_nr), (0, 100));
        // Absent dkey / akey: success with a zeroed recx, as DAOS 2.8 answers (its client
        // merges the shards' DER_NONEXIST into rc 0); the stale recx must not survive.
        let mut nodk = key(b"x");
        let mut noak = key(b"x");
        for (d, a) in [(&mut nodk, &mut ak), (&mut dk, &mut noak)] {
            rx = recx(7, 9);
            assert_eq!(daos_obj_query_key(oh, DAOS_TX_NONE, f, d, a, &mut rx, null_mut()), 0);
            assert_eq!((rx.rx_idx, rx.rx_nr), (0, 0));
        }
        // Zeroed even when the query is rejected.
        rx = recx(7, 9);
        assert_eq!(
            daos_obj_query_key(oh, DAOS_TX_NONE, DAOS_GET_RECX, &mut dk, &mut ak, &mut rx, null_mut()),
            -DER_INVAL
        );
        assert_eq!((rx.rx_idx, rx.rx_nr), (0, 0));
        // Flag rules.
        for bad in [
            DAOS_GET_RECX,
            DAOS_GET_MAX | DAOS_GET_MIN | DAOS_GET_RECX,
            DAOS_GET_MAX,
            DAOS_GET_MAX | DAOS_GET_DKEY,
            DAOS_GET_MAX | DAOS_GET_AKEY,
        ] {
            assert_eq!(
                daos_obj_query_key(oh, DAOS_TX_NONE, bad, &mut dk, &mut ak, &mut rx, null_mut()),
                -DER_INVAL,
                "{bad}"
            );
        }
        assert_eq!(daos_obj_query_key(oh, DAOS_TX_NONE, f, &mut dk, &mut ak, null_mut(), null_mut()), -DER_INVAL);
        assert_eq!(daos_obj_query_key(oh, DAOS_TX_NONE, f, &mut dk, null_mut(), &mut rx, null_mut()), -DER_INVAL);
        assert_eq!(
            daos_obj_query_key(DAOS_HDL_INVAL, DAOS_TX_NONE, f, &mut dk, &mut ak, &mut rx, null_mut()),
            -DER_NO_HDL
        );
        // A punched range at the end shrinks the answer.
        let mut prx = [recx(4096, 1000)];
        let mut iod = array_iod(b"a", 0, &mut prx);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), null_mut()), 0);
        assert_eq!(daos_obj_query_key(oh, DAOS_TX_NONE, f, &mut dk, &mut ak, &mut rx, null_mut()), 0);
        assert_eq!(rx.rx_idx + rx.rx_nr, 210);
    }
    // GET_DKEY on an object with uint64 dkeys.
    let o64 = c.open(c.oid(2, DAOS_OT_DKEY_UINT64, OC_S1), DAOS_OO_RW);
    for d in [5u64, 42, 17] {
        assert_eq!(put(o64, &d.to_ne_bytes(), b"0", 0, &[0; 10]), 0);
    }
    unsafe {
        let mut out = [0u8; 8];
        let mut dk = d_iov_t::from_mut(&mut out);
        let mut ak = key(b"0");
        let mut rx = daos_recx_t::default();
        let f = DAOS_GET_MAX | DAOS_GET_DKEY | DAOS_GET_RECX;
        assert_eq!(daos_obj_query_key(o64, DAOS_TX_NONE, f, &mut dk, &mut ak, &mut rx, null_mut()), 0);
        assert_eq!(u64::from_ne_bytes(out), 42);
        assert_eq!(dk.iov_len, 8);
        assert_eq!(rx.rx_idx + rx.rx_nr, 10);
        let mut dk = d_iov_t::from_mut(&mut out);
        assert_eq!(
            daos_obj_query_key(
                o64,
                DAOS_TX_NONE,
                DAOS_GET_MIN | DAOS_GET_DKEY,
                &mut dk,
                null_mut(),
                null_mut(),
                null_mut()
            ),
            0
        );
        assert_eq!(u64::from_ne_bytes(out), 5);
    }
    // GET_DKEY on an object with no dkey: success, the dkey left empty.
    let empty = c.open(c.oid(3, DAOS_OT_DKEY_UINT64, OC_S1), DAOS_OO_RW);
    unsafe {
        let mut out = [0u8; 8];
        let mut dk = d_iov_t::from_mut(&mut out);
        dk.iov_len = 8;
        assert_eq!(
            daos_obj_query_key(
                empty,
                DAOS_TX_NONE,
                DAOS_GET_MAX | DAOS_GET_DKEY,
                &mut dk,
                null_mut(),
                null_mut(),
                null_mut()
            ),
            0
        );
        assert_eq!(dk.iov_len, 0);
    }
    c.close(&[oh, o64, empty]);
}

// ---------------------------------------------------------------------------------------------
// Events

#[test]
fn async_validation_error_in_ev_error() {
    let c = setup("api-async-err");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 1)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        // sgls NULL with data: INVAL, reported through the event.
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), &mut *ev), 0);
        assert_eq!(poll1(eqh, -1), &mut *ev as *mut _);
        assert_eq!(ev.ev_error, -DER_INVAL);
        // Bad handle, same path; the event is reusable once reaped.
        assert_eq!(daos_obj_update(DAOS_HDL_INVAL, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), &mut *ev), 0);
        assert_eq!(poll1(eqh, -1), &mut *ev as *mut _);
        assert_eq!(ev.ev_error, -DER_NO_HDL);
        // Pool calls too.
        let mut poh = DAOS_HDL_INVAL;
        assert_eq!(daos_pool_connect2(cs("nosuch").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), &mut *ev), 0);
        assert_eq!(poll1(eqh, -1), &mut *ev as *mut _);
        assert_eq!(ev.ev_error, -DER_NONEXIST);
        // An event never initialised is refused by the call itself.
        let mut raw = daos_event_t::default();
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, null_mut(), &mut raw), -DER_INVAL);
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn async_io_completes_only_when_polled() {
    let c = setup("api-async-poll");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    let data = vec![0xabu8; 4096];
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 4096)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, &mut *ev), 0);
        std::thread::sleep(Duration::from_millis(30));
        // Not completed: nothing stored yet, the event is busy, abort is a no-op.
        let mut buf = [0u8; 1];
        assert_eq!(get(oh, b"d", b"a", 0, &mut buf).iod_size, 0);
        assert_eq!(daos_event_fini(&mut *ev), -DER_BUSY);
        assert_eq!(daos_event_abort(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), -DER_BUSY);
        // Reusing a running event: the call returns 0, ev_error is clobbered (as in DAOS).
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, &mut *ev), 0);
        assert_eq!(ev.ev_error, -DER_NO_PERM);
        // Poll: completes now.
        assert_eq!(poll1(eqh, -1), &mut *ev as *mut _);
        assert_eq!(ev.ev_error, 0);
        assert_eq!(get(oh, b"d", b"a", 4095, &mut buf).iod_size, 1);
        assert_eq!(daos_event_abort(&mut *ev), -DER_NO_PERM);

        // An async fetch leaves the buffer alone until polled.
        let mut out = vec![0u8; 4096];
        let mut oiov = [d_iov_t::from_mut(&mut out)];
        let mut osg = sgl(&mut oiov);
        let mut iod = array_iod(b"a", 1, &mut rx);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut osg, null_mut(), &mut *ev), 0);
        std::thread::sleep(Duration::from_millis(10));
        assert!(out.iter().all(|b| std::ptr::read_volatile(b) == 0));
        let mut flag = false;
        assert_eq!(daos_event_test(&mut *ev, 0, &mut flag), 0);
        assert!(flag, "event_test reaps it");
        assert_eq!(ev.ev_error, 0);
        assert_eq!(out, data);
        assert_eq!(oiov[0].iov_len, 4096);
        // Reaped: nothing left to poll.
        assert!(poll1(eqh, 0).is_null());
        assert_eq!(daos_event_fini(&mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn eq_poll_argument_rules_and_timeouts() {
    assert_eq!(daos_init(), 0);
    let eqh = eq_create();
    let mut out = [null_mut::<daos_event_t>(); 4];
    unsafe {
        assert_eq!(daos_eq_poll(eqh, 0, 0, 0, out.as_mut_ptr()), -DER_INVAL);
        assert_eq!(daos_eq_poll(eqh, 0, 0, 4, null_mut()), -DER_INVAL);
        assert_eq!(daos_eq_poll(daos_handle_t { cookie: 999 }, 0, 0, 4, out.as_mut_ptr()), -DER_NONEXIST);
        assert_eq!(daos_eq_poll(DAOS_HDL_INVAL, 0, 0, 4, out.as_mut_ptr()), -DER_NONEXIST);
        // wait_running: returns at once when nothing is in flight, even with WAIT.
        let t = Instant::now();
        assert_eq!(daos_eq_poll(eqh, 1, DAOS_EQ_WAIT, 4, out.as_mut_ptr()), 0);
        assert!(t.elapsed() < Duration::from_millis(500));
        // Timeouts are in microseconds.
        let t = Instant::now();
        assert_eq!(daos_eq_poll(eqh, 0, 30_000, 4, out.as_mut_ptr()), 0);
        let e = t.elapsed();
        assert!(e >= Duration::from_millis(29) && e < Duration::from_secs(2), "{e:?}");
        assert_eq!(daos_eq_poll(eqh, 0, DAOS_EQ_NOWAIT, 4, out.as_mut_ptr()), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), -DER_NONEXIST);
        assert_eq!(daos_eq_create(null_mut()), -DER_INVAL);
        let mut ev = daos_event_t::default();
        assert_eq!(daos_event_init(&mut ev, eqh, null_mut()), -DER_NONEXIST, "destroyed EQ");
        assert_eq!(daos_event_fini(&mut ev), -DER_INVAL, "never initialised");
        let mut flag = false;
        assert_eq!(daos_event_test(&mut ev, 0, &mut flag), -DER_INVAL);
    }
    assert_eq!(daos_fini(), 0);
}

#[test]
fn poll_returns_many_and_blocks_until_one() {
    let c = setup("api-many");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut evs: Vec<Box<daos_event_t>> = (0..8).map(|_| event(eqh)).collect();
    let data = [7u8; 64];
    let mut dks: Vec<Vec<u8>> = (0..8).map(|i| format!("d{i}").into_bytes()).collect();
    let mut dkeys: Vec<daos_key_t> = dks.iter_mut().map(|d| key(d)).collect();
    let mut rxs: Vec<[daos_recx_t; 1]> = (0..8).map(|_| [recx(0, 64)]).collect();
    let mut iods: Vec<daos_iod_t> = rxs.iter_mut().map(|r| array_iod(b"a", 1, r)).collect();
    let mut iovs: Vec<[d_iov_t; 1]> = (0..8).map(|_| [d_iov_t::from_slice(&data)]).collect();
    let mut sgls: Vec<d_sg_list_t> = iovs.iter_mut().map(|i| sgl(i)).collect();
    unsafe {
        for i in 0..8 {
            assert_eq!(
                daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dkeys[i], 1, &mut iods[i], &mut sgls[i], &mut *evs[i]),
                0
            );
        }
        let mut out = [null_mut::<daos_event_t>(); 5];
        assert_eq!(daos_eq_poll(eqh, 1, DAOS_EQ_WAIT, 5, out.as_mut_ptr()), 5);
        assert_eq!(daos_eq_poll(eqh, 1, DAOS_EQ_WAIT, 5, out.as_mut_ptr()), 3);
        assert_eq!(daos_eq_poll(eqh, 1, DAOS_EQ_WAIT, 5, out.as_mut_ptr()), 0);
        assert!(evs.iter().all(|e| e.ev_error == 0));
        // A poller blocked with WAIT wakes when an event is launched from another thread.
        let h = std::thread::spawn(move || {
            let mut out = [null_mut::<daos_event_t>(); 1];
            let rc = daos_eq_poll(eqh, 0, DAOS_EQ_WAIT, 1, out.as_mut_ptr());
            (rc, out[0] as usize)
        });
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dkeys[0], 1, &mut iods[0], &mut sgls[0], &mut *evs[0]), 0);
        let (rc, ev) = h.join().unwrap();
        assert_eq!((rc, ev), (1, &mut *evs[0] as *mut daos_event_t as usize));
        for e in &mut evs {
            assert_eq!(daos_event_fini(&mut **e), 0);
        }
        assert_eq!(daos_eq_destroy(eqh, 0), 0);
    }
    c.close(&[oh]);
}

#[test]
fn events_without_eq_use_event_test() {
    let c = setup("api-noeq");
    let oh = c.obj(1);
    let mut ev = event(DAOS_HDL_INVAL);
    let data = *b"hello";
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 5)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_slice(&data)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, &mut *ev), 0);
        let mut flag = false;
        assert_eq!(daos_event_test(&mut *ev, DAOS_EQ_WAIT, &mut flag), 0);
        assert!(flag);
        assert_eq!(ev.ev_error, 0);
        assert_eq!(daos_event_fini(&mut *ev), 0);
        // Parent events are not modelled.
        let mut parent = event(DAOS_HDL_INVAL);
        let mut child = daos_event_t::default();
        assert_eq!(daos_event_init(&mut child, DAOS_HDL_INVAL, &mut *parent), -DER_NOSYS);
    }
    let mut out = [0u8; 5];
    assert_eq!(get(oh, b"d", b"a", 0, &mut out).rc, 0);
    assert_eq!(&out, b"hello");
    c.close(&[oh]);
}

#[test]
fn eq_destroy_force_cancels() {
    let c = setup("api-force");
    let oh = c.obj(1);
    let eqh = eq_create();
    let mut ev = event(eqh);
    let mut buf = [0u8; 4];
    unsafe {
        let mut dk = key(b"d");
        let mut rx = [recx(0, 4)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_mut(&mut buf)];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), &mut *ev), 0);
        assert_eq!(daos_eq_destroy(eqh, 0), -DER_BUSY);
        assert_eq!(daos_eq_destroy(eqh, DAOS_EQ_DESTROY_FORCE), 0);
        assert_eq!(ev.ev_error, -DER_CANCELED);
        assert_eq!(daos_event_fini(&mut *ev), 0);
    }
    c.close(&[oh]);
}

#[test]
fn two_handles_share_a_container() {
    let a = setup("api-shared");
    let b = setup("api-shared");
    let oid = a.oid(77, DAOS_OT_ARRAY_BYTE, OC_SX);
    let oa = a.open(oid, DAOS_OO_RW);
    let ob = b.open(oid, DAOS_OO_RO);
    let dk = 3u64.to_ne_bytes();
    assert_eq!(put(oa, &dk, b"0", 10, b"shared"), 0);
    let mut out = [0u8; 6];
    assert_eq!(get(ob, &dk, b"0", 10, &mut out).rc, 0);
    assert_eq!(&out, b"shared");
    a.close(&[oa]);
    b.close(&[ob]);
}

#[test]
fn big_records_roundtrip() {
    let c = setup("api-big");
    let oh = c.obj(1);
    const MIB: usize = 1 << 20;
    // 1..8 MiB blocks at increasing offsets, then an in-place overwrite.
    let mut off = 0u64;
    let mut blocks = Vec::new();
    for (i, mib) in [1usize, 8, 3, 8].into_iter().enumerate() {
        let block: Vec<u8> = (0..mib * MIB).map(|j| (j as u8).wrapping_mul(31).wrapping_add(i as u8)).collect();
        assert_eq!(put(oh, b"kv", b"blocks", off, &block), 0);
        blocks.push((off, block));
        off += (mib * MIB) as u64 + 4096;
    }
    let over = vec![0x5au8; 2 * MIB];
    assert_eq!(put(oh, b"kv", b"blocks", blocks[1].0 + 123, &over), 0);
    blocks[1].1[123..123 + 2 * MIB].copy_from_slice(&over);
    for (off, block) in &blocks {
        let mut out = vec![0u8; block.len()];
        let g = get(oh, b"kv", b"blocks", *off, &mut out);
        assert_eq!((g.rc, g.iod_size, g.iov_len), (0, 1, block.len()));
        assert!(out == *block);
    }
    // Sparse: a write far away costs one chunk, not the gap.
    assert_eq!(put(oh, b"kv", b"sparse", 1 << 50, b"far"), 0);
    let mut out = [0u8; 3];
    assert_eq!(get(oh, b"kv", b"sparse", 1 << 50, &mut out).rc, 0);
    assert_eq!(&out, b"far");
    c.close(&[oh]);
}

#[test]
fn multithread_stress_own_eqs() {
    let c = setup("api-stress");
    let coh = c.coh;
    const THREADS: usize = 4;
    const OPS: usize = 200;
    const DEPTH: usize = 8;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || unsafe {
                let mut oid = daos_obj_id_t { lo: 1000 + t as u64, hi: 0 };
                assert_eq!(daos_obj_generate_oid2(coh, &mut oid, DAOS_OT_MULTI_HASHED, OC_S1, 0, 0), 0);
                let mut oh = DAOS_HDL_INVAL;
                assert_eq!(daos_obj_open(coh, oid, DAOS_OO_RW, &mut oh, null_mut()), 0);
                let eqh = eq_create();
                // Per slot: event + descriptors + buffer, kept alive until reaped.
                struct Slot {
                    ev: Box<daos_event_t>,
                    dk: Vec<u8>,
                    dkey: daos_key_t,
                    rx: [daos_recx_t; 2],
                    iod: daos_iod_t,
                    buf: Vec<u8>,
                    iov: [d_iov_t; 1],
                    sg: d_sg_list_t,
                    op: usize,
                }
                let mut slots: Vec<Box<Slot>> = (0..DEPTH)
                    .map(|_| {
                        Box::new(Slot {
                            ev: event(eqh),
                            dk: Vec::new(),
                            dkey: d_iov_t::default(),
                            rx: [recx(0, 0); 2],
                            iod: daos_iod_t::default(),
                            buf: Vec::new(),
                            iov: [d_iov_t::default()],
                            sg: d_sg_list_t::default(),
                            op: 0,
                        })
                    })
                    .collect();
                let pattern =
                    |op: usize, len: usize| -> Vec<u8> { (0..len).map(|j| (op * 7 + j * 13 + t) as u8).collect() };
                let len_of = |op: usize| 1000 + (op % 5) * 3000;
                let submit = |s: &mut Slot, op: usize, write: bool| {
                    let len = len_of(op);
                    s.op = op;
                    s.dk = format!("t{t}-op{op}").into_bytes();
                    s.dkey = key(&s.dk);
                    // Two recxs per iod, written from one buffer.
                    s.rx = [recx(0, (len / 2) as u64), recx(100_000, (len - len / 2) as u64)];
                    s.iod = array_iod(b"a", 1, &mut s.rx);
                    s.buf = if write { pattern(op, len) } else { vec![0; len] };
                    s.iov = [if write { d_iov_t::from_slice(&s.buf) } else { d_iov_t::from_mut(&mut s.buf) }];
                    s.sg = sgl(&mut s.iov);
                    let rc = if write {
                        daos_obj_update(oh, DAOS_TX_NONE, 0, &mut s.dkey, 1, &mut s.iod, &mut s.sg, &mut *s.ev)
                    } else {
                        daos_obj_fetch(
                            oh,
                            DAOS_TX_NONE,
                            0,
                            &mut s.dkey,
                            1,
                            &mut s.iod,
                            &mut s.sg,
                            null_mut(),
                            &mut *s.ev,
                        )
                    };
                    assert_eq!(rc, 0);
                };
                for write in [true, false] {
                    let mut next = 0;
                    let mut done = 0;
                    let mut free: Vec<usize> = (0..DEPTH).collect();
                    while done < OPS {
                        while next < OPS {
                            let Some(i) = free.pop() else { break };
                            submit(&mut slots[i], next, write);
                            next += 1;
                        }
                        let mut out = [null_mut::<daos_event_t>(); DEPTH];
                        let n = daos_eq_poll(eqh, 0, DAOS_EQ_WAIT, DEPTH as u32, out.as_mut_ptr());
                        assert!(n > 0);
                        for &e in &out[..n as usize] {
                            let i = slots.iter().position(|s| std::ptr::eq(&*s.ev, e)).unwrap();
                            let s = &slots[i];
                            assert_eq!(s.ev.ev_error, 0);
                            if !write {
                                assert_eq!(s.iod.iod_size, 1);
                                assert!(s.buf == pattern(s.op, len_of(s.op)), "data of op {}", s.op);
                            }
                            free.push(i);
                            done += 1;
                        }
                    }
                }
                for s in &mut slots {
                    assert_eq!(daos_event_fini(&mut *s.ev), 0);
                }
                assert_eq!(daos_eq_destroy(eqh, 0), 0);
                assert_eq!(daos_obj_close(oh, null_mut()), 0);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    c.close(&[]);
}

#[test]
fn container_attributes() {
    let c = setup("api-attr");
    let name = cs("app.oid");
    let names = [name.as_ptr()];
    let value = *b"0123456789abcdef";
    unsafe {
        let mut buf = [0u8; 16];
        let mut sizes = [buf.len()];
        let bufs = [buf.as_mut_ptr().cast::<std::ffi::c_void>()];
        assert_eq!(
            daos_cont_get_attr(c.coh, 1, names.as_ptr(), bufs.as_ptr(), sizes.as_mut_ptr(), null_mut()),
            -DER_NONEXIST
        );

        let vals = [value.as_ptr().cast::<std::ffi::c_void>()];
        assert_eq!(daos_cont_set_attr(c.coh, 1, names.as_ptr(), vals.as_ptr(), [value.len()].as_ptr(), null_mut()), 0);
        assert_eq!(daos_cont_get_attr(c.coh, 1, names.as_ptr(), bufs.as_ptr(), sizes.as_mut_ptr(), null_mut()), 0);
        assert_eq!((buf, sizes[0]), (value, 16));

        // A short buffer is truncated; the size says how long the value is. NULL buffers: sizes only.
        let mut short = [0u8; 4];
        let mut sizes = [short.len()];
        let bufs = [short.as_mut_ptr().cast::<std::ffi::c_void>()];
        assert_eq!(daos_cont_get_attr(c.coh, 1, names.as_ptr(), bufs.as_ptr(), sizes.as_mut_ptr(), null_mut()), 0);
        assert_eq!((short, sizes[0]), (*b"0123", 16));
        let mut sizes = [0usize];
        assert_eq!(daos_cont_get_attr(c.coh, 1, names.as_ptr(), null(), sizes.as_mut_ptr(), null_mut()), 0);
        assert_eq!(sizes[0], 16);

        // Validation: n, NULL arrays, empty names, zero-size values; and a bad handle.
        assert_eq!(
            daos_cont_set_attr(c.coh, 0, names.as_ptr(), vals.as_ptr(), [16usize].as_ptr(), null_mut()),
            -DER_INVAL
        );
        assert_eq!(
            daos_cont_set_attr(c.coh, 1, names.as_ptr(), vals.as_ptr(), [0usize].as_ptr(), null_mut()),
            -DER_INVAL
        );
        let empty = cs("");
        assert_eq!(
            daos_cont_set_attr(c.coh, 1, [empty.as_ptr()].as_ptr(), vals.as_ptr(), [16usize].as_ptr(), null_mut()),
            -DER_INVAL
        );
        assert_eq!(
            daos_cont_set_attr(
                daos_handle_t { cookie: 999_999 },
                1,
                names.as_ptr(),
                vals.as_ptr(),
                [16usize].as_ptr(),
                null_mut()
            ),
            -DER_NO_HDL
        );
    }
    c.close(&[]);
}

/// `get` inside a transaction.
fn tx_get(oh: daos_handle_t, th: daos_handle_t, dkey: &[u8], akey: &[u8], buf: &mut [u8]) -> Got {
    let mut dk = key(dkey);
    let mut rx = [recx(0, buf.len() as u64)];
    let mut iod = array_iod(akey, 1, &mut rx);
    let mut iov = [d_iov_t::from_mut(buf)];
    let mut sg = sgl(&mut iov);
    let rc = unsafe { daos_obj_fetch(oh, th, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()) };
    Got { rc, iod_size: iod.iod_size, sg_nr_out: sg.sg_nr_out, iov_len: iov[0].iov_len }
}

#[test]
fn a_transaction_punches_only_what_it_read_unchanged() {
    let c = setup("api-tx");
    let oh = c.obj(1);
    let mut buf = [0u8; 2];
    unsafe {
        assert_eq!(put(oh, b"k", b"a", 0, b"11"), 0);
        // No conflict: read, punch, commit: gone, and only at the commit.
        let mut th = DAOS_HDL_INVAL;
        assert_eq!(daos_tx_open(c.coh, &mut th, 0, null_mut()), 0);
        assert_eq!(tx_get(oh, th, b"k", b"a", &mut buf).rc, 0);
        assert_eq!(&buf, b"11");
        let mut dk = key(b"k");
        assert_eq!(daos_obj_punch_dkeys(oh, th, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!(get(oh, b"k", b"a", 0, &mut buf).iod_size, 1, "a transaction's punch waits for the commit");
        assert_eq!(daos_tx_commit(th, null_mut()), 0);
        assert_eq!(get(oh, b"k", b"a", 0, &mut buf).iod_size, 0);
        assert_eq!(daos_tx_commit(th, null_mut()), -DER_NO_PERM, "committed once");
        assert_eq!(daos_tx_close(th, null_mut()), 0);
        assert_eq!(daos_tx_close(th, null_mut()), -DER_NO_HDL);

        // A conflict: the key is written after the transaction read it: the commit restarts and
        // punches nothing; after a restart the transaction reads the newer value and may punch.
        assert_eq!(put(oh, b"k", b"a", 0, b"22"), 0);
        let mut th = DAOS_HDL_INVAL;
        assert_eq!(daos_tx_open(c.coh, &mut th, 0, null_mut()), 0);
        assert_eq!(tx_get(oh, th, b"k", b"a", &mut buf).rc, 0);
        assert_eq!(put(oh, b"k", b"a", 0, b"33"), 0);
        assert_eq!(daos_obj_punch_dkeys(oh, th, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!(daos_tx_commit(th, null_mut()), -DER_TX_RESTART);
        assert_eq!(get(oh, b"k", b"a", 0, &mut buf).rc, 0);
        assert_eq!(&buf, b"33", "the conflicting write survives");
        assert_eq!(daos_tx_restart(th, null_mut()), 0);
        assert_eq!(tx_get(oh, th, b"k", b"a", &mut buf).rc, 0);
        assert_eq!(&buf, b"33");
        assert_eq!(daos_obj_punch_dkeys(oh, th, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!(daos_tx_commit(th, null_mut()), 0);
        assert_eq!(get(oh, b"k", b"a", 0, &mut buf).iod_size, 0);
        assert_eq!(daos_tx_close(th, null_mut()), 0);

        // A key absent when read and written before the commit is a conflict too.
        let mut th = DAOS_HDL_INVAL;
        assert_eq!(daos_tx_open(c.coh, &mut th, 0, null_mut()), 0);
        assert_eq!(tx_get(oh, th, b"k", b"a", &mut buf).iod_size, 0);
        assert_eq!(put(oh, b"k", b"a", 0, b"44"), 0);
        assert_eq!(daos_obj_punch_dkeys(oh, th, 0, 1, &mut dk, null_mut()), 0);
        assert_eq!(daos_tx_commit(th, null_mut()), -DER_TX_RESTART);
        assert_eq!(get(oh, b"k", b"a", 0, &mut buf).iod_size, 1);

        // Not modelled: updates inside a transaction. Not a transaction: NO_HDL.
        let mut rx = [recx(0, 2)];
        let mut iod = array_iod(b"a", 1, &mut rx);
        let mut iov = [d_iov_t::from_slice(b"55")];
        let mut sg = sgl(&mut iov);
        assert_eq!(daos_obj_update(oh, th, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()), -DER_NOTSUPPORTED);
        assert_eq!(daos_tx_close(th, null_mut()), 0);
        assert_eq!(tx_get(oh, c.coh, b"k", b"a", &mut buf).rc, -DER_NO_HDL);
    }
    c.close(&[oh]);
}
