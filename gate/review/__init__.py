"""One review, from the selected diff to the decision and its certificate.

Read top-down, in the order the modules depend on each other:

* :mod:`~gate.review.scope`: what is reviewed (``select_diff``, the coverage rules);
* :mod:`~gate.review.prompt`: the reviewer prompt;
* :mod:`~gate.review.chunks`: the chunker (file, then hunk, boundaries);
* :mod:`~gate.review.context`: ``context: files``, the changed files' text each request
  shows beside its diff, within ``context_bytes``;
* :mod:`~gate.review.budget`: the window budget, each chunk's prompt, the one cut;
* :mod:`~gate.review.cost`: tokens, prices and the ``max_cost`` estimate;
* :mod:`~gate.review.certificate` and :mod:`~gate.review.result`: the audit record and
  what one review produced;
* :mod:`~gate.review.carry`: earlier chunk answers carried by question and digest;
* :mod:`~gate.review.chunked`: a review in chunks (the pool, splits, the chunk table);
* :mod:`~gate.review.pipeline`: ``review_diff``, the stretch both front ends share.

An index: each name is imported from its own module.
"""
