"""What is word2vec/GloVe specific about their word tables (the tables themselves are the framework's:
``wvformats.framework.wordtables`` and ``texttable``), and what the standard-library summary of a text file
(``inspect`` of a small file) reads as the tables do. Standard library only."""

STYLE_ROWS = 50  # lines whose numbers decide the number style (texttable.STYLE_ROWS: a test holds them equal)
# no real embedding comes near (the widest models' rows have ~2^15 values); a larger header value is an attack
# or garbage, and a table of no rows would carry it unchecked to lookups that allocate ``words x dim``
MAX_DIM = 1 << 24


def content(line: bytes) -> bytes:
    """A line (without its newline) as the text tables read it: a final ``\\r`` dropped, and trailing spaces
    and tabs when it ends with a space (fastText and word2vec.c write one)."""
    line = line[:-1] if line.endswith(b"\r") else line
    return line.rstrip(b" \t") if line.endswith(b" ") else line
