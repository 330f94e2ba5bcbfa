"""The numerical environments the chapters are verified under: a reader's CPU, simulated.

BLAS kernels and SIMD code paths round differently in the last bits, so a number that
rests on those bits prints differently on another reader's machine. Each environment
here is a set of variables for the kernel that runs a chapter:

- `OPENBLAS_CORETYPE` forces one of OpenBLAS's kernel families (NumPy's wheel
  ships them all and picks one for the CPU);
- `NPY_DISABLE_CPU_FEATURES` turns off NumPy's dispatched SIMD groups (NumPy 2.4
  names them `X86_V3`, `X86_V4`, `AVX512_ICL`, `AVX512_SPR`; only the ones this
  CPU has can be turned off);
- `OPENBLAS_NUM_THREADS` sets how many threads share a matrix product;
- `ENGINE_PERTURB_SEED` starts the kernel with tests/perturbation.py installed: every
  result of the engine one or two ulps off, for the libraries no CPU here has.

Each environment combines them as a reader's machine would (an AVX2 laptop, an older
CPU with SSE only). `python tests/numerics.py` lists what this machine can run and
what each environment really gets (the OpenBLAS core and NumPy's SIMD groups, read
in a process started with its variables).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import tempfile
from pathlib import Path

from execution import probe  # what a process with these variables gets: the build's own

TESTS = Path(__file__).resolve().parent

AVX512_GROUPS = ["X86_V4", "AVX512_ICL", "AVX512_SPR"]  # what NumPy dispatches above AVX2
AVX2_GROUPS = ["X86_V3"]  # above the baseline (SSE4.2, X86_V2)


@dataclasses.dataclass(frozen=True)
class Environment:
    name: str
    what: str  # the machine it stands for
    coretype: str | None = None  # OPENBLAS_CORETYPE
    simd_off: tuple = ()  # NumPy SIMD groups to turn off
    threads: int | None = None  # OPENBLAS_NUM_THREADS
    perturb_seed: int | None = None
    needs: tuple = ()  # CPU features of NumPy's table the kernels need

    def variables(self, cpu_features=None) -> dict:
        """The environment variables to set, given the CPU's features (name -> bool)."""
        cpu_features = cpu_features if cpu_features is not None else numpy_cpu_features()
        env = {}
        if self.coretype:
            env["OPENBLAS_CORETYPE"] = self.coretype
        off = [group for group in self.simd_off if cpu_features.get(group)]
        if off:
            env["NPY_DISABLE_CPU_FEATURES"] = ",".join(off)
        if self.threads:
            env["OPENBLAS_NUM_THREADS"] = str(self.threads)
        if self.perturb_seed is not None:
            env["ENGINE_PERTURB_SEED"] = str(self.perturb_seed)
            env["IPYTHONDIR"] = str(perturbation_profile())
        return env

    def runnable(self, cpu_features=None) -> str | None:
        """None if this CPU can run it, else why not."""
        cpu_features = cpu_features if cpu_features is not None else numpy_cpu_features()
        missing = [f for f in self.needs if not cpu_features.get(f)]
        if missing:
            return f"this CPU lacks {', '.join(missing)}, which {self.coretype} kernels need"
        return None


X86_64 = [
    Environment("machine", "this machine as it is: its own OpenBLAS kernels and SIMD level"),
    Environment("perturbed", "another libm or BLAS: every engine result 1-2 ulps off",
                threads=1, perturb_seed=1),
    Environment("avx2-haswell", "an AVX2 laptop or desktop (Intel without AVX-512, AMD Zen)",
                coretype="Haswell", simd_off=tuple(AVX512_GROUPS), threads=1,
                needs=("AVX2", "FMA3")),
    Environment("sse-prescott", "the oldest x86-64 kernels, NumPy's SSE baseline",
                coretype="Prescott", simd_off=tuple(AVX512_GROUPS + AVX2_GROUPS), threads=1),
    Environment("sse-sandybridge", "an older CPU: AVX kernels, NumPy's SSE baseline, 2 threads",
                coretype="Sandybridge", simd_off=tuple(AVX512_GROUPS + AVX2_GROUPS), threads=2,
                needs=("AVX",)),
]

AARCH64 = [
    Environment("machine", "this machine as it is: its own OpenBLAS kernels and SIMD level"),
    Environment("armv8", "generic ARMv8 kernels, 1 thread", coretype="ARMV8", threads=1),
    Environment("perturbed", "another libm or BLAS: every engine result 1-2 ulps off",
                threads=1, perturb_seed=1),
]


def environments() -> list[Environment]:
    return AARCH64 if platform.machine().lower() in ("aarch64", "arm64") else X86_64


def by_name(name: str) -> Environment:
    for environment in environments():
        if environment.name == name:
            return environment
    known = ", ".join(e.name for e in environments())
    raise SystemExit(f"no numerical environment {name!r} on {platform.machine()} "
                     f"(known: {known})")


def numpy_cpu_features() -> dict:
    from numpy._core._multiarray_umath import __cpu_features__

    return dict(__cpu_features__)


def perturbation_profile() -> Path:
    """An IPython folder whose startup file installs tests/perturbation.py in the kernel."""
    folder = Path(tempfile.gettempdir()) / f"engine-perturbation-ipython-{os.getuid()}"
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    # loads tests/perturbation.py by its path: the kernel's sys.path stays the book's
    script = (
        "import importlib.util as _util, os as _os\n"
        "_spec = _util.spec_from_file_location('perturbation', "
        f"{str(TESTS / 'perturbation.py')!r})\n"
        "_perturbation = _util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_perturbation)\n"
        "_perturbation.install(int(_os.environ['ENGINE_PERTURB_SEED']))\n"
        "del _util, _os, _spec, _perturbation\n"
    )
    path = startup / "00-perturb-engine.py"
    if not path.exists() or path.read_text() != script:
        path.write_text(script)
    return folder


def main():
    features = numpy_cpu_features()
    for environment in environments():
        why_not = environment.runnable(features)
        if why_not:
            print(f"{environment.name:16} cannot run here: {why_not}")
            continue
        variables = environment.variables(features)
        got = probe(variables)
        shown = " ".join(f"{k}={v}" for k, v in variables.items() if k != "IPYTHONDIR")
        print(f"{environment.name:16} {environment.what}\n{'':16} {shown or '(nothing set)'}"
              f" -> OpenBLAS {got['openblas_core']}, NumPy SIMD "
              f"{' '.join(got['numpy_simd']) or 'baseline only'}")


if __name__ == "__main__":
    main()
