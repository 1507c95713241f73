"""Training the learned routers (``conductor-env train router``) and their data table.

:mod:`.table` reads and writes the per-question, per-worker router-data table;
:mod:`.train` embeds its questions and fits a kind (:mod:`.knn`, :mod:`.mlp`) into a checkpoint
folder that ``router:<kind>:<folder>`` plays (:mod:`conductor_env.agents.routers`).
"""

from conductor_env.agents.training.routers.table import RouterTable, TableError, read_table, rows_from_records, write_table
from conductor_env.agents.training.routers.train import TRAINERS, TrainedRouter, train_router

__all__ = ["TRAINERS", "RouterTable", "TableError", "TrainedRouter", "read_table", "rows_from_records", "train_router", "write_table"]
