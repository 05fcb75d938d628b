"""Built-in decoders: the numbers in a line, in words."""

import pytest

from indexer.decoders import byte_count, cpumask, duration_ms, nccl_trees, pci_busid, rank_list


def test_cpumask_seed_values():
    assert cpumask("ff")[0] == "CPUs 0-7 (8 cores)"
    assert cpumask("ff00")[0] == "CPUs 8-15 (8 cores)"
    assert cpumask("ff0000")[0] == "CPUs 16-23 (8 cores)"
    assert "16-23" in cpumask("ff0000")[1]


def test_cpumask_with_32_bit_comma_groups_and_holes():
    assert cpumask("00000001,00000003")[0] == "CPUs 0-1, 32 (3 cores)"


def test_cpumask_rejects_garbage():
    with pytest.raises(ValueError):
        cpumask("zz")


def test_pci_busid_matches_nccl_int64_encoding():
    assert pci_busid("4000")[0] == "PCI 0000:04:00.0"
    assert pci_busid("1b000")[0] == "PCI 0000:1b:00.0"
    assert pci_busid("10e1c1")[0] == "PCI 0001:0e:1c.1"


def test_durations_and_bytes():
    assert duration_ms("1800000") == ("30 min", "30 分钟")
    assert duration_ms("600055")[0] == "10 min"
    # a watchdog's "ran for 600061 milliseconds" reads as ten minutes, not 10.0017
    assert duration_ms("600061") == ("10 min", "10 分钟")
    assert duration_ms("630000") == ("10.5 min", "10.5 分钟")
    assert byte_count("72800")[0] == "71.1 KiB"


def test_nccl_trees_root_and_parent():
    en, zh = nccl_trees("[0] 1/16/-1->0->-1 [2] 1/-1/-1->0->4")
    assert "channel 0: rank 0 is the root, children 1, 16" in en
    assert "channel 2: rank 0 has parent 4, children 1" in en
    assert "父节点是 4" in zh
    leaf_en, leaf_zh = nccl_trees("[1] -1/-1/-1->3->2")
    assert "children none" in leaf_en
    assert leaf_zh == "通道 1：rank 3 的父节点是 2，没有子节点"  # not "子节点 无"


def test_rank_list_counts():
    assert rank_list("0 1 2 3")[0].startswith("4 ranks shown")


def test_optional_segments_vanish_when_a_group_is_missing():
    from indexer.texts import fill

    text = "loss {loss}[[, grad norm {grad_norm}]]."
    assert fill(text, {"loss": ("1.2", "1.2")}, 0) == "loss 1.2."
    assert fill(text, {"loss": ("1.2", "1.2"), "grad_norm": ("0.5", "0.5")}, 0) == "loss 1.2, grad norm 0.5."


def test_folded_yaml_spaces_between_chinese_characters_are_removed():
    from indexer.schema import Bilingual

    text = Bilingual(en="a b", zh="模型构建 完成，共 291 个参数张量。 之后")
    assert text.zh == "模型构建完成，共 291 个参数张量。之后"


def test_no_space_after_a_zh_value_that_ends_in_chinese():
    """A template spaces an English value from Chinese text ("从 {state} 切到"); a decoded value
    ending in Chinese or full-width punctuation takes no space, in the spine's fill and in the
    batch engine's HeadTemplate alike."""
    from indexer.texts import fill, tight_after

    text = "从 {state} 切到 RTR"
    assert fill(text, {"state": ("INIT", "INIT")}, 1) == "从 INIT 切到 RTR"
    assert fill(text, {"state": ("INIT (x)", "INIT（已初始化）")}, 1) == "从 INIT（已初始化）切到 RTR"
    assert fill(text, {"state": ("INIT (x)", "INIT（已初始化）")}, 0) == "从 INIT (x) 切到 RTR"
    assert fill("值为 {v} GiB", {"v": ("8", "八")}, 1) == "值为八 GiB"  # Latin after: that space kept
    assert fill("{v} 之后", {"v": ("x", "已初始化")}, 1) == "已初始化之后"
    assert not tight_after("INIT", " 切到") and tight_after("（中）", " x")
    # ... and no space before a value that starts in Chinese, after Chinese text
    assert fill("一次 {what}", {"what": ("reduce", "聚合到 rank 0")}, 1) == "一次聚合到 rank 0"
    assert fill("一次 {what}", {"what": ("reduce", "reduce")}, 1) == "一次 reduce"
    assert fill("rank {r}", {"r": ("三", "三")}, 1) == "rank 三"  # Latin before: space kept
    # ... and an English value written into Chinese without spaces ("用于{what_decoded}的") gets them
    assert fill("用于{what}的连接", {"what": ("CollNet", "CollNet")}, 1) == "用于 CollNet 的连接"
    assert fill("用于{what}的连接", {"what": ("x", "网络内归约")}, 1) == "用于网络内归约的连接"
    assert fill("用于{what}的连接", {"what": ("CollNet", "CollNet")}, 0) == "用于CollNet的连接"  # en: left alone
    assert fill("共 {n}个", {"n": ("3", "3")}, 1) == "共 3 个"
    assert fill("其余网卡：{o}。", {"o": (" [1]ib0", " [1]ib0")}, 1) == "其余网卡：[1]ib0。"
    assert fill("others: {o}.", {"o": (" [1]ib0", " [1]ib0")}, 0) == "others:  [1]ib0."  # en: left alone


def test_a_value_ending_in_a_period_does_not_double_the_sentence_end():
    """A captured driver message "... reset gpu to activate." before the template's "。" / "."."""
    from indexer.decoders import duration_ms
    from indexer.texts import fill

    values = {"detail": ("reset gpu to activate.", "reset gpu to activate.")}
    assert fill("驱动原文：{detail}。之后", values, 1) == "驱动原文：reset gpu to activate。之后"
    assert fill("Driver says: {detail}. Then", values, 0) == "Driver says: reset gpu to activate. Then"
    assert fill("{detail}...", {"detail": ("wait..", "wait..")}, 0) == "wait.....", "an ellipsis is left alone"
    assert duration_ms("180000000000") == ("50000 h", "50000 小时")  # not 5e+04
    from indexer.decoders import duration_s

    assert duration_s("9.5367431640625e-05") == ("0.095 ms", "0.095 毫秒")  # not 0 ms, not an exponent
    assert duration_s("0.0007624626159667969") == ("0.76 ms", "0.76 毫秒")
    assert duration_s("12.84") == ("12.84 s", "12.84 秒")
    assert duration_s("1e-09") == ("<0.001 ms", "不到 0.001 毫秒")


def test_a_python_timedelta_reads_as_minutes_hours_or_days():
    """str(timedelta) puts the English "day" into a Chinese sentence ("等了 1 day, 0:00:00",
    the seventh zh review's poor entry); decoded, it reads 1 天 / 30 分钟."""
    import pytest

    from indexer.decoders import timedelta

    assert timedelta("0:30:00") == ("30 min", "30 分钟")
    assert timedelta("1 day, 0:00:00") == ("1 day", "1 天")
    assert timedelta("2 days, 0:00:00") == ("2 days", "2 天")
    assert timedelta("2 days, 3:00:00") == ("51 h", "51 小时")
    assert timedelta("0:00:05.500000") == ("5.5 s", "5.5 秒")
    with pytest.raises(ValueError):
        timedelta("30 minutes")
