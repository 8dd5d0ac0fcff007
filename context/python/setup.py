"""Builds the one native part: _otel_thread_ctx.so, the OTEP 4947 TLS
symbol (splunk_profd_context/_otel_thread_ctx.c).  It is a plain shared
object loaded with ctypes, not a Python extension, so it is named without
the interpreter's ABI tag and one build serves every interpreter.
optional=True: without a C compiler the install still succeeds (setuptools
prints a warning) and the package stays pure Python (our own segment only;
it warns once at install())."""

import platform

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class PlainSharedObject(build_ext):
    def get_ext_filename(self, fullname):
        return fullname.replace(".", "/") + ".so"

    def get_export_symbols(self, ext):
        return []  # no PyInit_: not an extension module


# TLSDESC is the dialect OTEP 4947 names (x86-64 and aarch64 compilers
# spell it differently; elsewhere the default dialect is used).
TLS_DIALECT = {"x86_64": ["-mtls-dialect=gnu2"], "aarch64": ["-mtls-dialect=desc"]}

setup(
    ext_modules=[
        Extension(
            "splunk_profd_context._otel_thread_ctx",
            sources=["splunk_profd_context/_otel_thread_ctx.c"],
            extra_compile_args=["-O2", "-fvisibility=hidden", *TLS_DIALECT.get(platform.machine(), [])],
            optional=True,
        )
    ],
    cmdclass={"build_ext": PlainSharedObject},
)
