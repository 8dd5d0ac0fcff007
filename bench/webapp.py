"""Workload 5: a small WSGI app for gunicorn (bench/run.py).

GET /?n=N renders a JSON page of N items after a little per-request work
(parsing, a dict comprehension, sorting, json.dumps), like a typical API
handler without a database."""
import json
from urllib.parse import parse_qs


def handle(n):
    items = [{"id": i, "name": f"item-{i}", "score": (i * 7919) % 1000 / 10} for i in range(n)]
    items.sort(key=lambda item: (-item["score"], item["id"]))
    return json.dumps({"count": n, "top": items[:20], "total": sum(i["score"] for i in items)})


def app(environ, start_response):
    query = parse_qs(environ.get("QUERY_STRING", ""))
    n = int(query.get("n", ["200"])[0])
    body = handle(n).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
