"""For the harness's own use, not for users of the fake tools: the parts of ``toolchaos.fake_tools`` that the
rest of ``toolchaos`` builds on beyond the public API. Nothing here is stable or documented for use elsewhere.

``toolchaos.fake_tools`` is a library on its own (it imports nothing of the harness), and its facade is what its
users see; the harness reaches its private modules only through this module, so that each such dependency is
one line here rather than an import of a private module elsewhere:

- ``deferred``: a random generator seeded from text, seeded only when first drawn from (a run's generators);
- ``quick_init``: a faster ``__init__`` for frozen, slotted dataclasses (the model's turns and calls);
- ``warm``: draws every catalogue payload once, before an isolated run's child forks;
- ``Collection``, ``StoredKey``: a ``World``'s parts, rebuilt in place from an isolated run's child.
"""

from toolchaos.fake_tools._catalogue import warm as warm
from toolchaos.fake_tools._frozen import quick_init as quick_init
from toolchaos.fake_tools._seeded import deferred as deferred
from toolchaos.fake_tools._world import Collection as Collection
from toolchaos.fake_tools._world import StoredKey as StoredKey
