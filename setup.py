"""Builds texplan's C++ module (python/CMakeLists.txt) with CMake for the
Python running this script, and ships it with python/texplan/.

    pip install --no-build-isolation .        # docs/python.md

CMake configures a build of its own under the setuptools build folder
(build-python/, beside the C++ build/) with tests, benchmarks and fuzz
targets off, for the interpreter that runs pip (-DPython3_EXECUTABLE), and
builds only the module's target. CMAKE_BUILD_PARALLEL_LEVEL sets the jobs
(default: every core); TEXPLAN_CMAKE_BUILD_DIR=DIR builds the module in an
already configured build instead (one made for this Python: `make python`'s
build/, as python/tests/test_package.py does). Nothing is downloaded: CMake, a C++20 compiler,
pybind11 and the libraries the C++ build needs come from Debian's packages
(scripts/install-deps.sh).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(\s*texplan\s+VERSION\s+([0-9.]+)", text)
    if not m:
        raise RuntimeError("CMakeLists.txt: no 'project(texplan VERSION x.y.z)'")
    return m.group(1)


class CMakeExtension(Extension):
    """The pybind11 module that python/CMakeLists.txt builds (target texplan_python)."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    """Configures and builds the CMake target, then copies the module where setuptools packs it."""

    def build_extension(self, ext):
        if shutil.which("cmake") is None:
            raise RuntimeError("texplan: building the module needs cmake (apt-get install cmake; scripts/install-deps.sh)")
        reuse = os.environ.get("TEXPLAN_CMAKE_BUILD_DIR")
        build_dir = Path(reuse).resolve() if reuse else Path(self.build_temp).resolve() / "cmake"
        if not reuse:
            self.configure(build_dir)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", ext.target, "-j", jobs], check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build_dir / "python" / "texplan" / ("_texplan" + suffix)
        if not built.exists():
            raise RuntimeError(f"texplan: no {built.name} in {built.parent}: "
                               + ("that build is for another Python" if reuse else "CMake did not build the module"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)

    def configure(self, build_dir):
        """A build of texplan's libraries and module only, for this Python."""
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DTEXPLAN_TESTS=OFF", "-DTEXPLAN_BENCH=OFF", "-DTEXPLAN_FUZZ=OFF",
            "-DTEXPLAN_PYTHON_REQUIRED=ON",
        ]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.run(configure, check=True)


(ROOT / "build-python").mkdir(exist_ok=True)  # egg_base must exist
setup(
    version=project_version(),
    ext_modules=[CMakeExtension("texplan._texplan", target="texplan_python")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-python"}, "egg_info": {"egg_base": "build-python"}},
    zip_safe=False,
)
