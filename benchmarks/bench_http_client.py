"""A party's CPU per request in three HTTP clients: httpx (fedtopic's first), urllib3 (until session 27),
http.client (``network/http.py`` since session 27).

    python benchmarks/bench_http_client.py [--requests 60] [--up 3000000] [--down 4000000] [--repeats 3]

A plain HTTP/1.1 keep-alive server in a child process (so its CPU is not this process's) answers every POST with
``--down`` bytes; the client sends ``--up`` bytes, as a gFedNTM gradient update and its aggregate do (3 MB up,
4 MB down per party and step at V 5,000, K 50), and a small one (800 bytes each way) as the statistics phases.
Reported: the client thread's CPU per request (``time.thread_time``), median over ``--repeats`` rounds of
``--requests`` requests, the clients taking turns.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
import urllib3

SERVER = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(1 << 20)
            if not d:
                return
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        size = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                size = int(v)
        while len(rest) < size:
            rest += c.recv(1 << 20)
        buf = rest[size:]
        down = int(head.split(b" ")[1].split(b"/")[-1])
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\ncontent-type: application/octet-stream\r\n\r\n" % down
                  + b"x" * down)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def clients(port: int) -> dict[str, Callable[[str, bytes], bytes]]:
    """name → send(path, body) returning the answer's body, each over one kept-alive connection."""
    hx = httpx.Client(base_url=f"http://127.0.0.1:{port}")
    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1, retries=False)
    conn = http.client.HTTPConnection("127.0.0.1", port)

    def stdlib(path: str, body: bytes) -> bytes:
        conn.request("POST", path, body=body, headers={"content-type": "application/octet-stream"})
        return conn.getresponse().read()

    return {"httpx": lambda path, body: hx.post(path, content=body).content,
            "urllib3": lambda path, body: pool.urlopen("POST", path, body=body).data,
            "http.client": stdlib}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--up", type=int, default=3_000_000)
    ap.add_argument("--down", type=int, default=4_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())  # type: ignore[union-attr]
        sends = clients(port)
        print("| request | client | CPU ms / request | wall ms / request |\n|---|---|---:|---:|")
        for label, up, down in (("small", 800, 800), ("gradient", args.up, args.down)):
            body, path = b"y" * up, f"/{down}"
            cpu: dict[str, list[float]] = {name: [] for name in sends}
            wall: dict[str, list[float]] = {name: [] for name in sends}
            for name, send in sends.items():
                assert len(send(path, body)) == down  # connect and warm up
            for _ in range(args.repeats):
                for name, send in sends.items():
                    t0, w0 = time.thread_time(), time.perf_counter()
                    for _ in range(args.requests):
                        send(path, body)
                    cpu[name].append((time.thread_time() - t0) / args.requests)
                    wall[name].append((time.perf_counter() - w0) / args.requests)
            for name in sends:
                print(f"| {label} ({up:,} B up, {down:,} B down) | {name} | {1000 * statistics.median(cpu[name]):.2f} | "
                      f"{1000 * statistics.median(wall[name]):.2f} |")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
