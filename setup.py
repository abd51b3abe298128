"""pip's build of routelab (pyproject.toml holds the metadata): the compiled module routelab._routelab comes from
CMake, target routelab_python, and is copied where setuptools wants the extension (the wheel, or python/routelab/
for `pip install -e .`); the pure-Python files come from python/routelab.

The CMake build folder is build-pip/ (configured once: Release, no tests or benchmarks, for the interpreter pip
runs), or the one named by ROUTELAB_CMAKE_BUILD_DIR (an existing build, e.g. build/ from scripts/build.sh, which
is then only brought up to date). ROUTELAB_CMAKE_ARGS adds configure arguments (-DROUTELAB_CUDA=OFF, ...).
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    """MAJOR.MINOR.PATCH from lib/base/version.h, where CMake reads it too."""
    with open(os.path.join(ROOT, "lib", "base", "version.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define ROUTELAB_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("ROUTELAB_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build-pip"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args = ["-DCMAKE_BUILD_TYPE=Release", "-DROUTELAB_TESTS=OFF", "-DROUTELAB_BENCH=OFF",
                    "-DROUTELAB_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                args.append("-GNinja")
            if shutil.which("ccache"):
                args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
            args += shlex.split(os.environ.get("ROUTELAB_CMAKE_ARGS", ""))
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir] + args)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "routelab_python", "-j",
                               str(os.cpu_count() or 1)])
        built = glob.glob(os.path.join(build_dir, "python", "routelab", "_routelab*"))
        want = os.path.basename(self.get_ext_filename(ext.name))  # _routelab.cpython-311-x86_64-linux-gnu.so
        match = [b for b in built if os.path.basename(b) == want]
        if not match:
            raise RuntimeError(f"CMake built {[os.path.basename(b) for b in built]} in {build_dir}/python/routelab; "
                               f"this interpreter ({sys.executable}) loads {want}: configure that build for it "
                               "(-DPython3_EXECUTABLE) or leave ROUTELAB_CMAKE_BUILD_DIR unset")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(match[0], target)


setup(version=version(), ext_modules=[Extension("routelab._routelab", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build-pip", "setuptools")}})
