"""opentelemetry-instrument hook: installs the writer when
SPLUNK_PROFILER_ENABLED is true (same spelling as the Splunk distro)."""

import os

_TRUE = {"true", "1", "yes", "on"}


def post_instrument(**_kwargs: object) -> None:
    if os.environ.get("SPLUNK_PROFILER_ENABLED", "").strip().lower() in _TRUE:
        from . import install

        install()
