// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0

//! KVBM's object tier against our plugin installed as OBJ, through nixl-sys (see src/lib.rs for
//! which Dynamo lines each step follows). Run by ci/kvbm.sh with --test-threads=1.

use std::time::Duration;

use nixl_daos_kvbm::*;

const BATCH: usize = 8; // blocks per batch: 32 MiB, 512 descriptors when layer-separate

fn obj_agent(tag: &str) -> (Agent, nixl_sys::Backend, String) {
    let bucket = unique_bucket(tag);
    let (agent, backend) = agent_with_obj(&format!("kvbm-{tag}"), &s3_params(&bucket))
        .unwrap_or_else(|e| panic!("create_backend(\"OBJ\", S3 params of bucket {bucket}) failed: {e:?}"));
    (agent, backend, bucket)
}

/// Registers every allocation of `layout` as DRAM (KVBM registers each layout allocation once).
fn register(agent: &Agent, layout: &Layout) -> Vec<nixl_sys::RegistrationHandle> {
    layout.buffers().iter().map(|b| agent.register_memory(&b.desc(), None).expect("DRAM registration")).collect()
}

fn assert_done(r: &BatchResult, what: &str) {
    assert_eq!(r.outcome, Outcome::Done, "{what}");
    assert!(r.per_key.iter().all(|k| k.is_ok()), "{what}");
}

#[test]
fn installed_as_obj_with_s3_params_only() {
    let (agent, _backend, bucket) = obj_agent("plugins");
    let plugins: Vec<String> = agent.get_available_plugins().unwrap().iter().map(|s| s.unwrap().to_string()).collect();
    assert_eq!(plugins, vec!["OBJ".to_string()], "only our plugin, under the name OBJ");
    // The backend answers to OBJ and registers OBJ and DRAM (what KVBM's object tier needs).
    let backend = agent.get_backend("OBJ").expect("the OBJ backend");
    // (Its params are not read: iterating get_backend_params' Params in nixl-sys 1.3.2 against
    // this NIXL yields garbage strings.)
    let (mems, _params) = agent.get_backend_params(&backend).unwrap();
    let mems: Vec<MemType> = mems.iter().map(|m| m.unwrap()).collect();
    assert!(mems.contains(&MemType::Object) && mems.contains(&MemType::Dram), "{mems:?}");
    println!(
        "installed as OBJ: plugins {plugins:?}, mem types {mems:?}, created from S3 params only (bucket {bucket})"
    );
}

fn round_trip(src: &mut Layout, dst: &mut Layout, tag: &str) {
    let (agent, _backend, _) = obj_agent(tag);
    let _src_regs = register(&agent, src);
    let _dst_regs = register(&agent, dst);
    let keys = sequence_hashes(BATCH);
    let src_ids: Vec<usize> = (0..BATCH).collect();
    for (i, k) in keys.iter().enumerate() {
        src.fill_block(i, *k as u64 ^ 0x5eed);
    }
    let sim = Sim::open();
    let updates = sim.as_ref().map(|s| s.counter("update"));
    let put = execute_obj_transfer(&agent, XferOp::Write, &keys, src, &src_ids, KVBM_POLL);
    assert_done(&put, "offload");
    let per_block = if src.is_fully_contiguous() { 1 } else { NUM_LAYERS * OUTER_DIM };
    assert_eq!(put.descriptors, BATCH * per_block);
    if let (Some(s), Some(u0)) = (&sim, updates) {
        // Each 4 MiB object is one DAOS update however many descriptors it came in (one chunk).
        assert_eq!(s.counter("update") - u0, BATCH as u64, "one DAOS update RPC per block");
    }
    // Onboard into other blocks of another layout, in another order.
    let dst_ids: Vec<usize> = (0..BATCH).rev().collect();
    for b in 0..dst.num_blocks() {
        dst.set_block(b, 0xEE);
    }
    let get = execute_obj_transfer(&agent, XferOp::Read, &keys, dst, &dst_ids, KVBM_POLL);
    assert_done(&get, "onboard");
    for i in 0..BATCH {
        assert!(src.block_bytes(src_ids[i]) == dst.block_bytes(dst_ids[i]), "block {i}: onboarded bytes differ");
    }
    println!(
        "{tag}: {BATCH} blocks x {} MiB, {} descriptors per batch, one request per batch: offload {:?} ({} polls), onboard {:?} ({} polls), every byte verified",
        BLOCK >> 20,
        put.descriptors,
        put.elapsed,
        put.polls,
        get.elapsed,
        get.polls
    );
}

