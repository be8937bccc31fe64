"""From bytes to a Decision: pure, no I/O.

* :mod:`~gate.decide.attempt`: what each attempt brought back;
* :mod:`~gate.decide.ends`: how an attempt ended (answered, chosen, outage);
* :mod:`~gate.decide.envelope`: MC1 seal and verify;
* :mod:`~gate.decide.verdict`: one fence, strict JSON, exact shape, binding;
* :mod:`~gate.decide.repair`: lossless structural-cut detection (may only lower a decision);
* :mod:`~gate.decide.decision`: the decision table (``decide``, ``blocked``, ``binding_for``);
* :mod:`~gate.decide.agreement`: k answers agreed into one decision;
* :mod:`~gate.decide.chunk_table`: the chunks' decisions agreed into one.

An index: each name is imported from its own module.
"""
