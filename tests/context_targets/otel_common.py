"""Helpers shared by the Python span-context test apps."""

import json
import random
import sys
import time

from opentelemetry.sdk.trace.id_generator import IdGenerator


class LeadingZeroIds(IdGenerator):
    """Valid ids whose hex forms start with zero nibbles (full width must survive)."""

    def generate_trace_id(self) -> int:
        return random.getrandbits(100) | 1  # >= 7 leading zero nibbles

    def generate_span_id(self) -> int:
        return random.getrandbits(40) | 1  # >= 6 leading zero nibbles


def ids(span):
    sc = span.get_span_context()
    return [format(sc.trace_id, "032x"), format(sc.span_id, "016x")]


def burn(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(2000):
            x += i
    return x


def say(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()
