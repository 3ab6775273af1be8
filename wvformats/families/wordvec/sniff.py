"""The word-vector formats as the registry sees them before the codec is imported: names, extensions,
priorities and sniffers (standard library only, so that telling a file's format imports no numpy). None but
Leader has magic: each is told by the plausibility its identity declares (``schemas/identity.py``)."""

from __future__ import annotations

from typing import Any

from ...registry import Sniffer
from ...schemas.identity import GLOVE_HEAD, LEADER_HEAD, WORD2VEC_BINARY_HEAD, WORD2VEC_TEXT_HEAD


def quick_w2v_text(buf: Any, **options: Any) -> dict[str, Any] | None:
    from .quick import summary

    return summary(buf, header=True, **options)


def quick_glove(buf: Any, **options: Any) -> dict[str, Any] | None:
    from .quick import summary

    return summary(buf, header=False, **options)


LEADER = Sniffer("leader", (".leader",), LEADER_HEAD.plausible, priority=0, magic=LEADER_HEAD.prefix)
WORD2VEC_BINARY = Sniffer("word2vec-binary", (".bin", ".w2v"), WORD2VEC_BINARY_HEAD.plausible, priority=60)
WORD2VEC_TEXT = Sniffer("word2vec-text", (".txt", ".vec", ".w2v-text"), WORD2VEC_TEXT_HEAD.plausible, priority=55,
                        resembles=WORD2VEC_TEXT_HEAD.resembles, quick_inspect=quick_w2v_text)
GLOVE = Sniffer("glove", (".glove",), GLOVE_HEAD.plausible, priority=70, resembles=GLOVE_HEAD.resembles,
                quick_inspect=quick_glove)
FORMATS = (LEADER, WORD2VEC_BINARY, WORD2VEC_TEXT, GLOVE)
