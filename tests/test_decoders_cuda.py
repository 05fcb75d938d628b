import pytest

from indexer.decoders import DECODERS, cuda_version


def test_cuda_version_decodes_driver_api_integer():
    en, zh = cuda_version("12020")
    assert "CUDA 12.2" in en and "CUDA 12.2" in zh
    assert "CUDA 11.4" in cuda_version("11040")[0]
    assert "CUDA 9.0" in cuda_version("9000")[0]
    assert "CUDA 12.9" in cuda_version("12090")[0]


@pytest.mark.parametrize("bad", ["", "abc", "12.2", "7"])
def test_cuda_version_rejects_non_versions(bad):
    with pytest.raises(ValueError):
        cuda_version(bad)


def test_cuda_version_is_registered():
    assert DECODERS["cuda_version"] is cuda_version
