"""Prefix stripping and masking: the message a KB pattern sees must be the bare message."""

import pytest

from indexer.normalize import clean_text, mask_message, normalize_line

CASES = [
    (
        "cc0af148-task0-0:133:202 [0] NCCL INFO Using network IB",
        "Using network IB",
        {"host": "cc0af148-task0-0", "pid": "133", "tid": "202", "device": "0", "level": "info"},
    ),
    (
        "node1:4242:4300 [3] transport/net_ib.cc:1272 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45970> with error 12",
        "NET/IB : Got completion from peer 10.0.0.2<45970> with error 12",
        {"source_location": "transport/net_ib.cc:1272", "level": "warning", "device": "3"},
    ),
    # a net plugin logging through NCCL's logger passes __PRETTY_FUNCTION__ as its location
    (
        "ip-172-31-9-7:351:469 [2] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208 NCCL WARN NET/OFI x y",
        "NET/OFI x y",
        {"source_location": "int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208", "level": "warning", "device": "2"},
    ),
    (
        "h:1:2 [0] virtual int nccl_net_ofi_rdma_ep_t::post(int, void*) const:55 NCCL INFO NET/OFI z",
        "NET/OFI z",
        {"source_location": "virtual int nccl_net_ofi_rdma_ep_t::post(int, void*) const:55", "level": "info"},
    ),
    (
        "I0910 14:27:22.992898   134 ProcessGroupNCCL.cpp:686] [Rank 1] ProcessGroupNCCL initialization options:X",
        "[Rank 1] ProcessGroupNCCL initialization options:X",
        {"level": "info", "tid": "134", "source_location": "ProcessGroupNCCL.cpp:686", "timestamp": "0910 14:27:22.992898"},
    ),
    (
        "[2024-09-10 14:27:19,059] [INFO] [comm.py:637:init_distributed] cdb=None",
        "cdb=None",
        {"timestamp": "2024-09-10 14:27:19,059", "level": "info", "source_location": "comm.py:637", "function": "init_distributed"},
    ),
    (
        "[2024-09-10 14:26:48,892] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS x",
        "Setting OMP_NUM_THREADS x",
        {"logger": "torch.distributed.run", "level": "warning"},
    ),
    (
        "09/10 14:27:26 - mmengine - INFO - xtuner_dataset_timeout = 0:30:00",
        "xtuner_dataset_timeout = 0:30:00",
        {"logger": "mmengine", "level": "info", "timestamp": "09/10 14:27:26"},
    ),
    (
        "[rank3]: Traceback (most recent call last):",
        "Traceback (most recent call last):",
        {"rank": "3"},
    ),
    (
        "[default0]:[2024-01-01 00:00:00,000] [INFO] [engine.py:1:x] hello",
        "hello",
        {"local_rank": "0", "level": "info"},
    ),
    ("0: host:1:2 [5] NCCL INFO Using network Socket", "Using network Socket", {"rank": "0", "device": "5"}),
    ("[1,2]<stdout>:NCCL INFO Using network IB", "Using network IB", {"job": "1", "rank": "2", "level": "info"}),
    ("(pid=123) cdb=None", "cdb=None", {"pid": "123"}),
    (
        "/opt/conda/lib/python3.10/site-packages/mmengine/utils/dl_utils/setup_env.py:56: UserWarning: Setting MKL",
        "Setting MKL",
        {"source_location": "/opt/conda/lib/python3.10/site-packages/mmengine/utils/dl_utils/setup_env.py:56", "category": "UserWarning"},
    ),
    ("Sep 10 14:27:22 gpu-node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79", "NVRM: Xid (PCI:0000:3b:00): 79", {"host": "gpu-node7", "logger": "kernel"}),
    ("[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79", "NVRM: Xid (PCI:0000:3b:00): 79", {"uptime": "12345.678901"}),
    # ROCm's AMD_LOG_LEVEL prefix, as ROCm 6 prints it and as ROCm 5 did (no pid/tid)
    (
        ":3:hip_module.cpp           :662 : 2786461895 us: [pid:77   tid:0x7f3a] hipLaunchKernel: Returned hipSuccess :",
        "hipLaunchKernel: Returned hipSuccess :",
        {"amd_log_level": "3", "source_location": "hip_module.cpp           :662", "pid": "77", "tid": "0x7f3a"},
    ),
    # rocm-5.6.x: "%010lld us: %-5d: [tid:0x%s] " (rocm-5.6.0 rocclr/utils/debug.cpp:97)
    (
        ":1:hip_fatbin.cpp           :265 : 0012345678 us: 4711 : [tid:0x7f0a1b2c3d40] hipErrorNoBinaryForGpu: x",
        "hipErrorNoBinaryForGpu: x",
        {"amd_log_level": "1", "pid": "4711", "tid": "0x7f0a1b2c3d40"},
    ),
    (":1:rocdevice.cpp            :1663: 0 us: Device not found", "Device not found",
     {"amd_log_level": "1", "source_location": "rocdevice.cpp            :1663"}),
]


