"""The NumPy family: ``.npy`` arrays and ``.npz`` archives of them."""
