"""Bundled chaos scenarios (YAML). Installed as the package ``toolchaos_scenarios``."""
