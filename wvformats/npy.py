"""NumPy ``.npy`` arrays and ``.npz`` archives: the public names of the ``numpy`` family.

    import wvformats as wv
    a = wv.read("vectors.npy")                       # a numpy.ndarray (a view of the mapped file)
    arrays = wv.read("arrays.npz")                   # an npy.NpzArrays: name -> array, in archive order
    wv.write(a, "again.npy")                         # numpy.save's bytes
    wv.write(npy.NpzArrays({"w": a}, compressed=True), "a.npz")   # numpy.savez_compressed's layout

A ``.npy`` reads as numpy's own ``ndarray`` (exported here as the format's model class); object arrays are
refused, never unpickled.
"""

from numpy import ndarray

from .families.numpy.codec import NpzArrays

__all__ = ["NpzArrays", "ndarray"]