#[test]
fn layer_separate_offload_onboard() {
    round_trip(&mut Layout::layer_separate(BATCH), &mut Layout::layer_separate(BATCH), "layer-separate");
}

#[test]
fn fully_contiguous_offload_onboard() {
    round_trip(&mut Layout::fully_contiguous(BATCH), &mut Layout::fully_contiguous(BATCH), "fully-contiguous");
}

/// The object's bytes are in (layer, outer) order in both layouts: a block offloaded from one
/// layout onboards into the other.
#[test]
fn layer_separate_to_fully_contiguous() {
    round_trip(&mut Layout::layer_separate(BATCH), &mut Layout::fully_contiguous(BATCH), "cross-layout");
}

/// A batch with a block that was never offloaded: KVBM fails every key of the batch (it cannot
/// tell which key failed: nixl-sys's C API folds every NIXL error into NIXL_CAPI_ERROR_BACKEND,
/// and a request has one status), and the missing block's buffer keeps what it held.
fn missing_block(poll: Duration) -> (Outcome, Vec<u8>, bool) {
    let (agent, _backend, _) = obj_agent("missing");
    let mut src = Layout::layer_separate(2);
    let mut dst = Layout::layer_separate(3);
    let _r1 = register(&agent, &src);
    let _r2 = register(&agent, &dst);
    let keys = sequence_hashes(3);
    src.fill_block(0, 11);
    src.fill_block(1, 12);
    let put = execute_obj_transfer(&agent, XferOp::Write, &[keys[0], keys[2]], &src, &[0, 1], poll);
    assert_done(&put, "offload of the two present blocks");
    // Stale candidates: the destination slot of the missing block held another block's bytes.
    dst.fill_block(1, 99);
    let before = dst.block_bytes(1);
    dst.set_block(0, 0xEE);
    dst.set_block(2, 0xEE);
    let get = execute_obj_transfer(&agent, XferOp::Read, &keys, &dst, &[0, 1, 2], poll);
    assert_ne!(get.outcome, Outcome::Done, "a batch with a never-offloaded block must fail");
    assert!(get.per_key.iter().all(|k| k.is_err()), "KVBM fails every key of a failed batch");
    assert!(dst.block_bytes(1) == before, "the missing block's buffer changed: stale or foreign bytes returned");
    // The present blocks' buffers: their bytes may or may not have landed when the batch is
    // reported failed (KVBM discards them either way); only the missing block's must be untouched.
    let present_landed = dst.block_bytes(0) == src.block_bytes(0) && dst.block_bytes(2) == src.block_bytes(1);
    // The agent stays usable: the present blocks onboard in a batch of their own.
    let ok = execute_obj_transfer(&agent, XferOp::Read, &[keys[0], keys[2]], &dst, &[0, 2], poll);
    assert_done(&ok, "onboard of the present blocks after the failed batch");
    assert!(dst.block_bytes(0) == src.block_bytes(0) && dst.block_bytes(2) == src.block_bytes(1));
    // A batch of the missing block alone fails the same way.
    let alone = execute_obj_transfer(&agent, XferOp::Read, &keys[1..2], &dst, &[1], poll);
    assert_eq!(std::mem::discriminant(&alone.outcome), std::mem::discriminant(&get.outcome));
    assert!(dst.block_bytes(1) == before);
    println!(
        "never-offloaded block (poll {poll:?}): {:?} after {} polls; all {} keys reported failed; its buffer untouched; the present blocks' bytes {} in the failed batch",
        get.outcome,
        get.polls,
        keys.len(),
        if present_landed { "had landed" } else { "had not (all) landed" }
    );
    (get.outcome, dst.block_bytes(1), present_landed)
}

