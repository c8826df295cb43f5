"""Result objects: short reprs, tidy frames whose column names do not clash."""

import numpy as np

import metastab as ms

X0 = ms.regular_polygon(5).vertices


def test_first_passage_repr_is_a_short_summary():
    fp = ms.first_passage(
        ms.SoftmaxChain(beta=2.0, gamma=0.5), X0, ms.LeaveBall(0.1), max_steps=3, chains=40, rng=5
    )
    text = repr(fp)
    assert text == (
        f"FirstPassage(model=softmax-chain(beta=2, gamma=0.5), "
        f"event=leave-ball(radius=0.1), chains=40, events={fp.events}, absorbed=0, "
        f"censored={40 - fp.events}, max_steps=3, seed=5)"
    )
    assert 0 < fp.events < 40 and len(text) < 200


def test_run_repr_is_a_short_summary():
    run = ms.simulate(ms.Hardmax(0.5), X0, steps=4, chains=3, rng=2, record_every=2)
    assert repr(run) == (
        "Run(model=hardmax(gamma=0.5, ties=index, tol=1e-12), chains=3, n=5, "
        "d=2, steps=4, states_kept=3, seed=2)"
    )


def test_trajectory_coordinates_do_not_clash_with_x0():
    run = ms.simulate(
        ms.SoftmaxChain(beta=1.0, gamma=0.5), X0, steps=2, chains=2, rng=0, record_every=1
    )
    frame = run.to_frame()
    assert {"coord0", "coord1"} <= set(frame.columns)
    assert not {"x0", "x1"} & set(frame.columns)
    first = frame[(frame.step == 0) & (frame.chain == 0)][["coord0", "coord1"]].to_numpy()
    np.testing.assert_array_equal(first, X0)
