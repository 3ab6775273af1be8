"""The compiled kernels' loader, for the families (:mod:`wvformats.framework.kernels`, its one home)."""

from .framework.kernels import KERNEL_DIR_ENV, PURE_PYTHON_ENV, KernelMissingWarning, kernel, sources

__all__ = ["KERNEL_DIR_ENV", "PURE_PYTHON_ENV", "KernelMissingWarning", "kernel", "sources"]
