"""Import paths of earlier releases that the docs named, kept as re-exports: the codecs now live in their
family's package, ``wvformats.families.<family>.codec``."""
