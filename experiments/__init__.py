"""Experiments: each is a plain ``run(cfg, out_dir)`` function; ``smartvector-bench experiment=<name>`` picks one."""
