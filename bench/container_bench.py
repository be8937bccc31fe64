"""Container bench: the action image's size and its start-to-first-request time.

Each figure is printed next to a baseline measured in the same invocation, with the
ratio:

* size: the built image vs the base image it starts from (what review-gate adds);
* start: seconds from ``docker run`` until a local HTTP listener (standing in for the
  GitHub API on 127.0.0.1) receives the action's first request, vs the same for
  ``python3`` in the base image sending one request with the standard library (what
  the interpreter, the venv and the gate's imports add over a bare container start).
  Two references follow: the image's own interpreter sending the same one request with
  httpx (the client the gate's first calls use: what is left is the gate's own share),
  and ``docker run BASE python3 -c pass`` (start to exit).

Medians over ``--runs`` runs. Needs Docker (``--network host``); run from the repo root:

    python bench/container_bench.py [--base-image python:3.12-slim] [--runs 5] [--no-build]

``--local`` measures the same start to first request without Docker: this interpreter
running ``python -m gate action`` against ``python -c`` sending one request with urllib
(alternating, same environment), and prints the third-party packages loaded before the
first request. ``--gate-src DIR`` measures another tree's ``gate`` there (e.g. one
unpacked with ``git archive REV gate | tar -x -C DIR``):

    python bench/container_bench.py --local [--runs 15] [--gate-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "octo-org/hello-world"
RUN_TIMEOUT_S = 120.0


class FirstRequest:
    """A listener on 127.0.0.1 that timestamps the first request after each reset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._at = 0.0
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _any(self) -> None:
                now = time.perf_counter()
                with outer._lock:
                    if not outer._event.is_set():
                        outer._at = now
                        outer.paths.append(f"{self.command} {self.path}")
                        outer._event.set()
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(min(length, 1 << 20))
                body = b'{"message": "bench listener: not found"}'
                self.send_response(404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        with self._lock:
            self._event.clear()
            self._at = 0.0

    def wait(self, timeout: float) -> float | None:
        """perf_counter() of the first request since reset, or None on timeout."""
        if not self._event.wait(timeout):
            return None
        with self._lock:
            return self._at

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def docker(*args: str, timeout: float = 600.0) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"docker {' '.join(args[:3])} failed:\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def image_size(tag: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", tag).strip())


# Run inside the image: bytes on disk per installed distribution (the files its RECORD
# lists, byte-compiled files included), as JSON, largest first.
SIZES_SCRIPT = """
import importlib.metadata as m, json, os
sizes = {}
for dist in m.distributions():
    total = 0
    for file in dist.files or []:
        path = str(file.locate())
        if os.path.isfile(path):
            total += os.path.getsize(path)
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sorted(sizes.items(), key=lambda kv: -kv[1])))
"""


def distribution_sizes(tag: str) -> list[tuple[str, int]]:
    out = docker("run", "--rm", "--entrypoint", "/opt/venv/bin/python", tag, "-c", SIZES_SCRIPT)
    return [(str(name), int(size)) for name, size in json.loads(out)]


def timed_start(argv: list[str], listener: FirstRequest, name: str) -> float:
    """Seconds from starting ``docker run`` to the listener's first request."""
    listener.reset()
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["docker", "run", "--rm", "--name", name, "--network", "host", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        seen = listener.wait(RUN_TIMEOUT_S)
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60, check=False)
        proc.kill()
        proc.communicate(timeout=30)
        raise SystemExit(f"{name}: container did not finish within {RUN_TIMEOUT_S:.0f}s") from None
    if seen is None:
        raise SystemExit(
            f"{name}: no request reached the listener; container stderr:\n"
            f"{err.decode(errors='replace')[-2000:]}"
        )
    return seen - start


def timed_exit(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "host", *argv],
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"docker run {argv} failed: {done.stderr.decode(errors='replace')}")
    return time.perf_counter() - start


def event_file(directory: Path) -> Path:
    """A minimal pull_request event for the gate to start on."""
    sha = "a" * 40
    repo = {"full_name": REPOSITORY, "name": "hello-world", "owner": {"login": "octo-org"}}
    event = {
        "action": "opened",
        "number": 1,
        "repository": repo,
        "pull_request": {
            "number": 1,
            "draft": False,
            "head": {"sha": sha, "ref": "topic", "repo": repo},
            "base": {"sha": "b" * 40, "ref": "main", "repo": repo},
        },
    }
    path = directory / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


