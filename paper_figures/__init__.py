"""Paper figures: one script per figure (``fig_*.py``, each with ``make(results_dir, out_dir)``), reading only
``results/``; ``make_all.py`` runs them all."""