@pytest.mark.parametrize("raw,message,context", CASES, ids=[c[1][:30] for c in CASES])
def test_prefixes_are_peeled_into_context(raw, message, context):
    normalized = normalize_line(raw)
    assert normalized.message == message
    for key, value in context.items():
        assert normalized.context.get(key) == value, key


def test_ansi_colour_and_crlf_are_removed():
    line = "\x1b[32m[2024-09-10 14:27:19,059] [INFO] [comm.py:637:init_distributed]\x1b[0m cdb=None\r\n"
    assert normalize_line(line).message == "cdb=None"


def test_stacked_prefixes_all_recorded():
    ctx = normalize_line("3: [rank3]: host:1:2 [3] NCCL INFO Using network IB").context
    assert ctx["format"] == "srun+torchrun+nccl"


def test_control_bytes_and_nul_do_not_survive():
    assert clean_text("a\x00b\x07c\td") == "abc d"


def test_a_line_that_is_only_a_prefix_is_marked_as_such():
    # Nothing after the prefix: the message is empty and the context says the line was only a
    # prefix (structure.prefix_only answers it); the raw line is kept.
    line = normalize_line("[rank3]:")
    assert line.message == "" and line.context["prefix_only"] == "1" and line.raw == "[rank3]:"


def test_masking_replaces_variables_with_typed_tokens():
    masked = mask_message(
        "Connection closed by remote peer 10.0.0.2<45970> at 2024-09-10 14:27:19 comm 0x7f64cc001500 "
        "file /opt/conda/lib/x.py rank 12 of 24 took 1.5s"
    )
    assert masked == (
        "Connection closed by remote peer <IP> at <TIME> comm <HEX> file <PATH> rank <NUM> of <NUM> took <NUM>"
    )


def test_lines_differing_only_in_numbers_share_a_template():
    a = mask_message("Setting affinity for GPU 2 to ff0000")
    b = mask_message("Setting affinity for GPU 7 to ff000000")
    assert a == b


def test_more_launcher_and_logger_prefixes():
    pdsh = normalize_line("worker-0: [2024-01-01 00:00:00,000] [INFO] [launch.py:1:main] hello")
    assert pdsh.message == "hello" and pdsh.context["host"] == "worker-0"
    by_ip = normalize_line("10.0.143.177: [2024-01-01 00:00:00,000] [INFO] [launch.py:1:main] hello")
    assert by_ip.message == "hello" and by_ip.context["host"] == "10.0.143.177"
    assert normalize_line("RuntimeError: CUDA error: out of memory").message == "RuntimeError: CUDA error: out of memory"
    # rdma-core's provider tag is not a host: the error-CQE report keeps its head
    cqe = normalize_line("node3: mlx5: gpu-node-17: got completion with error:")
    assert cqe.message == "mlx5: gpu-node-17: got completion with error:" and cqe.context["host"] == "node3"
    full_year = normalize_line("2025/02/09 07:47:19 - mmengine - INFO - Checkpoints will be saved to /w")
    assert full_year.message == "Checkpoints will be saved to /w" and full_year.context["logger"] == "mmengine"
    basic = normalize_line("INFO:megatron.core.num_microbatches_calculator:setting number of microbatches to constant 8")
    assert basic.message.startswith("setting number") and basic.context["logger"] == "megatron.core.num_microbatches_calculator"


