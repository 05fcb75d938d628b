"""Built-in decoders that turn a raw field value into words (``{field_decoded}`` in KB texts).

Curated ``values:`` tables cover codes with fixed meanings; these functions cover values that
must be computed (a CPU mask, a PCI bus id, a byte count). Each returns ``(en, zh)`` and raises
``ValueError`` on a value it cannot read, so the caller can fall back to the raw text.
"""

from __future__ import annotations

import re
from typing import Callable

Decoded = tuple[str, str]


def _ranges(numbers: list[int]) -> str:
    parts: list[str] = []
    start = prev = None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(parts)


def cpumask(value: str) -> Decoded:
    """NCCL prints cpusets as hex, most significant first, a comma every 32 CPUs."""
    digits = value.replace(",", "").lower().removeprefix("0x")
    if not digits or not re.fullmatch(r"[0-9a-f]+", digits):
        raise ValueError(value)
    mask = int(digits, 16)
    cpus = [bit for bit in range(mask.bit_length()) if mask >> bit & 1]
    if not cpus:
        return ("no CPUs (empty mask)", "空掩码（没有任何 CPU）")
    listed = _ranges(cpus)
    return (f"CPUs {listed} ({len(cpus)} cores)", f"CPU {listed} 号核（共 {len(cpus)} 个）")


def pci_busid(value: str) -> Decoded:
    """NCCL's int64 bus id (printed with %lx) back to domain:bus:device.function."""
    raw = value.lower().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-f]+", raw):
        raise ValueError(value)
    n = int(raw, 16)
    text = f"{n >> 20:04x}:{(n & 0xFF000) >> 12:02x}:{(n & 0xFF0) >> 4:02x}.{n & 0xF:x}"
    return (f"PCI {text}", f"PCI {text}")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def byte_count(value: str) -> Decoded:
    n = int(value.replace(",", ""))
    text = _human_bytes(n)
    return (text, text)


def _human_seconds(seconds: float) -> tuple[str, str]:
    if seconds < 1e-6:
        return ("<0.001 ms", "不到 0.001 毫秒")
    if seconds < 0.01:  # 9.5367431640625e-05 s: 0.095 ms, not "0 ms" nor an exponent
        ms = f"{seconds * 1000:.2g}"
        return (f"{ms} ms", f"{ms} 毫秒")
    if seconds < 1:
        return (f"{seconds * 1000:.0f} ms", f"{seconds * 1000:.0f} 毫秒")
    if seconds < 120:
        return (f"{seconds:g} s", f"{seconds:g} 秒")
    if seconds < 7200:
        minutes = f"{seconds / 60:.1f}".removesuffix(".0")  # 600061 ms: 10 min, not 10.0017
        return (f"{minutes} min", f"{minutes} 分钟")
    hours = seconds / 3600
    text = f"{hours:.3g}" if hours < 100 else f"{hours:.0f}"  # 180000000000 ms: 50000 h, not 5e+04
    return (f"{text} h", f"{text} 小时")


def duration_ms(value: str) -> Decoded:
    return _human_seconds(float(value.replace(",", "")) / 1000)


def duration_s(value: str) -> Decoded:
    return _human_seconds(float(value.replace(",", "")))


_TIMEDELTA = re.compile(r"^\s*(?:(-?\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)\s*$")


def timedelta(value: str) -> Decoded:
    """Python's ``str(timedelta)``: "0:30:00" is 30 min, "1 day, 0:00:00" 24 h (a Chinese reader
    gets 分钟/小时, not the English "day" in a sentence)."""
    m = _TIMEDELTA.match(value)
    if not m:
        raise ValueError(f"not a timedelta: {value!r}")
    days, h, mnt, sec = m.groups()
    total = int(days or 0) * 86400 + int(h) * 3600 + int(mnt) * 60 + float(sec)
    if total >= 86400 and total % 86400 == 0:
        n = int(total // 86400)
        return (f"{n} day{'s' if n != 1 else ''}", f"{n} 天")
    return _human_seconds(total)


_TREE = re.compile(r"\[(\d+)\]\s*(-?\d+)/(-?\d+)/(-?\d+)->(-?\d+)->(-?\d+)")


def nccl_trees(value: str) -> Decoded:
    """``[c] d0/d1/d2->me->up`` per channel: children, this rank, parent; -1 means none."""
    en: list[str] = []
    zh: list[str] = []
    for channel, d0, d1, d2, me, up in _TREE.findall(value):
        children = [d for d in (d0, d1, d2) if d != "-1"]
        kids = ", ".join(children) if children else "none"
        kids_zh = f"子节点 {'、'.join(children)}" if children else "没有子节点"
        if up == "-1":
            en.append(f"channel {channel}: rank {me} is the root, children {kids}")
            zh.append(f"通道 {channel}：rank {me} 是根，{kids_zh}")
        else:
            en.append(f"channel {channel}: rank {me} has parent {up}, children {kids}")
            zh.append(f"通道 {channel}：rank {me} 的父节点是 {up}，{kids_zh}")
    if not en:
        raise ValueError(value)
    return ("; ".join(en), "；".join(zh))


def rank_list(value: str) -> Decoded:
    ranks = value.split()
    if not ranks or not all(r.lstrip("-").isdigit() for r in ranks):
        raise ValueError(value)
    return (
        f"{len(ranks)} ranks shown, in ring order: {' -> '.join(ranks)}",
        f"列出 {len(ranks)} 个 rank，按环顺序：{' -> '.join(ranks)}",
    )


def cuda_version(value: str) -> Decoded:
    """CUDA's integer version (``cudaDriverGetVersion``, ``CUDA_VERSION``): 12020 -> CUDA 12.2."""
    raw = value.strip()
    if not raw.isdigit() or int(raw) < 1000:
        raise ValueError(value)
    n = int(raw)
    major, minor = n // 1000, (n % 1000) // 10
    return (
        f"CUDA {major}.{minor} (the newest CUDA API this driver supports)",
        f"CUDA {major}.{minor}（该驱动最高支持的 CUDA 版本）",
    )


def nccl_version_code(value: str) -> Decoded:
    """NCCL_VERSION_CODE as printed in version checks: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after."""
    raw = value.strip()
    if not raw.isdigit():
        raise ValueError(value)
    n = int(raw)
    if n >= 10000:
        major, minor, patch = n // 10000, (n // 100) % 100, n % 100
    elif n >= 1000:
        major, minor, patch = n // 1000, (n // 100) % 10, n % 100
    else:
        raise ValueError(value)
    return (f"NCCL {major}.{minor}.{patch}", f"NCCL {major}.{minor}.{patch}")


DECODERS: dict[str, Callable[[str], Decoded]] = {
    "cpumask": cpumask,
    "pci_busid": pci_busid,
    "bytes": byte_count,
    "duration_ms": duration_ms,
    "duration_s": duration_s,
    "timedelta": timedelta,
    "nccl_trees": nccl_trees,
    "rank_list": rank_list,
    "cuda_version": cuda_version,
    "nccl_version_code": nccl_version_code,
}
