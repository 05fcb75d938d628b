"""Read and write the safetensors format with numpy alone (no ``safetensors`` package).

The format: an 8-byte little-endian header length, a JSON header mapping each tensor name to
``{dtype, shape, data_offsets}`` (offsets relative to the end of the header), then the raw
little-endian bytes. Only the dtypes a BERT checkpoint uses are supported.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


class SafetensorsError(ValueError):
    pass


def load(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file, as read-only arrays over one memory map."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) < 8:
        raise SafetensorsError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8].tobytes())
    if header_len > len(data) - 8:
        raise SafetensorsError(f"{path}: header length {header_len} past the end of the file")
    try:
        header = json.loads(data[8 : 8 + header_len].tobytes())
    except ValueError as exc:
        raise SafetensorsError(f"{path}: unreadable header: {exc}") from exc
    body = data[8 + header_len :]
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec.get("dtype"))
        if dtype is None:
            raise SafetensorsError(f"{path}: tensor {name} has unsupported dtype {spec.get('dtype')}")
        start, end = spec["data_offsets"]
        shape = tuple(spec["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= start <= end <= len(body) or end - start != count * np.dtype(dtype).itemsize:
            raise SafetensorsError(f"{path}: tensor {name} has offsets {start}..{end} that do not fit its shape")
        out[name] = body[start:end].view(dtype).reshape(shape)
    return out


def save(path: str | Path, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
    """Write tensors in name order; same tensors in, same bytes out."""
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    arrays = []
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        key = next((k for k, v in _DTYPES.items() if np.dtype(v) == array.dtype), None)
        if key is None:
            raise SafetensorsError(f"tensor {name}: dtype {array.dtype} cannot be written")
        header[name] = {"dtype": key, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
        arrays.append(array)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the body starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for array in arrays:
            f.write(array.tobytes())
