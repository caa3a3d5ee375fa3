"""JAX's persistent compilation cache, on by default in a per-user folder (issue 15).

A calibration's first call compiles its search program (tens of CPU seconds on a small machine);
with the cache on, later processes load the compiled program from disk instead. The folder is
``$JAXPUFFER_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/jaxpuffer`` or ``~/.cache/jaxpuffer`` —
never inside the project tree. ``JAXPUFFER_CACHE=0`` (or an empty ``JAXPUFFER_CACHE_DIR``) turns it
off. A cache folder the user already gave JAX (``jax_compilation_cache_dir``) is left alone. In
jaxpuffer's own folder, ``exported/`` keeps the traced programs too (:class:`ExportedJit`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile

import jax
import jax.numpy as jnp
import jaxlib
import numpy
import optax

_OFF = ("0", "false", "no", "off")
# XLA options of a program compiled for latency rather than speed: LLVM without optimisation. The
# exact-level search of 3 Gaussian pairs (Laplace noise) compiles in 6.5 s instead of 8.2 s (a
# fresh process, bench_startup: 18.8 -> 13.1 CPU-s) and runs 4.4x slower (10^4 pairs: 1.0 -> 4.4 s warm), so
# only small calls of cheap evaluators take it (:func:`jaxpuffer.calibration._compile_for_latency`)
LATENCY_OPTIONS = {"xla_backend_optimization_level": 0}
# Every program is written to disk: loading a small one (ms) is faster than compiling it again
# (measured on README command 1, warm: 5.0 s with a 0.2 s threshold, 4.2 s with none).
MIN_COMPILE_SECONDS = 0.0


def default_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxpuffer")


def enable_from_environment() -> str | None:
    """Turn the persistent cache on as the environment says; return the folder used, or None."""
    if os.environ.get("JAXPUFFER_CACHE", "1").strip().lower() in _OFF:
        return None
    if jax.config.jax_compilation_cache_dir:  # the user configured JAX's cache: theirs wins
        return jax.config.jax_compilation_cache_dir
    folder = os.environ.get("JAXPUFFER_CACHE_DIR", default_folder())
    if not folder:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None  # no writable folder: compile every time
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    set_export_folder(os.path.join(folder, "exported"))
    return folder


# ---- traced programs on disk (jax.export), beside the compiled ones

# JAX's persistent cache keys a compiled program by its lowered module, so even a warm process traces
# and lowers every program before it can look the executable up: the search program of an exact
# calibration takes 1.0 s to trace and 0.3 s to lower for Gaussian pairs, 2.0 s and 0.5 s for
# mixtures, about half of a warm call. :class:`ExportedJit` keeps the lowered program itself on disk
# (``jax.export``, serialised with flatbuffers), so a later process deserialises it (ms) and calls
# it; its executable then comes from JAX's cache as before.
_export_folder: str | None = None
_OFF_FLAGS = ("jax_disable_jit", "jax_debug_nans", "jax_debug_infs")  # the plain jit honours these
_TRACE_FLAGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion")  # they change a trace
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_NAMES: set = set()  # of the ExportedJit functions


def set_export_folder(folder: str | None) -> None:
    """Where :class:`ExportedJit` keeps its programs (None: nowhere, every process traces)."""
    global _export_folder
    _export_folder = folder


@functools.lru_cache(maxsize=None)
def _environment() -> str | None:
    """What a traced program depends on besides its arguments: the versions of the libraries traced
    into it, a digest of jaxpuffer's own source files (any change to them is a new program; 7 ms),
    and the backend. None where the sources cannot be read (a zipped install): nothing is exported."""
    source, count = hashlib.sha256(), 0
    for root, dirs, files in sorted(os.walk(_PACKAGE)):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(root, name)
            source.update(os.path.relpath(path, _PACKAGE).encode())
            with open(path, "rb") as handle:
                source.update(handle.read())
            count += 1
    if not count:
        return None
    versions = (jax.__version__, jaxlib.__version__, optax.__version__, numpy.__version__)
    return repr((versions, source.hexdigest(), jax.default_backend()))


_ONE_ARRAY = jax.tree_util.tree_structure(0.0)


def defined_here(*objects) -> bool:
    """Every object is a plain value (str, number, bool, None) or an instance of a class defined in
    jaxpuffer: code that a digest of jaxpuffer's sources covers."""
    plain = (str, int, float, bool, type(None))
    return all(isinstance(o, plain) or type(o).__module__.startswith("jaxpuffer.") for o in objects)


