
import graphcore as gc
from executor import Session


def test_seed_cond_and_loops_run():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.placeholder(gc.float64, [], name="y")
        z = gc.constant(2.0)
        r = gc.cond(x < y, lambda: x + z, lambda: y * y)
        i = gc.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
    s = Session(g, num_threads=1)
    assert s.run(r, {x: 1.0, y: 3.0}) == 3.0
    assert s.run(r, {x: 5.0, y: 3.0}) == 9.0
    assert s.run(i) == 10
