"""Tools around the pipeline, never inside it: the ``smartvector-bench`` command line (:mod:`.cli`, with the
config checks of :mod:`.validate`), the regression gate (:mod:`.gate`, ``make regress``), Hydra sweeps and their
collector (:mod:`.sweeps`), the performance benchmark (:mod:`.perf`) and its scale datasets (:mod:`.scale`)."""
