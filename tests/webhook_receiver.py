"""A real webhook receiver on loopback for the webhook tests (issue 29 item 1): an HTTP server in a
thread that records every POST (headers, body) and answers what the test scripts: a status per
request in order (then `default`), optionally after a delay, or holding a request until released."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=list)  # the first answers, in order
    default: int = 200
    delay: float = 0.0
    hold: threading.Event | None = None  # set: requests wait for it (a receiver that hangs)
    hang_first: bool = False  # the first request waits for `hold`, then is dropped unanswered
    arrived: int = 0  # requests that came in (answered or not yet)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.lock:
                    receiver.arrived += 1
                    first = receiver.arrived == 1
                if receiver.hang_first and first:
                    assert receiver.hold is not None
                    receiver.hold.wait(60)
                    with receiver.lock:  # never acknowledged: the connection is closed unanswered
                        receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body, 0))
                    self.close_connection = True
                    return
                if receiver.hold is not None and not receiver.hang_first:
                    receiver.hold.wait(30)
                if receiver.delay:
                    time.sleep(receiver.delay)
                with receiver.lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                    receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body, status))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.hold is not None:
            self.hold.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def acknowledged(self) -> list[Received]:
        with self.lock:
            return [r for r in self.received if 200 <= r.status < 300]

    def wait_for(self, count: int, *, acknowledged: bool = True, timeout: float = 20.0) -> list[Received]:
        """The first `count` requests (acknowledged ones only, by default), once they came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.acknowledged() if acknowledged else list(self.received)
            if len(got) >= count:
                return got
            time.sleep(0.02)
        raise AssertionError(f"the receiver got {len(self.received)} requests, waited for {count}: {self.received}")


@dataclass
class BlackHole:
    """A receiver that never answers: the kernel accepts connections into the listening socket's
    backlog and nobody ever reads them (past the backlog, connecting itself hangs). Every attempt
    at it lasts the whole WEBHOOK_TIMEOUT_SECONDS."""

    sock: socket.socket | None = None

    @property
    def url(self) -> str:
        assert self.sock is not None
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def start(self) -> BlackHole:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        return self

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
