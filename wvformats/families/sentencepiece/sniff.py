"""The SentencePiece model format as the registry sees it before the codec is imported (standard library
only, but for a rare first piece of 128 bytes or more)."""

from __future__ import annotations

from ...registry import Sniffer


def sniff_sentencepiece(head: bytes) -> bool:
    """A ModelProto starts with a pieces field (1, LEN) whose body starts with a piece string (1, LEN)."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    if head[1] < 0x80:  # the first field's length is one byte: its body is all that is read
        return 1 <= head[1] <= len(head) - 2 and head[2] == 0x0A
    from ...errors import FormatError
    from ...framework.protowire import parse_fields

    try:  # a longer first field: every field of the head must read as protobuf
        fields, _, _ = parse_fields(head, 0, len(head), "", 0)
    except FormatError:
        return False
    return bool(fields) and fields[0]["number"] == 1 and fields[0]["value"][:1] == b"\x0a"


SENTENCEPIECE = Sniffer(
    "sentencepiece", (".model",), sniff_sentencepiece, priority=90,
    commands=("`wvformats sentencepiece export FILE OUT --to hf|tsv|json` exports its vocabulary",),
    lookups="pieces (inspect, sentencepiece export)")
FORMATS = (SENTENCEPIECE,)
