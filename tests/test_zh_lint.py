"""The Chinese house style as kb check enforces it (issue 18): each rule fires on a text that
breaks it, stays quiet on one that follows it, and a finding names the entry."""

from __future__ import annotations

import copy

import pytest

from indexer.kb_check import run_checks
from indexer.zh_lint import lint
from test_kb_check import VALID, write_kb


@pytest.mark.parametrize("bad,good,rule", [
    ("只有 DeepSpeed才选 cuda", "只有 DeepSpeed 才选 cuda", "spacing"),
    ("等待了{seconds} 秒", "等待了 {seconds} 秒", "spacing"),
    ("原因: 网络不通", "原因：网络不通", "ascii-punct"),
    ("网卡不可用,请检查", "网卡不可用，请检查", "ascii-punct"),
    ("这一行(仅调试时打印)可以忽略", "这一行（仅调试时打印）可以忽略", "ascii-punct"),
    ('监控线程只记录"本会结束进程"', "监控线程只记录“本会结束进程”", "quotes"),
    ("驱动判定必须重置时打印“RST: Yes”", "驱动判定必须重置时打印 'RST: Yes'", "log-quotes"),
    ("打印“nvidia-container-cli: initialization error: <NVML 错误>”表示", "打印 'nvidia-container-cli: initialization error: <NVML 错误>' 表示", "log-quotes"),
    ("失败时会有“CUDA error:”这一行", "失败时会有 `CUDA error:` 这一行", "log-quotes"),
    ("进程 {pid} 已 {status}", "进程 {pid} 异常结束（{status}）", "raw-value"),
    ("NCCL 内核卡住", "NCCL kernel 卡住", "term:NCCL 内核"),
    ("通常就是元凶。", "通常就是出问题的 rank。", "term:元凶"),
    ("仅为信息。", "正常日志，无需处理。", "term:仅为信息"),
    ("访问 GPU 内存失败", "访问显存失败", "term:GPU 内存"),
])
def test_each_rule_fires_and_the_fix_passes(bad, good, rule):
    assert rule in {p.rule for p in lint(bad)}, lint(bad)
    assert rule not in {p.rule for p in lint(good)}, lint(good)


@pytest.mark.parametrize("text", [
    "格式为 `文件:行号`，见 '<主机> slots=<N>'",
    '每个通道为 "[c] 子0/子1/子2->本 rank->父"',  # a notation in ASCII quotes
    "判断的是 len(轨迹) <= step，bus = (值 >> 8) & 0xFF",  # a call and a formula
    "出错位置（文件:行号）",  # a colon inside a notation
    "{kind_decoded}的值",  # a decoded value is Chinese itself
])
def test_log_text_notations_and_formulas_are_left_alone(text):
    assert lint(text) == []


def test_kb_check_names_the_entry_and_the_text(tmp_path):
    entry = copy.deepcopy(VALID)
    entry["explanation"] = {"en": "GPU {gpu}: {mask_decoded}", "zh": "GPU {gpu} 的亲和性:{mask_decoded}, 通常就是元凶"}
    found = [f for f in run_checks(write_kb(tmp_path, entry))[1] if f.check == "zh"]
    assert found and all(f.entry_id == "demo.affinity" and f.message.startswith("explanation.zh") for f in found)
    assert any("元凶" in f.message for f in found)