def test_c10_bracketed_prefixes():
    new = normalize_line("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught")
    assert new.message == "[Rank 0] Watchdog caught"
    assert new.context["level"] == "error" and new.context["source_location"] == "ProcessGroupNCCL.cpp:607"
    assert new.context["rank"] == "0"
    old = normalize_line("[W socket.cpp:558] [c10d] The client socket has failed to connect")
    # c10d's own "[c10d] " tag is a prefix too (torch/csrc/distributed/c10d/logging.h)
    assert old.message == "The client socket has failed to connect" and old.context["level"] == "warning"
    # VLOG lines carry "V" (c10's severity letters are "FEWIV")
    verbose = normalize_line("[rank3]:[V1231 09:12:44.123456789 ProcessGroupNCCL.cpp:1234] [PG ID 0 PG GUID 0 Rank 3] sth")
    assert verbose.message == "[PG ID 0 PG GUID 0 Rank 3] sth" and verbose.context["level"] == "debug"
    warn = normalize_line("WARNING:torch.distributed.run:Setting OMP_NUM_THREADS")
    assert warn.message == "Setting OMP_NUM_THREADS" and warn.context["logger"] == "torch.distributed.run"


def test_nccl_prefix_found_behind_unknown_launchers():
    for raw in (
        "gpu-master: gpu-master:1234:1300 [3] NCCL INFO Using network IB",
        "[155] node155:77:88 [1] NCCL INFO Using network IB",
        "<cluster_a> host:1:2 [0] misc/socket.cc:50 NCCL WARN Using network IB",
    ):
        n = normalize_line(raw)
        assert n.message == "Using network IB", raw
        assert "launcher_prefix" in n.context and n.context["pid"]
    half = normalize_line(" [0] NCCL INFO Using network IB")
    assert half.message == "Using network IB" and half.context["device"] == "0"


def test_c10_date_is_month_times_100_plus_day_unpadded():
    # c10/util/Logging.cpp prints (tm_mon + 1) * 100 + tm_mday: three digits from January to September
    march = normalize_line("[W917 03:12:55.120044871 socket.cpp:752] [c10d] The client socket has timed out")
    assert march.message == "The client socket has timed out"
    assert march.context["level"] == "warning" and march.context["source_location"] == "socket.cpp:752"


def test_known_prefix_found_behind_a_short_unknown_head():
    # a job or container name a log collector put first, then a prefix a rule knows
    c10 = normalize_line("trainer [E ProcessGroupNCCL.cpp:1191] [Rank 3] Watchdog caught collective operation timeout")
    assert c10.message.startswith("[Rank 3] Watchdog") and c10.context["launcher_prefix"] == "trainer"
    ray = normalize_line("worker/3 (TorchActor pid=1200) WARNING:torch.distributed.run:Setting OMP_NUM_THREADS")
    assert ray.message == "Setting OMP_NUM_THREADS" and ray.context["level"] == "warning"
    assert ray.context["pid"] == "1200" and ray.context["launcher_prefix"] == "worker/3"
    # a message is not cut: a head with a colon, a bracket or more than two words is left alone
    for raw in (
        "RuntimeError: the worker (Actor pid=12) died",
        "a longer sentence in which [I socket.cpp:10] appears",
        "[Rank 0] see [W socket.cpp:10] below",
    ):
        n = normalize_line(raw)
        assert n.message == raw and "launcher_prefix" not in n.context, raw


def test_hydra_nemo_and_rich_logging_prefixes():
    hydra = normalize_line("[2025-03-01 08:15:02,118][megatron.training][WARNING] - Loss scale lowered to 512.0")
    assert hydra.message == "Loss scale lowered to 512.0"
    assert hydra.context["logger"] == "megatron.training" and hydra.context["level"] == "warning"
    located = normalize_line("[2025-03-01 08:15:02.118001][INFO][indexed_dataset.py:412] -  > reading sizes")
    assert located.message == "> reading sizes" and located.context["source_location"] == "indexed_dataset.py:412"
    nemo = normalize_line("[NeMo W 2025-03-01 08:15:02 megatron_gpt_model:1201] Using fused attention")
    assert nemo.message == "Using fused attention"
    assert nemo.context["level"] == "warning" and nemo.context["source_location"] == "megatron_gpt_model:1201"
    ranked = normalize_line("[NeMo D 2025-03-01 08:15:02 utils:88 rank:3] Building dataset")
    assert ranked.message == "Building dataset" and ranked.context["rank"] == "3" and ranked.context["level"] == "debug"
    # rich: the level padded to eight, the caller's file at the right edge
    rich = normalize_line("WARNING  Gradient accumulation is not supported here         accelerator.py:912")
    assert rich.message == "Gradient accumulation is not supported here"
    assert rich.context["level"] == "warning" and rich.context["source_location"] == "accelerator.py:912"
    timed = normalize_line("[03/01/25 08:15:02] INFO     Saving model checkpoint       trainer.py:88")
    assert timed.message == "Saving model checkpoint" and timed.context["timestamp"] == "03/01/25 08:15:02"
    # a level word with one space is not rich's column; a location inside the message stays
    assert normalize_line("INFO saving").message == "INFO saving"
    assert normalize_line("INFO     see model.py:12 for details").message == "see model.py:12 for details"