#[test]
fn never_offloaded_block_fails_and_returns_no_stale_bytes() {
    missing_block(KVBM_POLL);
}

#[test]
fn query_mem_reports_present_and_absent_blocks() {
    let (agent, backend, bucket) = obj_agent("query");
    let mut src = Layout::fully_contiguous(3);
    let _r = register(&agent, &src);
    let keys = sequence_hashes(5);
    for i in 0..3 {
        src.fill_block(i, i as u64 + 1);
    }
    assert_eq!(has_blocks(&agent, &backend, &keys).unwrap(), vec![None; 5], "nothing offloaded yet");
    let put = execute_obj_transfer(&agent, XferOp::Write, &keys[..3], &src, &[0, 1, 2], KVBM_POLL);
    assert_done(&put, "offload");
    let got = has_blocks(&agent, &backend, &keys).unwrap();
    assert_eq!(got, vec![Some(BLOCK), Some(BLOCK), Some(BLOCK), None, None]);
    // The bucket named the container: a DAOS-style backend on container=<bucket> (not created)
    // sees the same blocks.
    let daos_style = [("container".to_string(), bucket.clone()), ("create_container".to_string(), "false".to_string())];
    let (agent2, backend2) =
        agent_with_obj("kvbm-query-daos-style", &daos_style).expect("container = the bucket exists");
    assert_eq!(has_blocks(&agent2, &backend2, &keys).unwrap(), got, "bucket {bucket} is the container");
    println!("queryMem through nixl-sys (KVBM's has_blocks): {got:?}; the same through container={bucket}");
}

/// KVBM sleeps 50 ms before each status call; polling without sleeping ends the same way.
#[test]
fn polling_every_50ms_gives_the_same_outcome() {
    let (agent, _backend, _) = obj_agent("poll");
    let mut src = Layout::layer_separate(BATCH);
    let mut a = Layout::layer_separate(BATCH);
    let mut b = Layout::layer_separate(BATCH);
    let _r = [register(&agent, &src), register(&agent, &a), register(&agent, &b)];
    let keys = sequence_hashes(BATCH);
    let ids: Vec<usize> = (0..BATCH).collect();
    for i in 0..BATCH {
        src.fill_block(i, 7 * i as u64 + 3);
    }
    let slow = execute_obj_transfer(&agent, XferOp::Write, &keys, &src, &ids, KVBM_POLL);
    let fast_keys = sequence_hashes(BATCH);
    let fast = execute_obj_transfer(&agent, XferOp::Write, &fast_keys, &src, &ids, Duration::ZERO);
    assert_eq!(slow.outcome, fast.outcome);
    assert_done(&slow, "offload, 50 ms polls");
    for blk in 0..BATCH {
        a.set_block(blk, 0);
        b.set_block(blk, 0);
    }
    let ga = execute_obj_transfer(&agent, XferOp::Read, &keys, &a, &ids, KVBM_POLL);
    let gb = execute_obj_transfer(&agent, XferOp::Read, &fast_keys, &b, &ids, Duration::ZERO);
    assert_eq!(ga.outcome, gb.outcome);
    assert_done(&ga, "onboard, 50 ms polls");
    for i in 0..BATCH {
        assert!(a.block_bytes(i) == src.block_bytes(i) && b.block_bytes(i) == src.block_bytes(i), "block {i}");
    }
    drop(_r);
    // The failure case under both pollings.
    let (o1, bytes1, _) = missing_block(KVBM_POLL);
    let (o2, bytes2, _) = missing_block(Duration::ZERO);
    assert_eq!(std::mem::discriminant(&o1), std::mem::discriminant(&o2), "{o1:?} vs {o2:?}");
    assert_eq!(bytes1.len(), bytes2.len());
    println!(
        "50 ms polls: offload {:?} ({} polls) vs busy {:?} ({} polls); onboard {:?} ({}) vs {:?} ({}); failures {o1:?} / {o2:?}",
        slow.elapsed, slow.polls, fast.elapsed, fast.polls, ga.elapsed, ga.polls, gb.elapsed, gb.polls
    );
}

