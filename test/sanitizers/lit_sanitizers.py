"""Sanitizer settings of the lit suites for a TXL_SANITIZE build
(scripts/test.sh --sanitize; docs/sanitizers.md).

Every report is fatal: the instrumented programs are built with
-fno-sanitize-recover=all, and the options below make AddressSanitizer,
LeakSanitizer, UndefinedBehaviorSanitizer and ThreadSanitizer exit non-zero
with a stack trace. Python, which is not instrumented, loads instrumented
shared objects (libtxl_device.so, compiled models through test/lib/
txlrun.py) only with the sanitizer runtime preloaded; leaks are not checked
in Python itself, whose interpreter keeps memory until exit by design.
"""

import os
import subprocess

_HERE = os.path.dirname(os.path.abspath(__file__))


def _runtime_library(name):
    """The path of clang-22's shared sanitizer runtime `name`."""
    out = subprocess.run(["clang++-22", "-print-file-name=" + name],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def configure(config, sanitize):
    """Sets the environment of `config` for `sanitize` ("" does nothing) and
    returns the command that `%python` stands for."""
    if not sanitize:
        return "python3"
    config.available_features.add("sanitize")
    common = "halt_on_error=1:print_stacktrace=1"
    supp = os.path.join(_HERE, "lsan.supp")
    if "address" in sanitize:
        config.available_features.add("asan")
        config.environment["ASAN_OPTIONS"] = (
            common + ":detect_leaks=1:abort_on_error=0:"
            "detect_odr_violation=0")
        config.environment["LSAN_OPTIONS"] = "suppressions=" + supp
        config.environment["UBSAN_OPTIONS"] = common
        preload = _runtime_library("libclang_rt.asan-x86_64.so")
        return ("env LD_PRELOAD=%s ASAN_OPTIONS=%s:detect_leaks=0 python3"
                % (preload, common))
    if sanitize == "thread":
        config.available_features.add("tsan")
        config.environment["TSAN_OPTIONS"] = (
            common + ":second_deadlock_stack=1:suppressions=" +
            os.path.join(_HERE, "tsan.supp"))
        preload = _runtime_library("libclang_rt.tsan-x86_64.so")
        return "env LD_PRELOAD=%s python3" % preload
    raise ValueError("unknown TXL_SANITIZE %r" % sanitize)
