"""Sizes, bandwidths and counts as people write them: 80GB, 80GiB, 200Gbps, 900GB/s, 8B, 70e9."""

from __future__ import annotations

import re

_NUMBER = r"\s*(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)\s*"
_BYTES = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_BITS_PER_SECOND = {"bps": 1, "kbps": 10**3, "mbps": 10**6, "gbps": 10**9, "tbps": 10**12,
                    "kbit/s": 10**3, "mbit/s": 10**6, "gbit/s": 10**9, "tbit/s": 10**12}
_COUNT = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


class UnitError(ValueError):
    """A quantity that cannot be read; the message says what was expected."""


def _split(text: str, what: str, example: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"(?P<unit>[A-Za-z/]*)\s*", str(text))
    if match is None:
        raise UnitError(f"{text!r} is not {what} (such as {example})")
    return float(match["number"]), match["unit"].lower()


def parse_bytes(text: str) -> int:
    """'80GB' -> 80e9, '80GiB' -> 80 * 2**30, '512MB', a plain number is bytes."""
    number, unit = _split(text, "a size", "80GB or 80GiB")
    if unit not in _BYTES:
        raise UnitError(f"{text!r}: unknown size unit {unit!r} (use B, KB, MB, GB, TB or KiB, MiB, GiB, TiB)")
    return round(number * _BYTES[unit])


def parse_bandwidth(text: str) -> float:
    """Bytes per second from '200Gbps' (bits), '900GB/s' or '25GiB/s' (bytes)."""
    number, unit = _split(text, "a bandwidth", "200Gbps or 900GB/s")
    if unit in _BITS_PER_SECOND:
        return number * _BITS_PER_SECOND[unit] / 8
    if unit.endswith("/s") and unit[:-2] in _BYTES and unit[:-2]:
        return number * _BYTES[unit[:-2]]
    raise UnitError(f"{text!r}: unknown bandwidth unit {unit!r} (use Gbps for bits or GB/s for bytes per second)")


def parse_count(text: str) -> int:
    """A parameter count: '8B', '70b', '1.3T', '125M', '8e9', '8000000000'."""
    number, unit = _split(text, "a parameter count", "8B, 125M or 8e9")
    if unit not in _COUNT:
        raise UnitError(f"{text!r}: unknown count suffix {unit!r} (use K, M, B or T)")
    return round(number * _COUNT[unit])
