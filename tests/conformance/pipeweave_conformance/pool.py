"""A pool of worker processes, one per rank, sharing one gloo process group across many cases.

Starting processes and a process group costs far more than a conformance case, so the suite keeps
one pool per world size and sends it case after case. A case that fails on any rank, or hangs,
may leave messages in flight: the pool is then killed and the next case gets a fresh one.
"""

import datetime
import io
import multiprocessing
import multiprocessing.connection
import os
import shutil
import tempfile
import time
import traceback


class CaseError(Exception):
    """A case did not complete on every rank; the message says why (error text or timeout)."""


def serve(rank, world, store, conn, timeout):
    import torch
    import torch.distributed as dist

    from . import model, tasks

    model.setup_torch()
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"file://{store}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=timeout),
        )
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        os._exit(1)
    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            break
        if task is None:
            break
        try:
            result = tasks.run(rank, task)
            buf = io.BytesIO()
            torch.save(result, buf)
            conn.send(("ok", buf.getvalue()))
        except BaseException:
            conn.send(("error", traceback.format_exc()))
    os._exit(0)


class Pool:
    def __init__(self, world, timeout):
        self.world = world
        self.timeout = timeout
        self.dir = tempfile.mkdtemp(prefix="pipeweave-pool-")
        ctx = multiprocessing.get_context("fork")
        self.conns, self.procs = [], []
        for rank in range(world):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=serve, args=(rank, world, os.path.join(self.dir, "store"), child, timeout), daemon=True
            )
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        replies = self._collect(time.monotonic() + timeout)
        if any(kind != "ready" for kind, _ in replies):
            self.close()
            raise CaseError(f"the worker pool of {world} ranks did not start: {_first_error(replies)}")

    def run(self, task):
        """Runs one task on every rank; returns the per-rank results or raises CaseError."""
        import torch

        for conn in self.conns:
            conn.send(task)
        replies = self._collect(time.monotonic() + self.timeout)
        errors = [(r, text) for r, (kind, text) in enumerate(replies) if kind != "ok"]
        if errors:
            raise CaseError("; ".join(f"rank {r}: {_root_cause(text)}" for r, text in errors[:2]))
        return [torch.load(io.BytesIO(data)) for _, data in replies]

    def _collect(self, deadline):
        replies = [None] * self.world
        pending = dict(enumerate(self.conns))
        while pending:
            left = deadline - time.monotonic()
            ready = multiprocessing.connection.wait(list(pending.values()), timeout=max(0.0, left))
            if not ready:
                break
            for conn in ready:
                r = self.conns.index(conn)
                try:
                    replies[r] = conn.recv()
                except EOFError:
                    replies[r] = ("error", f"the worker of rank {r} died")
                del pending[r]
                if replies[r][0] == "error":
                    # The other ranks may wait forever for this one: give them a moment, no more.
                    deadline = min(deadline, time.monotonic() + 2.0)
        for r in pending:
            replies[r] = ("hung", f"no answer after {self.timeout:.0f}s (a deadlock?)")
        return replies

    def close(self):
        for conn in self.conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def kill(self):
        for proc in self.procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _root_cause(text):
    """The first exception line of a traceback (the root cause, before any chaining)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [line for line in lines if line.split(":")[0].endswith(("Error", "Exception"))]
    return (found or lines or ["failed"])[0][:300]


def _first_error(replies):
    return next((_root_cause(text) for kind, text in replies if kind != "ready"), "unknown")


class Pools:
    """One live pool per world size, recreated after a case breaks it."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.pools = {}

    def run(self, world, task):
        pool = self.pools.get(world)
        if pool is None:
            pool = self.pools[world] = Pool(world, self.timeout)
        try:
            return pool.run(task)
        except CaseError:
            pool.kill()
            del self.pools[world]
            raise

    def close(self):
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()
