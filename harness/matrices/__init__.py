"""The matrices that generate pages of the docs, each a command of its own: the top floor.

They run everything below them (the suite, every agent kind, the frameworks, the coding CLIs)
and nothing imports them but the command line (``toolchaos certify --matrix``):

- ``ablation_matrix()`` (this module): the suite proving itself against the reference agent, its
  variants and the ports of published designs (docs/certification-matrix.md,
  ``toolchaos certify --matrix``);
- ``toolchaos.matrices.frameworks``: the suite against each agent framework at its default
  settings (docs/frameworks.md, ``python -m toolchaos.matrices.frameworks``);
- ``toolchaos.matrices.processes``: coding CLIs and Node agents, unmodified (docs/cli-agents.md,
  ``python -m toolchaos.matrices.processes``).
"""

from toolchaos.matrices._ablation import NAIVE_MUST_FAIL, Matrix, ablation_matrix

__all__ = ["NAIVE_MUST_FAIL", "Matrix", "ablation_matrix"]
