import random

from toolchaos.fake_tools import _seeded
from toolchaos.fake_tools._seeded import seeded


def test_a_seeded_generator_draws_what_random_seeded_with_the_text_draws() -> None:
    for text in ("0:policy", "7:fetch_invoice:{}", ""):
        expected = random.Random(text)
        # the first seeds directly, the second keeps the state, the third sets the kept state
        for rng in (seeded(text), seeded(text), seeded(text)):
            assert [rng.random() for _ in range(5)] == [expected.random() for _ in range(5)]
            expected = random.Random(text)
        assert seeded(text).gauss(0, 1) == random.Random(text).gauss(0, 1)


def test_generators_of_one_text_do_not_share_their_state() -> None:
    a, b = seeded("3:guarded"), seeded("3:guarded")
    a.random()
    assert b.random() == random.Random("3:guarded").random()


def test_a_text_asked_for_once_keeps_no_state() -> None:
    # keeping a state costs a getstate(), as dear as the seeding: only a text that comes back pays it
    seeded("once:only")
    assert "once:only" not in _seeded._states
    seeded("once:only")
    assert "once:only" in _seeded._states


def test_the_table_of_states_stays_bounded() -> None:
    for i in range(_seeded._KEPT * 2 + 3):
        seeded(f"bounded:{i}")
        seeded(f"bounded:{i}")
    for i in range(_seeded._KEPT * 8):
        seeded(f"seen-once:{i}")
    assert len(_seeded._states) <= _seeded._KEPT
    assert len(_seeded._once) <= 4 * _seeded._KEPT
    assert seeded("bounded:1").random() == random.Random("bounded:1").random()