def default_platform() -> str:
    """The platform an uncommitted computation runs on: JAX's default device's
    (``jax.default_device``) where one is set, else its default backend."""
    default = jax.config.jax_default_device
    if default is None:
        return jax.default_backend()
    return default if isinstance(default, str) else default.platform


def _on_default_backend(leaves) -> bool:
    """The call runs on JAX's default backend, the one a program is exported for: no committed
    argument and no default device (``jax.default_device``) elsewhere (a process that calibrates on
    a GPU and checks on its CPU would otherwise load the GPU's program for the CPU)."""
    backend = jax.default_backend()
    if default_platform() != backend:
        return False
    return all(d.platform == backend for leaf in leaves if isinstance(leaf, jax.Array) and leaf.committed for d in leaf.devices())


def _parts(static) -> list:
    """The objects a static argument holds, tuples and lists opened (a registered pytree, such as a
    noise kernel, stays one object, so that its class is checked)."""
    return jax.tree_util.tree_leaves(static, is_leaf=lambda x: not isinstance(x, (tuple, list)))


class ExportedJit:
    """``jax.jit(fn, static_argnums=0)`` whose traced and lowered program is kept on disk.

    Called with concrete arguments, a static first argument that ``portable`` accepts and the
    folder set (:func:`set_export_folder`; the persistent cache's, unless ``JAXPUFFER_CACHE=0``),
    the program is looked up on disk by a digest of: the function's name, ``repr(static)``, the
    arguments' tree and shapes/dtypes, the trace-relevant JAX flags and :func:`_environment`. Found,
    it is deserialised and called; else ``fn`` is traced once, exported, written (atomically) and
    called the same way, so the first and every later process run the same program. Anything
    else (tracers, a call on another backend than JAX's default, a static argument naming code outside jaxpuffer — ``portable``, by default
    :func:`defined_here` of the static argument's leaves —, JAX's debug flags, a failed export)
    takes the plain jit. ``out_tree(static, args)`` is the output's tree structure (a
    deserialised program returns flat leaves), asked once per program; None: one array.
    ``options(static)``: the XLA compiler options of its program (a dict, part of the persistent
    cache's key; None: XLA's defaults), e.g. :data:`LATENCY_OPTIONS`."""

    def __init__(self, fn, *, portable=None, out_tree=None, options=None):
        self._options = options or (lambda static: None)
        self._jits: dict = {}
        self._fn = fn
        self._name = f"{fn.__module__}.{fn.__qualname__}"
        if "<" in self._name or self._name in _NAMES:  # the name is part of the digest: one program per name
            raise ValueError(f"ExportedJit needs a uniquely named module-level function; got {self._name}")
        _NAMES.add(self._name)
        self._portable = portable or (lambda static: defined_here(*_parts(static)))
        self._out_tree = out_tree or (lambda static, args: _ONE_ARRAY)
        self._calls: dict = {}
        self._seen: set = set()  # keys called by the plain jit (no export folder)

    def compiled_variants(self) -> int:
        """How many programs this function holds compiled in this process (every option set, the
        plain jit's and every loaded export's)."""
        return sum(jit._cache_size() for jit in self._jits.values()) + sum(call._cache_size() for call, _ in self._calls.values() if call is not None)

    def _jit(self, static, *args):
        """The plain ``jax.jit(fn, static_argnums=0)``, with ``static``'s compiler options (none
        under a caller's transformation, where this jit is nested: JAX takes options only at the top)."""
        traced = any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args))
        options = None if traced else self._options(static)
        key = None if options is None else tuple(sorted(options.items()))
        if key not in self._jits:
            self._jits[key] = jax.jit(self._fn, static_argnums=0, compiler_options=options)
        return self._jits[key](static, *args)

    @staticmethod
    def _signature(leaves):
        # shapes and dtypes, without JAX's weak-type mark: a program's outputs lose it once
        # deserialised, and the state they feed back in must find the same program
        specs = tuple(jax.ShapeDtypeStruct(jnp.shape(leaf), jnp.result_type(leaf)) for leaf in leaves)
        return specs, (tuple(map(str, specs)), tuple(str(getattr(jax.config, flag)) for flag in _TRACE_FLAGS))

    def _path(self, folder, static, tree, signature) -> str:
        digest = hashlib.sha256(repr((self._name, repr(static), str(tree), signature, _environment())).encode()).hexdigest()
        return os.path.join(folder, f"{digest}.jaxexport")

    def holds(self, static, *args) -> bool:
        """Whether the program for ``static`` and these arguments' shapes is at hand: called in
        this process already, or stored on disk by an earlier one (concrete arguments)."""
        leaves, tree = jax.tree_util.tree_flatten(args)
        signature = self._signature(leaves)[1]
        if (static, tree, signature) in self._calls or (static, tree, signature) in self._seen:
            return True
        folder = _export_folder
        return folder is not None and _environment() is not None and os.path.exists(self._path(folder, static, tree, signature))

    def __call__(self, static, *args):
        folder = _export_folder
        leaves, tree = jax.tree_util.tree_flatten(args)
        if folder is None or _environment() is None or any(getattr(jax.config, flag) for flag in _OFF_FLAGS) or not self._portable(static):
            if not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
                self._seen.add((static, tree, self._signature(leaves)[1]))
            return self._jit(static, *args)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves) or not _on_default_backend(leaves):
            return self._jit(static, *args)
        specs, signature = self._signature(leaves)
        key = (static, tree, signature)
        if key not in self._calls:
            out_tree = self._out_tree(static, args)
            self._calls[key] = (self._load_or_export(folder, static, tree, specs, signature, out_tree), out_tree)
        call, out_tree = self._calls[key]
        if call is None:  # the export failed: the plain jit (which raises a genuine error of fn again)
            return self._jit(static, *args)
        return jax.tree_util.tree_unflatten(out_tree, call(*leaves))

    def _load_or_export(self, folder, static, tree, specs, signature, out_tree):
        """The jitted call of the stored program, exported first where none is stored; None where
        exporting fails."""
        from jax import export

        path = self._path(folder, static, tree, signature)
        try:
            with open(path, "rb") as handle:
                return jax.jit(export.deserialize(bytearray(handle.read())).call, compiler_options=self._options(static))
        except Exception:  # absent, unreadable or from an incompatible JAX: export it again
            pass

        def flat(*flat_leaves):
            out = self._fn(static, *jax.tree_util.tree_unflatten(tree, flat_leaves))
            if jax.tree_util.tree_structure(out) != out_tree:
                raise TypeError(f"{self._name}: output tree {jax.tree_util.tree_structure(out)} is not out_tree {out_tree}")
            return jax.tree_util.tree_leaves(out)

        try:
            exported = export.export(jax.jit(flat))(*specs)
            data = exported.serialize()
        except Exception:  # e.g. flatbuffers missing
            return None
        _write_atomically(path, data)
        return jax.jit(exported.call, compiler_options=self._options(static))


def _write_atomically(path: str, data: bytes) -> None:
    """``data`` to ``path`` by a rename (a reader sees all of it or nothing); a cache that cannot
    be written is left alone."""
    temp = None
    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as handle:
            temp = handle.name
            handle.write(data)
        os.replace(temp, path)
    except OSError:
        if temp is not None and os.path.exists(temp):
            os.unlink(temp)
