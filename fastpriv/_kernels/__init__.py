"""Numba kernels: arrays in, arrays out; no pyarrow, no Python objects, no I/O.

Each module is decorated only through :func:`fastpriv._jit.kernel`. Public APIs in
``fastpriv.*`` validate and normalize inputs before calling these.
"""
