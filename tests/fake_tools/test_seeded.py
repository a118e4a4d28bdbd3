import random

from toolchaos.fake_tools import _seeded
from toolchaos.fake_tools._seeded import deferred, seeded


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


def test_a_deferred_generator_draws_what_random_seeded_with_the_text_draws() -> None:
    for text in ("0:policy", "deferred:twice", "deferred:twice"):  # seeded directly, then from a kept state
        rng, expected = deferred(text), random.Random(text)
        assert rng.gauss(0, 1) == expected.gauss(0, 1)  # gauss reads its spare value before any draw
        assert [rng.random() for _ in range(3)] == [expected.random() for _ in range(3)]
        assert (rng.randint(1, 10**9), rng.choice("abcdefgh"), rng.sample(range(100), 5), rng.randbytes(9)) == (
            expected.randint(1, 10**9), expected.choice("abcdefgh"), expected.sample(range(100), 5),
            expected.randbytes(9))
        shuffled, also = list(range(30)), list(range(30))
        rng.shuffle(shuffled)
        expected.shuffle(also)
        assert shuffled == also and isinstance(rng, random.Random)


def test_a_deferred_generator_is_not_seeded_until_it_is_used() -> None:
    rng = deferred("deferred:unused")
    assert "deferred:unused" not in _seeded._once  # nothing looked up, nothing seeded
    assert rng.getstate() == random.Random("deferred:unused").getstate()


def test_a_deferred_generator_takes_a_state_or_a_seed_it_is_given_and_copies_as_a_plain_one() -> None:
    import copy
    import pickle

    given = deferred("deferred:given")
    given.setstate(random.Random(9).getstate())
    assert given.random() == random.Random(9).random()
    reseeded = deferred("deferred:given")
    reseeded.seed(5)
    assert reseeded.random() == random.Random(5).random()
    rng, twin = deferred("deferred:copied"), random.Random("deferred:copied")
    rng.random(), twin.random()
    for copied in (copy.copy(rng), copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))):
        assert type(copied) is random.Random and copied.random() == copy.copy(twin).random()
    assert rng.random() == twin.random()  # the copies took nothing from the original
