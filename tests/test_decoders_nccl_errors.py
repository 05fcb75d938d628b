import pytest

from indexer.decoders import DECODERS, nccl_version_code


def test_nccl_version_code_new_encoding():
    assert nccl_version_code("22705") == ("NCCL 2.27.5", "NCCL 2.27.5")
    assert nccl_version_code("21803")[0] == "NCCL 2.18.3"


def test_nccl_version_code_old_encoding():
    assert nccl_version_code("2708")[0] == "NCCL 2.7.8"


def test_nccl_version_code_rejects_garbage():
    with pytest.raises(ValueError):
        nccl_version_code("abc")
    with pytest.raises(ValueError):
        nccl_version_code("12")


def test_registered():
    assert DECODERS["nccl_version_code"] is nccl_version_code