/// Dynamo main's `add_backend_with_params` lays the S3 params over `get_plugin_params("OBJ")`'s
/// defaults, so NIXL hands the plugin every listed default too (`container` = $DAOS_CONT, an
/// empty `create_container`): the bucket must still name the container, created when missing.
#[test]
fn kvbm_main_params_over_plugin_defaults() {
    prepare_environment();
    let merged = |bucket: &str| -> Vec<(String, String)> {
        let probe = Agent::new(&format!("kvbm-probe-{bucket}")).unwrap();
        let (_, defaults) = probe.get_plugin_params("OBJ").unwrap();
        let mut all: Vec<(String, String)> =
            (&defaults).into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        for (k, v) in s3_params(bucket) {
            all.retain(|(n, _)| *n != k);
            all.push((k, v));
        }
        all
    };
    // A bucket whose container exists already (made here by an S3-params-only backend).
    let existing = unique_bucket("merge");
    let _first = agent_with_obj("kvbm-merge-create", &s3_params(&existing)).expect("S3 params only");
    let on_existing = agent_with_obj("kvbm-merge-existing", &merged(&existing));
    assert!(on_existing.is_ok(), "defaults + S3 params on an existing bucket's container: {:?}", on_existing.err());
    // A fresh bucket: the listed defaults (container $DAOS_CONT, create_container empty) must
    // not stop the bucket's container from being created (src/config.rs).
    let fresh = unique_bucket("merge-fresh");
    let on_fresh = agent_with_obj("kvbm-merge-fresh", &merged(&fresh));
    assert!(
        on_fresh.is_ok(),
        "defaults + S3 params on a fresh bucket: its container must be created: {:?}",
        on_fresh.err()
    );
}

/// Offload and onboard throughput through this path (printed, not asserted): fresh keys per
/// batch (KVBM writes each block once), one request per batch, busy polling and KVBM's 50 ms.
#[test]
fn throughput_offload_onboard() {
    let (agent, _backend, _) = obj_agent("tput");
    let batches = 4;
    let batch = 16; // 64 MiB per batch
    for contiguous in [false, true] {
        let mut src = if contiguous { Layout::fully_contiguous(batch) } else { Layout::layer_separate(batch) };
        let dst = if contiguous { Layout::fully_contiguous(batch) } else { Layout::layer_separate(batch) };
        let _r = [register(&agent, &src), register(&agent, &dst)];
        let ids: Vec<usize> = (0..batch).collect();
        for i in 0..batch {
            src.fill_block(i, i as u64 + 100);
        }
        for poll in [Duration::ZERO, KVBM_POLL] {
            let mut all_keys = Vec::new();
            let (mut put_t, mut get_t) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..batches {
                let keys = sequence_hashes(batch);
                let r = execute_obj_transfer(&agent, XferOp::Write, &keys, &src, &ids, poll);
                assert_done(&r, "offload");
                put_t += r.elapsed;
                all_keys.push(keys);
            }
            for keys in &all_keys {
                let r = execute_obj_transfer(&agent, XferOp::Read, keys, &dst, &ids, poll);
                assert_done(&r, "onboard");
                get_t += r.elapsed;
            }
            assert!(dst.block_bytes(batch - 1) == src.block_bytes(batch - 1));
            let bytes = batches * batch * BLOCK;
            println!(
                "THROUGHPUT rust/nixl-sys {:>16} poll {:>5}: {batches} batches x {batch} blocks x {} MiB ({} descriptors/batch): offload {:.0} MB/s, onboard {:.0} MB/s",
                if contiguous { "fully-contiguous" } else { "layer-separate" },
                if poll.is_zero() { "busy".to_string() } else { format!("{}ms", poll.as_millis()) },
                BLOCK >> 20,
                batch * if contiguous { 1 } else { NUM_LAYERS * OUTER_DIM },
                mbps(bytes, put_t),
                mbps(bytes, get_t)
            );
        }
    }
}

