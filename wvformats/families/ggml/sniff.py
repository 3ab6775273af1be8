"""The ggml family's formats (rwkv.cpp model files, GGUF) as the registry and the command see them before the
codec is imported (standard library only): their sniffers, and the types ``wvformats rwkv quantize`` offers."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import GGUF_MAGIC, RWKV_HEAD

# the types rwkv.cpp quantizes to, by file version
QUANTIZE_TYPES = {101: ("FP16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")}
QUANTIZE_TYPES[100] = (*QUANTIZE_TYPES[101], "Q4_2")


def sniff_rwkv(head: bytes) -> bool:
    return RWKV_HEAD.plausible(head)


def sniff_gguf(head: bytes) -> bool:
    return head[:4] == GGUF_MAGIC


RWKV = Sniffer("rwkv", (".bin",), sniff_rwkv, priority=0, magic=RWKV_HEAD.prefix,
               commands=("`wvformats rwkv quantize FILE OUT --type T` quantizes it",), lookups="tensors (inspect)")
GGUF = Sniffer("gguf", (".gguf",), sniff_gguf, priority=0, magic=GGUF_MAGIC)
FORMATS = (RWKV, GGUF)
