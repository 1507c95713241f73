"""Training the learned routers (``conductor-env train router``) and their data table.

The modules mirror :mod:`conductor_env.agents.routers`: one per router kind (:mod:`.knn`,
:mod:`.mlp`, :mod:`.routerdc`, :mod:`.smoothie`, each with its fit keyed by name and, where the
kind has one, keyed by description; :mod:`.masrouter`, which trains on episodes), plus the data
they read: :mod:`.table` (the per-question, per-worker router-data table) and :mod:`.pairs` (the
same table as (question, worker) pairs, keyed by description). :mod:`.train` embeds a table and
fits a kind into a checkpoint folder that ``router:<kind>:<folder>`` plays.
"""

from conductor_env.agents.training.routers.table import RouterTable, TableError, read_table, rows_from_records, write_table
from conductor_env.agents.training.routers.train import TRAINERS, TrainedRouter, train_router

__all__ = ["TRAINERS", "RouterTable", "TableError", "TrainedRouter", "read_table", "rows_from_records", "train_router", "write_table"]
