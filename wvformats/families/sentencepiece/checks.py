"""What SentencePieceProcessor refuses of a vocabulary (duplicate or empty pieces, two unknown pieces, ...),
in its words."""

from __future__ import annotations

import numpy as np

from ...schemas.sentencepiece import (
    BYTE_PIECES,
    MAX_PIECE_BYTES,
    PieceType,
)


def check_pieces(pieces: list[str], types: np.ndarray, byte_fallback: bool) -> list[tuple[int | None, str]]:
    """What sentencepiece's loader (``ModelInterface::InitializePieces``) refuses in a vocabulary: (id or None,
    the problem with sentencepiece's message)."""
    out: list[tuple[int | None, str]] = []
    first: dict[str, int] = {}
    unknown, found_bytes = [], set()
    valid_bytes = set(BYTE_PIECES)
    for i, (p, t) in enumerate(zip(pieces, types.tolist(), strict=True)):
        raw = p.encode("utf-8", "surrogateescape")
        if not raw:
            out.append((i, "an empty piece (sentencepiece: piece must not be empty)"))
        elif b"\0" in raw:
            out.append((i, f"{p!r} holds a NUL (sentencepiece 0.2.2 on: piece must not include null character)"))
        if len(raw) >= MAX_PIECE_BYTES:
            out.append((i, f"a piece of {len(raw)} bytes (sentencepiece: piece is too long; under "
                           f"{MAX_PIECE_BYTES})"))
        if first.setdefault(p, i) != i:
            out.append((i, f"{p!r} is piece {first[p]} too (sentencepiece: {p} is already defined)"))
        if t == PieceType.UNKNOWN:
            unknown.append(i)
            if len(unknown) == 2:
                out.append((i, f"a second UNKNOWN piece, after id {unknown[0]} (sentencepiece: unk is already "
                               "defined)"))
        elif t == PieceType.BYTE:
            if p not in valid_bytes:
                out.append((i, f"the BYTE piece {p!r} is none of <0x00>..<0xFF> (sentencepiece: byte piece {p} "
                               "is invalid)"))
            elif not byte_fallback and not found_bytes:
                out.append((i, f"the BYTE piece {p} without trainer_spec.byte_fallback (sentencepiece: byte "
                               f"piece {p} is found although `byte_fallback` is false)"))
            found_bytes.add(p)
    if not unknown:
        out.append((None, "no UNKNOWN piece (sentencepiece: unk is not defined)"))
    if byte_fallback and len(found_bytes) < 256:
        missing = [b for b in BYTE_PIECES if b not in found_bytes]
        out.append((None, f"trainer_spec.byte_fallback without {len(missing)} of the 256 BYTE pieces, e.g. "
                          f"{missing[0]} (sentencepiece: there are not 256 byte pieces although `byte_fallback` "
                          "is true)"))
    return out
