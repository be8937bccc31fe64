"""Configuration: the repository's YAML file and the action's inputs, as one frozen Config.

Read top-down, in the order the modules depend on each other:

* :mod:`~gate.config.model`: the typed records (``Config``, ``ReviewerConfig``,
  ``ModelPrice``, ``Escalation``), ``default_config`` and ``fallback_keys``;
* :mod:`~gate.config.check`: "does this value conform to the config schema?" without
  jsonschema, proved equal to it;
* :mod:`~gate.config.schema`: the JSON Schema, its ECMA-262 patterns, a value's errors
  (jsonschema only for a value that does not conform);
* :mod:`~gate.config.wording`: each error of a wrong config in words (key, line, fix);
* :mod:`~gate.config.load`: ``.github/review-gate.yml`` read with line tracking
  (``load_config``, ``parse_config``, ``compose_yaml``) and built into a Config;
* :mod:`~gate.config.inputs`: the action's inputs over the file (``apply_inputs``).

An index: each name is imported from its own module.
"""
