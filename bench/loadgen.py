"""Loopback load generator for workload 5 (bench/run.py).

Usage: python3 bench/loadgen.py PORT COUNTER_FILE [CONNECTIONS]
Keeps CONNECTIONS (default 4) keep-alive HTTP/1.1 connections to
127.0.0.1:PORT busy with GET /?n=200 and publishes the number of completed
requests in slot 0 of COUNTER_FILE (see workloads.py).  Loopback only; runs
until killed."""
import http.client
import mmap
import struct
import sys
import threading
import time

PORT = int(sys.argv[1])
with open(sys.argv[2], "r+b") as _f:
    MM = mmap.mmap(_f.fileno(), 64)
CONNECTIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 4
lock = threading.Lock()
done = 0


def client():
    global done
    conn = None
    while True:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
            conn.request("GET", "/?n=200")
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise OSError(resp.status)
            with lock:
                done += 1
                struct.pack_into("<Q", MM, 0, done)
        except (OSError, http.client.HTTPException):
            conn = None
            time.sleep(0.05)


for _ in range(CONNECTIONS):
    threading.Thread(target=client, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
