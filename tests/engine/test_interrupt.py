"""Ctrl-C in an exact first passage raises metastab.Interrupted with the run so far: exactly the
run with max_steps at the step it reached. In a child process, whose SIGINT cannot reach the test
runner; the signal is sent from the progress callback, between two kernel calls."""

import subprocess
import sys

CHILD = r"""
import os, signal
import numpy as np
import metastab as ms

# Python's own handler, whatever the child inherited: a background job of a non-interactive
# shell starts with SIGINT ignored, and an ignored Ctrl-C is not the case under test
signal.signal(signal.SIGINT, signal.default_int_handler)

P = ms.regular_polygon(5)
x0 = np.vstack([P.vertices, 0.5 * P.vertices[np.arange(15) % 5]])
event = ms.LeaveHull(groups=P.assign(x0), radius=2 * 0.1 * P.diameter)
model = ms.SoftmaxChain(beta=30.0, gamma=0.1)  # escapes take ~1e9 steps: none happens here
calls = []


def progress(t, total, stopped):
    calls.append(t)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGINT)


try:
    ms.first_passage(model, x0, event, max_steps=2**62, chains=8, rng=1, progress=progress)
except ms.Interrupted as exc:
    run = exc.result
    again = ms.first_passage(model, x0, event, max_steps=run.max_steps, chains=8, rng=1)
    same = all(np.array_equal(getattr(run, k), getattr(again, k))
               for k in ("times", "censored", "absorbed", "final"))
    print(run.max_steps == calls[2], run.censored.all(), same,
          signal.getsignal(signal.SIGINT) is signal.default_int_handler, str(exc))
"""


def test_ctrl_c_raises_interrupted_with_the_run_so_far():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[:4] == ["True", "True", "True", "True"], out.stdout
    assert "interrupted at step" in out.stdout and "max_steps=" in out.stdout