#: run by the measured interpreter (not timed): the third-party packages loaded when the
#: action opens its first connection
LOCAL_MODULES = """
import os, sys
def hook(event, args):
    if event == "socket.connect":
        names = {m.split(".")[0] for m in sys.modules}
        print("loaded:", " ".join(sorted(n for n in names - set(sys.stdlib_module_names)
                                         if not n.startswith("_") and n != "gate")))
        sys.stdout.flush()
        os._exit(0)
sys.addaudithook(hook)
sys.argv = ["review-gate", "action"]
import runpy
runpy.run_module("gate", run_name="__main__", alter_sys=True)
"""


def timed_local(argv: list[str], env: dict[str, str], cwd: str, listener: FirstRequest) -> float:
    """Seconds from starting ``argv`` (no Docker) to the listener's first request."""
    listener.reset()
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seen = listener.wait(RUN_TIMEOUT_S)
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=30)
        raise SystemExit(f"{argv[:3]} did not finish within {RUN_TIMEOUT_S:.0f}s") from None
    if seen is None:
        raise SystemExit(f"{argv[:3]}: no request reached the listener:\n{err.decode()[-2000:]}")
    return seen - start


def local(runs: int, gate_src: str | None) -> int:
    """Start to first request outside Docker (see the module docstring)."""
    listener = FirstRequest()
    try:
        with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
            env = dict(os.environ)
            env.update(
                GITHUB_API_URL=listener.url,
                GITHUB_EVENT_NAME="pull_request",
                GITHUB_EVENT_PATH=str(event_file(Path(tmp))),
                GITHUB_REPOSITORY=REPOSITORY,
                GITHUB_RUN_ID="1",
                INPUT_TOKEN="bench-token",
                PYTHONPATH=str(Path(gate_src or ROOT).resolve()),
            )
            env["INPUT_FAIL-JOB"] = "false"
            probe = (
                "import urllib.request, urllib.error\n"
                "try:\n"
                f"    urllib.request.urlopen('{listener.url}/baseline', timeout=10)\n"
                "except urllib.error.HTTPError:\n"
                "    pass\n"
            )
            gate_argv = [sys.executable, "-m", "gate", "action"]
            base_argv = [sys.executable, "-c", probe]
            timed_local(gate_argv, env, tmp, listener)  # warm-up (page cache, .pyc)
            gate_times, base_times = [], []
            for _ in range(runs):
                gate_times.append(timed_local(gate_argv, env, tmp, listener))
                base_times.append(timed_local(base_argv, env, tmp, listener))
            loaded = subprocess.run(
                [sys.executable, "-c", LOCAL_MODULES],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
                check=False,
            ).stdout
    finally:
        listener.close()
    gate_s, base_s = statistics.median(gate_times), statistics.median(base_times)
    print(f"first request seen by the listener: {listener.paths[0]}")
    print(
        f"local start to first request (median of {runs}, no Docker): {gate_s * 1000:.0f} ms "
        f"vs python -c + urllib {base_s * 1000:.0f} ms: ratio {gate_s / base_s:.2f} "
        f"(+{(gate_s - base_s) * 1000:.0f} ms)"
    )
    found = [line[len("loaded:") :] for line in loaded.splitlines() if line.startswith("loaded:")]
    packages = found[-1].strip() if found and found[-1].strip() else "(none)"
    print(f"third-party packages loaded before the first request: {packages}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-image", default="python:3.12-slim")
    parser.add_argument("--image", default="review-gate:bench", help="tag to build and measure")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-build", action="store_true", help="measure an existing --image")
    parser.add_argument(
        "--local", action="store_true", help="measure this interpreter, without Docker"
    )
    parser.add_argument("--gate-src", metavar="DIR", help="with --local: a folder holding gate/")
    args = parser.parse_args(argv)
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    if args.local:
        return local(args.runs, args.gate_src)
    if shutil.which("docker") is None:
        raise SystemExit("docker is not installed")
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")

    if not args.no_build:
        start = time.perf_counter()
        docker(
            "build",
            "--network",
            "host",
            "--quiet",
            "--build-arg",
            f"BASE_IMAGE={args.base_image}",
            "-t",
            args.image,
            str(ROOT),
        )
        print(f"built {args.image} from {args.base_image} in {time.perf_counter() - start:.1f}s")

    base_size, image = image_size(args.base_image), image_size(args.image)
    mib = 1024 * 1024
    print(
        f"image size: {image / mib:.1f} MiB vs base {base_size / mib:.1f} MiB: "
        f"ratio {image / base_size:.2f} (+{(image - base_size) / mib:.1f} MiB)"
    )

    sizes = distribution_sizes(args.image)
    venv = sum(size for _, size in sizes)
    shown = ", ".join(f"{name} {size / mib:.1f}" for name, size in sizes[:8])
    print(f"venv by distribution (MiB, {venv / mib:.1f} in all): {shown}")

    listener = FirstRequest()
    try:
        with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
            event = event_file(Path(tmp))
            gate_argv = [
                "-v",
                f"{event}:/github/workflow/event.json:ro",
                "-e",
                f"GITHUB_API_URL={listener.url}",
                "-e",
                "GITHUB_EVENT_NAME=pull_request",
                "-e",
                "GITHUB_EVENT_PATH=/github/workflow/event.json",
                "-e",
                f"GITHUB_REPOSITORY={REPOSITORY}",
                "-e",
                "GITHUB_RUN_ID=1",
                "-e",
                "INPUT_TOKEN=bench-token",
                "-e",
                "INPUT_FAIL-JOB=false",
                args.image,
            ]
            probe = (
                "import urllib.request, urllib.error\n"
                "try:\n"
                f"    urllib.request.urlopen('{listener.url}/baseline', timeout=10)\n"
                "except urllib.error.HTTPError:\n"
                "    pass\n"
            )
            base_argv = [args.base_image, "python3", "-c", probe]
            # the same one request with httpx, from the image's own interpreter: the
            # client library the gate's first calls use, without the gate (no CA bundle is
            # read: the listener is plain http, and the gate reads none there either)
            httpx_probe = (
                "import ssl, httpx\n"
                "context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n"
                "with httpx.Client(verify=context, timeout=10) as client:\n"
                f"    client.get('{listener.url}/httpx-floor')\n"
            )
            httpx_argv = ["--entrypoint", "/opt/venv/bin/python", args.image, "-c", httpx_probe]
            tag = uuid.uuid4().hex[:8]
            # one warm-up of each, not measured (page cache, first container of an image)
            timed_start(gate_argv, listener, f"rg-bench-gate-warm-{tag}")
            timed_start(base_argv, listener, f"rg-bench-base-warm-{tag}")
            timed_start(httpx_argv, listener, f"rg-bench-httpx-warm-{tag}")
            gate_times, base_times, httpx_times, pass_times = [], [], [], []
            for i in range(args.runs):
                gate_times.append(timed_start(gate_argv, listener, f"rg-bench-gate-{tag}-{i}"))
                base_times.append(timed_start(base_argv, listener, f"rg-bench-base-{tag}-{i}"))
                httpx_times.append(timed_start(httpx_argv, listener, f"rg-bench-httpx-{tag}-{i}"))
                pass_times.append(timed_exit([args.base_image, "python3", "-c", "pass"]))
    finally:
        listener.close()
    gate_s, base_s = statistics.median(gate_times), statistics.median(base_times)
    pass_s = statistics.median(pass_times)
    print(f"first request seen by the listener: {listener.paths[0]}")
    print(
        f"start to first request (median of {args.runs}): {gate_s * 1000:.0f} ms vs base "
        f"python3 + urllib {base_s * 1000:.0f} ms: ratio {gate_s / base_s:.2f} "
        f"(+{(gate_s - base_s) * 1000:.0f} ms)"
    )
    # each gate run against the base run right after it: Docker's own start drifts over
    # an invocation, and a pair shares the drift
    paired = sorted(g / b for g, b in zip(gate_times, base_times, strict=True))
    print(
        f"paired: median of the {args.runs} ratios {statistics.median(paired):.2f} "
        f"(quartiles {paired[len(paired) // 4]:.2f}-{paired[(3 * len(paired)) // 4]:.2f})"
    )
    httpx_s = statistics.median(httpx_times)
    print(
        f"reference: the image's python + httpx, one request {httpx_s * 1000:.0f} ms; "
        f"gate start / that: {gate_s / httpx_s:.2f} (+{(gate_s - httpx_s) * 1000:.0f} ms: "
        "the gate's own share)"
    )
    print(
        f"reference: docker run {args.base_image} python3 -c pass (start to exit) "
        f"{pass_s * 1000:.0f} ms; gate start / that: {gate_s / pass_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
