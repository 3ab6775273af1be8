"""Word-vector text and binary formats: word2vec binary and text, GloVe, fastText ``.vec``, Leader.

No other family uses it: it has no public names for them (tests/test_import_graph.py).
"""
