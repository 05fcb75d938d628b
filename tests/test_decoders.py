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
    assert duration_ms("600055")[0].startswith("10.0")
    assert byte_count("72800")[0] == "71.1 KiB"


def test_nccl_trees_root_and_parent():
    en, zh = nccl_trees("[0] 1/16/-1->0->-1 [2] 1/-1/-1->0->4")
    assert "channel 0: rank 0 is the root, children 1, 16" in en
    assert "channel 2: rank 0 has parent 4, children 1" in en
    assert "父节点是 4" in zh


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
