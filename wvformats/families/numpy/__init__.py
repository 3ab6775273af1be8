"""The NumPy family: ``.npy`` arrays and ``.npz`` archives of them.

No other family uses it: it has no public names for them (tests/test_import_graph.py).
"""
