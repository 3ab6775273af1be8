"""infini-gram indexes: the file set, queries on memory maps, and building an index.

No other family uses it: it has no public names for them (tests/test_import_graph.py).
"""