def test_huge_line_without_nccl_prefix_is_cheap_and_intact():
    line = "a:" * 500_000
    assert normalize_line(line).message == line.strip()


def test_ucx_log_prefixes_are_peeled():
    line = normalize_line("[1496344648.548260] [vegas06:14879:0]       dc_verbs.c:614  UCX  ERROR Send completion with error")
    assert line.message == "Send completion with error"
    assert line.context["host"] == "vegas06" and line.context["source_location"] == "dc_verbs.c:614"
    assert line.context["level"] == "error"
    assert normalize_line("ib_iface.c:618  UCX  WARN  unused env").message == "unused env"
    fatal = normalize_line("[gpu1:1234 :0:1234] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB")
    assert fatal.message == "Transport retry count exceeded on mlx5_0:1/IB" and fatal.context["pid"] == "1234"
    # a bracketed host:pid pair (Open MPI) is not taken for UCX's four-field prefix
    assert normalize_line("[node1:01234] pml_ucx.c:273  Error: x").message.startswith("[node1:01234]")


def test_libfabric_log_prefix_both_layouts():
    """libfabric's fi_log: 'libfabric:<prov>:<subsys>:<func>():<line><level> ' (before 1.13) and
    'libfabric:<pid>:<time>:<prefix>:<prov>:...' after; a layered provider is 'verbs;ofi_rxm'."""
    old = normalize_line("libfabric:verbs:fabric:vrb_get_device_attrs():612<info> Interface 'ib0' has no ports")
    assert old.message == "Interface 'ib0' has no ports"
    assert old.context["logger"] == "verbs" and old.context["level"] == "info"
    assert old.context["source_location"] == "vrb_get_device_attrs():612"
    new = normalize_line("libfabric:30291:1717000000::verbs;ofi_rxm:ep_ctrl:rxm_cmap_connect():455<warn> connect failed")
    assert new.message == "connect failed"
    assert (new.context["pid"], new.context["logger"], new.context["level"]) == ("30291", "verbs;ofi_rxm", "warning")
    # a colon-separated message that only looks similar keeps its text
    assert normalize_line("libfabric: version 1.22.0 loaded").message == "libfabric: version 1.22.0 loaded"


def test_abseil_and_tensorflow_log_prefixes_are_peeled():
    """abseil's log before its time zone is known writes the Unix seconds where glog's time goes
    ("E0000 00:00:<seconds>.<us> <tid> file:line] "), and TensorFlow's own logger writes
    "<local time>.<us>: <level> [<tid>] file:line] "; both are peeled like glog's header."""
    absl = normalize_line("E0000 00:00:1712345678.123456  123456 cuda_dnn.cc:8310] Unable to register cuDNN factory")
    assert absl.message == "Unable to register cuDNN factory"
    assert (absl.context["level"], absl.context["tid"], absl.context["source_location"]) == ("error", "123456", "cuda_dnn.cc:8310")
    tf = normalize_line("2020-05-01 12:00:00.123456: E tensorflow/stream_executor/cuda/cuda_driver.cc:351] "
                        "failed call to cuInit: UNKNOWN ERROR (303)")
    assert tf.message == "failed call to cuInit: UNKNOWN ERROR (303)"
    assert tf.context["level"] == "error" and tf.context["format"] == "tensorflow"
    with_tid = normalize_line("2020-05-01 12:00:00.123456: I  123456 gpu_device.cc:1561] Created device")
    assert with_tid.message == "Created device" and with_tid.context["tid"] == "123456"
    # the ordinary glog header is read as before; a time that is not one stays in the message
    assert normalize_line("W1205 10:11:12.345678 140123 ProcessGroupNCCL.cpp:1234] x").message == "x"
    assert normalize_line("2020-05-01 12:00:00: E a.cc:1] x").message.startswith("2020-05-01")