/// Env of the child process of `a_second_process_onboards_what_the_first_offloaded`.
const CHILD_BUCKET: &str = "NIXL_DAOS_KVBM_CHILD_BUCKET";
const CHILD_KEYS: &str = "NIXL_DAOS_KVBM_CHILD_KEYS";

/// Process A offloads a batch and exits its agent; process B (this test binary again, running
/// only `child_onboards_a_batch`) onboards the same blocks by their sequence hashes into buffers
/// of its own and checks every byte against the seeds. Real engine only: daos-sim's store lives
/// in its process.
#[test]
fn a_second_process_onboards_what_the_first_offloaded() {
    if std::env::var_os("NIXL_DAOS_TESTBED").is_none() {
        println!("skipped: needs a real DAOS pool (NIXL_DAOS_TESTBED=1); daos-sim's store is per process");
        return;
    }
    let keys = sequence_hashes(BATCH);
    let bucket = {
        let (agent, _backend, bucket) = obj_agent("xproc");
        let mut src = Layout::layer_separate(BATCH);
        let _r = register(&agent, &src);
        for (i, k) in keys.iter().enumerate() {
            src.fill_block(i, *k as u64 ^ 0xc0de);
        }
        let ids: Vec<usize> = (0..BATCH).collect();
        assert_done(&execute_obj_transfer(&agent, XferOp::Write, &keys, &src, &ids, KVBM_POLL), "offload in process A");
        bucket
    };
    let hex: Vec<String> = keys.iter().map(|k| format!("{k:032x}")).collect();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_onboards_a_batch", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_BUCKET, &bucket)
        .env(CHILD_KEYS, hex.join(","))
        .output()
        .expect("start process B");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "process B failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("process B: onboarded"), "process B did not run its check:\n{text}");
    println!("{}", text.lines().find(|l| l.contains("process B: onboarded")).unwrap_or(""));
}

/// Process B of the test above (run only by it).
#[test]
#[ignore = "run by a_second_process_onboards_what_the_first_offloaded in a process of its own"]
fn child_onboards_a_batch() {
    let bucket = std::env::var(CHILD_BUCKET).expect("run by a_second_process_onboards_what_the_first_offloaded");
    let keys: Vec<u128> =
        std::env::var(CHILD_KEYS).unwrap().split(',').map(|h| u128::from_str_radix(h, 16).unwrap()).collect();
    prepare_environment();
    let (agent, _backend) = agent_with_obj("kvbm-xproc-b", &s3_params(&bucket)).expect("create_backend in process B");
    let mut dst = Layout::fully_contiguous(keys.len());
    let _r = register(&agent, &dst);
    for b in 0..dst.num_blocks() {
        dst.set_block(b, 0xEE);
    }
    let ids: Vec<usize> = (0..keys.len()).collect();
    assert_done(&execute_obj_transfer(&agent, XferOp::Read, &keys, &dst, &ids, KVBM_POLL), "onboard in process B");
    let mut want = Layout::layer_separate(keys.len());
    for (i, k) in keys.iter().enumerate() {
        want.fill_block(i, *k as u64 ^ 0xc0de);
        assert!(dst.block_bytes(i) == want.block_bytes(i), "block {i}: process B read other bytes than A offloaded");
    }
    println!(
        "process B: onboarded {} blocks of bucket {bucket} that process A offloaded, every byte verified",
        keys.len()
    );
}
